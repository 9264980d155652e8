"""Unit tests of helpers/dynamo/variables.py."""
import torch

from helpers.dynamo.variables import (
    GuardTree,
    attr_source,
    global_source,
    guard_trees,
    item_source,
    local_source,
    source_name,
)


class Cfg:
    def __init__(self):
        self.scale = 2


def test_guard_tree_parsing_and_guard_trees():
    text = ("TREE_GUARD_MANAGER:\n+- RootGuardManager\n| +- EQUALS_MATCH: L['n'] == 3   # n\n"
            "| +- GuardManager: source=L['x']\n| | +- TENSOR_MATCH: check_tensor(L['x'])  # y\n")
    tree = GuardTree(text)
    assert tree.leaves == [("EQUALS_MATCH", "L['n'] == 3"), ("TENSOR_MATCH", "check_tensor(L['x'])")]
    assert tree.kinds()["EQUALS_MATCH"] == 1 and tree.checks("EQUALS_MATCH") == ["L['n'] == 3"]

    cfg = Cfg()

    def g(x, n, conf=cfg):
        return x * n + conf.scale

    trees = guard_trees(g, torch.randn(4), 3)
    assert len(trees) == 1
    assert set(trees[0].checks("EQUALS_MATCH")) == {"L['n'] == 3", "L['conf'].scale == 2"}


def test_sources():
    assert source_name(local_source("x")) == "L['x']"
    assert source_name(attr_source(global_source("cfg"), "scale")) == "G['cfg'].scale"
    assert source_name(item_source(local_source("items"), 0)) == "L['items'][0]"

    class Prop:  # a source whose name is a property, as in newer torch
        name = "L['y']"

    assert source_name(Prop()) == "L['y']"

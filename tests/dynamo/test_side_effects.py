"""Unit tests of helpers/dynamo/side_effects.py."""
import dis

import torch

from helpers.dynamo.side_effects import (
    attribute_setter,
    attribute_writes,
    mentions,
    opnames,
    replay_instructions,
    show_instructions,
)
from helpers.dynamo.state import clear_compile_state, transformed_code


class Box:
    pass


def test_transformed_code_and_replay_of_an_attribute_write():
    clear_compile_state()

    def g(x, obj):
        obj.k = 1
        obj.k = 2
        return x + obj.k

    box = Box()
    torch.compile(g, backend="eager")(torch.randn(2), box)
    assert box.k == 2
    code = transformed_code(g)
    assert code is not g.__code__ and code.co_name == g.__code__.co_name
    replay = replay_instructions(code)
    assert replay and len(replay) < len(list(dis.get_instructions(code)))
    assert attribute_writes(code, "k") == 1
    assert attribute_writes(code, "nope") == 0
    assert mentions(code, "k") and not mentions(code, "append")
    assert attribute_setter(code, "k") in ("object_setattr_ignore_descriptor", "object.__setattr__", "STORE_ATTR")
    assert attribute_setter(code, "nope") == "none"

    def plain_store(o):
        o.k = 1
    assert attribute_setter(plain_store.__code__, "k") == "STORE_ATTR"
    listing = show_instructions(replay, width=30)
    assert all(len(line) <= 30 for line in listing.splitlines())
    assert "'k'" in show_instructions(replay)


def test_replay_instructions_without_graph_outputs_returns_everything():
    def plain(a):
        return a + 1
    assert replay_instructions(plain.__code__) == list(dis.get_instructions(plain.__code__))


def test_opnames_compare_shapes_of_code():
    def a(x):
        return x + 1

    def b(y):
        return y + 2

    def c(x):
        return x.sum() + 1
    assert opnames(a.__code__) == opnames(b.__code__)
    assert opnames(a.__code__) != opnames(c.__code__)

"""Chapter 5, VariableTrackers and Sources: how Dynamo names where a value came from (the Source that a
guard reads) and what kind of input each graph placeholder is.
"""
from __future__ import annotations

import collections
import re
from dataclasses import dataclass

from ..core.private import private
from .logs import Logs, capture_logs
from .state import clear_compile_state


@dataclass
class GuardTree:
    """The guard tree Dynamo printed for one compiled frame (the ``guards`` artifact)."""

    text: str

    @property
    def leaves(self) -> list[tuple[str, str]]:
        """``(kind, check)`` for every leaf guard (``+- EQUALS_MATCH: L['n'] == 3``)."""
        out = []
        for line in self.text.splitlines():
            m = re.search(r"\+- ([A-Z][A-Z_]+)(?::\s*(.*?))?\s*(?:#.*)?$", line)
            if m:
                out.append((m.group(1), (m.group(2) or "").strip()))
        return out

    def kinds(self) -> collections.Counter:
        return collections.Counter(kind for kind, _ in self.leaves)

    def checks(self, kind: str) -> list[str]:
        return [check for k, check in self.leaves if k == kind]

    @property
    def latency_us(self) -> float | None:
        """The "Guard eval latency = … us" Dynamo measured for this tree, if it printed one."""
        m = re.search(r"Guard eval latency = ([\d.]+) us", self.text)
        return float(m.group(1)) if m else None


def guard_trees(fn, *args, dynamic=None, **kwargs) -> list[GuardTree]:
    """Compile ``fn`` (backend "eager") and return the guard tree of each compiled frame (ch05)."""
    import torch

    clear_compile_state()
    with capture_logs("guards") as logs:
        torch.compile(fn, backend="eager", dynamic=dynamic)(*args, **kwargs)
    return _split_trees(logs)


def _split_trees(logs: Logs) -> list[GuardTree]:
    trees: list[str] = []
    for name, msg in logs.records:
        if name != "guards":
            continue
        if "TREE_GUARD_MANAGER" in msg:
            trees.append(msg)
        elif "Guard eval latency" in msg and trees:  # printed as its own message after the tree
            trees[-1] += "\n" + msg
    return [GuardTree(t) for t in trees]


def recompile_reasons(logs: Logs) -> list[list[str]]:
    """For each recompile in a captured ``recompiles`` log, the failed guards (``0/0: n == 3``) (ch05)."""
    out = []
    for name, msg in logs.records:
        if name != "recompiles" or "Recompiling" not in msg:
            continue
        out.append([re.sub(r"\s+#.*$", "", m.group(1)).strip()
                     for m in re.finditer(r"^\s*- (\d+/\d+: .*)$", msg, re.M)])
    return out


def source_name(source) -> str:
    """The guard-language name of a Source (``L['x']``); ``name`` is a method or a property by version (ch05)."""
    name = source.name
    return name() if callable(name) else name


def local_source(name: str):
    """``LocalSource(name)``: a local variable of the frame, printed ``L['name']`` (ch05)."""
    return private("torch._dynamo.source.LocalSource")(name)


def global_source(name: str):
    """``GlobalSource(name)``: a global of the frame's module, printed ``G['name']`` (ch05)."""
    return private("torch._dynamo.source.GlobalSource")(name)


def attr_source(base, attr: str):
    """``AttrSource(base, attr)``: ``base.attr`` (ch05)."""
    return private("torch._dynamo.source.AttrSource")(base, attr)


def item_source(base, index):
    """``GetItemSource(base, index)``: ``base[index]`` (ch05)."""
    return private("torch._dynamo.source.GetItemSource")(base, index)


def input_kinds(gm) -> dict[str, str]:
    """What each input of a Dynamo graph was while tracing: ``{"L_s_": "Tensor float64 []", "L_n_": "SymInt"}`` (ch05)."""
    out = {}
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if hasattr(value, "dtype") and hasattr(value, "shape"):
            out[str(node.target)] = f"Tensor {str(value.dtype).replace('torch.', '')} {list(value.shape)}"
        else:
            out[str(node.target)] = type(value).__name__
    return out

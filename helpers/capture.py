"""What Dynamo leaves in the frame: replayed side effects, compiled-graph globals, pruned inputs (ch07, ch08).

The functions here read the bytecode Dynamo installed for a frame (``helpers.inspect.transformed_code``)
or watch the OutputGraph prune unused inputs; graphs are recorded with ``helpers.inspect.GraphRecorder``.
The private accesses go through ``helpers.inspect.private``.
"""
from __future__ import annotations

import dis
import re
from contextlib import contextmanager
from dataclasses import dataclass

from .inspect import private

# ---------------------------------------------------------------- the bytecode Dynamo installed


def replay_instructions(code) -> list[dis.Instruction]:
    """The instructions after the compiled graph's call: unpacking outputs and replaying side effects (ch07)."""
    instrs = list(dis.get_instructions(code))
    start = 0
    for i, ins in enumerate(instrs):
        if ins.opname.startswith("STORE") and str(ins.argval).startswith("graph_out"):
            start = i + 1
            break
    return instrs[start:]


def show_instructions(instrs, width: int = 72) -> str:
    """A compact listing of instructions: ``OPNAME  argument``, one per line (ch07)."""
    lines = []
    for ins in instrs:
        arg = "" if ins.arg is None else repr(ins.argval) if isinstance(ins.argval, str) else str(ins.argrepr or ins.argval)
        if "__compiled_fn" in arg:
            arg = "'__compiled_fn_…'"
        lines.append(f"  {ins.opname:<22} {arg}"[:width].rstrip())
    return "\n".join(lines)


def attribute_writes(code, name: str) -> int:
    """How many times ``code`` writes attribute ``name`` (``STORE_ATTR name`` or a setattr call with ``'name'``) (ch07)."""
    count = 0
    for ins in dis.get_instructions(code):
        if ins.opname == "STORE_ATTR" and ins.argval == name:
            count += 1
        elif ins.opname == "LOAD_CONST" and ins.argval == name:
            count += 1
    return count


def attribute_setter(code, name: str) -> str:
    """How ``code`` writes attribute ``name``: ``object_setattr_ignore_descriptor``, ``object.__setattr__``,
    ``STORE_ATTR``, or ``none`` (ch07)."""
    instrs = list(dis.get_instructions(code))
    if not any((i.opname == "LOAD_CONST" and i.argval == name) or (i.opname == "STORE_ATTR" and i.argval == name)
               for i in instrs):
        return "none"
    if any(i.opname == "STORE_ATTR" and i.argval == name for i in instrs):
        return "STORE_ATTR"
    names = {i.argval for i in instrs if isinstance(i.argval, str)}
    if "object_setattr_ignore_descriptor" in names:
        return "object_setattr_ignore_descriptor"
    if "__setattr__" in names:
        return "object.__setattr__"
    return "setattr"


def opnames(code) -> list[str]:
    """The sequence of opcode names of ``code``, arguments dropped, to compare the shape of two codes (ch07)."""
    return [ins.opname for ins in dis.get_instructions(code)]


def mentions(code, name: str) -> bool:
    """Whether any instruction of ``code`` loads or names ``name`` (global, attribute, method, constant) (ch07)."""
    return any(isinstance(ins.argval, str) and ins.argval == name for ins in dis.get_instructions(code))


def compiled_fn_names(namespace: dict) -> list[str]:
    """The ``__compiled_fn_…`` globals Dynamo installed in a namespace, in compile order (ch08)."""

    def number(name: str) -> int:
        m = re.match(r"__compiled_fn_(\d+)", name)
        return int(m.group(1)) if m else -1

    return sorted((k for k in namespace if k.startswith("__compiled_fn")), key=lambda k: (number(k), k))


# ---------------------------------------------------------------- OutputGraph: pruning unused inputs


@dataclass
class PruneRecord:
    """Graph inputs of one compilation before and after ``OutputGraph.remove_unused_graphargs``."""

    before: list[str]
    after: list[str]

    @property
    def pruned(self) -> list[str]:
        return [p for p in self.before if p not in self.after]


@contextmanager
def watch_pruning():
    """Record the placeholders of every graph before and after Dynamo prunes unused inputs (ch08).

    Wraps ``torch._dynamo.output_graph.OutputGraph.remove_unused_graphargs`` while the block runs.
    """
    from .env import CourseError

    cls = private("torch._dynamo.output_graph.OutputGraph")
    original = getattr(cls, "remove_unused_graphargs", None)
    if original is None:
        raise CourseError("helpers needs `torch._dynamo.output_graph.OutputGraph.remove_unused_graphargs`, "
                          "which this torch does not have; report it so helpers/capture.py can follow the move.")
    records: list[PruneRecord] = []

    def names(graph):
        return [str(n.target) for n in graph.nodes if n.op == "placeholder"]

    def wrapped(self, *args, **kwargs):
        before = names(self.graph)
        out = original(self, *args, **kwargs)
        records.append(PruneRecord(before, names(self.graph)))
        return out

    cls.remove_unused_graphargs = wrapped
    try:
        yield records
    finally:
        cls.remove_unused_graphargs = original


# ---------------------------------------------------------------- drawing an FX graph


def graph_layers(gm) -> dict[str, int]:
    """Each node's depth: 0 for inputs, 1 + the deepest input for the others (the output last) (ch08)."""
    depth: dict[str, int] = {}
    for n in gm.graph.nodes:
        parents = [a.name for a in n.all_input_nodes]
        depth[n.name] = 0 if n.op == "placeholder" else 1 + max((depth[p] for p in parents), default=0)
    return depth


def draw_graph(gm, ax) -> None:
    """Draw an FX graph on matplotlib axes: one column per depth, inputs left, output right (ch08)."""
    from .plots import PALETTE

    depth = graph_layers(gm)
    nodes = list(gm.graph.nodes)
    columns: dict[int, list] = {}
    for n in nodes:
        columns.setdefault(depth[n.name], []).append(n)
    pos = {}
    for d, col in columns.items():
        for i, n in enumerate(col):
            pos[n.name] = (d, (len(col) - 1) / 2 - i)
    colors = {"placeholder": PALETTE["alt"], "output": PALETTE["extra"]}
    for n in nodes:
        x1, y1 = pos[n.name]
        for p in n.all_input_nodes:
            x0, y0 = pos[p.name]
            ax.annotate("", xy=(x1 - 0.18, y1), xytext=(x0 + 0.18, y0),
                        arrowprops=dict(arrowstyle="->", color="0.4", lw=1))
    for n in nodes:
        x, y = pos[n.name]
        label = n.name if n.op != "placeholder" else str(n.target)
        if n.op.startswith("call") and _target_name(n.target) != n.name:
            label = f"{n.name}\n{_target_name(n.target)}"
        ax.text(x, y, label, ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round,pad=0.35", fc=colors.get(n.op, PALETTE["compiled"]), ec="none", alpha=0.25))
    ax.set_xlim(-0.6, max(depth.values()) + 0.6)
    ys = [y for _, y in pos.values()]
    ax.set_ylim(min(ys) - 0.8, max(ys) + 0.8)
    ax.set_xticks(range(max(depth.values()) + 1))
    ax.set_yticks([])
    ax.grid(False)
    ax.spines["left"].set_visible(False)


def _target_name(target) -> str:
    name = getattr(target, "__name__", None) or str(target)
    return name

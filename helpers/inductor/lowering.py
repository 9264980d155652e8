"""Lowering: the table that maps each ATen operator to Inductor IR, its fallbacks, the loop-level IR read
back from Inductor's ``ir_pre_fusion.txt`` / ``ir_post_fusion.txt``, and a toy define-by-run ``ops``
handler that shows how one ``inner_fn`` is read in several ways (ch18).

Private names (``torch._inductor.lowering.lowerings`` / ``fallbacks``) are reached through
``helpers.core.private``; the IR text is parsed loosely (regular expressions on ``var_ranges``,
``index``, ``ops.*`` calls), since its format changes between releases. Works on torch 2.11, 2.13, 2.15.
"""
from __future__ import annotations

import re
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..core.private import private
from . import cpp_backend
from .code import InductorOutput
from .stages import debug_dump

# ---------------------------------------------------------------------------------------------------
# The lowering table


FATES = ("pointwise (make_pointwise)", "reduction (make_reduction)", "template or extern kernel",
         "other lowering function", "fallback to the eager kernel")


@dataclass
class Lowering:
    """Where one ATen overload goes in Inductor (ch18)."""

    op: str
    in_table: bool
    fallback: bool
    function: str       # the lowering function's qualified name ("make_pointwise.<locals>.inner", "sum_")
    module: str         # where it is defined ("torch._inductor.lowering", "torch._inductor.kernel.mm")
    fate: str


def _fate(op, fn, fallbacks) -> str:
    """Judged from the registered function: ``fallback_handler`` wraps the eager kernel; an op can be in
    ``fallbacks`` and still have a real lowering registered after its fallback (``aten.cumsum``)."""
    qual, mod = getattr(fn, "__qualname__", ""), getattr(fn, "__module__", "") or ""
    if qual.startswith("fallback_handler"):
        return FATES[4]
    if qual.startswith(("make_pointwise", "make_foreach_pointwise")):
        return FATES[0]
    if qual.startswith("make_reduction"):
        return FATES[1]
    if mod.startswith("torch._inductor.kernel"):
        return FATES[2]
    return FATES[3]


def lowering_of(op) -> Lowering:
    """Look ``op`` (an ``OpOverload`` such as ``torch.ops.aten.relu.default``) up in Inductor's table (ch18)."""
    lowerings = private("torch._inductor.lowering.lowerings")
    fallbacks = private("torch._inductor.lowering.fallbacks")
    fn = lowerings.get(op)
    return Lowering(str(op), fn is not None, op in fallbacks, getattr(fn, "__qualname__", "") if fn else "",
                    (getattr(fn, "__module__", "") or "") if fn else "", _fate(op, fn, fallbacks) if fn else "none")


@dataclass
class LoweringTable:
    """The size of ``lowerings`` and the fate of every ``OpOverload`` in it (ch18)."""

    entries: int                    # len(lowerings): overloads, overload packets and higher-order ops
    overloads: int                  # entries that are OpOverloads (what a graph's nodes call)
    fallbacks: int                  # len(fallbacks): ops given a fallback (make_fallback)
    overridden: int                 # of those, ops whose registered lowering is not the fallback handler
    fates: dict = field(default_factory=dict)   # fate -> number of OpOverloads


def lowering_table() -> LoweringTable:
    """Count Inductor's lowering table by kind and by fate (ch18)."""
    import torch

    lowerings = private("torch._inductor.lowering.lowerings")
    fallbacks = private("torch._inductor.lowering.fallbacks")
    overloads = [op for op in lowerings if isinstance(op, torch._ops.OpOverload)]
    fates = Counter(_fate(op, lowerings[op], fallbacks) for op in overloads)
    overridden = sum(1 for op in fallbacks
                     if op in lowerings and not getattr(lowerings[op], "__qualname__", "").startswith("fallback_handler"))
    return LoweringTable(len(lowerings), len(overloads), len(fallbacks), overridden,
                         {f: fates.get(f, 0) for f in FATES})


def unroll_reductions_threshold() -> int:
    """``config.unroll_reductions_threshold``: reductions over fewer elements become unrolled ``Pointwise`` nodes (ch18)."""
    return int(private("torch._inductor.config").unroll_reductions_threshold)


def index_answer(answer, actual: str):
    """The reader's index expression set against ``actual`` (exercise 18.1): ``actual`` itself when the two
    are equal as ``sympy`` expressions (``32*p1 + p0`` is ``p0 + 32*p1``), else the reader's text."""
    import sympy

    if answer is None:
        return None
    try:
        names = {n: sympy.Symbol(n, integer=True) for n in ("p0", "p1", "p2")}
        same = sympy.simplify(sympy.sympify(str(answer), locals=names) - sympy.sympify(actual, locals=names)) == 0
    except (sympy.SympifyError, SyntaxError, TypeError, ValueError):
        same = False
    return actual if same else str(answer)


def range_answer(answer):
    """The reader's range as an element count (exercise 18.1): an integer stays itself, a tuple or list of
    sizes such as the dump's ``(32,)`` or ``(4, 8)`` becomes the product of its sizes; anything else is
    returned unchanged (and so judged wrong)."""
    if isinstance(answer, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in answer):
        return _prod(answer)
    return answer


def in_inductor_decompositions(op) -> bool:
    """Whether Inductor's decomposition table (``select_decomp_table``) rewrites ``op`` before lowering (ch18)."""
    return op in private("torch._inductor.decomposition.select_decomp_table")()


# ---------------------------------------------------------------------------------------------------
# Loop-level IR, read back from the debug dump


@dataclass
class IRNode:
    """One scheduler node of ``ir_pre_fusion.txt`` / ``ir_post_fusion.txt`` (ch18)."""

    name: str                       # op0, op1, op0_op1 (fused)
    kind: str                       # SchedulerNode(ComputedBuffer), FusedSchedulerNode(...), ...
    iteration: str                  # "((64,), (32,))": (output ranges, reduction ranges)
    var_ranges: dict = field(default_factory=dict)    # {"p0": 64, "p1": 32}
    indexes: dict = field(default_factory=dict)       # {"index0": "32*p0 + p1", ...}
    ops: list = field(default_factory=list)           # ops.* calls in the body, in order
    loads: list = field(default_factory=list)         # (buffer, index expression)
    stores: list = field(default_factory=list)        # (buffer, index expression)
    reduction: str | None = None    # 'sum', 'max', ... or None
    writes: list = field(default_factory=list)        # buffers written
    users: int = 0                  # NodeUser entries of its output buffer(s)

    @property
    def is_reduction(self) -> bool:
        return self.reduction is not None

    @property
    def output_range(self) -> int:
        return _prod(self._groups()[0])

    @property
    def reduction_range(self) -> int:
        return _prod(self._groups()[1])

    def _groups(self):
        m = re.match(r"\(\((.*?)\),\s*\((.*?)\)\)", self.iteration)
        if not m:
            return [], []
        return tuple([int(v) for v in re.findall(r"\d+", g)] for g in m.groups())

    def body(self) -> str:
        return "\n".join(self._body)

    _body: list = field(default_factory=list, repr=False)


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


_NODE_HEAD = re.compile(r"^(\w+): (\w+(?:\([\w,]*\))?)$", re.M)
# A fused node's parts follow it, each after a line `op0_op1.snodes[0] =` (written flush left on the
# torch versions we verify, although FusedSchedulerNode.debug_str_extra means to indent them; indented
# lines are never read as heads).
_PART_OF = re.compile(r"(\w+)\.snodes\[\d+\] =\s*$")


def read_ir(text: str) -> list[IRNode]:
    """Parse the scheduler nodes of an IR dump (``ir_pre_fusion.txt`` or ``ir_post_fusion.txt``) (ch18).

    A fused node counts once: the nodes it is made of (``snodes``) are not listed beside it.
    """
    heads = list(_NODE_HEAD.finditer(text))
    nodes = []
    for i, head in enumerate(heads):
        before = text[:head.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if _PART_OF.search(before):
            continue
        chunk = text[head.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        name = head.group(1)
        node = IRNode(name, head.group(2), _first(rf"{name}\.group\.iteration = (.*)", chunk) or "")
        ranges = re.findall(r"var_ranges = \{(.*?)\}", chunk)
        if ranges:
            node.var_ranges = {k: int(v) for k, v in re.findall(r"(\w+): (\d+)", ranges[0])}
        node.indexes = dict(re.findall(r"^\s*(index\d+) = (.*)$", chunk, re.M))
        node._body = [l.strip() for l in chunk.splitlines() if re.search(r"= ops\.\w+\(", l)]
        node.ops = [re.search(r"ops\.(\w+)\(", l).group(1) for l in node._body]
        gets = dict(re.findall(r"(get_index(?:_\d+)?) = self\.get_index\('(index\d+)'\)", chunk))
        for l in node._body:
            m = re.search(r"ops\.(load|store|store_reduction)\('(\w+)', (\w+)", l)
            if m:
                where = node.indexes.get(gets.get(m.group(3), ""), m.group(3))
                (node.loads if m.group(1) == "load" else node.stores).append((m.group(2), where))
        red = re.search(r"ops\.reduction\([^']*'(\w+)'", chunk)
        node.reduction = red.group(1) if red else None
        node.writes = re.findall(r"MemoryDep\('(\w+)'", _first(rf"{name}\.writes = (.*)", chunk) or "")
        node.users = len(re.findall(r"NodeUser\(", chunk.split("class ")[0]))
        nodes.append(node)
    return nodes


def _first(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text)
    return m.group(1).strip() if m else None


@dataclass
class LoopIR:
    """A function's loop-level IR before and after the scheduler's fusion, and the code it became (ch18)."""

    pre: list[IRNode]
    post: list[IRNode]
    pre_text: str
    post_text: str
    code: InductorOutput
    result: object


def loop_ir(fn, *args, codegen: bool = True) -> LoopIR:
    """Compile ``fn(*args)`` with Inductor and read its IR dumps (``ir_pre_fusion``/``ir_post_fusion``) (ch18).

    One compile; a function Dynamo splits into several graphs gives the IR of the first. With
    ``codegen=False`` Inductor stops after scheduling: no kernel is written (``code`` is empty).
    """
    if codegen and cpp_backend.on_cpu(args):
        cpp_backend.probe_vec_isas_at_once()  # the ISA tests side by side, before the first C++ build
    dump = debug_dump(fn, *args, codegen=codegen)
    pre, post = dump.read("ir_pre_fusion.txt"), dump.read("ir_post_fusion.txt")
    return LoopIR(read_ir(pre), read_ir(post), pre, post, dump.code, dump.result)


def node_block(text: str, name: str, keep=("var_ranges", "index", "ops.")) -> str:
    """One node's lines of an IR dump, trimmed to its iteration, ranges, indexes and body (ch18)."""
    out, inside = [], False
    for line in text.splitlines():
        if re.match(r"^\w+: \w+", line):
            inside = line.startswith(f"{name}:")
            if inside:
                out.append(line)
            continue
        if inside and (f"{name}.group.iteration" in line or f"{name}.writes" in line
                       or any(k in line for k in keep) or line.startswith("class ")):
            out.append(line)
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------
# A toy define-by-run IR: the same inner_fn, read by different ops handlers


class _OpsProxy:
    """``ops.<name>(...)`` forwards to whichever handler is installed (Inductor's ``V.ops``, in miniature)."""

    def __getattr__(self, name):
        return getattr(_HANDLER[-1], name)


ops = _OpsProxy()
_HANDLER: list = []


@contextmanager
def use_ops(handler):
    """Install ``handler`` as what ``ops.*`` calls reach, for the block (ch18)."""
    _HANDLER.append(handler)
    try:
        yield handler
    finally:
        _HANDLER.pop()


def run_inner_fn(inner_fn, handler, index=("i",)):
    """Call ``inner_fn(index)`` with ``handler`` installed and return what it returned (ch18)."""
    with use_ops(handler):
        return inner_fn(list(index))


class PrintOps:
    """A handler that writes each call down as a line of code (like the body in ``ir_pre_fusion.txt``)."""

    def __init__(self):
        self.lines: list[str] = []

    def _emit(self, text: str) -> str:
        name = f"tmp{len(self.lines)}"
        self.lines.append(f"{name} = {text}")
        return name

    def load(self, buf, index):
        return self._emit(f"ops.load({buf!r}, {_idx(index)})")

    def store(self, buf, index, value):
        return self._emit(f"ops.store({buf!r}, {_idx(index)}, {value})")

    def reduction(self, kind, value):
        return self._emit(f"ops.reduction({kind!r}, {value})")

    def __getattr__(self, name):  # every other op: add, mul, relu, constant, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args: self._emit(f"ops.{name}({', '.join(map(str, args))})")

    def text(self) -> str:
        return "\n".join(self.lines)


class CountOps:
    """A handler that only counts: loads and stores by buffer, and every op by name (read/write analysis)."""

    def __init__(self):
        self.reads: Counter = Counter()
        self.writes: Counter = Counter()
        self.ops: Counter = Counter()

    def load(self, buf, index):
        self.reads[buf] += 1
        self.ops["load"] += 1

    def store(self, buf, index, value):
        self.writes[buf] += 1
        self.ops["store"] += 1

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)

        def op(*args):
            self.ops[name] += 1
        return op


class EvalOps:
    """A handler that computes: loads read Python lists, ops are Python arithmetic (a tiny 'backend')."""

    FUNCS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
             "relu": lambda a: max(a, 0.0), "neg": lambda a: -a, "constant": lambda v: v}

    def __init__(self, buffers: dict):
        self.buffers = {k: list(v) for k, v in buffers.items()}

    def load(self, buf, index):
        return self.buffers[buf][_flat(index)]

    def store(self, buf, index, value):
        self.buffers.setdefault(buf, {})
        self.buffers[buf][_flat(index)] = value
        return value

    def reduction(self, kind, values):
        return {"sum": sum, "max": max}[kind](values)

    def __getattr__(self, name):
        if name in self.FUNCS:
            return self.FUNCS[name]
        raise AttributeError(f"EvalOps has no op {name!r}")


def _idx(index) -> str:
    return " + ".join(str(i) for i in index) if isinstance(index, (list, tuple)) else str(index)


def _flat(index):
    return index[0] if isinstance(index, (list, tuple)) else index


def count_loads(handler_cls, inner_fn, index=("i",)) -> int | str:
    """Run ``inner_fn`` under a fresh ``handler_cls()`` and return its ``loads`` attribute (an exercise check) (ch18)."""
    handler = handler_cls()
    run_inner_fn(inner_fn, handler, index)
    return handler.loads

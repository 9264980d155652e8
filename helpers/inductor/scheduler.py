"""Inductor's scheduler seen from outside: its nodes before and after fusion, their memory dependencies,
the fusion log, and what the generated code does with the result (ch19; ch20 builds on it).

``schedule(fn, *args)`` compiles ``fn`` with Inductor once and returns a ``Schedule``: the scheduler nodes
``Scheduler.fuse_nodes`` received (kind, IR type, origins, ``MemoryDep`` reads and writes, unmet
dependencies, ``group``), the groups it returned, the ``fusion`` and ``loop_ordering`` log lines, the
generated code, its loop nests (C++) or launches (Triton), and a bytes-moved model of the schedule.
Results are cached per (function, inputs' shapes, device, config), so a chapter pays each compile once.
Private names (``torch._inductor.scheduler.Scheduler.fuse_nodes``, ``torch._inductor.config``,
``torch._inductor.utils.run_and_get_code``) are reached through ``helpers.core.private.private``; they exist
on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import contextlib
import re
import warnings
from dataclasses import dataclass, field

from ..core.private import private
from ..dynamo.logs import capture_logs
from ..dynamo.state import clear_compile_state
from . import cpp_backend
from .code import InductorOutput, kernel_summary


@dataclass
class NodeInfo:
    """One scheduler node as ``fuse_nodes`` received it (ch19)."""

    name: str
    kind: str            # SchedulerNode, ExternKernelSchedulerNode, NopKernelSchedulerNode, ...
    ir: str              # Pointwise, Reduction, or the extern kernel's name
    origins: list[str]   # the FX nodes this IR node was lowered from
    reads: list[str]     # MemoryDep / StarDep reprs
    writes: list[str]
    unmet: list[str]     # buffers produced by other scheduler nodes
    group: str           # (iteration sizes, reduction sizes)
    buffers: list[str] = field(default_factory=list)  # the buffers it writes (its read_writes.writes)

    def line(self) -> str:
        """A one-line description: name, kind, IR type, origins and unmet dependencies (ch19)."""
        unmet = f"  unmet {self.unmet}" if self.unmet else ""
        return f"{self.name}: {self.kind}, {self.ir}, origins {self.origins}{unmet}"


@dataclass
class GroupTraffic:
    """Bytes one post-fusion node reads from and writes to memory, in the scheduler's terms (ch19)."""

    names: list[str]
    read: int
    written: int


@dataclass
class Schedule:
    """What the scheduler did with one compiled function, and the code it led to (ch19, ch20)."""

    pre: list[NodeInfo]
    post: list[list[str]]            # the node names in each group fuse_nodes returned
    post_kinds: list[str]
    log: list[str]                   # fusion + loop_ordering lines, candidate dumps left out
    code: InductorOutput
    traffic: list[GroupTraffic] = field(default_factory=list)
    seconds: float = 0.0

    _SHARED = re.compile(r"^(\w+) and (\w+) has (\d+) shared data$")

    @property
    def shared_data(self) -> dict[tuple[str, str], int]:
        """The last "A and B has N shared data" score logged for each pair (ch19)."""
        out = {}
        for line in self.log:
            m = self._SHARED.match(line)
            if m:
                out[(m.group(1), m.group(2))] = int(m.group(3))
        return out

    @property
    def possible_fusions(self) -> list[int]:
        """The "found N possible fusions" count of every round, in order (ch19)."""
        return [int(m.group(1)) for line in self.log if (m := re.match(r"found (\d+) possible fusions", line))]

    @property
    def reduction_nodes(self) -> int:
        """How many pre-fusion nodes are reductions; a reduction lowering split in two counts twice (ch19, ch20)."""
        return sum(n.ir == "Reduction" for n in self.pre)

    @property
    def stored_values(self) -> list[list[str]]:
        """The origins of each pointwise node whose buffer another pre-fusion node reads: a value lowering
        stored in a buffer of its own (realized) instead of inlining it into its readers (ch19, ch20)."""
        read = {u for n in self.pre for u in n.unmet}
        return [n.origins for n in self.pre if n.ir == "Pointwise" and set(n.buffers) & read]

    @property
    def stored_readers(self) -> list[NodeInfo]:
        """The pre-fusion nodes that read a value in ``stored_values`` (its buffer is one of their unmet
        dependencies): who uses a value lowering realized (ch19, ch20)."""
        read = {u for n in self.pre for u in n.unmet}
        stored = {b for n in self.pre if n.ir == "Pointwise" for b in n.buffers if b in read}
        return [n for n in self.pre if set(n.unmet) & stored]

    def stored_readers_text(self) -> str:
        """``stored_readers`` as one line, e.g. ``"op3 (add+relu)"``; ``"none"`` when nothing was stored (ch19)."""
        return ", ".join(f"{n.name} ({'+'.join(n.origins)})" for n in self.stored_readers) or "none"

    @property
    def stores(self) -> int:
        """Store instructions left in all the generated kernels (``tl.store`` in Triton; ``kernel_summary``'s
        count in C++). A store of a buffer whose users all ended up in the same kernel is dropped when the
        kernel is written (``Kernel.remove_kernel_local_buffers``), so it is not counted (ch19, ch20)."""
        return sum(kernel_summary(self.code, k).stores for k in self.kernels)

    def stored_text(self) -> str:
        """``stored_values`` as one line, e.g. ``"sin"`` or ``"exp+sub; sin"``; ``"none"`` when nothing was (ch19)."""
        return "; ".join("+".join(o) for o in self.stored_values) or "none"

    @property
    def fusions(self) -> list[str]:
        """The "fusing A with B" decisions, in order (ch19)."""
        return [line[len("fusing "):] for line in self.log if line.startswith("fusing ")]

    @property
    def rejections(self) -> list[str]:
        """The "cannot fuse A with B: reason" lines, without repeats (ch19, ch20)."""
        return list(dict.fromkeys(line for line in self.log if line.startswith("cannot fuse")))

    @property
    def rounds(self) -> int:
        """Fusion rounds ``fuse_nodes`` ran (from its "completed fusion round" lines) (ch19)."""
        return sum(1 for line in self.log if line.startswith("completed fusion round"))

    @property
    def reorder_round(self) -> list[str]:
        """The log of the extra round ``fuse_nodes`` runs after the ordinary ones, with loop reordering and
        index inversion allowed (``fuse_nodes_once(..., is_reorder_round=True)``); [] when it did not run (ch19)."""
        done = [i for i, line in enumerate(self.log) if line.startswith("===== fusion complete")]
        return self.log[done[-1] + 1:] if done else []

    @property
    def reorder_fusions(self) -> list[str]:
        """The "fusing A with B" decisions of the extra reorder round only (ch19)."""
        return [line[len("fusing "):] for line in self.reorder_round if line.startswith("fusing ")]

    @property
    def kernels(self) -> list[str]:
        return self.code.kernels

    @property
    def language(self) -> str | None:
        return self.code.kernel_language

    @property
    def loop_nests(self) -> int:
        """Outermost loops in the generated C++ kernels (0 for Triton code) (ch19)."""
        if self.language != "c++":
            return 0
        return sum(loop_nests(self.code.kernel_source(k)) for k in self.kernels)

    @property
    def outer_loops(self) -> list[str]:
        """The header line of each outermost C++ loop, in the order the kernels run them (ch19)."""
        if self.language != "c++":
            return []
        return [line for k in self.kernels for line in outer_loops(self.code.kernel_source(k))]

    @property
    def launches(self) -> int:
        """Generated kernels the wrapper's ``call()`` runs (``.run(`` on a GPU; C++ function calls on a CPU) (ch19)."""
        return self.code.launches

    @property
    def kernel_count(self) -> int:
        """Loop nests on a CPU, launches on a GPU: the units of work the schedule became (ch19, ch20)."""
        return self.loop_nests if self.language == "c++" else self.launches

    @property
    def extern_calls(self) -> int:
        """Calls to ``extern_kernels.*`` (library kernels such as mm) in ``call()`` (ch20)."""
        return len(re.findall(r"\bextern_kernels\.\w+\(", self.code.call_function()))

    @property
    def allocations(self) -> list[str]:
        """The shapes of the buffers ``call()`` allocates, e.g. ``["(1024, 1024)"]`` (ch19)."""
        return re.findall(r"empty_strided_\w+\((\([^)]*\))", self.code.call_function())

    @property
    def bytes_moved(self) -> int:
        """Bytes the fused schedule reads and writes, by the model of ``GroupTraffic`` (ch19, ch20)."""
        return sum(g.read + g.written for g in self.traffic)

    def describe(self) -> str:
        """The pre-fusion nodes, the fusion decisions and the code's shape, as printable lines (ch19)."""
        lines = [f"before fusion: {len(self.pre)} node(s)"]
        for n in self.pre:
            lines += ["  " + n.line(), f"    reads  {', '.join(n.reads)}", f"    writes {', '.join(n.writes)}",
                      f"    group  {n.group}"]
        lines.append(f"after fusion: {len(self.post)} node(s) {self.post}")
        lines += [f"  log: {line}" for line in self.log if _worth_showing(line)]
        unit = "loop nests" if self.language == "c++" else "launches"
        lines.append(f"code: kernels {self.kernels}; {unit} {self.kernel_count}; allocations {self.allocations}")
        return "\n".join(lines)


def _worth_showing(line: str) -> bool:
    return (line.startswith(("found ", "fusing ", "cannot fuse", "completed fusion round"))
            or " shared data" in line)


def loop_nests(cpp: str) -> int:
    """Count the outermost ``for`` loops in a C++ kernel's source (loops not inside another loop) (ch19)."""
    return len(outer_loops(cpp))


def outer_loops(cpp: str) -> list[str]:
    """The header lines of the outermost ``for`` loops in a C++ kernel's source, in order (ch19)."""
    depth, inside, pending, found = 0, [], False, []
    for line in cpp.splitlines():
        code = line.split("//")[0]
        if re.match(r"\s*for\s*\(", code):
            if not inside and not pending:
                found.append(code.strip())
            pending = True
        for ch in code:
            if ch == "{":
                depth += 1
                if pending:
                    inside.append(depth)
                    pending = False
            elif ch == "}":
                if inside and inside[-1] == depth:
                    inside.pop()
                depth -= 1
    return found


def _dep_bytes(dep) -> int:
    try:
        return int(dep.numbytes_hint())
    except Exception:  # a dependency on something without a size (WeakDep, a symbol)
        return 0


def _snapshot_pre(nodes) -> list[NodeInfo]:
    out = []
    for n in nodes:
        ir_node = getattr(n, "node", None)
        data = getattr(ir_node, "data", None)
        if data is not None and type(data).__name__ in ("Pointwise", "Reduction", "Scan", "Sort"):
            ir = type(data).__name__
        else:
            ir = (getattr(ir_node, "python_kernel_name", None) or type(ir_node).__name__)
        origins = sorted(str(getattr(o, "name", o)) for o in (getattr(ir_node, "origins", None) or ()))
        rw = n.read_writes
        out.append(NodeInfo(n.get_name(), type(n).__name__, str(ir), origins,
                            [repr(d) for d in rw.reads], [repr(d) for d in rw.writes],
                            sorted({d.name for d in n.unmet_dependencies}),
                            str(n.group[1]) if hasattr(n, "group") else "-",
                            sorted({d.name for d in rw.writes})))
    return out


def _group_traffic(group) -> GroupTraffic:
    """Reads from outside the group (each distinct buffer and index once) and writes that leave it."""
    snodes = list(group.get_nodes())
    members = {id(s) for s in snodes}
    written = {d.name for s in snodes for d in s.read_writes.writes}
    seen, read = set(), 0
    for s in snodes:
        for d in s.read_writes.reads:
            key = (d.name, repr(d.index) if type(d).__name__ == "MemoryDep" else type(d).__name__)
            if d.name in written or key in seen:
                continue
            seen.add(key)
            read += _dep_bytes(d)
    out = 0
    for s in snodes:
        for buf in s.get_outputs():
            users = getattr(buf, "users", [])
            if any(id(getattr(u, "node", None)) not in members for u in users) or not users:
                out += sum(_dep_bytes(d) for d in s.read_writes.writes if d.name == buf.get_name())
    return GroupTraffic([s.get_name() for s in snodes], read, out)


@contextlib.contextmanager
def _watch_fuse_nodes(sink: list):
    """Wrap ``Scheduler.fuse_nodes`` for the block, recording what it received and what it returned."""
    sched_cls = private("torch._inductor.scheduler.Scheduler")
    original = sched_cls.fuse_nodes

    def fuse_nodes(self, nodes):
        try:
            pre = _snapshot_pre(nodes)
        except Exception as exc:  # never let the observer break a compile
            pre = [NodeInfo(f"(not read: {exc})", "", "", [], [], [], [], "")]
        result = original(self, nodes)
        try:
            traffic = [_group_traffic(g) for g in result]
        except Exception:
            traffic = []
        sink.append((pre, [[s.get_name() for s in g.get_nodes()] for g in result],
                     [type(g).__name__ for g in result], traffic))
        return result

    sched_cls.fuse_nodes = fuse_nodes
    try:
        yield
    finally:
        sched_cls.fuse_nodes = original


def inductor_setting(name: str):
    """The current value of one ``torch._inductor.config`` setting, e.g. ``"max_fusion_size"`` (ch20)."""
    value = private("torch._inductor.config")
    for part in name.split("."):
        value = getattr(value, part)
    return value


_CACHE: dict = {}


def _key(fn, args, patches):
    shapes = tuple((tuple(a.shape), str(a.dtype), str(a.device)) if hasattr(a, "shape") else repr(a) for a in args)
    return (getattr(fn, "__code__", fn), shapes, tuple(sorted(patches.items())))


def schedule(fn, *args, cache: bool = True, **config_patches) -> Schedule:
    """Compile ``fn(*args)`` with Inductor (its caches off, so the scheduler really runs) and report (ch19).

    ``config_patches`` are ``torch._inductor.config`` settings for this compile (e.g. ``cpp__simdlen=1``
    for ``config.cpp.simdlen``). With CPU inputs the C++ is written for one thread (``cpp.threads=1``)
    unless a patch says otherwise. A result is cached per function, input shapes/devices and patches.
    """
    import time

    key = _key(fn, args, config_patches)
    if cache and key in _CACHE:
        return _CACHE[key]
    import torch

    config = private("torch._inductor.config")
    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    patches = {"force_disable_caches": True}
    if cpp_backend.on_cpu(args):
        patches["cpp.threads"] = 1  # C++ for one thread, as the course runs CPU code: no OpenMP loops
        cpp_backend.probe_vec_isas_at_once()  # the ISA tests side by side, before the timed compile
    patches.update({k.replace("__", "."): v for k, v in config_patches.items()})
    sink: list = []
    clear_compile_state()
    start = time.perf_counter()
    with warnings.catch_warnings(), config.patch(patches), _watch_fuse_nodes(sink), \
            capture_logs("fusion", "loop_ordering") as logs:
        warnings.filterwarnings("ignore", message=".*force disabled by torch.compiler.config.force_disable_caches")
        _, sources = run_and_get_code(torch.compile(fn), *args)
    seconds = time.perf_counter() - start
    clear_compile_state()
    if not sink:
        raise RuntimeError("Inductor's scheduler did not run: was the graph served from a cache?")
    pre, post, kinds, traffic = sink[-1]
    log = [line.strip() for line in logs.lines() if not line.startswith((" ", "\t", "'", '"'))
           and "stack_traces" not in line]
    out = Schedule(pre, post, kinds, log, InductorOutput(list(sources)), traffic, seconds)
    if cache:
        _CACHE[key] = out
    return out


def horizontal_check(fn, reference, n: int = 256):
    """Compile a reader's two-output function of one n×n input and report how the scheduler treated it (ch19).

    Returns None while ``fn`` is None, else ``(same values as reference, shared data > 0, groups after
    fusion, C++ loop nests)``.
    """
    if fn is None:
        return None
    import torch

    x = torch.randn(n, n)
    s = schedule(fn, x)
    got, want = fn(x), reference(x)
    same = len(got) == len(want) and all(torch.allclose(g, w) for g, w in zip(got, want))
    return same, any(v > 0 for v in s.shared_data.values()), len(s.post), s.loop_nests

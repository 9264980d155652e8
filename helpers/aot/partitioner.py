"""The joint graph and the partitioner: what the forward saves for the backward, what the backward
recomputes, and the activation-memory budget between the two extremes (chapter 15, ch15).

``partition`` compiles a function through AOTAutograd the way Inductor does (Inductor's decomposition
table, ``min_cut_rematerialization_partition(compiler="inductor")``) but runs the graphs as plain ATen
calls, and keeps the joint graph, the forward, the backward and the partitioner's decision as data.
``flow_network`` / ``hand_min_cut`` rebuild the max-flow problem for a small graph by hand (networkx).
Works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import math
import re
import warnings
from dataclasses import dataclass, field

from ..core.private import private
from ..dynamo.state import clear_compile_state

PARTITIONERS = ("min_cut", "default")


@dataclass
class SavedTensor:
    """One value the forward hands to the backward (ch15)."""

    name: str
    shape: tuple
    dtype: str
    nbytes: int
    new_storage: bool  # False: the input itself, or a view of an input (no new memory)
    storage: int = 0  # saved tensors with the same number share one storage (a tensor and its views)

    def describe(self) -> str:
        kind = "new storage" if self.new_storage else "an input or a view of one"
        return f"{self.name:<14} {self.dtype}{list(self.shape)}  {self.nbytes:>10,} B  ({kind})"


@dataclass
class Partition:
    """The joint graph and the forward/backward pair the partitioner cut from it (ch15)."""

    joint: object  # torch.fx.GraphModule, copied before the partitioner touched it
    forward: object
    backward: object
    num_fwd_outputs: int
    saved: list = field(default_factory=list)  # [SavedTensor], in the backward's input order
    compiled: object = None  # the compiled callable (graphs run as plain ATen ops)
    result: object = None

    @property
    def saved_names(self) -> list[str]:
        return [s.name for s in self.saved]

    @property
    def saved_bytes(self) -> int:
        """Bytes of new storage the saved tensors hold: inputs and views of inputs cost nothing, and a
        storage saved twice (a tensor and a view of it) counts once."""
        per_storage: dict = {}
        for s in self.saved:
            if s.new_storage:
                per_storage[s.storage] = max(per_storage.get(s.storage, 0), s.nbytes)
        return sum(per_storage.values())

    @property
    def saved_bytes_all(self) -> int:
        """Bytes of every saved tensor, inputs included: the partitioner's own measure (``_size_of``)."""
        return sum(s.nbytes for s in self.saved)

    @property
    def input_bytes(self) -> int:
        """Bytes of the joint graph's forward inputs (``primals_*``): what a full checkpoint keeps."""
        return sum(_nbytes(n.meta.get("val")) for n in self.joint.graph.nodes
                   if n.op == "placeholder" and n.name.startswith("primals"))

    @property
    def recomputed(self) -> list[str]:
        """Backward ops that repeat a forward op: both graphs are copied from the joint graph, and a
        copied node shares its original's traced value (``meta["val"]``). (The partitioner's debug log,
        ``# remat/fw/bw``, matches node names instead; torch 2.15 renames some copies, so names undercount.)"""
        fw_vals = {id(n.meta["val"]) for n in self.forward.graph.nodes
                   if n.op == "call_function" and n.meta.get("val") is not None}
        return [n.name for n in self.backward.graph.nodes
                if n.op == "call_function" and n.meta.get("val") is not None and id(n.meta["val"]) in fw_vals]

    def ops(self, which: str = "forward") -> list[str]:
        """Operation node names of ``joint`` / ``forward`` / ``backward``, in graph order."""
        return [n.name for n in getattr(self, which).graph.nodes if n.op == "call_function"]

    def placeholders(self, which: str = "backward") -> list[str]:
        return [n.name for n in getattr(self, which).graph.nodes if n.op == "placeholder"]

    def outputs(self, which: str = "forward") -> list[str]:
        """Names of the values a graph returns (``None`` for a missing gradient)."""
        out = next(n for n in getattr(self, which).graph.nodes if n.op == "output")
        args = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
        return [getattr(a, "name", str(a)) for a in args]

    def code(self, which: str = "forward", short: bool = True) -> str:
        """A graph's Python code; ``short`` drops the ``torch.ops.aten.`` prefix and the ``x = None``
        statements that free values early (they do not change what is computed)."""
        text = getattr(self, which).code.strip()
        if short:
            text = re.sub(r";\s+(?:\w+ = )+None", "", text).replace("torch.ops.aten.", "")
        return "\n".join(ln for ln in text.splitlines() if ln.strip())


def _nbytes(val) -> int:
    return int(val.numel()) * val.element_size() if hasattr(val, "element_size") else 0


def _saved(forward, backward) -> list[SavedTensor]:
    """The backward's non-tangent tensor inputs, sized from the forward's fake values."""
    from torch.multiprocessing.reductions import StorageWeakRef

    import torch

    fw_nodes = {n.name: n for n in forward.graph.nodes}
    inputs = [n for n in forward.graph.nodes if n.op == "placeholder"]
    input_storages = {StorageWeakRef(n.meta["val"].untyped_storage()) for n in inputs
                      if isinstance(n.meta.get("val"), torch.Tensor)}
    saved, storages = [], {}
    for n in backward.graph.nodes:
        if n.op != "placeholder" or n.name.startswith("tangents"):
            continue
        val = (fw_nodes.get(n.name) or n).meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue  # a saved symbolic size, not a tensor
        ref = StorageWeakRef(val.untyped_storage())
        storage = storages.setdefault(ref, len(storages))
        saved.append(SavedTensor(n.name, tuple(int(s) for s in val.shape), str(val.dtype).replace("torch.", ""),
                                 _nbytes(val), ref not in input_storages, storage))
    return saved


def functorch_config():
    """``torch._functorch.config`` (the partitioner's knobs live there)."""
    return private("torch._functorch.config")


@contextlib.contextmanager
def memory_budget(budget: float | None):
    """Set ``torch._functorch.config.activation_memory_budget`` for the compiles inside (ch15)."""
    if budget is None:
        yield
        return
    with functorch_config().patch(activation_memory_budget=float(budget)):
        yield


def budget_setting() -> float:
    """The current ``activation_memory_budget`` (1.0 unless someone changed it)."""
    return float(functorch_config().activation_memory_budget)


def partitioner_fn(which: str = "min_cut"):
    """The partition function ``torch.compile`` uses by default (``min_cut``) or eager's (``default``)."""
    if which == "min_cut":
        return functools.partial(private("torch._functorch.partitioners.min_cut_rematerialization_partition"),
                                 compiler="inductor")
    if which == "default":
        return private("torch._functorch.partitioners.default_partition")
    raise ValueError(f"partitioner must be one of {PARTITIONERS}, not {which!r}")


def partition(fn, *args, partitioner: str = "min_cut", budget: float | None = None, call: bool = True) -> Partition:
    """Compile ``fn`` through AOTAutograd with Inductor's decompositions and ``partitioner``; keep the graphs.

    The forward and backward graphs run as plain ATen calls (no Inductor code generation), so the
    decision is Inductor's partitioner's and the run is cheap. The min cut is called directly: Inductor's
    joint-graph passes (``partition_fn`` in ``torch/_inductor/compile_fx.py``: ``remove_noop_ops`` and the
    rest) do not run, so the joint graph keeps the ``alias`` nodes that chapter 12's ``capture_aot`` (which
    calls ``partition_fn``) shows removed. ``budget`` sets
    ``activation_memory_budget`` for this compile and for any recompile of ``Partition.compiled``
    (another ``partition`` resets Dynamo, so its next call compiles again). ``call=False`` returns
    before calling (the graphs appear on the first call).
    """
    import torch

    aot_autograd = private("torch._dynamo.backends.common.aot_autograd")
    make_boxed_func = private("torch._functorch.aot_autograd.make_boxed_func")
    decompositions = private("torch._inductor.decomposition.select_decomp_table")
    split = partitioner_fn(partitioner)
    box: dict = {}

    def recording_partition(joint_module, joint_inputs, **kwargs):
        with warnings.catch_warnings():  # deepcopy of pytree specs warns on some torch versions
            warnings.simplefilter("ignore", FutureWarning)
            box["joint"] = copy.deepcopy(joint_module)
        box["num_fwd_outputs"] = kwargs.get("num_fwd_outputs")
        fw, bw = split(joint_module, joint_inputs, **kwargs)
        box["forward"], box["backward"] = fw, bw
        return fw, bw

    def nop(gm, example_inputs):
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=nop, bw_compiler=nop, partition_fn=recording_partition,
                           decompositions=decompositions())
    clear_compile_state()
    dynamo_compiled = torch.compile(fn, backend=backend)

    def compiled(*call_args):
        # Under the same budget on every call: a later partition() resets Dynamo, and the recompile
        # this wrapper then triggers must cut the graph the same way.
        with memory_budget(budget):
            return dynamo_compiled(*call_args)

    result = compiled(*args) if call else None
    if "forward" not in box:
        return Partition(None, None, None, 0, [], compiled, result)
    return Partition(box["joint"], box["forward"], box["backward"], box["num_fwd_outputs"],
                     _saved(box["forward"], box["backward"]), compiled, result)


def dropout_mask_consistent(x, w, budget: float | None = None, p: float = 0.5) -> bool:
    """Does the backward apply the dropout mask the forward drew? (ch15)

    Partitions ``dropout(tanh(x @ w), p).sum()`` under ``budget`` (as ``partition`` does: Inductor's
    decompositions and min cut, the graphs run as plain ATen calls on ``x``'s device), returns the mask
    the forward used as a second output, and compares ``w``'s compiled gradient with the gradient that
    mask gives, ``x.T @ (mask / (1 - p) * (1 - tanh(x @ w) ** 2))``. False when the backward draws the
    random numbers again (torch 2.11-2.15 below budget 1: pytorch/pytorch#190758).
    """
    import torch

    def with_mask(x, w):
        d = torch.nn.functional.dropout(torch.tanh(x @ w), p=p, training=True)
        return d.sum(), (d != 0).to(x.dtype)

    w1 = w.detach().clone().requires_grad_()
    part = partition(with_mask, x, w1, budget=budget)
    loss, mask = part.result
    loss.backward()
    with torch.no_grad():
        t = torch.tanh(x @ w.detach())
        expected = x.t() @ (mask / (1 - p) * (1 - t * t))
    return bool(torch.allclose(w1.grad, expected, rtol=1e-2, atol=1e-2))  # a wrong mask is off by O(1)


def trimmed_code(gm, keep: int = 40) -> str:
    """A graph's Python code without blank lines, cut after ``keep`` lines with a note saying so."""
    lines = [ln for ln in gm.code.strip().splitlines() if ln.strip()]
    if len(lines) <= keep:
        return "\n".join(lines)
    return "\n".join(lines[:keep] + [f"    # ... {len(lines) - keep} more lines cut"])


def node_lines(gm, names=None) -> list[str]:
    """One line per operation node: ``name = target(args)`` with the shape and dtype of its value."""
    out = []
    for n in gm.graph.nodes:
        if n.op != "call_function" or (names is not None and n.name not in names):
            continue
        target = getattr(n.target, "__name__", str(n.target))
        args = ", ".join(getattr(a, "name", repr(a)) for a in n.args)
        val = n.meta.get("val")
        meta = f"{str(val.dtype).replace('torch.', '')}{list(val.shape)}" if hasattr(val, "shape") else ""
        out.append(f"{n.name} = {target}({args})  {meta}".rstrip())
    return out


def flow_network(capacities: dict, edges: list[tuple[str, str]], sources: list[str], sinks: list[str]):
    """A networkx flow network in the partitioner's form (ch15).

    Every graph node ``v`` becomes ``v_in -> v_out`` with ``capacities[v]`` (bytes to save it, or
    ``math.inf``: it cannot be saved); each data edge ``u -> v`` becomes ``u_out -> v_in`` (infinite);
    ``source -> v_in`` (infinite) for each node in ``sources`` (must be computed in the forward) and
    ``v_out -> sink`` for each node in ``sinks`` (the backward needs it).
    """
    import networkx as nx

    g = nx.DiGraph()
    for v, cap in capacities.items():
        g.add_edge(f"{v}_in", f"{v}_out", capacity=float(cap))
    for u, v in edges:
        g.add_edge(f"{u}_out", f"{v}_in", capacity=math.inf)
    for v in sources:
        g.add_edge("source", f"{v}_in", capacity=math.inf)
    for v in sinks:
        g.add_edge(f"{v}_out", "sink", capacity=math.inf)
    return g


def hand_min_cut(capacities: dict, edges, sources, sinks) -> tuple[float, list[str]]:
    """Minimum cut of ``flow_network(...)``: (its capacity, the saved nodes = the cut ``v_in -> v_out`` edges)."""
    import networkx as nx

    g = flow_network(capacities, edges, sources, sinks)
    value, (reach, _) = nx.minimum_cut(g, "source", "sink")
    saved = [v for v in capacities if f"{v}_in" in reach and f"{v}_out" not in reach]
    return value, saved


def budget_ratio(part: Partition, full: Partition) -> float:
    """Where ``part``'s saved set sits between a full checkpoint (0) and the min-cut set ``full`` (1),
    in the partitioner's own accounting (``get_mem_ratio`` in ``choose_saved_values_set``): every saved
    tensor counts, inputs included, and the floor is all the forward's inputs."""
    lo, hi = full.input_bytes, full.saved_bytes_all
    return (part.saved_bytes_all - lo) / (hi - lo) if hi > lo else 0.0


def held_bytes(out, inputs=()) -> int:
    """Bytes the autograd graph actually holds for ``out``'s backward: the tensors its ``grad_fn`` saved,
    one count per storage, leaving out the storages of ``inputs`` (parameters, the batch) (ch15).

    Works for any compiled function, Inductor's included: AOTAutograd's forward hands the saved
    tensors to ``ctx.save_for_backward``, and ``grad_fn.saved_tensors`` reads them back.
    """
    fn = out.grad_fn
    while fn is not None and not type(fn).__name__.startswith("CompiledFunction"):
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if len(nxt) == 1 else None
    if fn is None:
        raise ValueError("out was not produced by an AOTAutograd-compiled function")
    skip = {t.untyped_storage().data_ptr() for t in inputs}
    held: dict = {}
    for t in fn.saved_tensors:
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            held[storage.data_ptr()] = storage.nbytes()
    return sum(held.values())


def side_by_side(left: str, right: str, titles=("forward", "backward"), width: int = 48) -> str:
    """Two blocks of text in two columns, each line cut at ``width`` characters (marked with …)."""
    a, b = left.splitlines(), right.splitlines()
    cut = lambda s: s if len(s) <= width else s[: width - 1] + "…"  # noqa: E731
    rows = [f"{titles[0]:<{width}}  │ {titles[1]}", f"{'─' * width}──┼─{'─' * width}"]
    for i in range(max(len(a), len(b))):
        rows.append(f"{cut(a[i]) if i < len(a) else '':<{width}}  │ {cut(b[i]) if i < len(b) else ''}")
    return "\n".join(rows)


def run_saved_bytes(reader_fn, part: Partition):
    """The reader's ``reader_fn(forward, backward)`` on a partition's two graphs (exercise 15.1)."""
    return reader_fn(part.forward, part.backward)


def run_checkpointed(reader_fn, args, reference) -> tuple:
    """Partition the reader's function (exercise 15.2): (new saved bytes, same result as ``reference``,
    ops recomputed); or a one-line message if it raised."""
    import torch

    try:
        part = partition(reader_fn, *args)
    except Exception as exc:  # the reader's code may fail in any way; the check says how
        return (f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:80]}",)
    same = bool(torch.allclose(part.result, reference(*args), rtol=1e-4, atol=1e-4))
    return part.saved_bytes, same, len(part.recomputed)


def live_bytes(gm, alive_inputs: bool = False, saved: list | None = None) -> tuple[int, list[int]]:
    """Peak of new storage alive while ``gm`` runs op by op as plain ATen calls: each op's output is
    allocated when it runs and freed after its last use (views and inputs allocate nothing); returns
    (peak, live bytes after each op). A model of eager execution, not of Inductor's fused kernels (ch15).

    ``saved`` (a backward graph's ``Partition.saved``): the saved tensors that hold new storage are counted
    alive from the start and freed after their last use in ``gm`` (a view of one keeps it alive), as an
    Inductor-compiled backward frees them: ``CompiledFunction._backward_impl`` calls
    ``ctx.maybe_clear_saved_tensors()`` and Inductor's generated backward empties its argument list
    (``args.clear()``). A backward compiled with ``make_boxed_func`` (aot_eager, ``partition``) never empties
    it, so there every saved tensor stays alive to the end: add ``Partition.saved_bytes`` to the peak without
    ``saved`` to count that (ch15)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    import torch

    nodes = list(gm.graph.nodes)
    last_use = {}
    for i, n in enumerate(nodes):
        for a in n.all_input_nodes:
            last_use[a] = i
    input_storages = {StorageWeakRef(n.meta["val"].untyped_storage()) for n in nodes
                      if n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor)}
    owners: dict = {}  # storage -> [bytes, nodes still needing it]
    live = 0
    new_saved = {s.name: s.nbytes for s in (saved or []) if s.new_storage}
    for i, n in enumerate(nodes):  # the saved tensors the forward left: alive when the backward starts
        val = n.meta.get("val")
        if n.op == "placeholder" and n.name in new_saved and isinstance(val, torch.Tensor):
            ref = StorageWeakRef(val.untyped_storage())
            if ref not in owners:
                owners[ref] = [0, set()]
            live += max(0, new_saved[n.name] - owners[ref][0])
            owners[ref][0] = max(owners[ref][0], new_saved[n.name])
            owners[ref][1].add(n)
            last_use.setdefault(n, i)  # a saved tensor the backward never reads: freed where it arrives
    start, trace = live, []
    for i, n in enumerate(nodes):
        val = n.meta.get("val")
        if n.op == "call_function" and isinstance(val, torch.Tensor):
            ref = StorageWeakRef(val.untyped_storage())
            if ref in owners:  # a view of a value still alive (a saved tensor included)
                owners[ref][1].add(n)
            elif ref not in input_storages:
                owners[ref] = [_nbytes(val), {n}]
                live += owners[ref][0]
        for a in [*n.all_input_nodes, n]:
            if last_use.get(a) == i and n.op != "output":
                for ref, (size, holders) in list(owners.items()):
                    holders.discard(a)
                    if not holders:
                        live -= size
                        del owners[ref]
        trace.append(live)
    return max([start, *trace]), trace


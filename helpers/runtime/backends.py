"""Writing a torch.compile backend (chapter 28): the registry, the AOTAutograd wrapper, and a per-node timer.

A backend itself is public contract — any callable ``(gm, example_inputs) -> callable`` passed as
``torch.compile(fn, backend=...)`` — and the chapter's notebook writes its backends in plain code. What
is private lives here, one function per concept, through ``helpers.core.private.private``:
``register`` (``torch._dynamo.register_backend``), ``available`` (``torch._dynamo.list_backends``) and
``aten_level`` (``torch._dynamo.backends.common.aot_autograd``). All three exist under these names on
torch 2.11, 2.13 and 2.15. ``NodeTimer`` times each node of an FX graph through ``torch.fx.Interpreter``
(public).
"""
from __future__ import annotations

import time
from collections import defaultdict

from ..core.private import private


def register(fn, name: str, tags: tuple[str, ...] = ()):
    """Register ``fn`` as ``torch.compile(backend=name)`` (``torch._dynamo.register_backend``) (ch28).

    Registering a name twice is an error in torch; re-running a notebook cell must not be, so an entry
    this name already has is replaced.
    """
    registry = private("torch._dynamo.backends.registry")
    if name in registry._COMPILER_FNS:
        registry._COMPILER_FNS.pop(name)
        registry._BACKENDS.pop(name, None)
    return private("torch._dynamo.register_backend")(fn, name=name, tags=tags)


def available(hidden: bool = False) -> list[str]:
    """The backend names ``torch.compile`` accepts (``torch._dynamo.list_backends``) (ch28).

    ``hidden=True`` includes the entries tagged "debug" or "experimental", which the plain list leaves out.
    """
    list_backends = private("torch._dynamo.list_backends")
    return list_backends(exclude_tags=()) if hidden else list_backends()


def aten_level(fw_compiler, bw_compiler=None, **options):
    """Wrap an FX compiler so that it receives AOTAutograd's ATen graphs (``aot_autograd``) (ch28).

    The returned object is itself a backend: Dynamo's graph goes through AOTAutograd (traced to ATen,
    functionalized, split into forward and backward), and ``fw_compiler(gm, example_inputs)`` gets the
    forward graph; ``bw_compiler`` (default: the same function) the backward graph. Only the
    CompositeImplicitAutograd operators are decomposed unless ``options`` passes ``decompositions=`` (a
    table such as ``inductor_decompositions()``); ``inference_compiler=`` and ``partition_fn=`` are passed
    on the same way.
    """
    aot_autograd = private("torch._dynamo.backends.common.aot_autograd")
    return aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler or fw_compiler, **options)


def inductor_decompositions() -> dict:
    """Inductor's decomposition table (``select_decomp_table`` in ``torch/_inductor/decomposition.py``), to
    pass as ``aten_level(..., decompositions=...)`` (ch28)."""
    return private("torch._inductor.decomposition.select_decomp_table")()


def call_targets(gm) -> list[str]:
    """The sorted, distinct ATen targets a graph calls (``getitem`` left out) (ch28)."""
    return sorted({str(n.target) for n in gm.graph.nodes if n.op == "call_function" and str(n.target).startswith("aten.")})


def targets_by_tag(gm) -> dict[str, list[str]]:
    """A graph's distinct ATen operators grouped by torch's own tags (``torch.Tag``) (ch28).

    ``{"pointwise": [...], "reduction": [...], "other": [...]}``, each a sorted list of short names
    (``rsqrt``, ``var_mean``, ``mm``); the tags are those of ``native_functions.yaml``, on the operator
    overload (``OpOverload.tags``).
    """
    import torch

    groups: dict[str, set] = {"pointwise": set(), "reduction": set(), "other": set()}
    for n in gm.graph.nodes:
        if n.op != "call_function" or not str(n.target).startswith("aten."):
            continue
        tags = set(getattr(n.target, "tags", ()))
        group = "pointwise" if torch.Tag.pointwise in tags else "reduction" if torch.Tag.reduction in tags else "other"
        groups[group].add(str(n.target).removeprefix("aten.").split(".")[0])
    return {k: sorted(v) for k, v in groups.items()}


def node_label(node) -> str:
    """A short name for what an FX node calls: ``relu``, ``add``, ``aten.mm.default``, ``linear`` (ch28)."""
    target = node.target
    if node.op == "call_method":
        return str(target)
    if node.op == "call_module":
        return str(target)
    name = getattr(target, "__name__", None) or str(target)
    text = str(target)
    if text.startswith("aten."):
        return text
    return name


def op_histogram(gm) -> dict[str, int]:
    """How many times each operation occurs in an FX graph, by ``node_label`` (ch28)."""
    counts: dict[str, int] = defaultdict(int)
    for n in gm.graph.nodes:
        if n.op.startswith("call"):
            counts[node_label(n)] += 1
    return dict(counts)


def describe_inputs(example_inputs) -> list[str]:
    """Each example input as ``Tensor(4, 8) float32 cpu`` or ``SymInt s77`` (ch28).

    A tensor is named by its own class (``Tensor``, ``Parameter``, ``FakeTensor``), so the description
    says whether a backend was handed a real tensor.
    """
    import torch

    out = []
    for a in example_inputs:
        if isinstance(a, torch.Tensor):
            out.append(f"{type(a).__name__}{tuple(a.shape)} {str(a.dtype).replace('torch.', '')} {a.device}")
        else:
            out.append(f"{type(a).__name__} {a}")
    return out


class NodeTimer:
    """Run an FX graph node by node through ``torch.fx.Interpreter`` and add up each node's time (ch28).

    ``seconds[label]`` is the total over every run, ``runs`` the number of runs; only the ``call_*`` nodes
    are timed (not the placeholders or the output). Each node's time runs from before the interpreter's
    ``run_node`` to after it, so it includes the interpreter's Python overhead; ``sync`` synchronizes a
    CUDA device after each node, so that the node's kernel is inside its time (with the launch and the
    Python overhead).
    """

    def __init__(self, gm, sync: bool = False):
        import torch

        self.gm = gm
        self.sync = sync and torch.cuda.is_available()
        self.seconds: dict[str, float] = defaultdict(float)  # "1. linear": seconds, in graph order
        self.order: dict[str, int] = {}
        self.runs = 0

    def run(self, *args):
        import torch

        timer = self

        class _Timed(torch.fx.Interpreter):
            def run_node(self, n):
                if not n.op.startswith("call"):
                    return super().run_node(n)
                start = time.perf_counter()
                result = super().run_node(n)
                if timer.sync:
                    torch.cuda.synchronize()
                timer.seconds[f"{timer.order.setdefault(n.name, len(timer.order) + 1)}. {node_label(n)}"] += (
                    time.perf_counter() - start)
                return result

        self.runs += 1
        return _Timed(self.gm).run(*args)

    def per_call_us(self) -> dict[str, float]:
        """Mean microseconds per run, per node."""
        return {k: v / max(self.runs, 1) * 1e6 for k, v in self.seconds.items()}

"""Chapter 8, the OutputGraph: how a traced frame becomes one FX graph (pruned inputs, compiled-graph
globals, the graph's layers) and the method calls that build it.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..core.private import private


def compiled_fn_names(namespace: dict) -> list[str]:
    """The ``__compiled_fn_…`` globals Dynamo installed in a namespace, in compile order (ch08)."""

    def number(name: str) -> int:
        m = re.match(r"__compiled_fn_(\d+)", name)
        return int(m.group(1)) if m else -1

    return sorted((k for k in namespace if k.startswith("__compiled_fn")), key=lambda k: (number(k), k))


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
    from ..core.env import CourseError

    cls = private("torch._dynamo.output_graph.OutputGraph")
    original = getattr(cls, "remove_unused_graphargs", None)
    if original is None:
        raise CourseError("helpers needs `torch._dynamo.output_graph.OutputGraph.remove_unused_graphargs`, "
                          "which this torch does not have; report it so helpers/dynamo/output_graph.py can follow the move.")
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


def graph_layers(gm) -> dict[str, int]:
    """Each node's depth: 0 for inputs, 1 + the deepest input for the others (the output last) (ch08)."""
    depth: dict[str, int] = {}
    for n in gm.graph.nodes:
        parents = [a.name for a in n.all_input_nodes]
        depth[n.name] = 0 if n.op == "placeholder" else 1 + max((depth[p] for p in parents), default=0)
    return depth


def draw_graph(gm, ax) -> None:
    """Draw an FX graph on matplotlib axes: one column per depth, inputs left, output right (ch08)."""
    from ..core.plots import PALETTE

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


@dataclass
class MethodCall:
    """One call of a watched Dynamo method: ``outcome`` is ``"returned"`` or the exception's class name."""

    outcome: str
    message: str = ""  # the exception's first line, when one was raised


@contextmanager
def watch_method(path: str):
    """Record every call of a Dynamo method while the block runs, and how it ended (ch08).

    ``path`` names a method of a class in torch's private API, e.g.
    ``"torch._dynamo.symbolic_convert.InstructionTranslator._return"``. Yields a list of MethodCall;
    the method is restored when the block ends.
    """
    owner_path, _, name = path.rpartition(".")
    cls = private(owner_path)
    original = cls.__dict__.get(name)
    if original is None:
        from ..core.env import CourseError

        raise CourseError(f"helpers needs `{path}`, which this torch does not define; report it so "
                          "helpers/dynamo/output_graph.py can follow the move.")
    calls: list[MethodCall] = []

    def wrapped(self, *args, **kwargs):
        try:
            out = original(self, *args, **kwargs)
        except BaseException as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            calls.append(MethodCall(type(exc).__name__, first))
            raise
        calls.append(MethodCall("returned"))
        return out

    setattr(cls, name, wrapped)
    try:
        yield calls
    finally:
        setattr(cls, name, original)


@dataclass
class OutputGraphView:
    """What one OutputGraph held: the guards it starts with, and its fake-tensor world when the backend runs (ch08)."""

    ambient_guards: list[str]  # guard kinds present right after ``init_ambient_guards``
    tracked_fakes: list[str] = field(default_factory=list)  # sources of the tensors (and sizes) made fake
    placeholders_fake: bool = False  # every placeholder's example_value is a FakeTensor
    backend_fake_mode_is_new: bool = False  # the backend sees a fresh FakeTensorMode in the TracingContext
    shape_env_shared: bool = False  # ... which shares the OutputGraph's ShapeEnv (and its tracked fakes)


@contextmanager
def watch_output_graph():
    """Look at every OutputGraph created while the block runs: its ambient guards and fake tensors (ch08).

    Wraps ``OutputGraph.init_ambient_guards`` (run in ``OutputGraph.__init__`` before any bytecode is
    traced) and ``OutputGraph.call_user_compiler`` (the backend call). Yields a list of
    OutputGraphView, one per OutputGraph that was created; the methods are restored afterwards.
    """
    cls = private("torch._dynamo.output_graph.OutputGraph")
    fake_tensor = private("torch._subclasses.fake_tensor.FakeTensor")
    init_original, call_original = cls.init_ambient_guards, cls.call_user_compiler
    views: list[OutputGraphView] = []
    by_graph: dict[int, OutputGraphView] = {}

    def init_wrapped(self, *args, **kwargs):
        out = init_original(self, *args, **kwargs)
        view = OutputGraphView(sorted({g.create_fn_name() for g in self.guards}))
        views.append(view)
        by_graph[id(self)] = view
        return out

    def call_wrapped(self, gm, example_inputs, *args, **kwargs):
        view = by_graph.get(id(self))
        if view is not None:
            values = [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
            mode = self.tracing_context.fake_mode
            view.tracked_fakes = [tf.source.name for tf in self.tracked_fakes]
            view.placeholders_fake = all(isinstance(v, fake_tensor) for v in values)
            view.backend_fake_mode_is_new = all(getattr(v, "fake_mode", None) is not mode for v in values)
            view.shape_env_shared = mode.shape_env is self.shape_env and all(
                getattr(getattr(v, "fake_mode", None), "shape_env", None) is self.shape_env for v in values)
        return call_original(self, gm, example_inputs, *args, **kwargs)

    cls.init_ambient_guards, cls.call_user_compiler = init_wrapped, call_wrapped
    try:
        yield views
    finally:
        cls.init_ambient_guards, cls.call_user_compiler = init_original, call_original


def output_names(gm) -> list[str]:
    """The names of the values an FX graph returns, in order (its output node's arguments) (ch08)."""
    (node,) = [n for n in gm.graph.nodes if n.op == "output"]
    flat: list[str] = []

    def walk(arg):
        if isinstance(arg, (tuple, list)):
            for a in arg:
                walk(a)
        elif hasattr(arg, "name"):
            flat.append(arg.name)
        else:
            flat.append(repr(arg))

    walk(node.args)
    return flat


def new_compiled_fn_globals(fn, *args, **kwargs) -> int:
    """Compile ``fn`` afresh (backend ``"eager"``), call it once, count the ``__compiled_fn`` globals it added (ch08)."""
    import torch

    from .state import clear_compile_state

    clear_compile_state()  # a function compiled earlier would otherwise reuse its cache entry
    namespace = fn.__globals__
    before = set(compiled_fn_names(namespace))
    torch.compile(fn, backend="eager")(*args, **kwargs)
    return len(set(compiled_fn_names(namespace)) - before)


def tf32_warning_applies(device: str = "cuda") -> bool:
    """Whether Inductor would warn "TensorFloat32 tensor cores … available but not enabled" here (ch08).

    The conditions of ``torch._inductor.compile_fx``: a float32 matmul on a CUDA device
    (``is_tf32_warning_applicable``; a graph on ``device="cpu"`` never warns, even on a GPU machine), and
    ``_warn_tf32_disabled``: a GPU of compute capability 8.0 or newer with float32 matmuls not in
    ``"tf32"`` precision.
    """
    import torch

    if device != "cuda" or not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 0):
        return False
    matmul = torch.backends.cuda.matmul
    precision = getattr(matmul, "fp32_precision", None)
    return (precision != "tf32") if precision is not None else not matmul.allow_tf32

"""FakeTensor and the meta device: tracing without data (chapter 16, ch16).

``fake_mode`` makes a ``FakeTensorMode``; ``is_fake`` / ``describe`` read what a value is;
``fake_matmul_time`` times an N×N matmul on fake tensors; ``backend_view`` and ``aot_view`` show what a
Dynamo backend and AOTAutograd's forward compiler receive (example inputs) next to what the graph's nodes
carry (``meta["example_value"]`` / ``meta["val"]``); ``graph_input_log`` collects Dynamo's
``create_graph_input`` debug lines; ``compile_error`` names the exception a compile raises;
``compile_error_hints`` its hints; ``meta_census`` counts the meta kernels of every aten overload;
``fallback_ops`` names the ops a fake mode ran for real (``run_fallback_kernel``); ``custom_op`` defines a fresh ``torch.library`` custom op; ``step_shapes`` runs a chain of ops on fake
tensors (the chapter's widget); ``fake_impl_check`` and ``one_graph_check`` judge exercises 16.2 and 16.3.
Private names (``torch._subclasses.fake_tensor``, ``torch._dynamo``) are reached through
``helpers.core.private.private``; all exist on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field

from ..core import timing
from ..core.private import private
from ..dynamo.logs import capture_logs
from ..dynamo.state import clear_compile_state


def fake_mode(*, cache: bool = True):
    """A new ``FakeTensorMode`` (ch16); ``cache=False`` turns off its dispatch cache, so every op runs its meta kernel."""
    mode = private("torch._subclasses.fake_tensor.FakeTensorMode")()
    mode.cache_enabled = bool(cache)
    return mode


def is_fake(value) -> bool:
    """True if ``value`` is a FakeTensor (ch16)."""
    return isinstance(value, private("torch._subclasses.fake_tensor.FakeTensor"))


def describe(value) -> str:
    """``FakeTensor(8, 4) float32 cpu`` or ``Tensor(8, 4) float32 cpu``: kind, shape, dtype, device (ch16).

    A value that is not a tensor (a SymInt, None) is shown as ``type: value``.
    """
    import torch

    if isinstance(value, torch.Tensor):
        kind = "FakeTensor" if is_fake(value) else type(value).__name__
        shape = ", ".join(str(s) for s in value.shape)
        return f"{kind}({shape}) {str(value.dtype).replace('torch.', '')} {value.device}"
    return f"{type(value).__name__}: {value}"


def fake_matmul(n: int, *, cache: bool = False, device: str = "cpu"):
    """A function computing ``a @ a`` for a fake N×N float32 ``a`` on ``device``, to time (ch16).

    With ``cache=False`` each call runs the matmul's meta kernel; with ``cache=True`` repeated calls hit
    the mode's dispatch cache, as repeated ops do while Dynamo traces. Nothing is allocated for the data.
    """
    import torch

    mode = fake_mode(cache=cache)
    with mode:
        a = torch.empty(n, n, device=device)

    def matmul():
        with mode:
            return a @ a

    return matmul


def fake_matmul_time(n: int, *, cache: bool = False, repeats: int = 10, device: str = "cpu"):
    """CPU time per call (``helpers.timing.wall``) of ``fake_matmul(n)`` (ch16)."""
    return timing.wall(fake_matmul(n, cache=cache, device=device), repeats=repeats, device="cpu")


@dataclass
class GraphView:
    """What a compiler receives: its example inputs, and the value each node of its graph carries (ch16)."""

    inputs: list[str] = field(default_factory=list)  # describe() of each example input
    nodes: list[tuple[str, str, str]] = field(default_factory=list)  # (op, name, describe(meta value))
    meta_keys: list[str] = field(default_factory=list)  # which meta keys the tensor nodes have
    shapes: dict = field(default_factory=dict)  # node name -> "(8, 4)" for nodes carrying a tensor

    @property
    def fake_inputs(self) -> int:
        return sum(1 for d in self.inputs if d.startswith("FakeTensor"))

    @property
    def fake_nodes(self) -> int:
        return sum(1 for _, _, d in self.nodes if d.startswith("FakeTensor"))

    def table(self) -> str:
        return "\n".join(f"  {op:<14} {name:<25} {d}" for op, name, d in self.nodes)


def _view(gm, example_inputs, key: str) -> GraphView:
    import torch

    view = GraphView(inputs=[describe(e) for e in example_inputs])
    keys = set()
    for n in gm.graph.nodes:
        if n.op == "output":
            continue
        value = n.meta.get(key)
        view.nodes.append((n.op, n.name, describe(value)))
        if isinstance(value, torch.Tensor):
            view.shapes[n.name] = "(" + ", ".join(str(s) for s in value.shape) + ")"
        keys |= {k for k in ("val", "example_value") if k in n.meta}
    view.meta_keys = sorted(keys)
    return view


def backend_view(fn, *args, **compile_kwargs) -> GraphView:
    """Compile ``fn`` with a backend that records its example inputs and ``node.meta["example_value"]`` (ch16).

    ``compile_kwargs`` go to ``torch.compile`` (``fullgraph=True``); the first graph's view is returned.
    """
    import torch

    clear_compile_state()
    seen = []

    def peek(gm, example_inputs):
        seen.append(_view(gm, example_inputs, "example_value"))
        return gm.forward

    torch.compile(fn, backend=peek, **compile_kwargs)(*args)
    return seen[0]


def aot_view(fn, *args) -> GraphView:
    """Compile ``fn`` through AOTAutograd; what its forward compiler receives, with ``node.meta["val"]`` (ch16)."""
    import torch

    aot_autograd = private("torch._dynamo.backends.common.aot_autograd")
    make_boxed_func = private("torch._functorch.aot_autograd.make_boxed_func")
    clear_compile_state()
    seen = []

    def fw(gm, example_inputs):
        seen.append(_view(gm, example_inputs, "val"))
        return make_boxed_func(gm.forward)

    torch.compile(fn, backend=aot_autograd(fw_compiler=fw))(*args)
    return seen[0]


def graph_input_log(fn, *args) -> list[str]:
    """The ``create_graph_input`` lines Dynamo logs at DEBUG (``TORCH_LOGS="+dynamo"``) compiling ``fn`` (ch16).

    Logged by ``SubgraphTracer.create_graph_input`` (``torch/_dynamo/output_graph.py``) on the logger of that
    module; it is collected here instead of printed, and the logger is put back as it was.
    """
    import torch

    private("torch._dynamo.output_graph")  # the module whose logger writes the line
    with capture_logs(loggers=("torch._dynamo.output_graph",), level=logging.DEBUG) as logs:
        clear_compile_state()
        torch.compile(fn, backend="eager")(*args)
    return [line for line in logs.messages() if line.startswith("create_graph_input")]


def compile_error(fn, *args, **compile_kwargs) -> tuple[str, str]:
    """Compile and call ``fn``; ``(exception class name, first line)`` of what it raised, or ``("none", "")`` (ch16)."""
    import torch

    clear_compile_state()
    try:
        torch.compile(fn, **{"backend": "eager", **compile_kwargs})(*args)
    except Exception as exc:  # the point is to show what was raised
        return type(exc).__name__, (str(exc).strip().splitlines() or [""])[0]
    return "none", ""


def compile_error_hints(fn, *args, **compile_kwargs) -> list[str]:
    """The ``Hint:`` lines of the error compiling and calling ``fn`` raised (empty if none was raised) (ch16)."""
    import torch

    clear_compile_state()
    try:
        torch.compile(fn, **{"backend": "eager", **compile_kwargs})(*args)
    except Exception as exc:  # the point is to read its hints
        return [line.strip()[len("Hint:"):].strip() for line in str(exc).splitlines() if line.strip().startswith("Hint:")]
    return []


def raises_under_fake(fn, *args) -> tuple[str, str]:
    """Run ``fn`` on fake copies of ``args``; ``(exception class name, message)`` or ``("none", "")`` (ch16)."""
    mode = fake_mode()
    fakes = [mode.from_tensor(a) for a in args]
    try:
        with mode:
            fn(*fakes)
    except Exception as exc:  # the point is to show what was raised
        return type(exc).__name__, (str(exc).strip().splitlines() or [""])[0]
    return "none", ""


_COUNTER = itertools.count()


def custom_op(name: str, impl, *, fake=None):
    """A fresh ``torch.library.custom_op`` ``ch16::<name>_<k>`` running ``impl`` (one Tensor in, one out) (ch16).

    ``fake``, if given, is registered with ``register_fake``. Every call defines a new op, so a notebook can
    define the "same" op again with or without a fake implementation.
    """
    import torch

    qualname = f"ch16::{name}_{next(_COUNTER)}"

    def body(x):
        return impl(x)

    op = torch.library.custom_op(qualname, body, mutates_args=(), schema="(Tensor x) -> Tensor")
    if fake is not None:
        op.register_fake(fake)
    return op


def step_shapes(steps: list[str], shapes: dict[str, tuple], device: str = "cpu") -> list[tuple[str, str]]:
    """Run a chain of tensor expressions on fake tensors; ``(expression, describe(result))`` per step (ch16).

    ``shapes`` names the fake float32 inputs (``{"x": (8, 16), "w": (8, 4)}``); each step is a Python
    expression over them and ``t``, the previous step's result (``x.t()``, ``t @ w``, ``t.unsqueeze(0)``).
    A step that fails shows its exception instead, and the chain stops there.
    """
    import torch

    mode = fake_mode()
    with mode:
        names = {k: torch.empty(*v, device=device) for k, v in shapes.items()}
    rows = []
    t = None
    for expr in steps:
        try:
            with mode:
                t = eval(expr, {"torch": torch}, {**names, "t": t})  # noqa: S307 - the reader's own expression
            stride = tuple(t.stride()) if isinstance(t, torch.Tensor) else ()
            rows.append((expr, f"{describe(t)}  stride {stride}"))
        except Exception as exc:  # show the error as the step's result
            rows.append((expr, f"raised {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:90]}"))
            break
    return rows


def layout_under_fake(fn, *shapes) -> tuple[tuple, tuple] | str | None:
    """``(shape, stride)`` of ``fn``'s result on fake float32 inputs of ``shapes`` (ch16, exercise 16.1)."""
    import torch

    if fn is None:
        return None
    mode = fake_mode()
    with mode:
        args = [torch.empty(*s) for s in shapes]
        try:
            out = fn(*args)
        except Exception as exc:
            return f"raised {type(exc).__name__}"
    return tuple(out.shape), tuple(out.stride())


def fake_impl_check(fake_fn, impl, example) -> bool | str | None:
    """Exercise 16.2: does ``fake_fn`` make a custom op running ``impl`` compile to one graph, right? (ch16)

    Defines a fresh op with ``fake_fn`` as its fake implementation, compiles ``x -> op(x) + 1`` with
    ``fullgraph=True`` and checks: one graph; the fake output's shape, dtype, device and strides equal the
    real output's; the compiled result equals eager. Returns True, a message saying what is wrong, or None
    while ``fake_fn`` is None.
    """
    import torch

    if fake_fn is None:
        return None
    op = custom_op("exercise", impl, fake=fake_fn)

    def use(x):
        return op(x) + 1

    real = impl(example)
    mode = fake_mode()
    try:
        with mode:
            fake_out = op(mode.from_tensor(example))
    except Exception as exc:
        return f"the fake implementation raised {type(exc).__name__}"
    def layout(t):
        return tuple(t.shape), t.dtype, t.device, tuple(t.stride())

    if layout(fake_out) != layout(real):
        return (f"fake says shape {tuple(fake_out.shape)}, {fake_out.dtype}, {fake_out.device}, stride {tuple(fake_out.stride())}; "
                f"the real op gives {tuple(real.shape)}, {real.dtype}, {real.device}, stride {tuple(real.stride())}")
    explain = private("torch._dynamo.explain")
    clear_compile_state()
    try:
        graphs = explain(use)(example).graph_count
        clear_compile_state()
        out = torch.compile(use, backend="eager", fullgraph=True)(example)
    except Exception as exc:
        return f"compiling raised {type(exc).__name__}"
    if graphs != 1:
        return f"{graphs} graphs"
    return True if torch.allclose(out, real + 1) else "the compiled result differs from eager"


def one_graph_check(fn, reference, inputs) -> bool | str | None:
    """Exercise 16.3: ``fn`` compiles with ``fullgraph=True`` and matches ``reference`` on every input (ch16)."""
    import torch

    if fn is None:
        return None
    clear_compile_state()
    compiled = torch.compile(fn, backend="eager", fullgraph=True)
    for x in inputs:
        try:
            out = compiled(x)
        except Exception as exc:
            return f"raised {type(exc).__name__}"
        if not torch.allclose(out, reference(x)):
            return "a result differs from the original function"
    return True


# ---------------------------------------------------------------------------------------------- meta kernels

def meta_census() -> dict:
    """Every aten overload the dispatcher knows, by what computes its output metadata (ch16).

    Read from each overload's dispatcher entry (``torch._C._dispatch_dump``): ``"no meta"`` (no Meta kernel,
    no CompositeImplicitAutograd decomposition and no CompositeExplicitAutograd[NonFunctional] kernel: nothing
    serves the Meta key), ``"composite"`` (no Meta kernel, but it decomposes before reaching Meta),
    ``"explicit"`` (no Meta kernel, but a CompositeExplicitAutograd or CompositeExplicitAutogradNonFunctional
    kernel, which the dispatcher uses for Meta as its "[default backend kernel]": it runs on meta tensors,
    calling other operators), ``"c++"`` (a C++ Meta kernel is active), or, for a Meta kernel registered from Python
    (``activate_meta`` in ``torch/_meta_registrations.py``), where its body lives: ``"_meta_registrations"``,
    ``"_refs"`` (PrimTorch's references), ``"_decomp"`` (the decomposition table) or ``"other"``. Also
    ``"no meta examples"``: the first few overloads without any, in name order, out= and in-place forms left
    out; ``"no meta names"``: all of them.
    """
    import inspect
    import re

    import torch

    tables = private("torch._decomp.global_decomposition_table")
    counts = dict.fromkeys(["no meta", "composite", "explicit", "c++", "_meta_registrations", "_refs", "_decomp", "other"], 0)
    examples, none = [], []
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::"):
            continue
        dump = torch._C._dispatch_dump(name)
        active = re.search(r"^Meta: registered at (\S+)", dump, re.M)
        if active is None:
            if re.search(r"^CompositeImplicitAutograd\[alias\]:", dump, re.M):
                counts["composite"] += 1
            elif re.search(r"^CompositeExplicitAutograd(?:NonFunctional)?\[alias\]:", dump, re.M):
                counts["explicit"] += 1
            else:
                counts["no meta"] += 1
                none.append(name[6:])
                if "!" not in re.search(r"^schema: (.*)$", dump, re.M).group(1):  # out= and in-place forms left out
                    examples.append(name[6:])
            continue
        if "_meta_registrations.py" not in active.group(1):
            counts["c++"] += 1
            continue
        packet, _, overload = name[6:].partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        fn = tables["meta"].get(op) or tables["post_autograd"].get(op) or tables["pre_autograd"].get(op)
        try:
            path = (inspect.getsourcefile(inspect.unwrap(fn)) or "") if fn is not None else ""
        except TypeError:
            path = ""
        path = path.replace("\\", "/")
        key = ("_meta_registrations" if path.endswith("torch/_meta_registrations.py") else
               "_refs" if "/torch/_refs/" in path else "_decomp" if "/torch/_decomp/" in path else "other")
        counts[key] += 1
    counts["no meta examples"] = sorted(examples, key=lambda n: (n.startswith("_"), n))[:6]  # public names first
    counts["no meta names"] = sorted(none)
    return counts


def meta_entry(name: str) -> str:
    """What the dispatcher runs for ``name`` (``"aten::geqrf"``) under the Meta key, as its dispatch table says
    (``torch._C._dispatch_dump_table``): ``"kernel"`` (a Meta kernel), ``"default backend kernel"`` (a
    CompositeExplicitAutograd[NonFunctional] kernel serves Meta), ``"backend fallback"`` (Meta's fallback, which
    raises: nothing computes the metadata) or what else the table says (ch16)."""
    import re

    import torch

    line = re.search(r"^Meta: .*$", torch._C._dispatch_dump_table(name), re.M)
    if line is None:
        return "none"
    tag = re.search(r"\[([^\]]+)\]\s*$", line.group(0))
    return tag.group(1) if tag else "kernel"


def fallback_ops(thunks: dict) -> dict:
    """Run each thunk under a fresh ``FakeTensorMode`` and name, per thunk, the operators for which the mode ran
    the real kernel on zero-filled stand-ins (``run_fallback_kernel``, its last resort when no fake rule or meta
    kernel applies), or the error it raised (ch16). Each thunk is called inside the mode."""
    module = private("torch._subclasses.fake_tensor")
    original = module.run_fallback_kernel
    calls: list = []

    def spy(fake_mode, func, *args, **kwargs):
        calls.append(str(func))
        return original(fake_mode, func, *args, **kwargs)

    out = {}
    module.run_fallback_kernel = spy
    try:
        for name, thunk in thunks.items():
            calls.clear()
            try:
                with fake_mode(cache=False):
                    thunk()
                out[name] = list(calls)
            except Exception as err:  # noqa: BLE001 - reported to the reader
                out[name] = f"{type(err).__name__}"
    finally:
        module.run_fallback_kernel = original
    return out

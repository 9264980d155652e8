"""The forward/backward pair AOTAutograd makes from Dynamo's graph, what it saves, and its node on the
autograd tape (ch12).

``capture_aot`` compiles a function through AOTAutograd with Inductor's own decomposition table and
partitioner but recording compilers, so it returns the Dynamo graph, the joint graph and the ATen
forward and backward graphs that Inductor would receive. ``saved_by_autograd`` measures, with the public
saved-tensor hooks, what any call (eager or compiled) keeps for backward. ``tape`` walks ``grad_fn``.
Works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.private import private
from ..dynamo.state import clear_compile_state


@dataclass
class SavedTensor:
    """One tensor kept for backward: its name (graph node or autograd slot), dtype, shape and bytes."""

    name: str
    dtype: str
    shape: tuple
    bytes: int
    aliases_input: bool  # a view of (or the same storage as) an input: it costs no new memory
    stride: tuple = ()

    @property
    def bytes_per_element(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return self.bytes // n if n else 0


def _short_dtype(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _is_view_of_placeholder(node) -> bool:
    """True if ``node`` is a placeholder or a chain of view ops (by the op's schema) from one."""
    while node is not None:
        if node.op == "placeholder":
            return True
        if node.op != "call_function" or not hasattr(node.target, "_schema"):
            return False
        returns = node.target._schema.returns
        if not returns or returns[0].alias_info is None or returns[0].alias_info.is_write:
            return False
        first = node.args[0] if node.args else None
        node = first if hasattr(first, "op") else None
    return False


def _tensor_meta(node):
    val = node.meta.get("val", node.meta.get("tensor_meta"))
    return val if hasattr(val, "dtype") and hasattr(val, "shape") else None


@dataclass
class AotCapture:
    """What AOTAutograd made of one compiled function (ch12): Dynamo's graph, the joint graph, the forward
    and (in training) the backward graph, as ``torch.fx.GraphModule`` objects."""

    dynamo: object = None
    joint: object = None
    forward: object = None
    backward: object = None
    num_user_outputs: int = 0  # forward outputs that are not saved for backward (outputs, mutated inputs)
    result: object = None
    compiled: object = None     # the torch.compile wrapper, warm for the captured arguments
    joint_traced: list = field(default_factory=list)  # the joint graph's ops as traced, before any pass
    forward_compiles: int = 0   # graphs handed to the forward (or inference) compiler
    backward_compiles: int = 0  # graphs handed to the backward compiler (lazily, at the first backward)

    @property
    def training(self) -> bool:
        """True when AOTAutograd made a forward/backward pair, False for an inference-only graph."""
        return self.backward is not None

    def forward_inputs(self) -> list[str]:
        return _placeholders(self.forward)

    def forward_outputs(self) -> list[str]:
        """Names of what the forward returns: the user's outputs first, then what it saves for backward."""
        return _outputs(self.forward)

    def backward_inputs(self) -> list[str]:
        return _placeholders(self.backward) if self.backward is not None else []

    def backward_outputs(self) -> list:
        """What the backward returns, one entry per forward input: a node name, or None (no gradient)."""
        return _outputs(self.backward) if self.backward is not None else []

    def ops(self, which: str = "forward") -> list[str]:
        """The ATen operators of a graph, short names (``mm``, ``le``), in order. ``"joint"`` gives the
        joint graph as traced, before the partition function's passes changed it."""
        if which == "joint":
            return list(self.joint_traced)
        gm = getattr(self, which)
        if gm is None:
            return []
        return [_op_short(n.target) for n in gm.graph.nodes if n.op == "call_function"]

    def saved(self) -> list[SavedTensor]:
        """The tensors the forward returns only for the backward, read from the forward graph's outputs."""
        if self.backward is None:
            return []
        out_node = next(n for n in self.forward.graph.nodes if n.op == "output")
        values = list(out_node.args[0])[self.num_user_outputs:]
        saved = []
        for node in values:
            meta = _tensor_meta(node) if hasattr(node, "meta") else None
            if meta is None:  # a saved SymInt (dynamic shapes) is not a tensor
                continue
            shape = tuple(int(s) for s in meta.shape)
            numel = 1
            for s in shape:
                numel *= s
            stride = meta.stride() if callable(meta.stride) else meta.stride
            saved.append(SavedTensor(node.name, _short_dtype(meta.dtype), shape, numel * meta.dtype.itemsize,
                                     _is_view_of_placeholder(node), tuple(int(st) for st in stride)))
        return saved

    def code(self, which: str = "forward") -> str:
        """A graph's code, trimmed for reading (see ``trim_code``)."""
        gm = getattr(self, which)
        return trim_code(gm.code) if gm is not None else "(none: no graph was made)"

    def side_by_side(self) -> "SideBySide":
        """Forward (left) and backward (right) code, trimmed, the saved tensors marked: shown as an HTML
        table in the book, as two text columns elsewhere."""
        saved = [s.name for s in self.saved()]
        right = trim_code(self.backward.code) if self.backward is not None else "(no backward graph)"
        return SideBySide(trim_code(self.forward.code), right, saved)


@dataclass
class SideBySide:
    """Two graphs' code next to each other, with the saved tensors' names marked (ch12)."""

    left: str
    right: str
    saved: list
    titles: tuple = ("forward", "backward")

    def _text_rows(self) -> tuple[list[str], list[str]]:
        left = [_mark(line, self.saved, "◀ saved") for line in self.left.splitlines()]
        right = [_mark(line, self.saved, "◀ saved", params_only=True) for line in self.right.splitlines()]
        return left, right

    def __str__(self) -> str:
        left, right = self._text_rows()
        width = max(len(line) for line in left + [self.titles[0]])
        rows = [f"{self.titles[0].upper():<{width}} │ {self.titles[1].upper()}", f"{'─' * width}─┼─{'─' * 20}"]
        for i in range(max(len(left), len(right))):
            a = left[i] if i < len(left) else ""
            b = right[i] if i < len(right) else ""
            rows.append(f"{a:<{width}} │ {b}")
        return "\n".join(rows)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        def column(code: str) -> str:
            text = html.escape(code)
            for name in self.saved:
                text = re.sub(rf"(?<![\w.]){re.escape(name)}\b", f"<mark>{name}</mark>", text)
            return f'<pre style="margin:0;font-size:0.7em;line-height:1.35;white-space:pre-wrap">{text}</pre>'

        head = "".join(f'<th style="text-align:left">{t}</th>' for t in self.titles)
        cells = "".join(f'<td style="vertical-align:top;padding:0 0.6em 0 0">{column(c)}</td>'
                        for c in (self.left, self.right))
        note = ("saved for backward, marked: " + ", ".join(self.saved)) if self.saved else "nothing saved"
        return (f'<table style="border:none"><thead><tr>{head}</tr></thead><tbody><tr>{cells}</tr></tbody>'
                f'<caption style="caption-side:bottom;text-align:left;font-size:0.85em">{html.escape(note)}</caption></table>')


def _mark(line: str, saved, tag: str, params_only: bool = False) -> str:
    if params_only:
        hit = line.startswith("def forward(")
    else:
        hit = line.lstrip().startswith("return")
    if not hit:
        return line
    names = [n for n in saved if re.search(rf"\b{re.escape(n)}\b", line)]
    return f"{line}  {tag}: {', '.join(names)}" if names else line


def _placeholders(gm) -> list[str]:
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def _outputs(gm) -> list:
    out = next(n for n in gm.graph.nodes if n.op == "output")
    vals = out.args[0]
    vals = vals if isinstance(vals, (list, tuple)) else [vals]
    return [getattr(v, "name", v) for v in vals]


def _op_short(target) -> str:
    name = getattr(target, "__name__", str(target))  # "mm.default", "le.Scalar"
    return name.split(".")[0]


def trim_code(code: str) -> str:
    """An FX graph's code without comments, blank lines, the ``x = None`` statements that free
    intermediates and the ``layout``/``device``/``pin_memory`` arguments of factory calls;
    ``torch.ops.aten.mm.default`` is shortened to ``aten.mm`` (the overload name is dropped) (ch12)."""
    lines = []
    for line in code.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        line = re.sub(r";\s+(?:\w+ = )+None\s*$", "", line.rstrip())
        line = line.replace("torch.ops.aten.", "aten.")
        line = re.sub(r"(aten\.\w+)\.\w+\(", r"\1(", line)
        line = re.sub(r", (?:layout|device|pin_memory) = (?:device\([^)]*\)|[\w.]+)", "", line)
        lines.append(line[4:] if line.startswith("    ") else line)
    return "\n".join(lines)


def capture_aot(fn, *args, partitioner: str = "inductor", run_backward: bool = False, dynamic=False,
                fresh: bool = True, **kwargs) -> AotCapture:
    """Compile ``fn`` through AOTAutograd with recording compilers and call it once (ch12).

    ``partitioner="inductor"`` uses what ``torch.compile``'s default backend uses: Inductor's
    decomposition table (``select_decomp_table``) and its ``partition_fn`` (joint-graph passes, then
    ``min_cut_rematerialization_partition``). ``"default"`` uses AOTAutograd's plain
    ``default_partition`` and no decompositions. The compilers only record and run the graphs
    unchanged. ``run_backward`` also calls ``result.sum().backward()`` (which compiles the backward).
    ``AotCapture.saved`` reads concrete sizes, so keep ``dynamic=False`` when you need it.
    """
    import torch

    aot_module_simplified = private("torch._functorch.aot_autograd.aot_module_simplified")
    make_boxed_func = private("torch._functorch.aot_autograd.make_boxed_func")
    if partitioner == "inductor":
        base_partition = private("torch._inductor.compile_fx.partition_fn")
        decompositions = private("torch._inductor.compile_fx.select_decomp_table")()
    elif partitioner == "default":
        base_partition = private("torch._functorch.partitioners.default_partition")
        decompositions = {}
    else:
        raise ValueError(f"partitioner must be 'inductor' or 'default', not {partitioner!r}")
    if fresh:
        clear_compile_state()
    cap = AotCapture()

    def backend(gm, example_inputs):
        cap.dynamo = gm
        cap.num_user_outputs = len(_outputs(gm))

        def fw_compiler(g, _inputs):
            cap.forward_compiles += 1
            cap.forward = g
            return make_boxed_func(g.forward)

        def bw_compiler(g, _inputs):
            cap.backward_compiles += 1
            return make_boxed_func(g.forward)

        def partition_fn(joint, joint_inputs, **kw):
            cap.joint = joint
            cap.num_user_outputs = int(kw.get("num_fwd_outputs", cap.num_user_outputs))
            cap.joint_traced = [_op_short(n.target) for n in joint.graph.nodes if n.op == "call_function"]
            fw, bw = base_partition(joint, joint_inputs, **kw)
            cap.backward = bw
            return fw, bw

        return aot_module_simplified(gm, example_inputs, fw_compiler=fw_compiler, bw_compiler=bw_compiler,
                                     partition_fn=partition_fn, decompositions=decompositions)

    cap.compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    cap.result = cap.compiled(*args, **kwargs)
    if run_backward and isinstance(cap.result, torch.Tensor) and cap.result.requires_grad:
        cap.result.sum().backward()
    return cap


def saved_by_autograd(fn, *args, **kwargs) -> list[SavedTensor]:
    """Call ``fn`` and list every tensor autograd keeps for backward (public saved-tensor hooks) (ch12).

    Works the same for eager code and a compiled function: a compiled region saves its tensors through
    ``save_for_backward`` of one ``torch.autograd.Function``, which goes through the same hooks (except
    tensors that a custom ``autograd.Function`` inside the region stashed on ``ctx`` directly: AOTAutograd
    stashes those on its own ``ctx`` too, and the hooks do not see them).
    ``aliases_input`` is True when the saved tensor shares storage with a tensor argument.
    """
    import torch

    input_storages = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
    found: list[SavedTensor] = []

    def pack(t):
        found.append(SavedTensor(f"saved_{len(found)}", _short_dtype(t.dtype), tuple(t.shape),
                                 t.numel() * t.element_size(), t.untyped_storage().data_ptr() in input_storages,
                                 tuple(t.stride())))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args, **kwargs)
    return found


def new_bytes(saved: list[SavedTensor]) -> int:
    """Bytes of the saved tensors that are not inputs or views of inputs: memory kept alive for backward."""
    return sum(s.bytes for s in saved if not s.aliases_input)


def tape(tensor) -> list[tuple[int, str]]:
    """The autograd graph behind ``tensor``: ``(depth, node name)``, depth first, each node once (ch12)."""
    seen, rows = set(), []

    def walk(node, depth):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        rows.append((depth, node.name()))
        for nxt, _ in node.next_functions:
            walk(nxt, depth + 1)

    walk(getattr(tensor, "grad_fn", None), 0)
    return rows


def tape_text(tensor) -> str:
    """``tape`` as an indented tree, the output's ``grad_fn`` at the top."""
    rows = tape(tensor)
    return "\n".join("  " * d + ("└─ " if d else "") + name for d, name in rows) or "(no grad_fn: not on the tape)"


@dataclass
class ModeSummary:
    """What AOTAutograd made for one combination of requires_grad flags and grad mode (ch12 widget)."""

    training: bool
    forward_inputs: list = field(default_factory=list)
    forward_outputs: list = field(default_factory=list)
    backward_outputs: list = field(default_factory=list)
    saved: list = field(default_factory=list)
    out_requires_grad: bool = False
    forward_ops: list = field(default_factory=list)


def mode_summary(fn, x, w, *, x_requires_grad: bool, w_requires_grad: bool, no_grad: bool) -> ModeSummary:
    """Compile ``fn(x, w)`` afresh under the given flags and summarise the graphs it got (ch12)."""
    import torch

    x = x.detach().clone().requires_grad_(x_requires_grad)
    w = w.detach().clone().requires_grad_(w_requires_grad)
    ctx = torch.no_grad() if no_grad else torch.enable_grad()
    with ctx:
        cap = capture_aot(fn, x, w)
    return ModeSummary(cap.training, cap.forward_inputs(), cap.forward_outputs(), cap.backward_outputs(),
                       cap.saved(), bool(getattr(cap.result, "requires_grad", False)), cap.ops("forward"))


# ---- what an ahead-of-time backward cannot do (ch12) ------------------------------------------------

def backward_limits(fn, x, w, *, backend: str = "aot_eager") -> dict:
    """Three ways of calling backward on a region compiled with ``backend`` (each from a fresh compile, with the
    compile caches off so that no cached entry carries an earlier run's choices), as the first line of the
    error each raised, or ``"none"`` (ch12):

    - ``"double backward"``: ``torch.autograd.grad(out, w, create_graph=True)``, then ``backward()`` of it;
    - ``"retain after plain"``: a plain ``backward()``, then on a new call ``backward(retain_graph=True)``;
    - ``"retain first"``: ``backward(retain_graph=True)`` first, then the same again on a new call.
    """
    import torch

    config = private("torch._inductor.config")
    w = w.detach().clone().requires_grad_(True)

    def first_line(thunk):
        try:
            thunk()
        except RuntimeError as err:
            return (str(err).strip().splitlines() or [""])[0]
        finally:
            w.grad = None
        return "none"

    def fresh():
        clear_compile_state()
        return torch.compile(fn, backend=backend)

    from .functionalization import _quiet_pgo  # caches off: Dynamo's PGO warns "dynamo_pgo force disabled"

    out = {}
    with config.patch(force_disable_caches=True), _quiet_pgo():
        cf = fresh()
        out["double backward"] = first_line(
            lambda: torch.autograd.grad(cf(x, w), w, create_graph=True)[0].sum().backward())
        cf = fresh()
        cf(x, w).backward()
        out["retain after plain"] = first_line(lambda: cf(x, w).backward(retain_graph=True))
        cf = fresh()
        cf(x, w).backward(retain_graph=True)
        out["retain first"] = first_line(lambda: cf(x, w).backward(retain_graph=True))
    return out


# ---- exercise checks (ch12) -------------------------------------------------------------------------

def _relu_mm_sum(x, w):
    return (x @ w).relu().sum()


def mask_bytes_check(reader, n: int = 48):
    """Exercise 12.1: run the reader's ``reader(capture) -> bytes`` on a fresh capture at size ``n`` and
    return ``(their answer, the bool bytes autograd actually keeps for the compiled call)``."""
    import torch

    x, w = torch.randn(n, n), torch.randn(n, n, requires_grad=True)
    cap = capture_aot(_relu_mm_sum, x, w)
    measured = sum(s.bytes for s in saved_by_autograd(cap.compiled, x, w) if s.dtype == "bool")
    return reader(cap), measured


def both_grads_check(make_inputs):
    """Exercise 12.2: compile f on the reader's inputs; True if the backward returns a gradient for both."""
    x, w = make_inputs()
    cap = capture_aot(_relu_mm_sum, x, w)
    outs = cap.backward_outputs()
    return bool(outs) and len(outs) == 2 and all(o is not None for o in outs)


def _no_break(x):
    return x.sin().cos().sum()


def _one_break(x):
    y = x.sin()
    print(end="")  # a graph break: Dynamo compiles the code before and after it separately
    return y.cos().sum()


def _two_breaks(x):
    y = x.sin()
    print(end="")
    y = y.cos()
    print(end="")
    return y.sum()


BREAK_EXAMPLES = {0: _no_break, 1: _one_break, 2: _two_breaks}


def tape_counter_check(counter, breaks=(0, 1, 2)) -> list[tuple[int, int]]:
    """Exercise 12.3: for functions with 0, 1, 2 graph breaks, ``(reader's count of compiled nodes on the
    output's tape, graphs Dynamo compiled)``."""
    import torch

    rows = []
    for k in breaks:
        fn = BREAK_EXAMPLES[k]
        clear_compile_state()
        graphs = []

        def backend(gm, example_inputs, graphs=graphs):
            graphs.append(gm)
            return private("torch._dynamo.backends.debugging.aot_eager")(gm, example_inputs)

        out = torch.compile(fn, backend=backend)(torch.randn(8, requires_grad=True))
        rows.append((counter(out), len(graphs)))
    return rows


def subclass_desugaring(n: int = 4) -> dict:
    """Compile ``relu(x @ w)`` for a tensor-subclass ``x`` (``TwoTensor``, torch's test subclass that holds two
    plain tensors) with recording compilers, on CPU tensors (ch12). Returns the placeholders of Dynamo's graph,
    of the forward graph and of the joint graph's tangents, the classes of the forward's inputs, and the classes
    of the compiled result and of ``x.grad``: AOTAutograd flattens the subclass into its inner tensors
    (``aot_dispatch_subclass``, ``unwrap_tensor_subclasses``) and wraps the outputs back."""
    import torch
    from torch.testing._internal.two_tensor import TwoTensor

    x = TwoTensor(torch.randn(n, n), torch.randn(n, n)).requires_grad_(True)
    cap = capture_aot(lambda x, w: (x @ w).relu(), x, torch.randn(n, n), run_backward=True)
    return {"dynamo_inputs": _placeholders(cap.dynamo), "forward_inputs": _placeholders(cap.forward),
            "tangents": [p for p in _placeholders(cap.joint) if p.startswith("tangents")],
            "forward_input_types": sorted({type(n.meta["val"]).__name__ for n in cap.forward.graph.nodes
                                           if n.op == "placeholder"}),
            "result_type": type(cap.result).__name__, "grad_type": type(x.grad).__name__}


def second_order_grads(fn, x, w, *, backend: str = "aot_eager") -> dict:
    """A second-order gradient through a compiled region, beside eager's (ch12): for ``fn(x, w) + (w ** 3).sum()``
    take ``torch.autograd.grad(..., w, create_graph=True)``, then ``backward()`` of that gradient's sum, and
    return ``w.grad`` (or None) and the first line of the error raised (or ``"none"``) for ``"eager"``,
    ``"compiled"`` (``fn`` compiled afresh with ``backend``, compile caches off) and ``"cube alone"`` (the
    ``(w ** 3)`` term without ``fn``: what is left if the region contributes nothing)."""
    import torch

    config = private("torch._inductor.config")

    def run(region):
        w_ = w.detach().clone().requires_grad_(True)
        out = (region(x, w_) if region is not None else 0) + (w_ ** 3).sum()
        (g,) = torch.autograd.grad(out, w_, create_graph=True)
        try:
            g.sum().backward()
        except RuntimeError as err:
            return None, (str(err).strip().splitlines() or [""])[0]
        return w_.grad.detach(), "none"

    from .functionalization import _quiet_pgo

    out = {"eager": run(fn), "cube alone": run(None)}
    with config.patch(force_disable_caches=True), _quiet_pgo():
        clear_compile_state()
        out["compiled"] = run(torch.compile(fn, backend=backend))
    return out

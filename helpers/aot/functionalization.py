"""Functionalization (chapter 13): the graph before and after AOTAutograd makes in-place ops and views pure,
the per-input mutation metadata (``ViewAndMutationMeta``), where an input mutation is applied (a trailing
``copy_`` inside the graph or the runtime wrapper after it), Inductor's kernel that writes the input back,
the step-by-step ledger of ``torch.func.functionalize``, and the checks chapter 13's exercises run.

Private names (``torch._dynamo.backends``, ``torch._inductor.compile_fx``, ``torch._guards``,
``torch._inductor.utils``, ``torch._dynamo.utils.counters``) go through ``helpers.core.private.private``;
all exist on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import contextlib
import re
import warnings
from dataclasses import dataclass, field

from ..core.private import private
from ..core.text import columns
from ..dynamo.state import clear_compile_state
from ..dynamo.translator import split_top

BACKENDS = ("aot_autograd", "aot_eager", "inductor")
"""The three ways chapter 13 runs AOTAutograd: its plain entry point with default settings, the ``aot_eager``
debugging backend, and Inductor (whose own code generation is skipped: see ``functionalize_graphs``)."""


# ---------------------------------------------------------------------------------------------- graphs

def op_name(target) -> str:
    """A short name for an FX node's target: ``aten.view.default`` → ``view``, ``copy_`` stays ``copy_`` (ch13)."""
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return schema.name.split("::")[-1]
    return getattr(target, "__name__", str(target))


def _arg_text(a) -> str:
    import torch

    if isinstance(a, torch.fx.Node):
        return a.name
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_arg_text(x) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    return repr(a)


def graph_lines(gm) -> list[str]:
    """One short line per node of an FX graph: ``add = add(view, 1)``, ``y = l_x_.view(2, 8)`` (ch13).

    Placeholders are left out (they are the inputs); the output node becomes ``return (...)``.
    """
    lines = []
    for n in gm.graph.nodes:
        args = ", ".join([_arg_text(a) for a in n.args] + [f"{k}={_arg_text(v)}" for k, v in n.kwargs.items()])
        if n.op == "call_function":
            lines.append(f"{n.name} = {op_name(n.target)}({args})")
        elif n.op == "call_method":
            self_arg, rest = _arg_text(n.args[0]), ", ".join(_arg_text(a) for a in n.args[1:])
            lines.append(f"{n.name} = {self_arg}.{n.target}({rest})")
        elif n.op == "call_module":
            lines.append(f"{n.name} = self.{n.target}({args})")
        elif n.op == "output":
            lines.append(f"return {_arg_text(n.args[0])}")
    return lines


def side_by_side(left: list[str], right: list[str], titles=("before", "after"), width: int = 40) -> str:
    """Two listings in columns, row by row (ch13)."""
    return columns(left, right, titles, width)


def in_place_calls(gm) -> list[str]:
    """The in-place calls of a Dynamo graph (``add_``, ``relu_``, ...: method or function names ending in ``_``) (ch13)."""
    names = []
    for n in gm.graph.nodes:
        if n.op == "call_method" and str(n.target).endswith("_") and not str(n.target).startswith("_"):
            names.append(str(n.target))
        elif n.op == "call_function":
            name = op_name(n.target)
            if name.endswith("_") and not name.startswith("_"):
                names.append(name)
    return names


# ---------------------------------------------------------------------------------------------- capture

@dataclass
class InputInfo:
    """One input as AOTAutograd's ``ViewAndMutationMeta.input_info`` describes it (ch13)."""

    index: int
    mutates_data: bool
    mutates_metadata: bool
    requires_grad: bool
    keep_input_mutations: bool
    mutation_type: str  # NOT_MUTATED, MUTATED_IN_GRAPH or MUTATED_OUT_GRAPH


@dataclass
class Functionalized:
    """What one compiled call went through: Dynamo's graph, AOTAutograd's graphs and metadata, and the values (ch13).

    ``mutated_by[i]`` says who changed input ``i`` during the compiled call: ``"graph"`` (the graph's own
    ``copy_``), ``"runtime wrapper"`` (the input was unchanged when the graph returned and changed when the
    call returned) or ``"not mutated"``.
    """

    backend: str
    dynamo: object = None
    forward: object = None
    backward: object = None
    inputs: list = field(default_factory=list)
    mutated_by: list = field(default_factory=list)
    user_outputs: int = 0
    outputs_match: bool = False
    inputs_match: bool = False
    view_pairs_removed: int = 0

    def graph(self, which: str = "forward"):
        return getattr(self, which)

    def ops(self, which: str = "forward") -> list[str]:
        """Short op names of a graph's ``call_function`` nodes, in order (``dynamo`` lists call_method too)."""
        gm = self.graph(which)
        return [op_name(n.target) if n.op == "call_function" else str(n.target)
                for n in gm.graph.nodes if n.op in ("call_function", "call_method")]

    def count(self, op: str, which: str = "forward") -> int:
        return self.ops(which).count(op)

    def lines(self, which: str = "forward") -> list[str]:
        return graph_lines(self.graph(which))

    def graph_outputs(self, which: str = "forward") -> int:
        out = [n for n in self.graph(which).graph.nodes if n.op == "output"][0]
        return len(out.args[0])

    def inputs_of(self, op: str, which: str = "forward") -> list[str]:
        """The node names the first ``op`` node reads (``["view_3", "2"]`` for ``mul(view_3, 2)``)."""
        for n in self.graph(which).graph.nodes:
            if n.op == "call_function" and op_name(n.target) == op:
                return [_arg_text(a) for a in n.args]
        return []


def _clone(a):
    import torch

    if not isinstance(a, torch.Tensor):
        return a
    if a.is_leaf:
        return a.detach().clone().requires_grad_(a.requires_grad)
    return a.clone()  # a non-leaf stays a non-leaf (with autograd history), as the caller made it


def _same(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype
                and torch.allclose(a.detach(), b.detach(), rtol=1e-5, atol=1e-6, equal_nan=True))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _snapshot(tensors) -> list:
    return [t.detach().clone() for t in tensors]


@contextlib.contextmanager
def _quiet_pgo():
    """Hide the warning Dynamo's profile-guided cache prints once caches are disabled ("dynamo_pgo force disabled")."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
        yield


def functionalize_graphs(fn, *args, backend: str = "aot_eager") -> Functionalized:
    """Compile ``fn`` once through ``backend`` with recording compilers, call it on copies of ``args``, and compare
    with eager on other copies (ch13).

    ``backend`` is one of ``BACKENDS``:
    - ``"aot_autograd"``: ``torch._dynamo.backends.common.aot_autograd`` with its defaults, which leave
      ``keep_inference_input_mutations`` False (as ``aot_module_simplified`` does);
    - ``"aot_eager"``: ``torch._dynamo.backends.debugging.aot_eager``, the debugging backend, given our compilers;
    - ``"inductor"``: ``torch._inductor.compile_fx.compile_fx`` with a recording ``inner_compile``: AOTAutograd
      runs with Inductor's settings and decompositions, Inductor's joint-graph passes run, and the graph handed
      to Inductor's inner compiler (``compile_fx_inner``: after the joint-graph passes, before the post-grad
      passes, which run inside it) is recorded and run as it is, without generating code.
    """
    import torch

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    counters = private("torch._dynamo.utils.counters")
    tracing_context = private("torch._guards.TracingContext")
    clear_compile_state()
    result = Functionalized(backend)
    compiled_args = [_clone(a) for a in args]
    eager_args = [_clone(a) for a in args]
    watched = [a for a in compiled_args if isinstance(a, torch.Tensor)]
    seen = {"before": None, "after": None}

    def recorder(gm, example_inputs, **kwargs):
        ctx = tracing_context.try_get()
        meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
        backward = kwargs.get("is_backward", False) or (result.forward is not None and meta is None)
        if backward or result.forward is not None:
            result.backward = gm
        else:
            result.forward = gm
            if meta is not None:
                result.inputs = [InputInfo(i, bool(info.mutates_data), bool(info.mutates_metadata),
                                           bool(info.requires_grad), bool(info.keep_input_mutations),
                                           info.mutation_type.name)
                                 for i, info in enumerate(meta.input_info)]
        forward = gm.forward

        def run(call_args):
            is_fw = gm is result.forward
            if is_fw:
                seen["before"] = _snapshot(watched)
            out = forward(*call_args)
            if is_fw:
                seen["after"] = _snapshot(watched)
            return out

        run._boxed_call = True
        return run

    def bw_recorder(gm, example_inputs, **kwargs):
        result.backward = gm
        forward = gm.forward

        def run(call_args):
            return forward(*call_args)

        run._boxed_call = True
        return run

    if backend == "aot_autograd":
        inner = private("torch._dynamo.backends.common.aot_autograd")(fw_compiler=recorder, bw_compiler=bw_recorder)
    elif backend == "aot_eager":
        aot_eager = private("torch._dynamo.backends.debugging.aot_eager")

        def inner(gm, example_inputs):
            return aot_eager(gm, example_inputs, fw_compiler=recorder, bw_compiler=bw_recorder)
    else:
        compile_fx = private("torch._inductor.compile_fx.compile_fx")

        def inner(gm, example_inputs):
            return compile_fx(gm, example_inputs, inner_compile=recorder)

    def dynamo_backend(gm, example_inputs):
        result.dynamo = gm
        return inner(gm, example_inputs)

    removed_before = counters["inductor"].get("removed_pointless_view_pair", 0)
    before_call = _snapshot(watched)
    # No cache may answer for AOTAutograd or Inductor: a hit would skip the compilers that record the graphs.
    with private("torch._inductor.config").patch(force_disable_caches=True), _quiet_pgo():
        out_c = torch.compile(fn, backend=dynamo_backend)(*compiled_args)
    result.view_pairs_removed = counters["inductor"].get("removed_pointless_view_pair", 0) - removed_before
    out_e = fn(*eager_args)
    result.user_outputs = len(out_c) if isinstance(out_c, (list, tuple)) else 1
    result.outputs_match = _same(out_c, out_e)
    result.inputs_match = _same(compiled_args, eager_args)
    for k, t in enumerate(watched):
        changed_overall = not _same(before_call[k], t)
        changed_in_graph = seen["before"] is not None and not _same(seen["before"][k], seen["after"][k])
        result.mutated_by.append("graph" if changed_in_graph else "runtime wrapper" if changed_overall
                                 else "not mutated")
    return result


# ---------------------------------------------------------------------------------------------- aliasing

@dataclass
class AliasRun:
    """One ``aot_eager`` compile of a function whose inputs or outputs alias (ch13): the forward graph's
    placeholders and op names, each output's ``OutputType`` from ``ViewAndMutationMeta.output_info``, whether
    each compiled output is a view whose ``_base`` is one of the caller's inputs, and agreement with eager
    (outputs, and inputs after the call)."""

    placeholders: list
    ops: list
    output_types: list
    outputs_view_input: list
    matches_eager: bool
    forward: object = None


def alias_run(fn, make_args) -> AliasRun:
    """Compile ``fn`` with ``aot_eager`` (a recording forward compiler) on ``make_args()``, call it, and compare with
    eager on a second ``make_args()`` (each drawn under the same seed). ``make_args`` builds the arguments afresh each time, so arguments that
    alias each other (``(base, base[0])``) stay aliased: cloning each one would separate them (ch13)."""
    import torch

    tracing_context = private("torch._guards.TracingContext")
    aot_eager = private("torch._dynamo.backends.debugging.aot_eager")
    clear_compile_state()
    seen = {}

    def recorder(gm, example_inputs, **kwargs):
        if "forward" not in seen:
            ctx = tracing_context.try_get()
            meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
            seen["forward"] = gm
            seen["outputs"] = [info.output_type.name for info in meta.output_info] if meta is not None else []
        forward = gm.forward

        def run(call_args):
            return forward(*call_args)

        run._boxed_call = True
        return run

    def backend(gm, example_inputs):
        return aot_eager(gm, example_inputs, fw_compiler=recorder, bw_compiler=recorder)

    def fresh_args():  # the same values each time: make_args may draw random numbers
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return make_args()

    compiled_args, eager_args = fresh_args(), fresh_args()
    with private("torch._inductor.config").patch(force_disable_caches=True), _quiet_pgo():
        out_c = torch.compile(fn, backend=backend)(*compiled_args)
    out_e = fn(*eager_args)
    outs = list(out_c) if isinstance(out_c, (list, tuple)) else [out_c]
    gm = seen["forward"]
    return AliasRun(placeholders=[n.name for n in gm.graph.nodes if n.op == "placeholder"],
                    ops=[op_name(n.target) for n in gm.graph.nodes if n.op == "call_function"],
                    output_types=seen["outputs"],
                    outputs_view_input=[isinstance(o, torch.Tensor) and any(o._base is a for a in compiled_args)
                                        for o in outs],
                    matches_eager=_same(out_c, out_e) and _same(list(compiled_args), list(eager_args)),
                    forward=gm)


# ---------------------------------------------------------------------------------------------- Inductor's kernel

@dataclass
class InductorWrite:
    """The code Inductor generated for a function that mutates its input (ch13)."""

    sources: list
    kernels: list
    call_lines: list
    input_names: list
    written_inputs: list  # inputs passed to a kernel in an output position (out_ptr / in_out_ptr)
    compiled: object = None  # the torch.compile wrapper that produced the code (call it again: no recompile)
    post_grad_ops: list = field(default_factory=list)  # op names of the graph after Inductor's post-grad passes

    @property
    def writes_input(self) -> bool:
        return bool(self.written_inputs)

    def wrapper_statements(self) -> list[str]:
        """The statements of the wrapper's ``call`` (comments, asserts and ``del`` left out), stripped."""
        body = next((b for b in map(_call_body, self.sources) if b), "")
        return [line.strip() for line in body.splitlines()
                if line.strip() and not line.strip().startswith(("#", "assert_", "del ", "args.clear"))]


def _call_body(source: str) -> str:
    match = re.search(r"^( *)def call\((?:self, )?args\):\n", source, re.M)
    if not match:
        return ""
    indent = len(match.group(1))
    lines = []
    for line in source[match.end():].splitlines():
        if line.strip() and (len(line) - len(line.lstrip())) <= indent:
            break
        lines.append(line)
    return "\n".join(lines)


def read_inductor_write(sources) -> InductorWrite:
    """Which kernels the wrapper calls and which graph inputs a kernel writes into (ch13).

    A kernel's pointer parameters are named ``in_ptrN`` (read), ``out_ptrN`` (written) or ``in_out_ptrN``
    (both), in C++ (``extern "C" void kernel(...)``) and in Triton (``def triton_...(...)``) alike; the
    wrapper's ``call`` passes buffers to them by position.
    """
    source = "\n".join(sources)
    kernels = list(dict.fromkeys(re.findall(r"^(\w+) = async_compile\.\w+\(", source, re.M)))
    body = _call_body(source)
    m = re.search(r"^\s*([\w, ]+),?\s*=\s*args\s*$", body, re.M)
    input_names = [n.strip() for n in m.group(1).split(",") if n.strip()] if m else []
    call_lines, written = [], []
    for name in kernels:
        start = re.search(rf"^{re.escape(name)} = async_compile\.\w+\(", source, re.M)
        rest = source[start.end():] if start else ""
        sig = re.search(r"(?:void\s+kernel|def\s+triton_\w+)\(([^)]*)\)", rest, re.S)
        params = re.findall(r"\b(in_out_ptr\d+|in_ptr\d+|out_ptr\d+)\b", sig.group(1)) if sig else []
        for line in body.splitlines():
            call = re.search(rf"\b{re.escape(name)}(?:\.run)?\((.*)\)\s*$", line.strip())
            if not call:
                continue
            call_lines.append(line.strip())
            for param, arg in zip(params, split_top(call.group(1))):
                if param.startswith(("out_ptr", "in_out_ptr")) and arg in input_names and arg not in written:
                    written.append(arg)
    return InductorWrite(list(sources), kernels, call_lines, input_names, written)


def inductor_write(fn, *args):
    """Compile ``fn`` with Inductor for real and return ``(result, InductorWrite)`` with its generated code and
    the op names of its graph after the post-grad passes (ch13)."""
    import torch

    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    config = private("torch._inductor.config")
    post_grad: list = []

    def record_post_grad(graph):  # config.post_grad_custom_post_pass: runs last among the post-grad passes
        post_grad.append([op_name(n.target) for n in graph.nodes if n.op == "call_function"])

    clear_compile_state()
    compiled = torch.compile(fn)
    with config.patch(post_grad_custom_post_pass=record_post_grad, force_disable_caches=True), _quiet_pgo():  # a cache hit runs no pass
        result, sources = run_and_get_code(compiled, *args)
    written = read_inductor_write(list(sources))
    written.compiled = compiled
    written.post_grad_ops = post_grad[0] if post_grad else []
    return result, written


# ---------------------------------------------------------------------------------------------- the ledger

@dataclass
class LedgerStep:
    """After the first ``line`` lines of a function: its functional graph and which node each name holds (ch13)."""

    line: int
    source: str
    graph: list
    holds: dict


def _assigned(lines) -> list[str]:
    names = []
    for line in lines:
        m = re.match(r"\s*(\w+)\s*=(?!=)", line)
        if m and m.group(1) not in names:
            names.append(m.group(1))
    return names


def ledger(lines: list[str], example, arg: str = "x") -> list[LedgerStep]:
    """Functionalize every prefix of a function written as ``lines`` of one argument ``arg`` (ch13).

    Each prefix returns its live names, so ``make_fx(torch.func.functionalize(prefix))`` shows the pure graph
    so far and, in its outputs, the node that currently holds each name (its latest functional value).
    Public API only: ``torch.func.functionalize`` and ``torch.fx.experimental.proxy_tensor.make_fx``.
    """
    from torch.func import functionalize
    from torch.fx.experimental.proxy_tensor import make_fx

    steps = []
    for k in range(len(lines) + 1):
        names = [arg] + [n for n in _assigned(lines[:k]) if n != arg]
        body = "".join(f"    {line}\n" for line in lines[:k])
        src = f"def prefix({arg}):\n{body}    return ({', '.join(names)},)\n"
        namespace: dict = {}
        exec(compile(src, f"<ledger step {k}>", "exec"), namespace)  # noqa: S102 - the chapter's own lines
        gm = make_fx(functionalize(namespace["prefix"], remove="mutations"))(example.clone())
        out = [n for n in gm.graph.nodes if n.op == "output"][0].args[0]
        holds = {name: _arg_text(node) for name, node in zip(names, out)}
        graph = [g for g in graph_lines(gm) if not g.startswith("return")]
        steps.append(LedgerStep(k, lines[k - 1] if k else "(start)", graph, holds))
    return steps


def show_ledger_step(steps: list[LedgerStep], line: int, names=("x", "y")) -> str:
    """The ledger up to ``line`` as text: one row per line of the function, then the pure graph so far (ch13)."""
    rows = [f"{'after line':<22}" + "".join(f"{n + ' holds':<14}" for n in names)]
    for s in steps[1:line + 1]:
        rows.append(f"{s.source:<22}" + "".join(f"{s.holds.get(n, '—'):<14}" for n in names))
    rows.append("")
    rows.append(f"pure graph after {line} line{'s' if line != 1 else ''}:")
    rows += ["    " + g for g in steps[line].graph] or ["    (no operations yet)"]
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------- exercises

def mutation_site(fn, make_args, backend: str = "aot_eager") -> str:
    """Who applies ``fn``'s input mutation when compiled with ``backend``: "graph", "runtime wrapper",
    "not mutated", or what went wrong (exercise 13.2)."""
    import torch

    torch.manual_seed(0)
    args = make_args()
    run = functionalize_graphs(fn, *args, backend=backend)
    if not (run.outputs_match and run.inputs_match):
        return "compiled result differs from eager"
    sites = [m for m in run.mutated_by if m != "not mutated"]
    return sites[0] if sites else "not mutated"


def mutation_sites(fn, make_args, backend: str = "aot_eager"):
    """Who applies each of ``fn``'s input mutations when compiled with ``backend``: a tuple, one of
    "graph", "runtime wrapper" or "not mutated" per tensor argument, or what went wrong (exercise 13.2)."""
    import torch

    torch.manual_seed(0)
    args = make_args()
    run = functionalize_graphs(fn, *args, backend=backend)
    if not (run.outputs_match and run.inputs_match):
        return "compiled result differs from eager"
    return tuple(run.mutated_by)


def forgets_input_mutation(fn):
    """A stand-in for a broken compiler: returns ``fn``'s outputs but never writes to the caller's inputs (exercise 13.3)."""

    def broken(*args):
        return fn(*[_clone(a) for a in args])

    return broken


def wrong_output(fn):
    """A stand-in for a broken compiler: mutates the inputs as ``fn`` does, but its output is off by 1e-2 (exercise 13.3)."""

    def broken(*args):
        out = fn(*args)
        return out + 1e-2

    return broken


def judge_agreement(agrees, fn, make_args, backend: str = "aot_eager") -> tuple:
    """Run the reader's ``agrees(fn, compiled, make_args)`` on a correct compiler and two broken ones (exercise 13.3).

    Returns what it answered for (the real compiled ``fn``, one that forgets the input mutation, one with a
    wrong output); a correct checker answers ``(True, False, False)``.
    """
    import torch

    clear_compile_state()
    compiled = torch.compile(fn, backend=backend)
    return (bool(agrees(fn, compiled, make_args)), bool(agrees(fn, forgets_input_mutation(fn), make_args)),
            bool(agrees(fn, wrong_output(fn), make_args)))

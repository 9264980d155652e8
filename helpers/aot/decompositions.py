"""Decomposition and PrimTorch (ch14): the decomposition tables, ATen graphs traced with a chosen
table, the operator layers of one function, what Inductor generates, and decompositions for custom ops.

Private names (``torch._decomp``, ``torch._prims``, ``torch._functorch``, ``torch._inductor``) are reached
through ``helpers.core.private.private``; every function works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from ..core.private import private
from ..dynamo.state import capture_graphs, clear_compile_state
from .operators import operator_counts

__all__ = ["LAYERS", "InductorOutput", "by_origin", "check_rule", "core_minus_inductor", "decomposition_tables",
           "graph_code", "inductor_exclusions", "inductor_output", "is_core", "layer_graphs", "matmul_kinds",
           "named_tensor_overloads", "op_kinds", "op_nodes", "operator_counts", "page_faults_per_call", "post_grad_graphs_logged",
           "prim_operator_names", "rule_source", "table_census", "trace_aten", "trace_prims", "with_rule"]

LAYERS = ("torch", "ATen", "Core ATen", "Inductor", "prims")  # the layers layer_graphs traces, top down


def decomposition_tables() -> dict:
    """The three tables a backend can trace with: op overload → Python rule (ch14).

    ``registered``: every rule registered with ``torch._decomp.register_decomposition`` (the global
    ``torch._decomp.decomposition_table``); ``core``: ``torch._decomp.core_aten_decompositions()``, the
    rules that lower to Core ATen (the same table as ``torch.export.default_decompositions()``);
    ``inductor``: ``torch._inductor.decomposition.select_decomp_table()``, what ``compile_fx`` traces with.
    """
    return {"registered": private("torch._decomp.decomposition_table"),
            "core": private("torch._decomp.core_aten_decompositions")(),
            "inductor": private("torch._inductor.decomposition.select_decomp_table")()}


def table_census(fresh_process: bool = False) -> dict[str, int]:
    """Sizes of the decomposition tables (overloads and distinct operator names) and of the torch API (ch14).

    ``torch_api``: the public functions and ``Tensor`` methods that take part in ``__torch_function__``
    (``torch.overrides.get_overridable_functions``); ``inductor_base``: Inductor's ``decompositions``
    dict alone (what the series counted), before ``select_decomp_table`` adds the random-number rules.
    ``fresh_process=True`` counts in a new interpreter, so what this process registered does not count.
    The dispatcher's counts of ``operator_counts`` (ch01) come with them, under their own keys.
    """
    if fresh_process:
        import json
        import subprocess
        import sys

        code = ("import json; from helpers.aot.decompositions import table_census; "
                "print(json.dumps(table_census()))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    import torch

    out = dict(operator_counts())  # first: loading Inductor's table registers Inductor's own prims
    tables = decomposition_tables()
    for name, table in tables.items():
        out[f"{name}_overloads"] = len(table)
        out[f"{name}_packets"] = len({getattr(op, "overloadpacket", op) for op in table})
    out["inductor_base"] = len(private("torch._inductor.decomposition.decompositions"))
    out["torch_api"] = sum(len(v) for v in torch.overrides.get_overridable_functions().values())
    return out


def is_core(op) -> bool:
    """True if ``op`` (an OpOverload) carries ``torch.Tag.core``: it belongs to Core ATen IR (ch14)."""
    import torch

    return torch.Tag.core in getattr(op, "tags", ())


def prim_operator_names() -> list[str]:
    """The operator names in the dispatcher's ``prims`` namespace, sorted (ch14)."""
    names = private("torch._C._dispatch_get_all_op_names")()
    return sorted({n.split("::", 1)[1].partition(".")[0] for n in names if n.startswith("prims::")})


def named_tensor_overloads() -> dict[str, int]:
    """ATen overloads for named tensors (``aten.var.names_dim``, ``aten.cumsum.dimname``, ...): in the dispatcher
    and among the rules of the three decomposition tables (``registered_rules``, ``core_rules``,
    ``inductor_rules``; ch14; torch 2.13 removed them from ATen).
    """
    def named(overload: str) -> bool:
        return "name" in overload.lower()

    def rules(table) -> int:
        return sum(1 for op in table if str(op).startswith("aten.") and named(str(op).split(".", 2)[-1]))

    names = private("torch._C._dispatch_get_all_op_names")()
    in_dispatcher = [n for n in names if n.startswith("aten::") and named(n.split("::", 1)[1].partition(".")[2])]
    tables = decomposition_tables()
    return {"dispatcher": len(in_dispatcher), "registered_rules": rules(tables["registered"]),
            "core_rules": rules(tables["core"]), "inductor_rules": rules(tables["inductor"])}


def inductor_exclusions() -> list[str]:
    """The names in ``decomps_to_exclude``: core rules Inductor removes from its table (ch14)."""
    return [str(op) for op in private("torch._inductor.decomposition.decomps_to_exclude")]


def core_minus_inductor() -> list[str]:
    """Overloads that the Core ATen table decomposes and Inductor's table does not (ch14)."""
    tables = decomposition_tables()
    return sorted(str(op) for op in set(tables["core"].keys()) - set(tables["inductor"].keys()))


def _table(table):
    if table is None or isinstance(table, dict) and not table:
        return {}
    if isinstance(table, str):
        return decomposition_tables()[table]
    return table


def trace_aten(fn, *args, table=None):
    """The ATen graph AOTAutograd traces for ``fn(*args)`` under ``no_grad`` with decomposition ``table`` (ch14).

    ``table``: None or ``{}`` (no Python rules: only the dispatcher's own composite decompositions run),
    ``"core"``, ``"inductor"``, ``"registered"``, or a dict of your own. Returns the inference graph
    (a ``torch.fx.GraphModule``) that a backend would receive.
    """
    return _run_traced(fn, args, table)[1]


def _run_traced(fn, args, table):
    """(what the traced graph returned when run once on ``args``, the graph)."""
    import torch

    aot_autograd = private("torch._dynamo.backends.common.aot_autograd")
    make_boxed_func = private("torch._functorch.aot_autograd.make_boxed_func")
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    clear_compile_state()
    backend = aot_autograd(fw_compiler=keep, decompositions=_table(table))
    with torch.no_grad():
        result = torch.compile(fn, backend=backend, fullgraph=True)(*args)
    return result, graphs[-1]


def trace_prims(fn, *args):
    """The graph of ``fn(*args)`` traced into ``prims`` through PrimTorch's references (ch14).

    ``TorchRefsMode`` (``torch._prims.context``) sends each ``torch.*`` call to its reference in
    ``torch._refs``, which is written with ``prims``; ``make_fx`` records what reaches the dispatcher.
    """
    import torch

    make_fx = private("torch.fx.experimental.proxy_tensor.make_fx")
    refs_mode = private("torch._prims.context.TorchRefsMode")
    def call(*tensors):  # make_fx reads the signature: a module's would be its __init__'s
        return fn(*tensors)

    with torch.no_grad(), refs_mode():
        return make_fx(call)(*args)


def op_nodes(gm, getitem: bool = False) -> list:
    """The ``call_function`` nodes of a graph; ``getitem`` (picking an output of a tuple) left out unless asked (ch14)."""
    return [n for n in gm.graph.nodes if n.op == "call_function" and (getitem or n.target is not operator.getitem)]


def op_kinds(gm) -> list[str]:
    """The distinct operators of a graph, in order of first use, without ``getitem`` (ch14).

    ATen/prims operators are named by their packet (``aten.mul``: ``mul.Tensor`` and ``mul.Scalar`` are
    one kind); other targets (a torch function in a Dynamo graph) by their name.
    """
    kinds = []
    for n in op_nodes(gm):
        t = n.target
        name = str(t.overloadpacket) if hasattr(t, "overloadpacket") else (getattr(t, "__name__", None) or str(t))
        name = re.sub(r"^torch\.ops\.", "", name)
        if name not in kinds:
            kinds.append(name)
    return kinds


def by_origin(gm) -> dict[str, list[str]]:
    """Group a decomposed graph's operations by the operator they came from (``node.meta["original_aten"]``) (ch14)."""
    groups: dict[str, list[str]] = {}
    for n in op_nodes(gm):
        origin = n.meta.get("original_aten")
        key = str(origin) if origin is not None else str(n.target)
        groups.setdefault(key, []).append(str(n.target))
    return groups


def graph_code(gm, max_lines: int | None = None) -> str:
    """A graph's Python code without the ``x = None`` bookkeeping, optionally cut to ``max_lines`` (ch14)."""
    lines = []
    for line in gm.code.strip().splitlines():
        line = re.sub(r";\s+(\w+ = )+None$", "", line.rstrip())
        if line.strip():
            lines.append(line)
    if max_lines is not None and len(lines) > max_lines:
        cut = len(lines) - max_lines
        lines = lines[:max_lines] + [f"    # ... {cut} more lines cut"]
    return "\n".join(lines)


def layer_graphs(fn, *args) -> dict:
    """``fn(*args)`` traced at each layer of ``LAYERS``: layer name → FX graph (ch14).

    torch: the graph Dynamo hands a backend (torch functions and modules); ATen: AOTAutograd with no
    decomposition table; Core ATen: with ``core_aten_decompositions()``; Inductor: with Inductor's table;
    prims: PrimTorch's references (``trace_prims``).
    """
    import torch

    with torch.no_grad():
        _, recorder = capture_graphs(fn, *args)
    return {"torch": recorder.graphs[-1], "ATen": trace_aten(fn, *args), "Core ATen": trace_aten(fn, *args, table="core"),
            "Inductor": trace_aten(fn, *args, table="inductor"), "prims": trace_prims(fn, *args)}


def with_rule(op, rule, base="inductor") -> dict:
    """A copy of a decomposition table (``base``: a name of ``decomposition_tables`` or a dict) with ``rule`` for ``op`` (ch14).

    ``op`` may be an overload packet (``torch.ops.mylib.f``: every overload) or one overload; the rule is
    added with ``torch._decomp.register_decomposition(op, registry=...)``, which leaves torch's own
    tables untouched.
    """
    table = dict(_table(base))
    private("torch._decomp.register_decomposition")(op, registry=table)(rule)
    return table


@dataclass
class InductorOutput:
    """The Python module Inductor wrote for one compiled call, read for what the chapter discusses (ch14)."""

    source: str
    compiled: object = None  # the torch.compile wrapper that produced it, warm: call it to run the same code

    @property
    def kernels(self) -> list[str]:
        """Generated kernels (Triton on a GPU, C++ on a CPU), in definition order."""
        found = re.finditer(r"^(\w+) = async_compile\.(?:triton|cpp_pybinding|cpp)\(", self.source, re.M)
        return list(dict.fromkeys(m.group(1) for m in found))

    @property
    def library_calls(self) -> list[str]:
        """Calls the wrapper makes into existing kernels: ``extern_kernels.mm``, ``torch.ops.mylib.f.default``."""
        calls = re.findall(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+\.\w+)\(", self.source)
        return list(dict.fromkeys(calls))


def inductor_output(fn, *args, decompositions=None, autograd_cache: bool | None = None):
    """Compile ``fn`` with Inductor (optionally with its own ``decompositions`` table) and run it once (ch14).

    Returns ``(result, InductorOutput)``. ``decompositions`` is passed to ``compile_fx``, which otherwise
    traces with ``select_decomp_table()``. AOTAutograd's cache (``enable_autograd_cache``) does not key
    on a table passed this way, so with a table it is switched off for the compile unless
    ``autograd_cache=True`` asks for it (then a graph compiled before with another table is reused).
    """
    import contextlib

    import torch

    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    clear_compile_state()
    if decompositions is None:
        compiled = torch.compile(fn)
    else:
        compile_fx = private("torch._inductor.compile_fx.compile_fx")
        compiled = torch.compile(fn, backend=lambda gm, ex: compile_fx(gm, ex, decompositions=decompositions))
    use_cache = autograd_cache if autograd_cache is not None else decompositions is None
    patch = (contextlib.nullcontext() if use_cache
             else private("torch._functorch.config").patch(enable_autograd_cache=False))
    with torch.no_grad(), patch:
        result, sources = run_and_get_code(compiled, *args)
    return result, InductorOutput("\n".join(sources), compiled)


def post_grad_graphs_logged(fn, *args) -> int:
    """How many ``post_grad_graphs`` log messages (``TORCH_LOGS="post_grad_graphs"``) compiling ``fn`` with Inductor prints (ch14).

    Dynamo's state is reset first, Inductor's on-disk FX graph cache is not: a second call for the same
    graph loads the compiled module from that cache and skips the passes that log.
    """
    import torch

    from ..dynamo.logs import capture_logs

    private("torch._dynamo.reset")()
    with capture_logs("post_grad_graphs") as logs, torch.no_grad():
        torch.compile(fn)(*args)
    return len(logs.messages("post_grad_graphs"))


def rule_source(op, table="inductor", max_lines: int | None = None, start: str | None = None) -> str:
    """The Python source of the rule ``table`` holds for ``op`` (an OpOverload), wrappers unwrapped (ch14).

    ``start``: show from the first line containing this text (skipping decorators and docstring).
    """
    import inspect

    fn = inspect.unwrap(_table(table)[op])
    lines = inspect.getsource(fn).rstrip().splitlines()
    if start is not None:
        first = next((i for i, line in enumerate(lines) if start in line), 0)
        lines = (["    ..."] if first else []) + lines[first:]
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines] + [f"    # ... {len(lines) - max_lines} more lines cut"]
    return f"# {fn.__qualname__} in {torch_relative(inspect.getsourcefile(fn) or '?')}\n" + "\n".join(lines)


def torch_relative(path: str) -> str:
    """``path`` as the torch package names it (``torch/_refs/__init__.py``), never the absolute path of
    the machine that ran it (torch may live under ``/opt/torch/.venv/.../site-packages/torch/``) (ch14)."""
    import os

    import torch

    root = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))  # the folder holding torch/
    full = os.path.abspath(path)
    if full.startswith(root + os.sep):
        return os.path.relpath(full, root).replace(os.sep, "/")
    return "torch/" + path.rsplit("/torch/", 1)[1] if "/torch/" in path else os.path.basename(path)


def check_rule(fn, op, rule, *args, allowed_namespaces=("aten",)) -> str:
    """Judge a decomposition ``rule`` for the custom ``op`` that ``fn`` calls: "ok" or what is wrong (ch14).

    Traces ``fn(*args)`` with Inductor's table plus the rule and checks that ``op`` is gone, that only
    operators of ``allowed_namespaces`` remain, and that running the traced graph gives what ``fn`` gives.
    """
    import torch

    try:
        got, gm = _run_traced(fn, args, with_rule(op, rule))
    except Exception as exc:  # the reader's rule may fail in any way; say how
        return f"tracing with the rule raised {type(exc).__name__}: {str(exc).strip().splitlines()[0][:100]}"
    kinds = op_kinds(gm)
    foreign = [k for k in kinds if k.split(".")[0] not in allowed_namespaces]
    if foreign:
        return "the graph still calls " + ", ".join(foreign)
    with torch.no_grad():
        want = fn(*args)
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        return f"the graph computes something else (largest difference {float((got - want).abs().max()):.3g})"
    return "ok"


def matmul_kinds(shape_a, shape_b) -> list[str]:
    """The operators left when ``a @ b`` (float32 CPU tensors of these shapes) is traced with Inductor's table (ch14)."""
    import torch

    a, b = torch.randn(*shape_a), torch.randn(*shape_b)
    return op_kinds(trace_aten(lambda a, b: a @ b, a, b, table="inductor"))


def page_faults_per_call(fn, *args, calls: int = 50) -> float:
    """Minor page faults per call of ``fn(*args)`` under ``no_grad``, after a warm-up (ch14; POSIX only).

    A fault is the operating system mapping fresh memory into the process: on a CPU it shows when the C
    library's allocator handed a freed buffer back to the system and the next call needs it again.
    """
    import resource

    import torch

    with torch.no_grad():
        for _ in range(3):
            fn(*args)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(calls):
            fn(*args)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    return (after - before) / calls


def lowering_census() -> dict:
    """The other half of "how few operators does Inductor need" (ch14): what Inductor's lowering step covers.

    Read from ``torch._inductor.lowering``: ``"lowered"``, the aten overloads with an entry in its ``lowerings``
    table (Inductor writes loops for them, or a template or library call); ``"lowered_operators"``, their
    operator packets; ``"fallbacks"``, the aten overloads registered with ``make_fallback`` (``fallbacks``:
    Inductor calls the ATen kernel itself); ``"both"``, lowered overloads that also have a rule in Inductor's
    decomposition table (the rule runs first, so the lowering serves the calls it declines);
    ``"fallbacks_lowered"``, the fallbacks that are in ``lowerings`` too (``make_fallback`` registers a lowering
    that calls the ATen kernel, so every fallback is one); ``"real"`` and ``"real_operators"``, the lowered
    overloads (and their operators) that are not fallbacks: Inductor writes loops, a template or a library call.
    """
    import torch

    lowerings = private("torch._inductor.lowering.lowerings")
    fallbacks = private("torch._inductor.lowering.fallbacks")
    table = private("torch._inductor.decomposition.select_decomp_table")()
    lowered = [op for op in lowerings if isinstance(op, torch._ops.OpOverload) and op.namespace == "aten"]
    fallbacks = [op for op in fallbacks if getattr(op, "namespace", "") == "aten"]
    real = [op for op in lowered if op not in set(fallbacks)]
    return {"lowered": len(lowered), "lowered_operators": len({op.overloadpacket for op in lowered}),
            "fallbacks": len(fallbacks), "both": sum(op in table for op in lowered),
            "fallbacks_lowered": sum(op in set(lowered) for op in fallbacks),
            "real": len(real), "real_operators": len({op.overloadpacket for op in real})}


def has_lowering_or_rule(op) -> tuple[bool, bool]:
    """``(in Inductor's lowerings table, in its decomposition table)`` for an aten overload (ch14)."""
    lowerings = private("torch._inductor.lowering.lowerings")
    table = private("torch._inductor.decomposition.select_decomp_table")()
    return op in lowerings, op in table


def implicit_fallbacks_setting() -> bool:
    """``torch._inductor.config.implicit_fallbacks``: an op with neither rule nor lowering becomes a fallback (ch14)."""
    return bool(private("torch._inductor.config").implicit_fallbacks)


def dtypes_in_graph(gm) -> list[str]:
    """The ``convert_element_type`` steps of a traced graph, in order, as ``"float32"`` (the dtype converted to) (ch14)."""
    import torch

    return [str(n.args[1]).replace("torch.", "") for n in op_nodes(gm)
            if n.target is torch.ops.prims.convert_element_type.default]

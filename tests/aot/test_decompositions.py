"""Unit tests of helpers/aot/decompositions.py (chapter 14)."""
import os
import tempfile

import torch
import torch.nn.functional as F

from helpers.aot.decompositions import (
    LAYERS,
    InductorOutput,
    by_origin,
    check_rule,
    core_minus_inductor,
    decomposition_tables,
    graph_code,
    inductor_exclusions,
    inductor_output,
    is_core,
    layer_graphs,
    matmul_kinds,
    named_tensor_overloads,
    op_kinds,
    op_nodes,
    page_faults_per_call,
    post_grad_graphs_logged,
    prim_operator_names,
    rule_source,
    table_census,
    trace_aten,
    trace_prims,
    with_rule,
)

aten = torch.ops.aten
LN = torch.nn.LayerNorm(8)


def ln_gelu(x):
    return F.gelu(LN(x))


X = torch.randn(4, 8)


@torch.library.custom_op("ch14test::scale_shift", mutates_args=())
def scale_shift(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    return x * scale + shift


@scale_shift.register_fake
def _(x, scale, shift):
    return torch.empty_like(x)


def uses_custom(x):
    return torch.relu(scale_shift(x, 2.0, 1.0))


def test_tables_differ_in_what_they_decompose():
    tables = decomposition_tables()
    assert set(tables) == {"registered", "core", "inductor"}
    assert aten.gelu.default in tables["inductor"] and aten.gelu.default not in tables["core"]
    assert aten.sum.default in tables["core"] and aten.sum.default not in tables["inductor"]


def test_table_census_counts_tables_and_the_dispatcher():
    here = table_census()
    assert here["inductor_overloads"] >= here["inductor_base"] > 0
    assert here["core_aten_overloads"] < here["registered_overloads"] < here["aten_overloads"]
    assert here["torch_api"] > 1000 and here["inductor_packets"] < here["inductor_overloads"]
    fresh = table_census(fresh_process=True)
    assert fresh["registered_overloads"] == here["registered_overloads"]
    assert fresh["prims"] <= here["prims"]  # Inductor registers prims of its own when it loads


def test_is_core_reads_the_core_tag():
    assert is_core(aten.native_layer_norm.default) and is_core(aten.mm.default)
    assert not is_core(aten.var_mean.correction) and not is_core(aten.sum.default)


def test_exclusions_are_core_rules_missing_from_inductor():
    assert {"aten.sum", "aten.baddbmm", "aten.silu"} <= set(inductor_exclusions())
    dropped = core_minus_inductor()
    assert "aten.sum.default" in dropped
    inductor = {str(op) for op in decomposition_tables()["inductor"]}
    assert not set(dropped) & inductor


def test_trace_aten_applies_the_table():
    assert op_kinds(trace_aten(ln_gelu, X)) == ["aten.native_layer_norm", "aten.gelu"]
    assert op_kinds(trace_aten(ln_gelu, X, table="core")) == ["aten.native_layer_norm", "aten.gelu"]
    gm = trace_aten(ln_gelu, X, table="inductor")
    assert "aten.erf" in op_kinds(gm) and len(op_nodes(gm)) == 12
    assert len(op_nodes(gm, getitem=True)) == 14


def test_trace_prims_reaches_prims_where_references_exist():
    assert all(k.startswith("prims.") for k in op_kinds(trace_prims(F.gelu, X)))
    assert op_kinds(trace_prims(F.silu, X)) == ["aten.silu"]  # no reference: falls back
    assert "aten.addmm" in op_kinds(trace_prims(torch.nn.Linear(8, 8), X))  # a module works too


def test_op_kinds_names_packets_once():
    assert op_kinds(trace_aten(lambda x: x * 2 * x, X)) == ["aten.mul"]


def test_by_origin_groups_by_the_decomposed_operator():
    groups = by_origin(trace_aten(ln_gelu, X, table="inductor"))
    assert len(groups["aten.gelu.default"]) == 5
    assert "aten.var_mean.correction" in groups["aten.native_layer_norm.default"]


def test_graph_code_drops_bookkeeping_and_cuts():
    gm = trace_aten(ln_gelu, X, table="inductor")
    assert "= None" not in graph_code(gm)
    cut = graph_code(gm, max_lines=3).splitlines()
    assert len(cut) == 4 and "more lines cut" in cut[-1]


def test_layer_graphs_traces_every_layer():
    graphs = layer_graphs(ln_gelu, X)
    assert tuple(graphs) == LAYERS
    assert [len(op_nodes(graphs[k])) for k in LAYERS] == [2, 2, 2, 12, 20]


def test_with_rule_copies_the_table():
    table = with_rule(torch.ops.ch14test.scale_shift, lambda x, s, b: x * s + b)
    assert torch.ops.ch14test.scale_shift.default in table
    assert torch.ops.ch14test.scale_shift.default not in decomposition_tables()["inductor"]
    assert op_kinds(trace_aten(uses_custom, X, table=table)) == ["aten.mul", "aten.add", "aten.relu"]


def test_inductor_output_parses_kernels_and_library_calls():
    src = ("cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*'], r'''...''')\n"
           "    buf0 = torch.ops.mylib.f.default(arg0_1)\n    extern_kernels.mm(a, b, out=buf1)\n")
    out = InductorOutput(src)
    assert out.kernels == ["cpp_fused_relu_0"]
    assert out.library_calls == ["torch.ops.mylib.f.default", "extern_kernels.mm"]


def test_inductor_output_compiles_with_a_table_and_skips_the_stale_cache():
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()
    _, plain = inductor_output(uses_custom, X)
    assert "torch.ops.ch14test.scale_shift.default" in plain.library_calls
    table = with_rule(torch.ops.ch14test.scale_shift, lambda x, s, b: x * s + b)
    result, ruled = inductor_output(uses_custom, X, decompositions=table)
    assert ruled.library_calls == [] and len(ruled.kernels) == 1
    assert torch.allclose(result, uses_custom(X)) and torch.allclose(ruled.compiled(X), result)
    _, stale = inductor_output(uses_custom, X, decompositions=table, autograd_cache=True)
    assert "torch.ops.ch14test.scale_shift.default" in stale.library_calls


def test_post_grad_log_is_empty_on_a_cache_hit():
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()
    fn = lambda x: torch.cos(x) + 1  # noqa: E731
    assert post_grad_graphs_logged(fn, X) == 1
    assert post_grad_graphs_logged(fn, X) == 0


def test_rule_source_shows_the_rule():
    text = rule_source(aten.gelu.default)
    assert text.startswith("# gelu in torch/_refs/nn/functional/__init__.py") and "def gelu" in text
    part = rule_source(aten.gelu.default, start="M_SQRT2 =", max_lines=2)
    assert "def gelu" not in part and part.splitlines()[-1].endswith("more lines cut")


def test_check_rule_judges_a_rule():
    good = lambda x, s, b: x * s + b  # noqa: E731
    assert check_rule(uses_custom, torch.ops.ch14test.scale_shift, good, X) == "ok"
    assert "something else" in check_rule(uses_custom, torch.ops.ch14test.scale_shift, lambda x, s, b: x * s, X)
    assert "raised" in check_rule(uses_custom, torch.ops.ch14test.scale_shift, lambda x, s, b: None, X)


def test_matmul_kinds_keeps_mm_except_outer_products():
    assert matmul_kinds((4, 8), (8, 4)) == ["aten.mm"]
    assert matmul_kinds((4, 1), (1, 4)) == ["aten.mul"]


def test_prim_operator_names_has_no_matmul():
    names = prim_operator_names()
    assert "broadcast_in_dim" in names and "convert_element_type" in names
    assert "mm" not in names and "convolution" not in names


def test_page_faults_per_call_sees_fresh_memory():
    big = lambda: torch.empty(2**24).fill_(1.0)  # noqa: E731  64 MiB: above glibc's largest mmap threshold
    assert page_faults_per_call(big, calls=5) > 1000
    assert page_faults_per_call(lambda: None, calls=5) < 10


def test_named_tensor_overloads_agree_between_dispatcher_and_table():
    named = named_tensor_overloads()
    assert named["registered_rules"] <= named["dispatcher"]
    assert (named["dispatcher"] == 0) == (named["registered_rules"] == 0)
    for table in ("core_rules", "inductor_rules"):
        assert (named[table] == 0) == (named["dispatcher"] == 0)
    if torch.__version__ >= "2.13":
        assert named["dispatcher"] == 0  # removed from ATen in torch 2.13
        assert named["core_rules"] == named["inductor_rules"] == 0


def test_lowering_census_and_opmath_converts():
    import torch.nn.functional as F

    from helpers.aot.decompositions import dtypes_in_graph, lowering_census, trace_aten
    c = lowering_census()
    assert c["lowered"] > c["lowered_operators"] > 0 and c["fallbacks"] > 0 and 0 < c["both"] < c["lowered"]
    # make_fallback registers a lowering: the fallbacks are inside the lowered count, the rest lower for real
    assert c["fallbacks_lowered"] == c["fallbacks"] and c["real"] == c["lowered"] - c["fallbacks_lowered"] > 0
    g = trace_aten(F.gelu, torch.randn(4, 8, dtype=torch.bfloat16), table="inductor")
    assert dtypes_in_graph(g) == ["float32", "bfloat16"]


def test_binomial_becomes_an_implicit_fallback():
    from helpers.aot.decompositions import has_lowering_or_rule, implicit_fallbacks_setting, inductor_output
    assert not has_lowering_or_rule(torch.ops.aten.binomial.default)[1]  # no rule in Inductor's table
    assert implicit_fallbacks_setting() is True
    _, out = inductor_output(lambda c, p: torch.binomial(c, p) + 1, torch.full((4,), 5.0), torch.full((4,), 0.5))
    assert "torch.ops.aten.binomial.default" in out.library_calls and len(out.kernels) == 1
    assert has_lowering_or_rule(torch.ops.aten.binomial.default)[0]  # the implicit fallback registered a lowering

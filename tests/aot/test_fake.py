"""Unit tests of helpers/aot/fake.py (chapter 16)."""
import torch

from helpers.aot.fake import (aot_view, backend_view, compile_error, custom_op, describe, fake_impl_check,
                              fake_matmul_time, fake_mode, graph_input_log, is_fake, layout_under_fake,
                              one_graph_check, raises_under_fake, step_shapes)


def f(x, w):
    return torch.tanh(x @ w)


def test_fake_mode_makes_fake_tensors_and_honours_cache_switch():
    mode = fake_mode(cache=False)
    assert mode.cache_enabled is False and fake_mode().cache_enabled is True
    with mode:
        y = torch.randn(32, 64) @ torch.randn(64, 128)
    assert is_fake(y) and not is_fake(torch.randn(2))
    assert describe(y) == "FakeTensor(32, 128) float32 cpu"
    assert describe(torch.zeros(2, dtype=torch.int64)) == "Tensor(2) int64 cpu"
    assert describe(3) == "int: 3"


def test_fake_matmul_time_is_small_even_for_a_huge_matrix():
    t = fake_matmul_time(65536, repeats=3)  # 16 GiB per operand if it were real
    assert 0 < t.median < 0.5


def test_backend_gets_real_inputs_and_nodes_carry_fakes():
    view = backend_view(f, torch.randn(8, 16), torch.randn(16, 4))
    assert view.inputs == ["Tensor(8, 16) float32 cpu", "Tensor(16, 4) float32 cpu"] and view.fake_inputs == 0
    assert [d for _, _, d in view.nodes] == ["FakeTensor(8, 16) float32 cpu", "FakeTensor(16, 4) float32 cpu",
                                             "FakeTensor(8, 4) float32 cpu", "FakeTensor(8, 4) float32 cpu"]
    assert view.meta_keys == ["example_value"]
    assert "FakeTensor(8, 4)" in view.table()


def test_aot_forward_compiler_gets_fake_inputs_and_val_meta():
    view = aot_view(f, torch.randn(8, 16), torch.randn(16, 4))
    assert view.fake_inputs == 2 and view.meta_keys == ["val"]
    assert [name for _, name, _ in view.nodes if not name.startswith("arg")] == ["mm", "tanh"]


def test_graph_input_log_sees_one_line_per_input_and_restores_the_logger():
    import logging

    logger = logging.getLogger("torch._dynamo.output_graph")
    before = (logger.level, logger.propagate, list(logger.handlers))
    lines = graph_input_log(f, torch.randn(8, 16), torch.randn(16, 4))
    assert len(lines) == 2 and all("FakeTensor" in line for line in lines)
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


def test_compile_error_and_raises_under_fake_name_the_exception():
    def branch(x):
        return x.sin() if x.sum() > 0 else x.cos()

    assert compile_error(branch, torch.randn(4), fullgraph=True)[0] == "Unsupported"
    assert compile_error(torch.sin, torch.randn(4)) == ("none", "")
    assert raises_under_fake(lambda x: x.sum().item(), torch.randn(4))[0] == "DataDependentOutputException"
    assert raises_under_fake(lambda x: x + 1, torch.randn(4)) == ("none", "")


def test_custom_op_without_fake_fails_to_compile_and_with_fake_compiles():
    impl = lambda x: x.amax(dim=1)  # noqa: E731
    bare = custom_op("rowmax", impl)
    assert compile_error(lambda x: bare(x) + 1, torch.randn(3, 5))[0] == "TorchRuntimeError"
    faked = custom_op("rowmax", impl, fake=lambda x: x.new_empty(x.shape[0]))
    assert str(faked._qualname) != str(bare._qualname)
    assert compile_error(lambda x: faked(x) + 1, torch.randn(3, 5), fullgraph=True) == ("none", "")


def test_step_shapes_follows_a_chain_and_stops_at_an_error():
    rows = step_shapes(["x.t()", "t @ w", "t.unsqueeze(0)"], {"x": (8, 16), "w": (8, 4)})
    assert rows[-1] == ("t.unsqueeze(0)", "FakeTensor(1, 16, 4) float32 cpu  stride (64, 4, 1)")
    rows = step_shapes(["x @ w", "t + 1"], {"x": (8, 16), "w": (8, 4)})
    assert len(rows) == 1 and rows[0][1].startswith("raised RuntimeError")


def test_layout_under_fake():
    assert layout_under_fake(lambda x, w: (x.t() @ w).unsqueeze(0), (8, 16), (8, 4)) == ((1, 16, 4), (64, 4, 1))
    assert layout_under_fake(None) is None
    assert layout_under_fake(lambda x: x @ x, (2, 3)) == "raised RuntimeError"


def test_fake_impl_check_tells_right_from_wrong():
    impl = lambda x: x.amax(dim=1)  # noqa: E731
    x = torch.randn(3, 5)
    assert fake_impl_check(None, impl, x) is None
    assert fake_impl_check(lambda x: x.new_empty(x.shape[0]), impl, x) is True
    assert "shape" in fake_impl_check(lambda x: torch.empty_like(x), impl, x)


def test_fake_impl_check_rejects_a_fake_on_another_device():
    impl = lambda x: torch.cdist(x, x)  # noqa: E731
    x = torch.randn(6, 3)
    assert fake_impl_check(lambda x: x.new_empty(x.shape[0], x.shape[0]), impl, x) is True
    meta = fake_impl_check(lambda x: torch.empty(x.shape[0], x.shape[0], device="meta"), impl, x)
    assert isinstance(meta, str) and "meta" in meta
    other = fake_impl_check(lambda x: torch.empty(x.shape[0], x.shape[0], device="cuda"), impl, x)
    assert isinstance(other, str)  # a fake CUDA tensor for a CPU output, or the fake raising


def test_one_graph_check():
    ref = lambda x: x.sin() if x.sum() > 0 else x.cos()  # noqa: E731
    xs = [torch.ones(4), -torch.ones(4)]
    assert one_graph_check(None, ref, xs) is None
    assert one_graph_check(ref, ref, xs) == "raised Unsupported"
    assert one_graph_check(lambda x: torch.where(x.sum() > 0, x.sin(), x.cos()), ref, xs) is True
    assert one_graph_check(lambda x: x.sin(), ref, xs) == "a result differs from the original function"


def test_meta_census_counts_every_aten_overload_once():
    from helpers.aot.fake import meta_census
    c = meta_census()
    total = sum(v for k, v in c.items() if k not in ("no meta examples", "no meta names"))
    aten = sum(1 for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))
    assert total == aten
    assert c["no meta"] > 0 and c["_meta_registrations"] > 0 and c["_refs"] > 0 and c["_decomp"] > 0
    assert c["explicit"] > 0 and len(c["no meta names"]) == c["no meta"]


def test_meta_entry_reads_the_dispatch_table():
    from helpers.aot.fake import meta_census, meta_entry
    assert meta_entry("aten::geqrf") == "backend fallback"  # nothing serves Meta: the fallback that raises
    assert meta_entry("aten::_foreach_cos") == "default backend kernel"  # CompositeExplicitAutograd serves Meta
    assert meta_entry("aten::add.Tensor") == "kernel"
    names = meta_census()["no meta names"]
    assert "geqrf" in names and "_foreach_cos" not in names


def test_fallback_ops_names_real_kernels_run_on_zeros_and_restores_the_module():
    import torch._subclasses.fake_tensor as ft

    from helpers.aot.fake import fallback_ops
    before = ft.run_fallback_kernel
    out = fallback_ops({"geqrf": lambda: torch.geqrf(torch.empty(8, 3)),
                        "mm": lambda: torch.empty(8, 3) @ torch.empty(3, 2)})
    assert out == {"geqrf": ["aten.geqrf.default"], "mm": []}
    assert ft.run_fallback_kernel is before


def test_compile_error_hints_reads_the_hint_lines():
    from helpers.aot.fake import compile_error_hints

    def g(x):
        if x.sum() > 0:
            return x.sin()
        return x.cos()
    hints = compile_error_hints(g, torch.randn(4), fullgraph=True)
    assert any("torch.cond" in h for h in hints)
    assert compile_error_hints(lambda x: x + 1, torch.randn(2)) == []

"""Unit tests of helpers/inductor/autotune.py (chapter 23)."""
import math

import torch

from helpers.inductor.autotune import (
    Choice,
    Selection,
    break_even_calls,
    check_break_even,
    coordinate_descent,
    descent_log,
    gemm_config_list,
    kernel_family,
    mode_options,
    parse_description,
    reduction_candidates,
    template_shared_memory,
    tflops,
    tile_cost,
    too_big_for,
    triton_mm_configs,
    tune,
)

DESC = "ACC_TYPE='tl.float32', ALLOW_TF32=False, BLOCK_K=64, BLOCK_M=128, BLOCK_N=128, EVEN_K=True, GROUP_M=8, num_stages=3, num_warps=4"


def test_description_and_tile():
    p = parse_description(DESC)
    assert p["BLOCK_M"] == 128 and p["ACC_TYPE"] == "tl.float32" and p["num_warps"] == 4
    c = Choice("triton_mm_16", "Triton template", 0.02, DESC)
    assert c.family == "triton_mm" and c.tile == "128×128×64, 3 stages, 4 warps"
    assert Choice("mm", "ATen", 0.01).tile == "" and not Choice("mm", "ATen", 0.01).failed
    assert Choice("triton_mm_3", "Triton template", float("inf")).failed


def test_selection_ranks_and_reports():
    sel = Selection("mm", ["64x64", "64x64"], [Choice("mm", "ATen", 0.03), Choice("triton_mm_1", "Triton template", 0.02, DESC),
                                               Choice("triton_mm_2", "Triton template", float("inf"))], True)
    assert [c.name for c in sel.ranked] == ["triton_mm_1", "mm", "triton_mm_2"]
    assert sel.winner.name == "triton_mm_1" and sel.aten.name == "mm" and [c.name for c in sel.failed] == ["triton_mm_2"]
    assert sel.kinds() == {"ATen": 1, "Triton template": 2}
    assert "failed" in sel.table() and "66.7%" in sel.table()
    one = Selection("mm", [], [Choice("mm", "ATen", None)])
    assert one.winner.name == "mm" and "nothing to benchmark" in one.table()


def test_tune_records_the_choices_on_cpu():
    lin = torch.nn.Linear(32, 32, bias=False).eval()
    x = torch.randn(8, 32)
    default = tune(lin, x, mode=None, freezing=True)
    assert [s.benchmarked for s in default.selections] == [False]
    assert default.selection.kinds() == {"ATen": 1} and default.bench_s == 0
    only_aten = tune(lin, x, backends="ATEN", freezing=True)
    assert only_aten.selection.kinds() == {"ATen": 1} and not only_aten.benchmarked
    assert torch.allclose(only_aten.compiled(x), lin(x).detach(), atol=1e-5)
    assert tune(lin, x, backends="ATEN", freezing=True) is only_aten  # cached


def test_coordinate_descent_stops_at_a_local_optimum():
    start = {"XBLOCK": 8, "R0_BLOCK": 512, "num_warps": 8}
    hints = {"x": 2048, "r0_": 2048}
    plain = coordinate_descent(tile_cost, start, size_hints=hints)
    assert plain.final["XBLOCK"] * plain.final["R0_BLOCK"] == 4096 and plain.final["XBLOCK"] == 8
    assert plain.final_cost < plain.start_cost and plain.evaluations == len(plain.tried) > 4
    assert plain.log[0].startswith("= Do coordinate descent tuning")
    wide = coordinate_descent(tile_cost, start, size_hints=hints, check_all_directions=True)
    assert wide.final_cost < plain.final_cost and wide.final["R0_BLOCK"] == 2048
    assert all(c["R0_BLOCK"] <= 2048 for c, _ in wide.tried)  # size hints cap the blocks


def test_descent_log_parses_the_tuner_lines():
    lines = ["= Do coordinate descent tuning for triton_red_fused_0 =",
             "triton_red_fused_0: Baseline Config XBLOCK: 8, R0_BLOCK: 512, num_warps: 16, num_ctas: 1, num_stages: 1, maxnreg: None, baseline timing 0.013312",
             "Try config XBLOCK: 16, R0_BLOCK: 512, num_warps: 16, num_ctas: 1, num_stages: 1, maxnreg: None",
             "Try config XBLOCK: 4, R0_BLOCK: 512, num_warps: 16, num_ctas: 1, num_stages: 1, maxnreg: None",
             "triton_red_fused_0: Improve from XBLOCK: 8, R0_BLOCK: 512, num_warps: 16, num_ctas: 1, num_stages: 1, maxnreg: None 0.013312 -> XBLOCK: 8, R0_BLOCK: 512, num_warps: 16, num_ctas: 1, num_stages: 1, maxnreg: None 0.013312, 1.000x"]
    (k,) = descent_log(lines)
    assert k.kernel == "triton_red_fused_0" and k.tries == 2 and k.baseline["R0_BLOCK"] == 512
    assert k.final["num_warps"] == 16 and math.isclose(k.speedup, 1.0)


def test_break_even_and_its_check():
    assert math.isclose(break_even_calls(1.5, 0.0096e-3), 156_250)
    assert break_even_calls(1.0, 0.0) == float("inf") and break_even_calls(1.0, -1e-6) == float("inf")
    assert check_break_even(None) is None
    assert check_break_even(break_even_calls) is True
    assert check_break_even(lambda e, s: e / s) is False  # no answer for a call that saves nothing


def test_kernel_family_and_tflops():
    assert kernel_family("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNN") == "cuBLAS"
    assert kernel_family("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64") == "cuBLAS"
    assert kernel_family("triton_tem_fused_mm_0") == "Triton template"
    assert kernel_family("triton_poi_fused_relu_0") == "Triton"
    assert math.isclose(tflops(2048, 2048, 2048, 1e-3), 2 * 2048 ** 3 / 1e-3 / 1e12)


def test_the_tuners_own_log_parses_and_dropped_choices_count():
    d = coordinate_descent(tile_cost, {"XBLOCK": 8, "R0_BLOCK": 512, "num_warps": 8}, size_hints={"x": 2048, "r0_": 2048})
    (k,) = descent_log(d.log)
    assert k.kernel == "course_kernel" and k.final == d.final and math.isclose(k.final_ms, d.final_cost)
    assert [c for c, _ in d.moves][-1] == d.final
    removed = Selection("mm", [], [Choice("mm", "ATen", 0.05), Choice("triton_mm_0", "Triton template", None)], True)
    assert [c.name for c in removed.failed] == ["triton_mm_0"] and removed.winner.name == "mm"


def test_shared_memory_model_and_config_rule():
    assert template_shared_memory(128, 128, 128, 4) == 262144  # what Triton reported on the H200
    assert too_big_for(232448, 2048, 2048, 2048) == [(128, 128, 128, 4, 8)]
    configs = triton_mm_configs(16, 4096, 4096)
    assert all(c[0] == 16 for c in configs) and len(configs) == len(set(configs)) < len(gemm_config_list())
    assert len(triton_mm_configs(2048, 2048, 2048)) == len(gemm_config_list())


def test_call_lines_and_mode_options():
    lin = torch.nn.Linear(16, 16, bias=False).eval()
    t = tune(lin, torch.randn(4, 16), mode=None, freezing=True)
    assert not any(line.startswith(("arg", "assert_")) for line in t.call_lines()) and t.call_lines()[-1].startswith("return")
    assert mode_options("max-autotune-no-cudagraphs") == {"max_autotune": True, "coordinate_descent_tuning": True}


def test_phrases():
    from helpers.inductor.autotune import glued, speed_word, winner_phrase

    assert winner_phrase("triton_mm_17") == "a Triton template, triton_mm_17" and winner_phrase("mm") == "the ATen call, mm"
    assert [speed_word(r) for r in (1.2, 1.0, 0.8)] == ["faster", "about as fast", "slower"]
    assert glued("no_such_figure_anywhere") is None


def test_max_autotune_widens_the_reduction_configs():
    # the default heuristic keeps one config for a 2048 x 2048 INNER reduction; max_autotune keeps the whole list
    # ("Do not filter configs when tuning"), so the autotuner has several to benchmark
    default = reduction_candidates(2048, 2048, max_autotune=False)
    tuned = reduction_candidates(2048, 2048, max_autotune=True)
    assert len(default) == 1 and len(tuned) > 1 and default[0] in tuned
    assert set(default[0]) == {"XBLOCK", "R0_BLOCK", "num_warps"}


def test_lazy_compile_seconds_reads_each_benchmark_modules_kernel(monkeypatch):
    """The seconds CachingAutotuner.run spent compiling choices at their first benchmark call, summed from each
    choice's benchmark module; choices without a readable module do not count; nothing readable gives None."""
    import types

    from torch._inductor.codecache import PyCodeCache

    from helpers.inductor.autotune import lazy_compile_seconds, worker_pool_ready

    mods = {f"/m{i}.py": types.SimpleNamespace(triton_mm=types.SimpleNamespace(precompile_time_taken_ns=ns))
            for i, ns in enumerate((0, 700_000_000, 800_000_000))}
    monkeypatch.setattr(PyCodeCache, "modules_no_attr", mods)
    choices = [types.SimpleNamespace(bmreq=types.SimpleNamespace(module_path=p, kernel_name="triton_mm")) for p in mods]
    choices += [types.SimpleNamespace(bmreq=types.SimpleNamespace(module_path="/gone.py", kernel_name="triton_mm")),
                types.SimpleNamespace(bmreq=None)]
    assert math.isclose(lazy_compile_seconds(choices), 1.5)
    assert lazy_compile_seconds(choices[3:]) is None
    assert worker_pool_ready() in (True, False)


def test_ptxas_versions_reads_releases_or_says_unknown():
    from helpers.inductor.autotune import ptxas_versions

    here, torch_own = ptxas_versions()
    for v in (here, torch_own):
        assert v == "unknown" or all(part.isdigit() for part in v.split(".")), v
    if not torch.cuda.is_available():
        assert here == "unknown"

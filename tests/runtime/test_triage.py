"""Unit tests of helpers/runtime/triage.py (chapter 30): one planted problem per finding, in tests/runtime/triage_cases/.

The cases that do not need Inductor compile with backend="eager" so the suite stays fast; the Inductor
case goes end to end (kernels, the FX graph cache, CUDA-graph skips on a CPU).
"""
import functools
import json
import re
import sys
from pathlib import Path

import pytest

from helpers.runtime.recompiles import classify
from helpers.runtime.triage import CHAPTERS, Call, describe, main, triage

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "triage_cases"
QUICK = {"rounds": 1, "repeats": 3}


@functools.cache
def shared(case: str, **kw):
    """One triage per case and settings, shared by the tests that read it (backend="eager", QUICK)."""
    return triage(CASES / case, **{"backend": "eager", **QUICK, **kw})


def line_of(case: str, text: str) -> int:
    """The line number of the first line of a case file that contains ``text``."""
    lines = (CASES / case).read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


def statuses(report) -> dict:
    return {f.key: f.status for f in report.findings}


def test_every_chapter_the_triage_names_is_a_chapter_of_the_course():
    missing = [name for name in CHAPTERS.values() if not (ROOT / "sources" / f"{name}.md").exists()]
    assert missing == []


def test_a_graph_break_is_reported_at_the_readers_line_with_its_reason_and_chapter():
    r = shared("graph_break.py")
    assert r.error is None and r.exit_code == 0 and statuses(r)["graph_breaks"] == "problem"
    [b] = r.data["breaks"]
    assert Path(b["file"]) == CASES / "graph_break.py" and b["line"] == line_of("graph_break.py", "print(")
    assert b["title"] == "Failed to trace builtin operator" and "print" in b["explanation"]
    assert r.data["graphs"] == 2 and len(r.data["guards"]) == 2  # forward and the resume function after the break
    md = r.markdown()
    site = next(ln for ln in md.splitlines() if f"graph_break.py:{b['line']}" in ln)
    # the book's page first (the GitHub Pages address of _config.yml's repository), the local notebook as fallback
    assert site.endswith("([ch10_graph_breaks](https://torch-compile-opened-up.github.io/course/chapters/"
                         "ch10_graph_breaks.html))")
    local = r.markdown(base=ROOT)
    assert "[local copy](chapters/ch10_graph_breaks.ipynb)" in local
    assert r.as_json()["findings"][1]["lines"][0]["url"].endswith("/chapters/ch10_graph_breaks.html")
    # every finding's lines name a chapter, and the sections come in the order a reader debugs
    keys = [f.key for f in r.findings]
    assert keys == ["result", "graph_breaks", "recompiles", "guards", "compile_time", "steady_time", "cudagraphs",
                    "kernels"]
    assert all(ln.chapter in CHAPTERS for f in r.findings for ln in f.lines)


def test_a_break_inside_a_loop_costs_the_whole_function():
    r = triage(CASES / "break_in_loop.py", backend="eager", **QUICK)
    [b] = r.data["breaks"]
    assert b["skips_frame"] and r.data["graphs"] == 0 and r.data["guards"] == {}
    assert "gave up on the whole function" in r.finding("graph_breaks").lines[0].text


def test_recompiles_over_variants_name_the_guard_that_failed():
    r = triage(CASES / "recompile.py", backend="eager", **QUICK)
    rows = r.data["variants"]
    assert [row["recompiles"] for row in rows] == [1, 1, 0]  # tanh, sigmoid: new values; relu: the first entry
    assert all("name ==" in row["reason"] and classify(row["reason"]) == "constant" for row in rows[:2])
    f = r.finding("recompiles")
    assert f.status == "problem" and "reused a compiled graph" in f.lines[-1].text
    assert r.data["bet"]["recompiles"] == 2


def test_past_the_recompile_limit_nothing_compiles_and_the_report_says_so():
    from helpers.dynamo.config import dynamo_setting

    limit = dynamo_setting("recompile_limit")
    r = triage(CASES / "recompile_limit.py", backend="eager", **QUICK)
    rows = r.data["variants"]
    assert len(rows) > limit  # the case makes more new values than the limit allows
    refused = [row["variant"] for row in rows if row["limit_hit"]]
    assert refused == [limit] and r.data["bet"]["recompiles"] == limit - 1  # entry 1 is the first call's
    f = r.finding("recompiles")
    assert f.status == "problem" and any(ln.chapter == "recompile_limit" for ln in f.lines)
    assert all(not row["compiled"] for row in rows[limit:])
    # past the limit, a new value runs eagerly: each later variant is a guard miss that compiled nothing
    assert all(row["eager_runs"] == 1 for row in rows[limit:])
    assert all("ran eagerly" in ln.text for ln in f.lines if ln.text.startswith(f"variant {limit + 1} "))


def test_a_new_batch_size_recompiles_once_then_the_dynamic_graph_is_reused():
    r = shared("shapes.py", try_fixes=True)
    rows = r.data["variants"]
    assert [row["recompiles"] for row in rows] == [1, 0] and "size mismatch" in rows[0]["reason"]
    f = r.finding("recompiles")
    assert f.status == "note" and any(ln.chapter == "shapes" for ln in f.lines)
    text = " ".join(ln.text for ln in f.lines)
    assert "a size mismatch before automatic dynamic" in text and "mark_dynamic" in text and "0/1" not in text
    # --try-fixes: both cures compile one frame instead of two, and the outputs still match
    rows = r.data["fixes"]
    assert [row["fix"] for row in rows] == ["dynamic=True", "mark_dynamic"] and r.findings[-1].key == "fixes"
    assert all((row["baseline"]["compiles"], row["fixed"]["compiles"]) == (2, 1) and row["fixed"]["matches"]
               for row in rows)
    assert "input tensor 0 dim 0" in r.data["fixes"][1]["how"]


@pytest.fixture(scope="module")
def low_limit():
    """A recompile limit of 3, so the counters below reach it in a few compiles (the test stays fast)."""
    import torch

    with torch._dynamo.config.patch(recompile_limit=3):
        yield 3


@pytest.mark.parametrize("case,state", [("counter_global.py", "step"), ("counter_attr.py", "self.calls")])
def test_state_that_changes_every_call_recompiles_during_the_timing_and_then_runs_eagerly(low_limit, case, state):
    # item 1: the recompiles happen while the triage times the SAME inputs, not over the variants
    r = triage(CASES / case, backend="eager", rounds=1, repeats=2)
    d = r.data
    steady = next(p for p in d["phases"] if p["name"] == "the steady timing")
    assert steady["recompiled"] == low_limit - 1 and steady["limit"] and steady["eager_runs"] > 0
    [hit] = steady["limit"]
    assert hit["function"] == "forward" and hit["file"].endswith(case) and hit["value"] == low_limit
    assert d["calls"]["eager_runs"] == steady["eager_runs"] + sum(row["eager_runs"] for row in d["variants"])
    f = r.finding("recompiles")
    text = " ".join(ln.text for ln in f.lines)
    assert f.status == "problem" and f"the model changes `{state}` on every call" in text
    assert f"hit config.recompile_limit ({low_limit} graphs per frame) during the steady timing" in text
    # the variants ran eagerly, past the limit: never "reused a compiled graph"
    assert all(row["eager_runs"] >= 1 and not row["compiled"] for row in d["variants"])
    assert "reused a compiled graph" not in text and "ran eagerly: past the recompile limit" in text
    # the steady time is flagged as a mix, and the first call's mismatch is put down to the state, not the compiler
    assert statuses(r)["steady_time"] == "problem" and "mixes compiles" in r.finding("steady_time").lines[1].text
    assert d["eager_purity"] == "state" and statuses(r)["result"] == "note"
    assert "changes state between calls" in r.findings[0].lines[0].text
    # review finding 4: neither section 6 nor the bet judges eager fall-backs, and the bet's recompiles include
    # the ones during the timing
    assert "compiled is not faster" not in r.finding("steady_time").lines[0].text
    assert "not a compiled graph's time" in r.finding("steady_time").lines[0].text
    assert r.bet.startswith("not judged: ") and "never pays off" not in r.bet and not d["bet"]["judged"]
    assert d["bet"]["recompiles_in_timing"] == low_limit - 1 and d["bet"]["recompiles"] >= low_limit - 1
    assert d["steady_compile_s"] > 0 and d["bet"]["recompile_s"] > 0


def test_a_shape_dependent_branch_is_named_at_its_line_with_its_own_cure():
    r = triage(CASES / "shape_branch.py", backend="eager", **QUICK)
    rows = r.data["variants"]
    assert [row["recompiles"] for row in rows] == [1, 1, 0]
    assert rows[1]["reason"].replace(" ", "") == "2<=x.size()[0]<=16"
    text = " ".join(ln.text for ln in r.finding("recompiles").lines)
    line = line_of("shape_branch.py", "if x.shape[0] > 16")
    assert f"a range set by a shape-dependent branch at shape_branch.py:{line} in f: if x.shape[0] > 16:" in text
    assert "cure for a shape-dependent branch" in text and "torch.cond" in text
    assert "0/1 size" not in text  # the old report called this guard a 0/1 size change


def test_a_branch_after_a_layer_that_reads_the_size_is_named_at_the_branch_not_the_layer():
    # torch writes the layer's line as the "first use of this value" (the lower bound 2) and the branch as the
    # upper bound's location; the old triage named nn/modules/linear.py (review Part A, finding 1)
    r = triage(CASES / "shape_branch_layer.py", backend="eager", **QUICK)
    assert [row["recompiles"] for row in r.data["variants"]] == [1, 1, 0]
    text = " ".join(ln.text for ln in r.finding("recompiles").lines)
    line = line_of("shape_branch_layer.py", "if x.shape[0] > 16")
    assert f"a range set by a shape-dependent branch at shape_branch_layer.py:{line} in forward: " \
           "if x.shape[0] > 16:" in text
    assert "linear.py" not in text


def test_a_batch_of_one_is_a_0_1_specialisation_with_its_own_cure():
    r = triage(CASES / "size_one.py", backend="eager", **QUICK)
    rows = r.data["variants"]
    assert [row["recompiles"] for row in rows] == [1, 1]
    text = " ".join(ln.text for ln in r.finding("recompiles").lines)
    assert "float32[1, 8]) recompiled" in text and "a 0/1 size specialisation" in text
    assert "mark_unbacked" in text and "shape-dependent branch" not in text


def test_dropout_in_training_mode_is_a_note_that_names_the_module():
    r = triage(CASES / "dropout.py", backend="eager", **QUICK)
    assert r.data["eager_purity"] == "random" and r.data["random_modules"] == ["drop (Dropout)"]
    res = r.findings[0]
    assert res.key == "result" and res.status == "note" and "by design" in res.lines[0].text
    assert "drop (Dropout)" in res.lines[0].text and "model.eval()" in res.lines[0].text


def test_a_model_too_small_to_gain_is_not_faster_and_loses_the_bet():
    # backend="eager" runs the same ATen operator as eager plus Dynamo's guard check and wrapper, so the
    # compiled call is slower on any machine
    r = triage(CASES / "not_faster.py", backend="eager", rounds=3, repeats=5)
    d = r.data
    assert d["compiled_s"] > d["eager_s"] and statuses(r)["steady_time"] == "problem"
    assert d["bet"]["break_even_calls"] is None and r.bet.startswith("compiling never pays off")
    assert d["first_call_s"] > d["compiled_s"] and d["clock"].startswith("CPU time per call (one thread)")
    # the bet sets the first call's wall time against steady calls' wall time, never against CPU time
    bet = d["bet"]
    assert bet["clock"] == "wall" and (bet["eager_s"], bet["compiled_s"]) == (d["eager_wall_s"], d["compiled_wall_s"])
    assert bet["compile_s"] == max(d["first_call_s"] - d["compiled_wall_s"], 0.0) and "of wall time" in r.bet


def test_inputs_that_do_not_match_the_model_stop_the_triage_before_compiling():
    r = triage(CASES / "mismatch.py", backend="eager", **QUICK)
    assert r.exit_code == 2 and r.error["kind"] == "inputs" and "mat1 and mat2" in r.error["message"]
    assert [f.key for f in r.findings] == ["error"] and "before any compiling" in r.markdown()


def test_a_function_that_raises_is_shown_with_its_line():
    r = triage(CASES / "raises.py", **QUICK)
    assert r.error["kind"] == "function" and "ValueError: no checkpoint found" in r.error["message"]
    assert r.error["where"].startswith(f"raises.py:{line_of('raises.py', 'raise ValueError')} in example")


def test_a_missing_file_a_missing_function_and_a_wrong_return_are_clear_errors(tmp_path):
    r = triage(tmp_path / "nothere.py", **QUICK)
    assert r.error["kind"] == "file" and "no such file" in r.error["message"] and r.exit_code == 2
    r = triage(CASES / "graph_break.py", "build", **QUICK)
    assert r.error["kind"] == "function" and "it defines: example" in r.error["message"]
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\ndef example():\n    return torch.nn.Linear(2, 2)\n")
    r = triage(bad, **QUICK)
    assert r.error["kind"] == "function" and "must return (model, inputs)" in r.error["message"]
    variant = tmp_path / "variant.py"
    variant.write_text("import torch\n\ndef example():\n    m = torch.nn.Linear(2, 2)\n"
                       "    return m, torch.randn(3, 2), [torch.randn(3, 5)]\n")
    r = triage(variant, **QUICK)
    assert r.error["kind"] == "inputs" and "input variant 1 (float32[3, 5])" in r.error["message"]


def test_a_model_that_fails_to_compile_still_gets_its_report(tmp_path):
    # torch's planted backend raises on torch.relu, as chapter 27's minifier demonstration does
    out = tmp_path / "report"
    rc = main([f"{CASES / 'relu_model.py'}:example", "--backend", "relu_compile_error_TESTING_ONLY",
               "--out", str(out), "--rounds", "1", "--repeats", "3"])
    data = json.loads((out / "triage.json").read_text())
    assert rc == 1 and data["exit_code"] == 1 and data["error"]["kind"] == "compile"
    assert "ReluCompileError" in data["error"]["detail"] and "ReluCompileError" in (out / "triage.md").read_text()
    assert [rung["result"] == "ok" for rung in data["data"]["ladder"]] == [True, True, False]
    assert data["findings"][0]["lines"][1]["chapter"] == "ch27_debugging"


def test_a_compiled_result_that_differs_from_eager_is_the_first_problem():
    # torch's planted backend rewrites relu(x) as x + 1: every output that eager clamps to >= 0 moves by 1
    r = triage(CASES / "relu_model.py", backend="relu_accuracy_error_TESTING_ONLY", **QUICK)
    assert r.error is None and statuses(r)["result"] == "problem" and r.data["max_abs_difference"] >= 1 - 1e-6
    assert "accuracy minifier" in r.findings[0].lines[0].text


def test_a_model_that_writes_into_its_input_is_compared_from_the_same_input_values():
    r = triage(CASES / "mutates_input.py", backend="eager", **QUICK)
    assert r.error is None and statuses(r)["result"] == "ok" and r.data["max_abs_difference"] == 0


def test_inductor_end_to_end_kernels_cache_isa_probes_and_autograd_under_reduce_overhead():
    # one Inductor compile shared by three checks: the fused kernel, the first call's one-time ISA probe work
    # (item 6) and reduce-overhead on a model whose outputs require grad, called without backward (item 3)
    from helpers.core.private import private

    vec = private("torch._inductor.cpu_vec_isa.VecISA")
    vec._VecISA__bool__impl.cache_clear()  # forget this process's probe results: the first call probes again
    private("torch._inductor.cpu_vec_isa.valid_vec_isa_list").cache_clear()
    r = triage(CASES / "fused_train.py", mode="reduce-overhead", try_fixes=True, **QUICK)
    d = r.data
    assert r.error is None and statuses(r)["result"] == "ok" and d["graphs"] == 1
    [kernels] = d["kernels_first"]
    assert len(kernels) == 1 and kernels[0].startswith("cpp_fused") and d["launches_first"] == [1]
    assert d["library_calls_first"] == [[]]  # pointwise work only: no matrix product or other library call
    assert d["kernel_language"] == "c++" and sum(d["eager_ops"].values()) == 4  # sin, cos, mul, add
    assert d["fx_graph_cache"]["hit"] + d["fx_graph_cache"]["miss"] == 1
    assert d["stations_s"]["Inductor: lower, schedule, write code"] > 0
    # on a CPU, reduce-overhead has no CUDA kernels to record: Inductor counts the skip, logs no reason
    assert d["cudagraph_skips"] == {"count": 1, "reasons": []}
    # the ISA probes ran (a build in a fresh cache folder, a child Python's load per ISA in every new process):
    # named, and counted in the bet, since every new process pays them (review finding 2)
    one = d["one_time_s"]
    assert one["isa_probe"] > 0 and one["cache_dir"] and 0 <= one["isa_build"] <= one["isa_probe"]
    ct = " ".join(ln.text for ln in r.finding("compile_time").lines)
    assert "loaded by a child Python per ISA, which every new process runs again" in ct
    assert "the compile bet counts them" in ct and "leaves them out" not in ct
    assert d["bet"]["compile_s"] == pytest.approx(max(d["first_call_s"] - d["compiled_wall_s"], 0.0))
    # autograd on, no backward: the finding cudagraph trees' pending backward calls for, with its cures
    g = d["grad"]
    assert g["grad_enabled"] and g["params_requiring_grad"] == 1 and g["outputs_requiring_grad"] == 1
    cg = r.finding("cudagraphs")
    text = " ".join(ln.text for ln in cg.lines)
    assert cg.status == "note" and "running_forwards_with_pending_backwards" in text  # "problem" on a GPU
    assert "torch.no_grad()" in text and "inference_mode" in text and "backward" in cg.lines[-1].text
    # --try-fixes: the same calls under torch.no_grad() compile an inference graph that still matches eager
    [fix] = r.data["fixes"]
    assert fix["fix"] == "torch.no_grad()" and not fix["fixed"]["error"] and fix["fixed"]["matches"]
    assert fix["baseline"]["compiles"] == fix["fixed"]["compiles"] == 1 and r.findings[-1].key == "fixes"
    # review finding 7: each trial's FX graph cache lookups printed beside its compile seconds
    for run in (fix["baseline"], fix["fixed"]):
        assert run["fx_graph_cache"]["hit"] + run["fx_graph_cache"]["miss"] == 1
    line = r.finding("fixes").lines[0].text
    assert line.count("(FX graph cache: ") == 2 and "compare only between runs with the same cache hits" in \
        r.finding("fixes").lines[-1].text


def test_reduce_overhead_without_autograd_has_no_pending_backward_finding():
    from helpers.runtime.triage import _cudagraphs_finding

    d = {"grad": {"grad_enabled": False, "params_requiring_grad": 1, "params": 1, "outputs_requiring_grad": 0,
                  "outputs": 1, "training": True}, "cudagraph_skips": {"count": 0, "reasons": []}}
    s = {"mode": "reduce-overhead", "backend": "inductor"}
    assert _cudagraphs_finding(d, s, "cuda").status == "ok"
    d["grad"].update(grad_enabled=True, outputs_requiring_grad=1)
    f = _cudagraphs_finding(d, s, "cuda")
    assert f.status == "problem" and "Unable to hit fast path" in f.lines[0].text


def test_describe_and_call():
    import torch

    assert describe(torch.zeros(2, 3, dtype=torch.float16)) == "float16[2, 3]"
    assert Call((torch.ones(1), 2), {"k": "v"}).describe() == "float32[1], 2, k='v'"


def test_the_console_command_is_declared_and_explains_each_setup_error(tmp_path, monkeypatch, capsys):
    # `pip install` of the course package installs `torch-compile-triage` ([project.scripts] in pyproject.toml);
    # its wrapper calls console() with the command line in sys.argv, as this test does (in process: fast)
    import tomllib

    from helpers.runtime.triage import console

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["torch-compile-triage"] == "helpers.runtime.triage:console"

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["torch-compile-triage", *args])
        try:
            rc = console()
        except SystemExit as stop:
            rc = stop.code
        out = capsys.readouterr()
        return rc, out.out, out.err

    rc, out, _ = run("--help")
    assert rc == 0 and out.startswith("usage: torch-compile-triage")
    # a file that does not define the function
    rc, _, err = run(f"{CASES / 'graph_break.py'}:build")
    assert rc == 2 and "has no function 'build' (it defines: example)" in err
    # a function that returns the wrong shape of thing: (inputs, model) swapped
    swapped = tmp_path / "swapped.py"
    swapped.write_text("import torch\n\ndef example():\n    return torch.randn(2, 2), torch.nn.Linear(2, 2)\n")
    rc, _, err = run(str(swapped))
    assert rc == 2 and "is a Tensor, not callable" in err and "the model first" in err
    # a model that raises in eager: the reader's inputs, before any compiling; the triage's own time is stated
    rc, out, err = run(str(CASES / "mismatch.py"), "--backend", "eager")
    assert rc == 2 and "calling it eagerly, without torch.compile, raised" in err
    assert "## 1. The inputs — ERROR" in out and re.search(r"the triage itself took \d+\.\d s", out)


def test_the_command_line_dispatches_triage_and_lists_it_in_the_help(capsys):
    # in process, as `python -m helpers` runs it (helpers/__main__.py: sys.exit(main())): two subprocesses
    # that import torch cost this test ~50 s on CI's two cores
    import importlib

    cli = importlib.import_module("helpers.__main__")
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    top = capsys.readouterr()
    assert stop.value.code in (0, None) and "triage FILE.py[:FUNCTION]" in " ".join(top.out.split())
    rc = cli.main(["triage", str(CASES / "nothere.py")])
    run = capsys.readouterr()
    assert rc == 2 and "no such file" in run.err and "## 1. The file — ERROR" in run.out


@pytest.mark.parametrize("case", ["graph_break.py", "shapes.py"])
def test_the_json_report_is_plain_data(case):
    r = shared(case, **({"try_fixes": True} if case == "shapes.py" else {}))  # the triages of the tests above
    data = json.loads(json.dumps(r.as_json(), default=str))
    assert data["exit_code"] == 0 and all(ln["chapter"] in CHAPTERS.values()
                                          for f in data["findings"] for ln in f["lines"])


def test_times_never_print_in_exponent_form():
    # review finding 6: 0.9996 s printed "1e+03 ms"
    from helpers.runtime.triage import _s

    assert _s(0.9996) == "1.00 s" and _s(0.0009996) == "1 ms" and _s(0.5) == "500 ms"
    assert _s(2.5e-5) == "25 µs" and _s(1.234) == "1.23 s" and _s(0.0123) == "12.3 ms"
    assert all("e+" not in _s(10 ** (k / 7)) for k in range(-50, 10))


def test_no_isa_probe_is_put_down_to_no_cpp_kernel_not_to_a_warm_folder():
    # review finding 2: a fresh process whose compile wrote no C++ kernel (just addmm) was told "this process (or
    # the cache folder) had them already"
    from helpers.runtime.triage import _compile_time_finding

    d = {"first_call_s": 1.3, "compiled_wall_s": 4e-5, "stations_s": {}, "kernel_language": None,
         "one_time_s": {"isa_probe": 0.0, "isa_build": 0.0, "header": 0.0, "cache_dir": "/tmp/c"},
         "fx_graph_cache": {"hit": 0, "miss": 1}}
    s = {"backend": "inductor"}
    text = " ".join(ln.text for ln in _compile_time_finding(d, s, "cpu").lines)
    assert "its compile generated no C++ kernel" in text and "had them already" not in text
    # shape_branch2: the first call's module holds only addmm; a variant's recompile wrote a C++ kernel later
    d.update(kernel_language="c++", kernels_first=[[]])
    text = " ".join(ln.text for ln in _compile_time_finding(d, s, "cpu").lines)
    assert "its compile generated no C++ kernel" in text
    d["kernels_first"] = [["cpp_fused_relu_0"]]
    text = " ".join(ln.text for ln in _compile_time_finding(d, s, "cpu").lines)
    assert "this process had probed already" in text
    # a warm folder: no build, only the loads, which every new process pays
    d["one_time_s"].update(isa_probe=0.42, header=0.1)
    text = " ".join(ln.text for ln in _compile_time_finding(d, s, "cpu").lines)
    assert "already built in /tmp/c, so no build, only loaded by a child Python per ISA" in text


def test_generated_modules_are_attributed_to_the_timing_or_the_variants():
    # review finding 5: step_global's 7 modules came from the steady timing, while no variant recompiled
    from helpers.runtime.triage import _kernels_finding

    d = {"eager_ops": {"aten.addmm": 1, "aten.mul": 1}, "kernels_first": [["cpp_fused_mul_0"]],
         "launches_first": [1], "library_calls_first": [["extern_kernels.addmm"]], "kernel_language": "c++",
         "modules_total": 8, "modules_by_phase": {"the first call": 1, "the steady timing": 7, "the variants": 0}}
    text = " ".join(ln.text for ln in _kernels_finding(d, {"backend": "inductor"}).lines)
    assert "the recompiles generated 7 more module(s) during the steady timing" in text
    assert "variants" not in text
    d["modules_by_phase"].update({"the steady timing": 0, "the variants": 2})
    text = " ".join(ln.text for ln in _kernels_finding(d, {"backend": "inductor"}).lines)
    assert "2 more module(s) during the variants" in text


def test_fusion_on_a_gpu_is_told_from_the_measured_launches_not_the_operator_count():
    # review finding 3: BERT on the H200 said "fusion saved 31 launch(es)" beside section 6's 158 -> 151
    from helpers.runtime.triage import _kernels_finding

    d = {"eager_ops": {"aten.addmm": 73, "aten.add": 120}, "kernels_first": [[f"triton_k{i}" for i in range(88)]],
         "launches_first": [88], "library_calls_first": [["extern_kernels.addmm"] * 74], "kernel_language": "triton",
         "modules_total": 1, "eager_launches": 158.0, "compiled_launches": 151.0}
    text = " ".join(ln.text for ln in _kernels_finding(d, {"backend": "inductor", "mode": None}).lines)
    assert "fusion saved" not in text and "eager ran 158 kernels per call and compiled 151, 7 fewer" in text
    assert "an ATen operator is not one launch" in text
    d.pop("eager_launches"), d.pop("compiled_launches")  # a CPU run: no measured launches
    text = " ".join(ln.text for ln in _kernels_finding(d, {"backend": "inductor", "mode": None}).lines)
    assert "fusion saved" not in text and "31 fewer calls per call than eager's operators" in text


def test_reduce_overhead_words_kernels_run_in_replays_and_is_advised_for_a_launch_bound_gpu_model():
    # review findings 8 and 9 (ResNet-18 on the H200, torch 2.11: 120 -> 66 launches, compiled GPU busy 58%)
    from helpers.runtime.triage import _cudagraphs_finding, _steady_finding

    d = {"eager_s": 2.0e-3, "compiled_s": 1.2e-3, "clock": "wall time per call", "phases": [],
         "eager_gpu_s": 1.42e-3, "compiled_gpu_s": 0.7e-3, "eager_launches": 120.0, "compiled_launches": 66.0,
         "grad": {"grad_enabled": False, "outputs_requiring_grad": 0}}
    f = _cudagraphs_finding(d, {"mode": None, "backend": "inductor"}, "cuda")
    assert f.status == "note" and 'mode="reduce-overhead"' in f.lines[0].text and "launch-bound" in f.lines[0].text
    # GPU-bound, or on a CPU: nothing advised
    assert "not asked for" in _cudagraphs_finding(d, {"mode": None, "backend": "inductor"}, "cpu").lines[0].text
    d["compiled_gpu_s"] = 1.1e-3
    assert "not asked for" in _cudagraphs_finding(d, {"mode": None, "backend": "inductor"}, "cuda").lines[0].text
    # under reduce-overhead, section 6 counts the kernels a replay runs, not launches
    text = " ".join(ln.text for ln in _steady_finding(d, "cuda", "reduce-overhead").lines)
    assert "compiled: 66 kernels run per call (inside CUDA graph replays" in text
    assert "compiled: 66 kernel launches" not in text and "eager: 120 kernel launches per call" in text
    text = " ".join(ln.text for ln in _steady_finding(d, "cuda", None).lines)
    assert "compiled: 66 kernel launches per call" in text


def test_the_gpu_kernel_compiler_time_says_what_its_timer_covers():
    # review finding 11: "kernel compiler 17.9 ms" for 11 Triton kernels is the wait on parallel workers
    from helpers.runtime.triage import _compile_time_finding

    d = {"first_call_s": 3.0, "compiled_wall_s": 1e-3, "fx_graph_cache": {"hit": 0, "miss": 1},
         "stations_s": {"Inductor: lower, schedule, write code": 1.0, "kernel compiler (C++ or Triton)": 0.0179}}
    text = " ".join(ln.text for ln in _compile_time_finding(d, {"backend": "inductor"}, "cuda").lines)
    assert "only async_compile.wait" in text and "not in it" in text
    assert "async_compile" not in " ".join(ln.text for ln in _compile_time_finding(
        d, {"backend": "inductor"}, "cpu").lines)


def test_appendix_reports_kept_as_markdown_are_rerendered_from_their_own_numbers():
    # the H200's ResNet-18 lines (torch 2.11, zoo_reports_run2.md): section 8 from section 6's launches, section 7
    # advice from the compiled call's GPU busy fraction; nothing else changes
    sys.path.insert(0, str(ROOT / "tests" / "runtime" / "zoo"))
    from make_reports import rerender_markdown

    link = " ([ch25_cuda_graphs](https://x/chapters/ch25_cuda_graphs.html))"
    text = ("<!-- torch 2.11.0+cu130, NVIDIA H200, settings {} -->\n## 6. Eager vs compiled, per call — OK\n\n"
            f"- eager: 120 kernel launches per call, the GPU busy 71% of the wall time: launch-bound (the GPU waits "
            f"for the CPU){link}\n- compiled: 66 kernel launches per call, the GPU busy 58% of the wall time: "
            f"launch-bound (the GPU waits for the CPU){link}\n\n## 7. CUDA graphs (mode=\"reduce-overhead\") — NOT "
            f"CHECKED\n\n- not asked for: on a GPU, --mode reduce-overhead records each graph's kernels once{link}\n\n"
            "## 8. Generated kernels — NOTE\n\n- 68 eager operator(s) became 36 kernel launch(es) and 21 library "
            "call(s): fusion saved 11 launch(es) per call (a library call such as a matrix product stays a call of "
            f"its own){link}\n")
    new, done = rerender_markdown(text)
    assert "fusion saved" not in new and "eager ran 120 kernels per call and compiled 66, 54 fewer" in new
    assert "— NOTE\n\n- the compiled call is launch-bound (section 6: the GPU busy 58%" in new
    assert done == ["section 8's fusion line", "section 7's reduce-overhead advice"]
    assert new.count(link) == text.count(link) and "eager: 120 kernel launches per call" in new

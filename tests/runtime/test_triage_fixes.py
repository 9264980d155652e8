"""Tests of helpers/runtime/triage_fixes.py (``--try-fixes``, chapter 30): each cure measured against a baseline.

The shape cures run inside tests/runtime/test_triage.py's shapes test (one triage shared); the logging cure here.
"""
from pathlib import Path

from helpers.runtime.triage import triage

CASES = Path(__file__).resolve().parent / "triage_cases"


def test_try_fixes_ignores_the_logging_call_that_breaks_the_graph():
    from helpers.runtime.triage_fixes import logging_methods

    r = triage(CASES / "log_break.py", backend="eager", rounds=1, repeats=2, try_fixes=True)
    assert logging_methods(r.data["breaks"]) == ["warning"]
    check_fixes(r, [("ignore_logging_functions", "ignore_logger_methods")])
    [row] = r.data["fixes"]
    assert (row["baseline"]["breaks"], row["fixed"]["breaks"]) == (1, 0)


def check_fixes(r, names):
    rows = r.data["fixes"]
    f = r.finding("fixes")
    assert f.status == "note" and r.findings[-1] is f and len(rows) == len(names)
    assert all(row["fix"] in (n if isinstance(n, tuple) else (n,)) for row, n in zip(rows, names))
    for row in rows:
        base, fixed = row["baseline"], row["fixed"]
        assert not base["error"] and not fixed["error"]
        assert (base["compiles"], fixed["compiles"]) == (2, 1) and fixed["matches"]
        assert fixed["compile_s"] > 0 and fixed["steady_s"] > 0
    assert all("frames compiled 2 → 1" in ln.text and "still match eager" in ln.text for ln in f.lines[:len(rows)])


# ----------------------------------------------------------------- reduce-overhead for a launch-bound compiled call
# (issue 28's cure, measured on a GPU only). CPU tests: the planning is a pure function of the report's data, and
# the rendering reads a row's numbers; the numbers below are made up to test the rendering, not measured.

def _gpu_data(grad: bool, busy: float = 0.5) -> dict:
    """A report's data on a GPU: 66 compiled launches, the GPU busy ``busy`` of the wall time (section 6)."""
    return {"variants": [], "breaks": [], "eager_s": 2.0e-3, "compiled_s": 1.2e-3, "compiled_gpu_s": busy * 1.2e-3,
            "eager_gpu_s": 1.4e-3, "eager_launches": 120.0, "compiled_launches": 66.0, "clock": "wall time per call",
            "phases": [],
            "grad": {"grad_enabled": grad, "params_requiring_grad": 62 if grad else 0, "params": 62,
                     "outputs_requiring_grad": 1 if grad else 0, "outputs": 1, "training": False}}


SETTINGS = {"backend": "inductor", "mode": None, "dynamic": None, "no_grad": False, "repeats": 10}


def test_reduce_overhead_is_planned_for_a_launch_bound_compiled_call_on_a_gpu_only():
    from helpers.runtime.triage_fixes import REDUCE_OVERHEAD, plan

    [t] = plan(_gpu_data(grad=False), SETTINGS, "cuda")
    assert t["fix"] == REDUCE_OVERHEAD and t["for"] == "the launch-bound compiled call"
    assert t["kw"] == {"backend": "inductor", "dynamic": None, "mode": "reduce-overhead"} and not t.get("grad_off")
    assert "if this is inference" not in t["how"]
    # on a CPU: no CUDA graphs, no trial (and section 6 measures no launches there anyway)
    assert plan(_gpu_data(grad=False), SETTINGS, "cpu") == []
    # GPU-bound (busy 0.8 or more): nothing to cure
    assert plan(_gpu_data(grad=False, busy=0.9), SETTINGS, "cuda") == []
    # a mode the reader chose, or a backend without Inductor's CUDA graphs: not tried
    assert plan(_gpu_data(grad=False), SETTINGS | {"mode": "max-autotune"}, "cuda") == []
    assert plan(_gpu_data(grad=False), SETTINGS | {"backend": "aot_eager"}, "cuda") == []


def test_with_autograd_on_and_no_backward_reduce_overhead_is_tried_under_no_grad():
    from helpers.runtime.triage_fixes import REDUCE_OVERHEAD, plan

    [t] = plan(_gpu_data(grad=True), SETTINGS, "cuda")
    assert t["fix"] == f"{REDUCE_OVERHEAD} under torch.no_grad()" and t["grad_off"] is True
    assert t["kw"]["mode"] == "reduce-overhead" and "if this is inference" in t["how"]
    assert "1 of 1 output tensors require grad" in t["how"]
    assert plan(_gpu_data(grad=True), SETTINGS, "cpu") == []
    # the reader's own --mode reduce-overhead with autograd on: the no_grad cure, not a second reduce-overhead trial
    [t] = plan(_gpu_data(grad=True), SETTINGS | {"mode": "reduce-overhead"}, "cuda")
    assert t["fix"] == "torch.no_grad()" and t["kw"]["mode"] == "reduce-overhead"


def test_the_other_cures_are_planned_beside_it_and_the_reduce_overhead_trial_comes_last():
    from helpers.runtime.triage_fixes import plan

    d = _gpu_data(grad=False)
    d["variants"] = [{"variant": 1, "inputs": "float32[16, 8]", "seconds": 1.0, "compiled": True, "recompiles": 1,
                      "reason": "tensor 'x' size mismatch at index 0. expected 8, actual 16",
                      "raw_reason": "tensor 'x' size mismatch at index 0. expected 8, actual 16",
                      "limit_hit": False, "hits": 0, "misses": 1, "eager_runs": 0, "error": ""}]
    fixes = [t["fix"] for t in plan(d, SETTINGS, "cuda", dims=[(0, 0)], methods=["warning"])]
    assert fixes[:2] == ["dynamic=True", "mark_dynamic"] and fixes[2] in ("ignore_logging_functions",
                                                                         "ignore_logger_methods")
    assert fixes[3] == 'mode="reduce-overhead"' and len(fixes) == 4
    assert [t["fix"] for t in plan(d, SETTINGS, "cpu", dims=[(0, 0)], methods=["warning"])] == fixes[:3]


def _ro_row(replay: int = 37, grad: bool = False, error: str = "") -> dict:
    from helpers.runtime.triage_fixes import plan

    [t] = plan(_gpu_data(grad=grad), SETTINGS, "cuda")
    base = {"error": "", "compiles": 1, "breaks": 0, "compile_s": 9.5, "steady_s": 1.2e-3, "matches": True,
            "max_difference": 1e-6, "fx_graph_cache": {"hit": 1, "miss": 0}}
    fixed = base | {"error": error, "compile_s": 12.0, "steady_s": 0.6e-3, "fx_graph_cache": {"hit": 0, "miss": 1},
                    "cudagraphs": {"record": 1, "replay": replay, "warmup": 1, "skipped": 0, "reasons": []}}
    return {"fix": t["fix"], "for": t["for"], "how": t["how"], "baseline": base, "fixed": fixed}


def test_a_reduce_overhead_trial_renders_like_the_other_cures_with_what_cudagraph_trees_did():
    from helpers.runtime.triage import CHAPTERS, _fixes_finding

    f = _fixes_finding([_ro_row()], None)
    line = f.lines[0]
    assert f.status == "note" and line.chapter == "launch_bound" and CHAPTERS[line.chapter] == "ch25_cuda_graphs"
    assert line.text.startswith('mode="reduce-overhead" for the launch-bound compiled call (torch.compile(model, '
                                'mode="reduce-overhead")')
    assert "frames compiled 1 → 1, graph breaks 0 → 0" in line.text
    assert "steady compiled call 1.2 ms → 600 µs; outputs still match eager" in line.text
    assert "(FX graph cache: 1 hit(s), 0 miss(es)) → 12.00 s (FX graph cache: 0 hit(s), 1 miss(es))" in line.text
    assert "CUDA graphs over its calls: 1 recorded, 37 replay(s), 1 warm-up run(s) (run_eager), 0 graph(s) " \
           "skipped" in line.text and "no call replayed" not in line.text
    # a trial whose calls never replayed says its steady time is not a replay's
    text = _fixes_finding([_ro_row(replay=0)], None).lines[0].text
    assert "0 replay(s)" in text and "no call replayed a CUDA graph, so the steady time is not a replay's" in text
    # under no_grad (autograd on in the reader's calls): the fix and its "if this is inference" are in the line
    text = _fixes_finding([_ro_row(grad=True)], None).lines[0].text
    assert text.startswith('mode="reduce-overhead" under torch.no_grad() for the launch-bound compiled call')
    assert "if this is inference" in text
    # a trial that failed says so, as the other cures do
    text = _fixes_finding([_ro_row(error="RuntimeError: boom")], None).lines[0].text
    assert text == 'mode="reduce-overhead" for the launch-bound compiled call: the trial failed: RuntimeError: boom'


def test_section_7_points_at_the_measured_reduce_overhead_trial(monkeypatch):
    from helpers.runtime import triage as T
    from helpers.runtime import triage_fixes

    s = SETTINGS | {"device": "cuda", "threads": None, "rounds": 1, "calls": None, "try_fixes": True}
    d = _gpu_data(grad=True)
    advice = T._cudagraphs_finding(d, s, "cuda").lines[0].text
    assert "launch-bound" in advice and "--try-fixes" not in advice  # no trial yet: advised only
    r = T.Report(target="m.py:example", settings=s, data=d)
    r.findings = [T._steady_finding(d, "cuda"), T._cudagraphs_finding(d, s, "cuda")]
    monkeypatch.setattr(triage_fixes, "try_fixes", lambda *a: [_ro_row(grad=True)])
    T._add_fixes(r, None, None, [], "cuda")
    cg = r.finding("cudagraphs")
    assert [f.key for f in r.findings] == ["steady_time", "cudagraphs", "fixes"] and cg.status == "note"
    assert cg.lines[0].text.startswith(advice)
    assert cg.lines[0].text.endswith("; --try-fixes tried it under torch.no_grad() (if this is inference) and "
                                     "measured the steady compiled call 1.2 ms → 600 µs (\"The cures, tried\", "
                                     "below, has the rest)")
    failed = T.reduce_overhead_advice(0.5, _ro_row(error="RuntimeError: boom"))
    assert failed.endswith("; --try-fixes tried it, and the trial failed (\"The cures, tried\", below, says how)")
    # the same, rendered again from a report's data (make_reports.from_json): the rows are in the data
    assert T._cudagraphs_finding(r.data, s, "cuda").lines[0].text == cg.lines[0].text

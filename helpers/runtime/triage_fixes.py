"""``--try-fixes``: apply a finding's mechanical cure, compile again and measure what it changed (chapter 30).

Three cures are tried, each against a baseline run the same way (a fresh compile state, the example inputs,
then every variant, then the steady timing), so the numbers compare like with like:

- a shape recompile over the variants: ``dynamic=True``, and ``torch._dynamo.mark_dynamic`` on each
  dimension whose size differs between the example inputs and the variants;
- a graph break at a logging call: the ``logging.Logger`` methods the breaking lines call, added to
  ``torch._dynamo.config.ignore_logging_functions`` (``ignore_logger_methods`` on older torch). The message
  is then dropped inside compiled code: the report says so;
- reduce-overhead on calls whose outputs require grad, with no backward: every call under
  ``torch.no_grad()`` (an inference graph; the right cure only if the reader's calls are inference);
- a launch-bound compiled call on a GPU (section 6's test, ``compiled_launch_bound``; Inductor, no mode
  given): ``mode="reduce-overhead"``, whose CUDA graphs replay each graph's kernels with one launch. If the calls
  run with autograd on and no backward (``autograd_under_cudagraphs`` for that mode), a plain trial would measure
  cudagraph trees' pending-backward warm-up path, not the cure: the trial then runs every call under
  ``torch.no_grad()`` and says "if this is inference". It also counts what cudagraph trees did (graphs recorded,
  replays, warm-up runs) and the graphs skipped. Not on a CPU: there are no CUDA graphs to record.

``plan`` decides which trials run from the report's data alone (nothing runs); ``try_fixes`` runs them.

Each trial reports the frames compiled, graph breaks, the wall seconds of the calls that compiled (the
first call and the variants), the steady compiled time on the example inputs and whether every output
still matches eager, with the trial's FX graph cache hits and misses beside its compile seconds. Both trials
compile after the triage's own compile, so Inductor's caches may serve either (a hit skips Inductor's code
generation and the kernel compiler): compare the counts first, the seconds only between trials with the same
cache hits and misses.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
from pathlib import Path

from ..core import timing
from ..core.private import private
from ..dynamo.graph_breaks import break_records
from ..dynamo.logs import capture_logs
from ..dynamo.state import clear_compile_state, counters
from .cudagraphs import LaunchBudget, skip_log, skip_reason
from .triage_checks import (_cause, _dynamo_quiet, _error_text, _max_difference, _recompiled, _tensors, _timed,
                            autograd_under_cudagraphs, cudagraph_calls)

_LOG_CALL = re.compile(r"\.(debug|info|warning|warn|error|exception|critical|log|\w+_once)\s*\(")


def _source(file: str) -> Path:
    """The file a break record names: as given, or (a library's file, which the records shorten to the part
    below site-packages, e.g. ``transformers/modeling_utils.py``) under the first ``sys.path`` entry that has it."""
    p = Path(file)
    if p.is_absolute() or p.exists():
        return p
    return next(Path(root) / p for root in sys.path if root and (Path(root) / p).is_file())


def logging_methods(breaks: list[dict]) -> list[str]:
    """The ``logging.Logger`` method names called on the source lines where ``breaks`` (as dicts) happened."""
    names = []
    for b in breaks:
        text = f"{b.get('title', '')} {b.get('explanation', '')}"
        if "logging" not in text.lower() and "logger" not in text.lower():
            continue
        with contextlib.suppress(OSError, IndexError, StopIteration):
            line = _source(b["file"]).read_text().splitlines()[b["line"] - 1]
            names += [m for m in _LOG_CALL.findall(line) if callable(getattr(logging.Logger, m, None))]
    return list(dict.fromkeys(names))


def _varying_dims(example, variants) -> list[tuple[int, int]]:
    """(tensor index, dim) of every dimension whose size differs between the example and a variant."""
    base = list(_tensors((example.args, example.kwargs)))
    dims = set()
    for v in variants:
        other = list(_tensors((v.args, v.kwargs)))
        for i, (a, b) in enumerate(zip(base, other)):
            if a.dim() == b.dim():
                dims |= {(i, d) for d in range(a.dim()) if a.shape[d] != b.shape[d]}
    return sorted(dims)


def trial(model, example, variants, kw: dict, dev: str, *, mark: list | None = None, patch=None,
          grad_off: bool = False, rounds: int = 1, repeats: int = 5) -> dict:
    """Compile ``model`` afresh with ``kw`` (and ``patch``, a config context; ``grad_off``: every call under
    ``torch.no_grad()``), run the example then each variant, then time the example. Under Inductor's
    reduce-overhead on a GPU, also what cudagraph trees did over all of it (``cudagraphs``: graphs recorded,
    replays, warm-up runs, graphs skipped and why)."""
    import torch

    grad = torch.no_grad if grad_off else contextlib.nullcontext
    graphs = dev == "cuda" and kw.get("mode") == "reduce-overhead" and kw.get("backend") == "inductor"
    with grad():
        eager = [c.copy().run(model) for c in [example] + variants]
    clear_compile_state()
    converted: list = []
    handle = private("torch._dynamo.convert_frame.register_bytecode_hook")(lambda old, new: converted.append(old))
    out = {"error": ""}
    try:
        with contextlib.redirect_stdout(io.StringIO()), _dynamo_quiet(), (patch or contextlib.nullcontext()), \
                capture_logs("graph_breaks") as bl, grad(), \
                (skip_log() if graphs else contextlib.nullcontext()) as skips, \
                (cudagraph_calls() if graphs else contextlib.nullcontext()) as cg:
            compiled = torch.compile(model, **kw)
            first = example.copy()
            tensors = []
            tensors = list(_tensors((first.args, first.kwargs)))
            for i, d in mark or []:
                private("torch._dynamo.mark_dynamic")(tensors[i], d)
            seconds, worst, ok = 0.0, 0.0, True
            cache0 = _fx_cache()
            for call, ref in zip([first] + [v.copy() for v in variants], eager):
                before = len(converted)
                got, t = _timed(lambda c=call: c.run(compiled), dev)
                if len(converted) > before:
                    seconds += t
                diff = _max_difference(got, ref)
                if diff is not None:
                    worst = max(worst, diff[0])
                    ok = ok and diff[0] <= diff[1]
            cache1 = _fx_cache()
            out["fx_graph_cache"] = {k: cache1[k] - cache0[k] for k in cache1}  # this trial's compiles only
            steady = timing.interleaved({"compiled": lambda: example.run(compiled)}, rounds=rounds,
                                        repeats=repeats, device=dev)["compiled"].median
            out.update(compiles=len(converted), breaks=len(break_records(bl.messages("graph_breaks"))),
                       compile_s=seconds, steady_s=steady, matches=ok, max_difference=worst)
        if graphs:  # the skip log's count and messages are read when its block exits
            out["cudagraphs"] = dict(cg, skipped=skips.count, reasons=[skip_reason(m) for m in skips.messages])
    except Exception as exc:  # noqa: BLE001 - a cure that fails is a measured result too
        out["error"] = _error_text(exc)
    finally:
        handle.remove()
        clear_compile_state()
    return out


def _fx_cache() -> dict:
    """Inductor's FX graph cache lookups so far (``torch._dynamo.utils.counters["inductor"]``): hits and misses."""
    c = counters().get("inductor", {})
    return {"hit": int(c.get("fxgraph_cache_hit", 0)), "miss": int(c.get("fxgraph_cache_miss", 0))}


#: The reduce-overhead trial's name in a row's "fix" (section 7 points at the row that has it).
REDUCE_OVERHEAD = 'mode="reduce-overhead"'
LAUNCH_BOUND = "the launch-bound compiled call"


def compiled_launch_bound(d: dict, dev: str) -> float | None:
    """The compiled call's GPU busy fraction when it is launch-bound (section 6's LaunchBudget), else None: the test
    behind section 7's reduce-overhead advice (``triage._cudagraphs_finding``) and the trial that measures it."""
    if dev != "cuda" or not d.get("compiled_launches") or not d.get("compiled_s") or not d.get("compiled_gpu_s"):
        return None
    budget = LaunchBudget(d["compiled_launches"], d["compiled_s"], d["compiled_gpu_s"])
    return budget.gpu_busy if budget.bound.startswith("launch-bound") else None


def _settings_kw(s: dict) -> dict:
    """torch.compile's keyword arguments from the triage's settings."""
    return {"backend": s["backend"], "dynamic": s["dynamic"]} | ({"mode": s["mode"]} if s["mode"] else {})


def _logging_config() -> str:
    """The Dynamo config that drops logging calls: ``ignore_logging_functions`` (``ignore_logger_methods`` on older
    torch)."""
    config = private("torch._dynamo.config")
    return "ignore_logging_functions" if hasattr(config, "ignore_logging_functions") else "ignore_logger_methods"


def plan(d: dict, s: dict, dev: str, dims: list | None = None, methods: list | None = None) -> list[dict]:
    """The trials ``try_fixes`` runs for a report's data ``d`` and settings ``s`` on device ``dev``, decided from
    them alone (nothing is compiled or run): [{"fix", "for", "how", "kw", "mark", "grad_off", "logging"}, ...].

    ``dims``: the (input tensor, dim) pairs whose sizes vary over the variants (``_varying_dims``); ``methods``:
    the ``logging.Logger`` methods the breaking lines call (``logging_methods``).
    """
    kw = _settings_kw(s)
    tries = []
    shape_rows = [r for r in _recompiled(d.get("variants", [])) if _cause(r, None)[0] in ("size mismatch", "0/1 size",
                                                                                          "shape")]
    if shape_rows:
        tries.append({"fix": "dynamic=True", "for": "the shape recompiles", "how": "torch.compile(model, dynamic=True)",
                      "kw": kw | {"dynamic": True}})
        if dims:
            what = ", ".join(f"input tensor {i} dim {dd}" for i, dd in dims)
            tries.append({"fix": "mark_dynamic", "for": "the shape recompiles",
                          "how": f"torch._dynamo.mark_dynamic on {what} of the example inputs before the first call",
                          "kw": kw, "mark": list(dims)})
    g = d.get("grad")
    if g and autograd_under_cudagraphs(g, s["mode"], s["backend"]):
        tries.append({"fix": "torch.no_grad()", "for": "autograd under CUDA graphs (if this is inference)",
                      "how": "every call under torch.no_grad(): an inference graph, no pending backward",
                      "kw": kw, "grad_off": True})
    if methods:
        name = _logging_config()
        tries.append({"fix": name, "for": "the logging graph break",
                      "how": f"torch._dynamo.config.{name} = {{{', '.join('logging.Logger.' + m for m in methods)}}} "
                             "(the message is then not logged from compiled code)",
                      "kw": kw, "logging": (name, list(methods))})
    # a launch-bound compiled call (section 6's test, the one section 7's advice rests on): reduce-overhead, on a
    # GPU only (a CPU has no CUDA graphs), for Inductor (its CUDA graphs) and when the reader chose no mode
    if dev == "cuda" and s["backend"] == "inductor" and not s["mode"] and compiled_launch_bound(d, dev) is not None:
        ro = kw | {"mode": "reduce-overhead"}
        if g and autograd_under_cudagraphs(g, "reduce-overhead", s["backend"]):
            # with autograd on and no backward, cudagraph trees keep each forward waiting for its backward: a plain
            # trial would time that warm-up path (section 7 of a --mode reduce-overhead triage), not the cure
            tries.append({"fix": f"{REDUCE_OVERHEAD} under torch.no_grad()", "for": LAUNCH_BOUND,
                          "how": "torch.compile(model, mode=\"reduce-overhead\") with every call under "
                                 "torch.no_grad(), if this is inference: with autograd on "
                                 f"({g['outputs_requiring_grad']} of {g['outputs']} output tensors require grad) and "
                                 "no backward, cudagraph trees keep each forward waiting for its backward (a call "
                                 "made while the previous output is alive runs their warm-up path or records again "
                                 "instead of replaying), so a plain trial would time that, not the cure; the run "
                                 "without the cure keeps autograd on, as your calls do, so the change includes "
                                 "no_grad's own; for training, time a real step with backward instead",
                          "kw": ro, "grad_off": True})
        else:
            tries.append({"fix": REDUCE_OVERHEAD, "for": LAUNCH_BOUND,
                          "how": "torch.compile(model, mode=\"reduce-overhead\"): each graph's kernels recorded once "
                                 "into a CUDA graph and replayed with one launch per call",
                          "kw": ro})
    return tries


def try_fixes(report, model, example, variants, dev: str) -> list[dict]:
    """Each applicable cure (``plan``), measured against a baseline: [{"fix", "for", "how", "baseline", "fixed"},
    ...]."""
    d, s = report.data, report.settings
    tries = plan(d, s, dev, _varying_dims(example, variants), logging_methods(d.get("breaks", [])))
    if not tries:
        return []
    rounds, repeats = 1, max(3, s["repeats"] // 2)
    base = trial(model, example, variants, _settings_kw(s), dev, rounds=rounds, repeats=repeats)
    out = []
    for t in tries:
        patch = None
        if t.get("logging"):
            name, methods = t["logging"]
            patch = private("torch._dynamo.config").patch(**{name: {getattr(logging.Logger, m) for m in methods}})
        fixed = trial(model, example, variants, t["kw"], dev, mark=t.get("mark"), patch=patch,
                      grad_off=t.get("grad_off", False), rounds=rounds, repeats=repeats)
        out.append({"fix": t["fix"], "for": t["for"], "how": t["how"], "baseline": base, "fixed": fixed})
    return out

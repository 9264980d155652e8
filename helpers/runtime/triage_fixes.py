"""``--try-fixes``: apply a finding's mechanical cure, compile again and measure what it changed (chapter 30).

Three cures are tried, each against a baseline run the same way (a fresh compile state, the example inputs,
then every variant, then the steady timing), so the numbers compare like with like:

- a shape recompile over the variants: ``dynamic=True``, and ``torch._dynamo.mark_dynamic`` on each
  dimension whose size differs between the example inputs and the variants;
- a graph break at a logging call: the ``logging.Logger`` methods the breaking lines call, added to
  ``torch._dynamo.config.ignore_logging_functions`` (``ignore_logger_methods`` on older torch). The message
  is then dropped inside compiled code: the report says so;
- reduce-overhead on calls whose outputs require grad, with no backward: every call under
  ``torch.no_grad()`` (an inference graph; the right cure only if the reader's calls are inference).

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
from .triage_checks import (_cause, _dynamo_quiet, _error_text, _max_difference, _recompiled, _tensors, _timed,
                            autograd_under_cudagraphs)

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
    ``torch.no_grad()``), run the example then each variant, then time the example."""
    import torch

    grad = torch.no_grad if grad_off else contextlib.nullcontext
    with grad():
        eager = [c.copy().run(model) for c in [example] + variants]
    clear_compile_state()
    converted: list = []
    handle = private("torch._dynamo.convert_frame.register_bytecode_hook")(lambda old, new: converted.append(old))
    out = {"error": ""}
    try:
        with contextlib.redirect_stdout(io.StringIO()), _dynamo_quiet(), (patch or contextlib.nullcontext()), \
                capture_logs("graph_breaks") as bl, grad():
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


def try_fixes(report, model, example, variants, dev: str) -> list[dict]:
    """Each applicable cure, measured against a baseline: [{"fix", "for", "how", "baseline", "fixed"}, ...]."""
    d, s = report.data, report.settings
    kw = {"backend": s["backend"], "dynamic": s["dynamic"]} | ({"mode": s["mode"]} if s["mode"] else {})
    tries = []
    shape_rows = [r for r in _recompiled(d.get("variants", [])) if _cause(r, None)[0] in ("size mismatch", "0/1 size",
                                                                                          "shape")]
    if shape_rows:
        tries.append(("dynamic=True", "the shape recompiles", "torch.compile(model, dynamic=True)",
                      {"kw": kw | {"dynamic": True}}))
        dims = _varying_dims(example, variants)
        if dims:
            what = ", ".join(f"input tensor {i} dim {dd}" for i, dd in dims)
            tries.append(("mark_dynamic", "the shape recompiles",
                          f"torch._dynamo.mark_dynamic on {what} of the example inputs before the first call",
                          {"kw": kw, "mark": dims}))
    g = d.get("grad")
    if g and autograd_under_cudagraphs(g, s["mode"], s["backend"]):
        tries.append(("torch.no_grad()", "autograd under CUDA graphs (if this is inference)",
                      "every call under torch.no_grad(): an inference graph, no pending backward",
                      {"kw": kw, "grad_off": True}))
    methods = logging_methods(d.get("breaks", []))
    if methods:
        config = private("torch._dynamo.config")
        name = "ignore_logging_functions" if hasattr(config, "ignore_logging_functions") else "ignore_logger_methods"
        fns = {getattr(logging.Logger, m) for m in methods}
        tries.append((name, "the logging graph break",
                      f"torch._dynamo.config.{name} = {{{', '.join('logging.Logger.' + m for m in methods)}}} "
                      "(the message is then not logged from compiled code)",
                      {"kw": kw, "patch": config.patch(**{name: fns})}))
    if not tries:
        return []
    rounds, repeats = 1, max(3, s["repeats"] // 2)
    base = trial(model, example, variants, kw, dev, rounds=rounds, repeats=repeats)
    out = []
    for fix, target, how, args in tries:
        fixed = trial(model, example, variants, args["kw"], dev, mark=args.get("mark"), patch=args.get("patch"),
                      grad_off=args.get("grad_off", False), rounds=rounds, repeats=repeats)
        out.append({"fix": fix, "for": target, "how": how, "baseline": base, "fixed": fixed})
    return out

"""``python -m helpers triage``: the course's inspectors run on the reader's own model, in debugging order (chapter 30).

The reader gives a Python file and a function in it that returns ``(model, inputs)`` or ``(model, inputs,
variants)``. The triage checks the example inputs eagerly, compiles the model once, and reports, in the
order a reader should debug: graph breaks (chapter 10's log records, ``helpers.dynamo.graph_breaks``),
recompiles over every call it makes, phase by phase (``triage_checks.CallWatch``: chapter 6's
``recompile_log`` and Dynamo's guard-complete hook; chapter 26's ``classify`` and ``CURES``, a shape cause
refined by ``triage_checks.shape_cause``),
guards (chapter 6's ``guard_leaves``), compile time (``helpers.runtime.compile_time``), eager vs compiled
steady time (``helpers.core.timing``: GPU time and wall on a GPU, this thread's CPU time on a CPU),
CUDA-graph skips under ``mode="reduce-overhead"`` (chapter 25's ``skip_log``), the generated kernels
(``helpers.inductor.code.collect_code``) and the compile bet (``helpers.runtime.bet``). Each line names
the chapter that explains it. A model that does not compile gets the compiler's error, the backend
ladder of chapter 2 (which station fails first) and the minifier of chapter 27. Private torch names go
through ``helpers.core.private.private`` (the bytecode hook, Dynamo's counters); all exist on torch
2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import io
import json
import os
import re
import sys
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core import timing
from ..core.env import REPO_ROOT, CourseError, detect
from ..core.private import private
from ..dynamo.config import dynamo_setting
from ..dynamo.graph_breaks import BreakRecord, break_records, read_counters, reset_counters
from ..dynamo.guards import guard_leaves
from ..dynamo.logs import capture_logs
from ..dynamo.state import clear_compile_state, counters
from ..inductor.code import InductorOutput, collect_code
from .bet import CompileBet
from .compile_time import compile_times
from .cudagraphs import LaunchBudget, eager_ops, skip_log, skip_reason
from .recompiles import CURES
from .triage_fixes import LAUNCH_BOUND
from .triage_fixes import compiled_launch_bound as _compiled_launch_bound  # section 6's test, section 7's advice
from .triage_checks import (NO_LOCATION, SHAPE_CURES, CallWatch, _cause, _dynamo_quiet, _error_text,
                            _max_difference, _recompiled, _tensors, _timed, autograd_under_cudagraphs, changing_state, chapter_url, grad_state,
                            isa_probe_time, kept_output_loop, launches_and_library_calls, purity,
                            random_modules)

_checks_file = sys.modules[CallWatch.__module__].__file__  # the triage's own frames, left out of tracebacks

#: The chapter (file name in chapters/) that explains each finding.
CHAPTERS = {
    "compiles": "ch27_debugging",
    "ladder": "ch02_four_stations",
    "result": "ch27_debugging",
    "graph_breaks": "ch10_graph_breaks",
    "recompiles": "ch26_recompiles",
    "shapes": "ch11_symbolic_shapes",
    "recompile_limit": "ch06_guards",
    "guards": "ch06_guards",
    "compile_time": "ch02_four_stations",
    "inductor_time": "ch17_inductor_overview",
    "steady_time": "ch02_four_stations",
    "launch_bound": "ch25_cuda_graphs",
    "cudagraphs": "ch25_cuda_graphs",
    "kernels": "ch17_inductor_overview",
    "fusion": "ch20_fusion_boundaries",
    "bet": "ch02_four_stations",
    "backend": "ch28_custom_backend",
}

#: Which chapter explains each root cause ``classify`` names (the cure is chapter 26's in every case).
CAUSE_CHAPTER = {"rank": "shapes", "0/1 size": "shapes", "shape": "shapes", "branch": "shapes",
                 "size mismatch": "shapes"}

#: The ladder of chapter 2: each rung adds one station to the one before.
LADDER = [("eager", "Dynamo (capturing the graph)"), ("aot_eager", "AOTAutograd"),
          ("aot_eager_decomp_partition", "Inductor's decompositions and partitioner"),
          ("inductor", "Inductor's code generation")]

EXIT_OK, EXIT_COMPILE, EXIT_SETUP = 0, 1, 2


class TriageError(Exception):
    """What stopped the triage before it could compile: ``kind`` is file, import, function or inputs."""

    def __init__(self, kind: str, message: str, where: str = "", detail: str = ""):
        super().__init__(message)
        self.kind, self.message, self.where, self.detail = kind, message, where, detail


@dataclass
class Line:
    """One line of a finding and the chapter that explains it (a key of ``CHAPTERS``)."""

    text: str
    chapter: str


@dataclass
class Finding:
    """One section of the report. ``status``: ok, problem, note, not checked, or error."""

    key: str
    title: str
    status: str
    lines: list[Line] = field(default_factory=list)
    code: str = ""  # a verbatim block shown under the lines (the compiler's error)

    def add(self, text: str, chapter: str) -> "Finding":
        self.lines.append(Line(text, chapter))
        return self


@dataclass
class Call:
    """One set of inputs: positional and keyword arguments."""

    args: tuple
    kwargs: dict = field(default_factory=dict)

    def run(self, fn):
        return fn(*self.args, **self.kwargs)

    def copy(self) -> "Call":
        """The same inputs with every tensor copied, so a model that writes into its inputs starts afresh."""
        import torch

        def dup(v):
            if isinstance(v, torch.Tensor):
                return v.detach().clone().requires_grad_(v.requires_grad)
            if isinstance(v, (list, tuple)):
                return type(v)(dup(x) for x in v)
            if isinstance(v, dict):
                return {k: dup(x) for k, x in v.items()}
            return v

        return Call(dup(self.args), dup(self.kwargs))

    def describe(self) -> str:
        parts = [describe(a) for a in self.args] + [f"{k}={describe(v)}" for k, v in self.kwargs.items()]
        return ", ".join(parts) or "no arguments"


def describe(value) -> str:
    """A short description of an input: ``float32[8, 16]`` for a tensor (``@cuda`` off the CPU), ``repr`` otherwise."""
    import torch

    if isinstance(value, torch.Tensor):
        dev = "" if value.device.type == "cpu" else f"@{value.device.type}"
        return f"{str(value.dtype).replace('torch.', '')}[{', '.join(map(str, value.shape))}]{dev}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in list(value.items())[:4]) + "}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass
class Report:
    """A triage: what was run, the findings in debugging order, the raw measurements, an error if any."""

    target: str
    settings: dict
    env: dict = field(default_factory=dict)
    model: str = ""
    inputs: str = ""
    variants: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    error: dict | None = None
    bet: str = ""
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        if self.error is None:
            return EXIT_OK
        return EXIT_COMPILE if self.error["kind"] == "compile" else EXIT_SETUP

    def finding(self, key: str) -> Finding | None:
        return next((f for f in self.findings if f.key == key), None)

    def as_json(self) -> dict:
        out = asdict(self)
        for f in out["findings"]:
            for line in f["lines"]:
                line["chapter"] = CHAPTERS.get(line["chapter"])
                line["url"] = chapter_url(line["chapter"]) if line["chapter"] else None
        out["exit_code"] = self.exit_code
        return out

    def markdown(self, base: str | os.PathLike | None = None) -> str:
        """The report as Markdown; chapter names link to the book's page, and to ``chapters/<name>.ipynb``
        relative to ``base`` as a fallback when ``base`` is given."""
        s = self.settings
        lines = [f"# torch.compile triage: `{self.target}`", ""]
        if self.model:
            lines.append(f"- model: {self.model}; inputs: {self.inputs}; input variants: {len(self.variants)}")
        lines.append(f"- compiled with: backend={s['backend']!r}, mode={s['mode']!r}, dynamic={s['dynamic']!r}, "
                     f"grad {'off (torch.no_grad)' if s['no_grad'] else 'as the model leaves it'}")
        if self.env:
            e = self.env
            where = (f"{e['device_name']} ({e['device_class']})" if e["device"] == "cuda" else
                     f"CPU ({e['cpu_count']} cores: {e['device_name']}; torch on {e['threads']} "
                     f"thread{'s' if e['threads'] != 1 else ''})")
            lines.append(f"- machine: {where}; torch {e['torch']}, python {e['python']}")
        lines.append(f"- the triage itself took {self.seconds:.1f} s (wall time: loading, eager checks, compiling, "
                     "timing, variants)")
        if self.error and self.error["kind"] != "compile":
            lines += ["", "The triage stopped before compiling anything:", ""]
        else:
            lines += ["", "Read the sections in order: each one assumes the problems above it are fixed, because "
                          "a graph break or a recompile changes every number below it. Each line names the "
                          "chapter of the book that explains it.", ""]
        for i, f in enumerate(self.findings, 1):
            lines += [f"## {i}. {f.title} — {f.status.upper()}", ""]
            lines += [f"- {ln.text} ({_chapter_link(CHAPTERS[ln.chapter], base)})" if ln.chapter else
                      f"- {ln.text} (in your code or your inputs, before any compiling: fix it, then run the "
                      "triage again)" for ln in f.lines]
            if f.code:
                lines += ["", "```text", f.code.rstrip(), "```"]
            lines.append("")
        if self.bet:
            lines += [f"**The compile bet:** {self.bet} ({_chapter_link(CHAPTERS['bet'], base)})", ""]
        return "\n".join(lines).rstrip() + "\n"


def _chapter_link(name: str, base) -> str:
    """The chapter's page in the published book, then the local notebook (relative to ``base``) as a fallback."""
    url = chapter_url(name)
    path = REPO_ROOT / "chapters" / f"{name}.ipynb"
    local = ""
    if base is not None and path.exists():
        base = Path(base).resolve()
        inside = base == REPO_ROOT or REPO_ROOT in base.parents
        local = Path(os.path.relpath(path, base)).as_posix() if inside else path.as_posix()
    if url:
        return f"[{name}]({url})" + (f", [local copy]({local})" if local else "")
    return f"[{name}]({local})" if local else name


# ---------------------------------------------------------------------------------------------- loading

def _user_frame(exc: BaseException, path: Path) -> str:
    """``file:line in fn: code`` of the innermost traceback frame in the reader's file, or ''."""
    want = os.path.realpath(path)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.realpath(f.filename) == want]
    if not frames:
        return ""
    f = frames[-1]
    return f"{path.name}:{f.lineno} in {f.name}: {(f.line or '').strip()}"


def _trace(exc: BaseException, lines: int = 14) -> str:
    """The exception's traceback without the triage's own frames, its last ``lines`` lines."""
    te = traceback.TracebackException.from_exception(exc)
    own = {__file__, _checks_file}
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename not in own])
    text = "".join(te.format()).rstrip().splitlines()
    return "\n".join(text[-lines:])


def _as_call(value) -> Call:
    if isinstance(value, Call):
        return value
    if isinstance(value, dict):
        return Call((), dict(value))
    if isinstance(value, (tuple, list)):
        return Call(tuple(value))
    return Call((value,))


def load_target(path, function: str = "example", device: str = "auto"):
    """Import ``path``, call ``function`` (given ``device=`` if it takes one): ``(model, Call, [Call, ...])``.

    ``function`` returns ``(model, inputs)`` or ``(model, inputs, variants)``: ``inputs`` is a tuple (or
    list) of positional arguments, a dict of keyword arguments, or one value (one argument); ``variants``
    is a list of such inputs. Raises ``TriageError`` with a message the reader can act on.
    """
    p = Path(path)
    if not p.exists():
        raise TriageError("file", f"no such file: {path}")
    if not p.is_file() or p.suffix != ".py":
        raise TriageError("file", f"{path} is not a Python file (.py)")
    name = "_triage_" + re.sub(r"\W", "_", p.stem)
    spec = importlib.util.spec_from_file_location(name, p)
    module = importlib.util.module_from_spec(spec)
    folder = str(p.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)  # so the file's own imports of its neighbours work
    sys.modules[name] = module
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever the reader's file raises is the message
        raise TriageError("import", f"importing {p.name} raised {_error_text(exc)}", _user_frame(exc, p),
                          _trace(exc)) from exc
    fn = getattr(module, function, None)
    if not callable(fn):
        defined = sorted(k for k, v in vars(module).items()
                         if inspect.isfunction(v) and v.__module__ == name and not k.startswith("_"))
        raise TriageError("function", f"{p.name} has no function {function!r} (it defines: "
                                      f"{', '.join(defined) or 'no functions'}); name one with FILE:FUNCTION")
    kwargs = {"device": device} if "device" in inspect.signature(fn).parameters else {}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            got = fn(**kwargs)
    except Exception as exc:  # noqa: BLE001
        raise TriageError("function", f"{function}() raised {_error_text(exc)}", _user_frame(exc, p),
                          _trace(exc)) from exc
    if not (isinstance(got, tuple) and len(got) in (2, 3)):
        raise TriageError("function", f"{function}() must return (model, inputs) or (model, inputs, variants); "
                                      f"it returned {type(got).__name__}")
    model, inputs, *rest = got
    if not callable(model):
        swapped = callable(inputs) and not isinstance(inputs, type)
        raise TriageError("function", f"the model {function}() returned is a {type(model).__name__}, not callable"
                          + (f"; the second item is callable ({type(inputs).__name__}): return (model, inputs), "
                             "the model first" if swapped else ""))
    variants = rest[0] if rest else []
    if variants is None:
        variants = []
    if not isinstance(variants, (list, tuple)):
        raise TriageError("function", f"the variants {function}() returned must be a list of inputs, "
                                      f"not {type(variants).__name__}")
    return model, _as_call(inputs), [_as_call(v) for v in variants]


def _device_of(model, call: Call) -> str:
    tensors = list(_tensors((call.args, call.kwargs)))
    params = getattr(model, "parameters", None)
    if callable(params):
        with contextlib.suppress(Exception):
            tensors += list(params())
    return "cuda" if any(t.device.type == "cuda" for t in tensors) else "cpu"


def _describe_model(model) -> str:
    import torch

    if isinstance(model, torch.nn.Module):
        n = sum(p.numel() for p in model.parameters())
        return f"`{type(model).__name__}` (an nn.Module, {n:,} parameters, {'training' if model.training else 'eval'} mode)"
    return f"`{getattr(model, '__name__', type(model).__name__)}` (a function)"


# ------------------------------------------------------------------------------------------------ running

def _frame_label(name: str) -> str:
    m = re.fullmatch(r"torch_dynamo_resume_in_(\w+?)_at_(\d+)", name)
    return f"{m.group(1)} (after the break at line {m.group(2)})" if m else name


def _ladder(model, call: Call, backend: str, mode, dynamic) -> list[tuple[str, str, str]]:
    """Compile with each rung of chapter 2's ladder up to ``backend``: (backend, station, "ok" or the error)."""
    import torch

    names = [b for b, _ in LADDER]
    rungs = LADDER[:names.index(backend) + 1] if backend in names else LADDER[:2] + [(backend, f"the backend {backend!r}")]
    out = []
    for name, station in rungs:
        clear_compile_state()
        kw = {"mode": mode} if mode and name == backend else {}  # a mode belongs to the reader's backend
        try:
            with contextlib.redirect_stdout(io.StringIO()), _dynamo_quiet():
                call.run(torch.compile(model, backend=name, dynamic=dynamic, **kw))
            out.append((name, station, "ok"))
        except Exception as exc:  # noqa: BLE001 - the failing rung is the answer
            out.append((name, station, _error_text(exc)))
            break
    clear_compile_state()
    return out


def triage(path, function: str = "example", *, backend: str = "inductor", mode: str | None = None,
           dynamic: bool | None = None, device: str = "auto", no_grad: bool = False, threads: int | None = None,
           rounds: int = 3, repeats: int = 10, calls: int | None = None, try_fixes: bool = False) -> Report:
    """Triage ``function`` of the file ``path`` (see ``load_target``) and return the Report (chapter 30).

    On a CPU, torch runs on ``threads`` threads (default one, as the course times everything: steady
    times are then this thread's CPU time); ``rounds`` × ``repeats`` set how long the steady timing takes.
    ``calls`` adds "over N calls" to the compile bet. ``try_fixes`` applies each finding's mechanical cure
    (a shape recompile, a logging break, reduce-overhead with autograd on, a launch-bound compiled call on a GPU),
    compiles again and reports the measured effect (``helpers.runtime.triage_fixes``).
    """
    import torch

    start = time.perf_counter()
    settings = {"backend": backend, "mode": mode, "dynamic": dynamic, "device": device, "no_grad": no_grad,
                "threads": threads, "rounds": rounds, "repeats": repeats, "calls": calls, "try_fixes": try_fixes}
    report = Report(target=f"{path}:{function}", settings=settings)
    saved_threads = torch.get_num_threads()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        model, example, variants = load_target(path, function, device)
        dev = _device_of(model, example)
        if dev == "cpu":
            torch.set_num_threads(threads or 1)
        env = detect(dev)
        report.env = {k: getattr(env, k) for k in ("device", "device_class", "device_name", "torch", "triton",
                                                    "python", "cpu_count", "threads")}
        report.model, report.inputs = _describe_model(model), example.describe()
        report.variants = [v.describe() for v in variants]
        grad = torch.no_grad() if no_grad else contextlib.nullcontext()
        with grad:
            pristine = example.copy()  # the eager reference and the first compiled call start from these values
            eager_out = _check_inputs(model, pristine.copy(), variants, Path(path))
            report.data["eager_purity"] = _purity(model, pristine)
            report.data["random_modules"] = random_modules(model)
            _compile_and_measure(report, model, example, variants, eager_out, dev, Path(path), pristine)
            if try_fixes and report.error is None:
                _add_fixes(report, model, example, variants, dev)
    except TriageError as exc:
        report.error = {"kind": exc.kind, "message": exc.message, "where": exc.where, "detail": exc.detail}
        f = Finding("error", _ERROR_TITLES[exc.kind], "error")
        f.add(exc.message + (f" (at {exc.where})" if exc.where else ""), "backend" if exc.kind == "compile" else "")
        f.code = exc.detail
        report.findings.insert(0, f)
    except Exception as exc:  # noqa: BLE001 - a model the triage did not foresee: say so, keep the report
        report.error = {"kind": "triage", "message": f"the triage itself failed: {_error_text(exc)}",
                        "where": "", "detail": _trace(exc, 30)}
        f = Finding("error", "The triage", "error")
        f.add(report.error["message"] + " (a case the triage does not handle yet: the traceback below says "
              "where)", "")
        f.code = report.error["detail"]
        report.findings.append(f)
    finally:
        torch.set_num_threads(saved_threads)
        clear_compile_state()
        report.seconds = time.perf_counter() - start
    return report


_ERROR_TITLES = {"file": "The file", "import": "Importing the file", "function": "The function",
                 "inputs": "The inputs", "compile": "The compile settings"}


def _purity(model, pristine: Call) -> str:
    """"pure", "random" or "state": does eager give the same output twice on the same inputs (and seed)?"""
    def same(a, b) -> bool:
        d = _max_difference(a, b)
        return d is None or d[0] <= d[1] * 1e-2  # eager against itself: equal up to rounding (GPU atomics)

    try:
        return purity(model, lambda: pristine.copy().run(model), same)
    except Exception:  # noqa: BLE001 - the inputs were checked already; a model that fails now is left alone
        return "unknown"


def _add_fixes(report: Report, model, example: Call, variants: list[Call], dev: str) -> None:
    from .triage_fixes import try_fixes  # looked up at call time (a test replaces it)

    rows = try_fixes(report, model, example, variants, dev)
    report.data["fixes"] = rows
    report.findings.append(_fixes_finding(rows, report.data.get("random_modules")))
    cg = report.finding("cudagraphs")
    if cg is not None and rows:  # section 7's advice now points at the trial that measured it
        report.findings[report.findings.index(cg)] = _cudagraphs_finding(report.data, report.settings, dev)


def _fixes_finding(rows: list[dict], random: list | None) -> Finding:
    """Section 9 from the trials' rows (``--try-fixes``)."""
    f = Finding("fixes", "The cures, tried (--try-fixes)", "note" if rows else "not checked")
    if not rows:
        f.add("no finding here has a mechanical cure the triage can apply (a shape recompile, a logging graph "
              "break)", "recompiles")
    for r in rows:
        b, x = r["baseline"], r["fixed"]
        chapter = {"the shape recompiles": "shapes", "the logging graph break": "graph_breaks",
                   "the launch-bound compiled call": "launch_bound"}.get(r["for"], "cudagraphs")
        if x["error"] or b["error"]:
            f.add(f"{r['fix']} for {r['for']}: the trial failed: {x['error'] or b['error']}", chapter)
            continue
        f.add(f"{r['fix']} for {r['for']} ({r['how']}): frames compiled {b['compiles']} → {x['compiles']}, graph "
              f"breaks {b['breaks']} → {x['breaks']}, compiling calls {_s(b['compile_s'])}{_cache_note(b)} → "
              f"{_s(x['compile_s'])}{_cache_note(x)} of "
              f"wall time, steady compiled call {_s(b['steady_s'])} → {_s(x['steady_s'])}; outputs "
              + _fixed_outputs(x, b, random) + _graphs_note(x, b), chapter)
    if rows:
        f.add("both runs compiled afresh after the triage's own compile, the same calls in the same order; "
              "Inductor's FX graph cache may serve either (a hit skips code generation and the kernel compiler), "
              "so the counts are the proof, and the seconds compare only between runs with the same cache hits "
              "and misses"
              + ("" if all("fx_graph_cache" in r[k] for r in rows for k in ("baseline", "fixed")) else
                 " (this run did not record the trials' cache hits and misses)"), "compile_time")
    return f


def _graphs_note(fixed: dict, base: dict) -> str:
    """What cudagraph trees did over a --try-fixes run under reduce-overhead on a GPU (``trial``'s ``cudagraphs``:
    recordings, replays, warm-up runs, graphs skipped and why), the run without the cure's beside it when it ran
    under reduce-overhead too; empty for a run that did not watch them (a CPU, no reduce-overhead)."""
    def counts(g: dict) -> str:
        return (f"{g['record']} recorded, {g['replay']} replay(s), {g['warmup']} warm-up run(s) (run_eager), "
                f"{g['skipped']} graph(s) skipped")

    g = fixed.get("cudagraphs")
    if not g:
        return ""
    text = f"; CUDA graphs over its calls: {counts(g)}"
    reasons = list(dict.fromkeys(g.get("reasons") or []))
    if reasons:
        text += " (" + "; ".join(reasons[:3]) + ")"
    if base.get("cudagraphs"):
        text += f" (without the cure: {counts(base['cudagraphs'])})"
    if not g["replay"]:
        text += "; no call replayed a CUDA graph, so the steady time is not a replay's"
    return text


def _cache_note(run: dict) -> str:
    """`` (FX graph cache: 1 hit, 2 misses)`` for one --try-fixes run, empty when nothing looked the cache up."""
    c = run.get("fx_graph_cache") or {}
    if not (c.get("hit") or c.get("miss")):
        return ""
    return f" (FX graph cache: {c['hit']} hit(s), {c['miss']} miss(es))"


def _fixed_outputs(fixed: dict, base: dict, random: list | None) -> str:
    """How the cured run's outputs compare with eager: a model that draws random numbers (dropout in training
    mode) matches in neither run, by design, so that is said instead of a regression."""
    if fixed["matches"]:
        return "still match eager"
    if random and not base["matches"]:
        return (f"differ from eager (up to {fixed['max_difference']:.3g}), as the run without the cure does: the "
                "model draws random numbers (see section 1), so neither run can match")
    return f"NO LONGER match eager (up to {fixed['max_difference']:.3g})"


def _check_inputs(model, example: Call, variants: list[Call], path: Path):
    """Call the model eagerly on the inputs and every variant; a failure is the reader's to fix first."""
    outs = []
    for i, call in enumerate([example] + variants):
        what = "the example inputs" if i == 0 else f"input variant {i}"
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                outs.append(call.run(model))
        except Exception as exc:  # noqa: BLE001
            raise TriageError("inputs", f"the model does not accept {what} ({call.describe()}): calling it "
                                        f"eagerly, without torch.compile, raised {_error_text(exc)}",
                              _user_frame(exc, path), _trace(exc)) from exc
    return outs[0]


def _compile_and_measure(report: Report, model, example: Call, variants: list[Call], eager_out, dev: str,
                         path: Path, pristine: Call) -> None:
    import torch

    s = report.settings
    kw = {"backend": s["backend"], "dynamic": s["dynamic"]}
    if s["mode"]:
        kw["mode"] = s["mode"]
    inductor = s["backend"] == "inductor"
    try:
        compiled = torch.compile(model, **kw)
    except Exception as exc:  # noqa: BLE001 - an unknown backend or mode is refused here
        raise TriageError("compile", f"torch.compile refused the settings: {_error_text(exc)}") from exc
    register = private("torch._dynamo.convert_frame.register_bytecode_hook")
    reset_counters()
    converted: list = []
    handle = register(lambda old, new: converted.append(old))
    printed = io.StringIO()
    data = report.data
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(contextlib.redirect_stdout(printed))
            stack.enter_context(_dynamo_quiet())
            breaks_log = stack.enter_context(capture_logs("graph_breaks"))
            code = stack.enter_context(collect_code()) if inductor else None
            skips = stack.enter_context(skip_log()) if s["mode"] == "reduce-overhead" and inductor else None
            watch = stack.enter_context(CallWatch(converted))  # every compiled call, phase by phase
            # the first call: compile + one run
            error = None
            with compile_times() as times, isa_probe_time() as probes, \
                    watch.phase("the first call", pristine.describe()):
                # the first call's compile alone (a variant's recompile is timed apart)
                try:
                    first_out, first_s = _timed(lambda: pristine.run(compiled), dev)
                except Exception as exc:  # noqa: BLE001 - the compiler's error is the finding
                    error = exc
            data["one_time_s"] = {"isa_probe": probes["isa_probe"], "isa_build": probes["isa_build"],
                                  "header": probes["header"], "cache_dir": probes["cache_dir"]}
            stats = read_counters(None, [c.co_name for c in converted])
            breaks = break_records(breaks_log.messages("graph_breaks"))
            data["graphs"], data["frames"] = stats.graphs, stats.frame_names
            data["breaks"] = [asdict(b) for b in breaks]
            if error is not None:
                _compile_failed(report, error, breaks, path)
                stack.close()
                _add_ladder(report, model, example, kw)
                return
            frames = list(dict.fromkeys(converted))
            guards = {}
            for c in frames:
                name = c.co_name if c.co_name not in guards else f"{c.co_name} (line {c.co_firstlineno})"
                try:
                    guards[name] = [kind for kind, _ in guard_leaves(c, 0)]
                except (ValueError, IndexError):  # no cache entry on this code object
                    guards[name] = []
            first_modules = len(code.sources) if code is not None else 0
            inductor_counts = counters().get("inductor", {})  # the first call's cache lookups, before any variant
            data["fx_graph_cache"] = {"hit": int(inductor_counts.get("fxgraph_cache_hit", 0)),
                                      "miss": int(inductor_counts.get("fxgraph_cache_miss", 0))}
            data["first_call_s"] = first_s
            data["max_abs_difference"], data["tolerance"] = _max_difference(first_out, eager_out) or (None, None)
            data["grad"] = grad_state(model, first_out)
            del first_out
            # steady state, before any variant can add a more general graph
            count = [0]

            def counted():
                count[0] += 1
                return example.run(compiled)

            with compile_times() as steady_times, \
                    watch.phase("the steady timing", example.describe(), calls=None) as steady_phase:
                steady = _steady(model, counted, example, dev, s["rounds"], s["repeats"])
            steady_phase.calls = count[0]
            data.update(steady)
            # recompiles during the timing (state that changes every call): Dynamo's whole compile timer
            data["steady_compile_s"] = steady_times["_compile.compile_inner"]
            steady_modules = len(code.sources) if code is not None else 0
            # the variants, one by one
            rows = []
            for i, call in enumerate(variants, 1):
                failed, t = "", 0.0
                with watch.phase(f"variant {i}", call.describe()) as ph:
                    try:
                        _, t = _timed(lambda: call.run(compiled), dev)
                    except Exception as exc:  # noqa: BLE001 - a recompile that fails is this variant's finding
                        failed = _error_text(exc)
                rows.append({"variant": i, "inputs": call.describe(), "seconds": t,
                             "compiled": ph.compiles > 0, "recompiles": ph.recompiles,
                             "reason": ph.reasons[0] if ph.reasons else "",
                             "raw_reason": ph.raw_reasons[0] if ph.raw_reasons else "",
                             "limit_hit": bool(ph.limit), "hits": ph.hits, "misses": ph.misses,
                             "eager_runs": ph.eager_runs, "error": failed})
            data["variants"] = rows
            if dev == "cuda" and autograd_under_cudagraphs(data["grad"], s["mode"], s["backend"]):
                try:  # what the reader's `out = model(x)` loop gets: recordings or replays (ch25)
                    with watch.phase("the kept-output loop", example.describe(), calls=5):
                        data["kept_output_loop"] = kept_output_loop(lambda: example.run(compiled), calls=5)
                except Exception as exc:  # noqa: BLE001 - a measurement the report can do without
                    data["kept_output_loop"] = {"error": _error_text(exc)}
            data["phases"] = [asdict(p) | {"eager_runs": p.eager_runs} for p in watch.phases]
            data["calls"] = watch.totals()
            data["guard_hook"] = watch.hook_ok
        data["stations_s"] = times.stations(total=data["first_call_s"])
        data["guards"] = guards
        data["printed_lines"] = len(printed.getvalue().splitlines())
        if code is not None:
            mods = [InductorOutput([src]) for src in code.sources]
            data["kernels_first"] = [m.kernels for m in mods[:first_modules]]
            counted = [launches_and_library_calls(src, m.kernels) for src, m in zip(code.sources, mods)]
            data["launches_first"] = [n for n, _ in counted[:first_modules]]  # graph partitions included
            data["library_calls_first"] = [calls for _, calls in counted[:first_modules]]
            data["kernel_language"] = next((m.kernel_language for m in mods if m.kernel_language), None)
            data["modules_total"] = len(mods)
            # where the modules after the first call's came from: recompiles during the steady timing, then
            # the variants (and the kept-output loop, which runs after them)
            data["modules_by_phase"] = {"the first call": first_modules,
                                        "the steady timing": steady_modules - first_modules,
                                        "the variants": len(mods) - steady_modules}
            data["kernels_total"] = sum(len(m.kernels) for m in mods)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                data["eager_ops"] = dict(eager_ops(lambda: example.run(model)))
        except Exception:  # noqa: BLE001 - a model the dispatch counter cannot run: leave the count out
            data["eager_ops"] = None
        if skips is not None:
            data["cudagraph_skips"] = {"count": skips.count, "reasons": [skip_reason(m) for m in skips.messages]}
    finally:
        handle.remove()
    _findings(report, breaks, dev, path)


def _steady(model, compiled, call: Call, dev: str, rounds: int, repeats: int) -> dict:
    """Eager vs compiled per call, in alternating rounds: this thread's CPU time on a CPU; wall and GPU time on a GPU.

    ``compiled`` is a thunk that calls the compiled model on ``call``'s inputs.
    """
    contenders = {"eager": lambda: call.run(model), "compiled": compiled}
    wall = timing.interleaved(contenders, rounds=rounds, repeats=repeats, device=dev)
    out = {"eager_s": wall["eager"].median, "compiled_s": wall["compiled"].median, "clock": wall["eager"].what}
    # the compile bet sets a compile's wall time against the time saved per call: on one clock, the wall
    out["eager_wall_s"], out["compiled_wall_s"] = out["eager_s"], out["compiled_s"]
    if not out["clock"].startswith("wall"):
        both = timing.interleaved(contenders, rounds=rounds, repeats=repeats, device=dev, clock="wall")
        out["eager_wall_s"], out["compiled_wall_s"] = both["eager"].median, both["compiled"].median
    if dev == "cuda":
        gpu = timing.interleaved(contenders, rounds=rounds, repeats=repeats, gpu_alone=True, device=dev)
        out["eager_gpu_s"], out["compiled_gpu_s"] = gpu["eager"].median, gpu["compiled"].median
        out["eager_launches"] = timing.kernels_per_call(contenders["eager"])
        out["compiled_launches"] = timing.kernels_per_call(contenders["compiled"])
    return out


def _compile_failed(report: Report, exc: BaseException, breaks: list[BreakRecord], path: Path) -> None:
    message = str(exc).strip()
    report.error = {"kind": "compile", "message": _error_text(exc), "where": _user_frame(exc, path),
                    "detail": message[:4000]}
    f = Finding("compiles", "Does it compile?", "error")
    f.add(f"no: the first compiled call raised {_error_text(exc)}. The same call runs eagerly, so the "
          f"compiler failed, not your inputs; its message is below", "compiles")
    f.add('to get a small script that reproduces it, run your program with TORCHDYNAMO_REPRO_AFTER="dynamo" '
          '(or "aot"): the minifier shrinks the failing graph to the operations that fail', "compiles")
    f.code = "\n".join(message.splitlines()[:25])
    report.findings.append(f)
    if breaks:
        report.findings.append(_breaks_finding(breaks, report.data.get("graphs", 0), path))


def _add_ladder(report: Report, model, example: Call, kw: dict) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        rungs = _ladder(model, example, kw["backend"], kw.get("mode"), kw.get("dynamic"))
    report.data["ladder"] = [{"backend": b, "station": st, "result": r} for b, st, r in rungs]
    f = Finding("ladder", "Which station fails", "note")
    for b, st, r in rungs:
        f.add(f'backend="{b}" (up to {st}): ' + ("compiles and runs" if r == "ok" else f"fails: {r}"), "ladder")
    failing = [(b, st) for b, st, r in rungs if r != "ok"]
    if failing:
        b, st = failing[0]
        own = b not in [n for n, _ in LADDER]
        f.add(f"so the first station that fails is {st}: the rungs below it handle your model"
              + ("; a backend receives Dynamo's FX graph and example inputs, and this one raised on them" if own
                 else ""), "backend" if own else "ladder")
    else:
        f.add("every rung compiles here: the failure depends on the settings (mode, dynamic) or on state "
              "the first attempt left behind", "ladder")
    report.findings.append(f)


# ----------------------------------------------------------------------------------------------- findings

def _s(seconds: float) -> str:
    """A time with a unit a reader takes in at a glance."""
    # three significant digits; a value that rounds up to 1000 of a unit is written in the next unit
    # (0.9996 s is "1.00 s", not "1e+03 ms")
    if seconds >= 1 or float(f"{seconds * 1e3:.3g}") >= 1000:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3 or float(f"{seconds * 1e6:.3g}") >= 1000:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _breaks_finding(breaks: list[BreakRecord], graphs: int, path: Path) -> Finding:
    skipped = [b for b in breaks if b.skips_frame]
    status = "problem" if breaks else "ok"
    f = Finding("graph_breaks", "Graph breaks", status)
    if not breaks:
        if graphs:
            f.add(f"none: Dynamo captured each call in {graphs} graph{'s' if graphs != 1 else ''}, so the "
                  "compiler sees all of the work at once", "graph_breaks")
        else:
            f.status = "note"
            f.add("none, but Dynamo compiled no graph: the function has no tensor work it could capture, "
                  "so it runs as plain Python", "graph_breaks")
        return f
    if skipped and not graphs:
        f.add(f"Dynamo gave up on the whole function: it runs eagerly, uncompiled, on every call "
              f"({len(breaks)} break{'s' if len(breaks) != 1 else ''} it could not resume after)", "graph_breaks")
    else:
        f.add(f"{len(breaks)} graph break{'s' if len(breaks) != 1 else ''}: Dynamo split the work into {graphs} "
              f"graph{'s' if graphs != 1 else ''}; the Python between them runs eagerly on every call, and "
              "the compiler cannot fuse across a break", "graph_breaks")
    for b in breaks:
        where = f"{Path(b.file).name}:{b.line}"
        fn = b.stack[-1][2] if b.stack else ""
        mine = b.innermost_in(str(path))
        via = f", reached from {Path(mine[0]).name}:{mine[1]} in {mine[2]}" if mine and (mine[0], mine[1]) != (
            b.file, b.line) else ""
        why = f": {b.explanation}" if b.explanation else ""
        f.add(f"{where}{f' in {fn}' if fn else ''}{via}: {b.title}{why}"
              + (" Dynamo then skipped the whole function (a break inside a loop, or one it cannot resume "
                 "after)." if b.skips_frame else ""), "graph_breaks")
        hints = [h for h in b.hints if "report an issue" not in h.lower()][:2]
        if hints:
            f.add("torch suggests: " + " / ".join(hints), "graph_breaks")
    f.add("once fixed, torch.compile(..., fullgraph=True) turns any new break into an error", "graph_breaks")
    return f


def _findings(report: Report, breaks: list[BreakRecord], dev: str, path: Path) -> None:
    d, s = report.data, report.settings
    out = report.findings
    # the result, first: a wrong answer makes every speed irrelevant
    diff, tol = d["max_abs_difference"], d["tolerance"]
    res = Finding("result", "Does it compile, and compute what eager computes?", "ok")
    if diff is None:
        res.status = "note"
        res.add(f"it compiles (backend {s['backend']!r}); the outputs hold no tensors of matching shapes to "
                "compare with eager", "result")
    elif diff <= tol:
        res.add(f"yes: compiled with backend {s['backend']!r}; the first compiled call matches eager "
                f"(largest difference {diff:.2g}; the tolerance is {tol:.2g})", "result")
    elif d.get("eager_purity") == "random":
        res.status = "note"
        mods = d.get("random_modules") or []
        res.add(f"the first compiled call differs from eager by up to {diff:.3g}, by design: the model draws random "
                "numbers" + (f" ({len(mods)} module(s) in training mode: {', '.join(mods[:6])}"
                             + (", ..." if len(mods) > 6 else "") + ")" if mods else " in its forward")
                + ", and eager called twice on the same inputs differs too, but not when the seed is the same. "
                "Compiled code draws its own random numbers (Inductor's are not eager's, even from one seed), so "
                "the outputs cannot match; to compare them, triage the model in eval mode (model.eval()) or "
                "with the randomness off (p=0)", "result")
    elif d.get("eager_purity") == "state":
        res.status = "note"
        res.add(f"the first compiled call differs from eager by up to {diff:.3g}, but eager itself gives another "
                "output when called again on the same inputs, even with the same seed: the model changes state "
                "between calls (a counter, a step number, a cache), so the eager and the compiled call computed "
                "different things and this difference says nothing about the compiler. Section 3 shows what the "
                "changing state costs; make the output a function of the inputs and run the triage again",
                "result")
    else:
        res.status = "problem"
        res.add(f"it compiles, but the first compiled call differs from eager by up to {diff:.3g} (more than "
                f"{tol:.2g}, a thousandth of the largest value in float32)"
                + (", while eager called twice on the same inputs gives the same output (so neither randomness nor "
                   "state that changes between calls explains it)" if d.get("eager_purity") == "pure" else "")
                + ": the compiled code computes something else. Bisect with the backend "
                'ladder (try backend="aot_eager") and the accuracy minifier (TORCHDYNAMO_REPRO_AFTER="aot" with '
                'TORCHDYNAMO_REPRO_LEVEL=4)', "result")
    if d.get("printed_lines"):
        res.add(f"the model prints: {d['printed_lines']:,} line(s) over the triage's calls, not shown (a print "
                "inside compiled code is a graph break)", "graph_breaks")
    out.append(res)
    out.append(_breaks_finding(breaks, d["graphs"], path))
    out.append(_recompiles_finding(d, path))
    out.append(_guards_finding(d))
    out.append(_compile_time_finding(d, s, dev))
    out.append(_steady_finding(d, dev, s.get("mode") if s["backend"] == "inductor" else None))
    out.append(_cudagraphs_finding(d, s, dev))
    out.append(_kernels_finding(d, s))
    recompiled = _recompiled(d["variants"])
    steady = next((p for p in d.get("phases", []) if p["name"] == "the steady timing"), None) or {}
    steady_recompiles = steady.get("recompiled", 0)
    # every time in the bet is wall time: the first call's (compile and run) and the steady calls'
    eager, compiled = d["eager_wall_s"], d["compiled_wall_s"]
    compile_s = max(d["first_call_s"] - compiled, 0.0)
    # recompiles: the variants' (each variant's wall time) and those during the steady timing (Dynamo's compile
    # timer over the timing), averaged
    n_recompiles = len(recompiled) + steady_recompiles
    recompile_s = ((sum(r["seconds"] for r in recompiled) + d.get("steady_compile_s", 0.0)) / n_recompiles
                   if n_recompiles else None)
    bet = CompileBet(compile_s, eager, compiled, n_recompiles, recompile_s)
    eager_runs = steady.get("eager_runs", 0)
    d["bet"] = {"clock": "wall", "compile_s": compile_s, "eager_s": eager, "compiled_s": compiled,
                "recompiles": n_recompiles, "recompiles_in_timing": steady_recompiles, "recompile_s": recompile_s,
                "judged": not eager_runs,
                "break_even_calls": None if bet.break_even_calls() == float("inf") else bet.break_even_calls()}
    if eager_runs:
        # the timing's calls ran eagerly past the recompile limit: the compiled time is not a compiled graph's
        report.bet = (f"not judged: {eager_runs:,} of the steady timing's {steady.get('calls', 0):,} compiled calls "
                      "ran eagerly past the recompile limit (section 3), so the \"compiled\" time is eager's plus the "
                      f"guard checks, not a compiled graph's; {steady_recompiles} recompile(s) during the timing "
                      f"took {_s(d.get('steady_compile_s', 0.0))}. Fix the recompiles, then triage again")
        return
    if compiled < eager:
        paid = f"a {_s(compile_s)} compile"
        if n_recompiles:
            paid += f" and {n_recompiles} recompile(s) of {_s(recompile_s)} each"
            if steady_recompiles:
                paid += f" ({steady_recompiles} of them during the steady timing)"
        why = f"{paid}, against {_s(eager - compiled)} of wall time saved per call"
    else:
        why = f"a compiled call takes {_s(compiled)} of wall time, an eager one {_s(eager)}"
    report.bet = f"{bet.verdict(s['calls'])} ({why})"


def _state_cure(name: str) -> str:
    if name.startswith("self."):
        return (f"an int attribute of an nn.Module is a constant to Dynamo: make `{name}` a tensor buffer updated in "
                "place (register_buffer, then add_(1)), or set torch._dynamo.config.allow_unspec_int_on_nn_module "
                "= True so the int becomes dynamic after one recompile")
    return (f"a Python global is a constant to Dynamo: keep `{name}` out of the compiled code (update it outside, "
            "pass what the graph needs as a tensor or an argument; an int argument becomes dynamic after one "
            "recompile), or hold it in a tensor updated in place")


def _recompiles_finding(d: dict, path=None) -> Finding:
    rows = d["variants"]
    phases = {p["name"]: p for p in d.get("phases", [])}
    tot = d.get("calls")
    f = Finding("recompiles", "Recompiles over every call the triage made", "ok")
    steady = phases.get("the steady timing")
    limit_n = None
    with contextlib.suppress(CourseError):
        limit_n = dynamo_setting("recompile_limit")
    if tot:
        f.add(f"the triage called the compiled model {tot['calls']} time(s) (the first call, "
              f"{steady['calls'] if steady else 0} in the steady timing on the same inputs, {len(rows)} variant(s)"
              + (", 5 keeping the previous output" if "the kept-output loop" in phases else "") + "): "
              f"{tot['compiles']} frame compile(s), of which {tot['recompiled']} recompile(s); "
              f"{tot['eager_runs']} frame call(s) ran eagerly (no cached graph accepted them and none was compiled)"
              + ("" if d.get("guard_hook", True) else " (this torch has no guard hook: eager runs not counted)"),
              "recompiles")
    # state that changes between calls: the same inputs recompile
    if steady and (steady["recompiled"] or steady["eager_runs"] or steady["limit"]):
        f.status = "problem"
        name = changing_state(steady["reasons"])
        guards = list(dict.fromkeys(steady["reasons"]))
        f.add(f"the same inputs recompiled {steady['recompiled']} time(s) during the steady timing"
              + (f" (the first guard that failed: `{guards[0]}`)" if guards else "")
              + (f": the model changes `{name}` on every call, and Dynamo guards on its value, so each new value "
                 "compiles a new graph" if name else ": something the model reads changes between calls"),
              "recompiles")
        if name:
            f.add(f"cure: {_state_cure(name)}", "recompiles")
    for p in d.get("phases", []):
        for fr in p["limit"]:
            where = f"{Path(fr['file']).name}:{fr['line']}"
            ran = sum(q["eager_runs"] for q in d["phases"][d["phases"].index(p):])
            f.status = "problem"
            f.add(f"frame `{_frame_label(fr['function'])}` ({where}) hit config.{fr['limit']} ({fr['value']} graphs "
                  f"per frame) during {p['name']}: from then on it ran eagerly whenever no cached graph's guards "
                  f"accepted the call ({ran} eager frame call(s) from there on), with one warning in the log and "
                  "no error", "recompile_limit")
    if not rows:
        if f.status == "ok":
            f.status = "not checked"
        f.add("no input variants given: return (model, inputs, [variant inputs, ...]) with the shapes, "
              "dtypes and values your program really uses to see which ones recompile", "recompiles")
        return f
    recompiled = _recompiled(rows)
    refused = [r for r in rows if r["limit_hit"]]
    fresh = [r for r in rows if r["compiled"] and not r["recompiles"]]
    failed = [r for r in rows if r["error"]]
    causes = {r["variant"]: _cause(r, path) for r in recompiled + refused}
    eager_rows = [r for r in rows if r.get("eager_runs") and not r["limit_hit"] and not r["error"]]
    benign = ("size mismatch", "branch", "shape")
    if refused or failed or eager_rows or len(recompiled) > 1 or any(
            causes[r["variant"]][0] not in benign for r in recompiled):
        f.status = "problem"
    elif recompiled and f.status == "ok":
        f.status = "note"
    f.add(f"{len(recompiled)} of {len(rows)} variant(s) recompiled"
          + (f", {len(fresh)} compiled code for a path the example inputs did not take" if fresh else "")
          + ": a recompile means each cached graph had a guard that failed on the new inputs, so the call "
            "paid for a compile again", "recompiles")
    shown = 3
    for r in recompiled[:shown]:
        cause, where = causes[r["variant"]]
        what = {"branch": ("a shape-dependent branch (location not recorded)" if where in ("", NO_LOCATION) else
                           f"a range set by a shape-dependent branch at {where}"),
                "size mismatch": "a size mismatch before automatic dynamic (the graph had static sizes)",
                "0/1 size": "a 0/1 size specialisation"}.get(cause, f"a {cause} change")
        f.add(f"variant {r['variant']} ({r['inputs']}) recompiled, {_s(r['seconds'])}: the guard that failed "
              f"was `{r['reason']}`, {what}", CAUSE_CHAPTER.get(cause, "recompiles"))
    if len(recompiled) > shown:
        more = Counter(causes[r["variant"]][0] for r in recompiled[shown:])
        f.add(f"variants {', '.join(str(r['variant']) for r in recompiled[shown:])} recompiled too ("
              + ", ".join(f"{c} ×{n}" for c, n in more.items()) + ")", "recompiles")
    for cause in dict.fromkeys(causes[r["variant"]][0] for r in recompiled):
        cure = SHAPE_CURES.get(cause) or CURES[cause]
        if cause == "constant":
            same = [r["reason"] for r in recompiled if causes[r["variant"]][0] == cause]
            if all(re.search(r"==\s*['\"]", x) for x in same):  # strings: each value is its own graph
                cure = ("each value is its own graph: harmless for a few values; for many, pick the function "
                        "outside the compiled code")
            elif (name := changing_state(same)):
                cure = _state_cure(name)
        f.add(f"cure for {'a ' + cause if cause != 'branch' else 'a shape-dependent branch'}"
              f"{'' if cause == 'branch' else ' change'}: {cure}", CAUSE_CHAPTER.get(cause, "recompiles"))
    for r in refused:
        f.add(f"variant {r['variant']} ({r['inputs']}): a guard failed (`{r['reason']}`) but the recompile limit "
              f"({limit_n} entries per function) was reached, so nothing compiled: this call and, from here on, "
              "every new input ran eagerly", "recompile_limit")
    for r in failed:
        f.add(f"variant {r['variant']} ({r['inputs']}): the compiled call raised {r['error']}, although the same "
              "call runs eagerly: the compiler fails on these inputs", "compiles")
    for r in rows:
        if r["recompiles"] or r["error"]:
            continue
        if r.get("eager_runs"):
            what = ("ran eagerly: past the recompile limit, no cached graph's guards accepted it"
                    + (f" ({r['eager_runs']} of its frame calls)" if r["eager_runs"] > 1 else ""))
        else:
            what = "compiled a new frame (no guard failed)" if r["compiled"] else "reused a compiled graph"
        f.add(f"variant {r['variant']} ({r['inputs']}): {what}", "recompile_limit" if r.get("eager_runs") else
              "recompiles")
    if f.status == "note" and any(not r["compiled"] and r["variant"] > recompiled[0]["variant"] for r in rows):
        f.add("one shape recompile that later sizes reuse is automatic dynamic at work: the second size "
              "makes the changing dimension symbolic", "shapes")
    return f


def _guards_finding(d: dict) -> Finding:
    guards = d["guards"]
    total = sum(len(v) for v in guards.values())
    f = Finding("guards", "Guards", "note")
    if not guards:
        f.add("no compiled frame, so no guards", "guards")
        return f
    per = "; ".join(f"{_frame_label(name)}: {len(kinds)}" for name, kinds in guards.items())
    f.add(f"{total} guard check(s) run before each call may reuse the compiled code ({per}); each is a "
          "condition on what the call reads (a type, a shape, a dtype, a global), and when one fails the call "
          "recompiles", "guards")
    kinds = Counter(k for v in guards.values() for k in v)
    if kinds:
        f.add("kinds: " + ", ".join(f"{k} ×{n}" for k, n in kinds.most_common()), "guards")
    return f


def _compile_time_finding(d: dict, s: dict, dev: str = "cpu") -> Finding:
    f = Finding("compile_time", "Compile time", "note")
    first, compiled = d["first_call_s"], d["compiled_wall_s"]  # both wall time
    f.add(f"the first call took {_s(first)} (wall time: compiling, then one run), about "
          f"{first / compiled:,.0f} times a steady compiled call's wall time" if compiled > 0 else
          f"the first call took {_s(first)} (wall time: compiling, then one run)", "compile_time")
    st = {k: v for k, v in d["stations_s"].items() if v > 0}
    if s["backend"] != "inductor":  # the backend call is what stations() books as Inductor's part
        st = {(f"the backend {s['backend']!r}" if k.startswith("Inductor") else k): v for k, v in st.items()}
    if st:
        f.add("where it went: " + "; ".join(f"{k} {_s(v)}" for k, v in st.items()), "compile_time")
    if s["backend"] == "inductor" and dev == "cuda" and st.get("kernel compiler (C++ or Triton)"):
        f.add(KERNEL_COMPILER_NOTE, "inductor_time")
    once = d.get("one_time_s") or {}
    probe, header = once.get("isa_probe", 0.0), once.get("header", 0.0)
    if s["backend"] == "inductor" and dev == "cpu":
        folder = once.get("cache_dir") or "the cache folder"
        build = once.get("isa_build", 0.0)
        if probe + header > 0:
            f.add(f"of the first call, {_s(probe + header)} ({(probe + header) / first:.0%}) went to Inductor's ISA "
                  f"probes and precompiled header, not to your model: the probes ({_s(probe)}, "
                  "VecISA.check_build: a small program per vector ISA, "
                  + (f"built in {folder} ({_s(build)} of it, once per cache folder), then " if build > 0 else
                     f"already built in {folder}, so no build, only ")
                  + "loaded by a child Python per ISA, which every new process runs again) and the precompiled "
                  f"header ({_s(header)}: preprocessed in every new process, built once in the default cache folder); the "
                  "compile bet counts them, since every new process that compiles C++ kernels pays them",
                  "inductor_time")
        elif d.get("kernel_language") != "c++" or not any(d.get("kernels_first") or []):
            # the first call's modules hold no generated kernel (a later recompile's may): nothing was probed
            f.add("no ISA probe or precompiled header in this first call: its compile generated no C++ kernel "
                  "(Inductor probes the vector ISAs when it writes one); a compile that writes one pays them in "
                  "every new process", "inductor_time")
        else:
            f.add("no ISA probe or precompiled header in this first call: this process had probed already "
                  "(VecISA.__bool__ and _precompile_header are functools.cache'd per process); a new process "
                  "pays the probes' loads again, a fresh cache folder their builds too", "inductor_time")
    if s["backend"] == "inductor":
        c = d["fx_graph_cache"]
        f.add(f"Inductor's FX graph cache: {c['miss']} miss(es), {c['hit']} hit(s): "
              + ("a cold compile (Inductor generated and compiled code)" if c["miss"] else
                 "a warm cache served Inductor's code (a fresh machine or an empty cache pays more)"),
              "inductor_time")
    return f


def _steady_finding(d: dict, dev: str, mode: str | None = None) -> Finding:
    eager, comp = d["eager_s"], d["compiled_s"]
    f = Finding("steady_time", "Eager vs compiled, per call", "ok" if comp < eager else "problem")
    ratio = eager / comp if comp > 0 else float("inf")
    st = next((p for p in d.get("phases", []) if p["name"] == "the steady timing"), None)
    verdict = (f"compiled is {ratio:.2f}× faster" if comp < eager else
               f"compiled is not faster: {1 / ratio:.2f}× the eager time" if ratio > 0 else "")
    if st and st["eager_runs"]:
        verdict = ("not a compiled graph's time: most timed calls ran eagerly past the recompile limit (below), "
                   "so neither faster nor slower is judged here")
    f.add(f"eager {_s(eager)}, compiled {_s(comp)} per call ({d['clock']}): {verdict}", "steady_time")
    if st and (st["compiles"] or st["eager_runs"]):
        f.status = "problem"
        f.add(f"this is not a steady compiled call's time: during the timing's {st['calls']} compiled calls, "
              f"{st['compiles']} frame(s) compiled again and {st['eager_runs']} frame call(s) ran eagerly past the "
              "recompile limit (section 3), so the compiled time mixes compiles, cached graphs and eager "
              "fall-backs; fix the recompiles first", "recompiles")
    if dev == "cuda":
        eg, cg = d["eager_gpu_s"], d["compiled_gpu_s"]
        f.add(f"GPU time alone (kernels, no gaps): eager {_s(eg)}, compiled {_s(cg)}", "steady_time")
        for name, wall_s, gpu_s, launches in (("eager", eager, eg, d["eager_launches"]),
                                              ("compiled", comp, cg, d["compiled_launches"])):
            budget = LaunchBudget(launches, wall_s, gpu_s)
            if launches and name == "compiled" and mode == "reduce-overhead":
                # the profiler counts the kernels a CUDA graph replay runs; the CPU launched one graph
                f.add(replay_kernels_line(launches, budget.gpu_busy), "launch_bound")
            elif launches:
                f.add(f"{name}: {launches:.0f} kernel launches per call, the GPU busy {budget.gpu_busy:.0%} of "
                      f"the wall time: {budget.bound}", "launch_bound")
    elif comp >= eager:
        f.add("when a call does little work, the compiled call's fixed costs (checking the guards, the wrappers "
              "around the graph) can outweigh what fusion saves; on a CPU the generated code's math can also "
              "be slower than eager's library", "steady_time")
    return f


def _cudagraphs_finding(d: dict, s: dict, dev: str) -> Finding:
    f = Finding("cudagraphs", "CUDA graphs (mode=\"reduce-overhead\")", "not checked")
    sk = d.get("cudagraph_skips")
    if sk is None and s["mode"] and s["backend"] != "inductor":
        f.add(f"torch.compile hands mode={s['mode']!r} to backend {s['backend']!r} as a keyword argument; the CUDA "
              "graphs of reduce-overhead are Inductor's, so they were not checked", "cudagraphs")
        return f
    g = d.get("grad")
    if g and autograd_under_cudagraphs(g, s["mode"], s["backend"]):
        _autograd_cudagraphs(f, g, dev, d)
        if dev != "cuda":
            return f
    if sk is None:
        bound = _compiled_launch_bound(d, dev)
        if bound is not None and s["backend"] == "inductor":
            # a launch-bound compiled call: reduce-overhead is issue 28's cure, advised, and measured by --try-fixes
            f.status = "note"
            tried = next((r for r in d.get("fixes") or [] if r["for"] == LAUNCH_BOUND), None)
            f.add(reduce_overhead_advice(bound, tried), "cudagraphs")
            return f
        f.add('not asked for: on a GPU, --mode reduce-overhead records each graph\'s kernels once and replays '
              'them with one launch; the triage then lists every graph it had to skip, and why', "cudagraphs")
        return f
    if dev != "cuda":
        f.add(f"not applicable on a CPU: CUDA graphs record CUDA kernels, so Inductor skipped {sk['count']} "
              "graph(s) here without a reason to log; run on a GPU to see the skips", "cudagraphs")
        return f
    if not sk["count"]:
        if f.status == "problem":  # autograd on: no graph was skipped, but the calls did not replay either
            return f
        f.status = "ok"
        f.add("no graph was skipped: each graph's calls replay as one CUDA graph launch", "cudagraphs")
        return f
    f.status = "problem"
    f.add(f"{sk['count']} graph(s) skipped: they launch their kernels one by one, as without reduce-overhead",
          "cudagraphs")
    for reason in dict.fromkeys(sk["reasons"]):
        f.add(reason, "cudagraphs")
    return f


def _autograd_cudagraphs(f: Finding, g: dict, dev: str, d: dict | None = None) -> None:
    """reduce-overhead on calls whose outputs require grad, with no backward: what cudagraph trees do (ch25)."""
    f.status = "problem" if dev == "cuda" else "note"
    f.add(("" if dev == "cuda" else "on a GPU (not here: a CPU has no CUDA graphs): ")
          + f"the compiled calls run with autograd on ({g['params_requiring_grad']} of {g['params']} parameters and "
          f"{g['outputs_requiring_grad']} of {g['outputs']} output tensors require grad) and nothing calls "
          "backward. torch.compile then builds a training graph, and cudagraph trees "
          "(torch/_inductor/cudagraph_trees.py) mark each forward as waiting for its backward "
          "(running_forwards_with_pending_backwards). While a forward's backward is pending, "
          "can_start_new_generation() is False (whatever the outputs), so a new call cannot start a new "
          "generation; it can still end the previous node when all_outputs_are_dead() (the previous call's "
          "outputs freed), but a loop `out = model(x)` keeps the previous output alive until the next call "
          "returns. Then, if the manager is warming up, try_end_curr_warmup() cannot end the warm-up and the call "
          "runs run_eager() again (in the CUDA graph memory pool); otherwise it records a new CUDA graph as a "
          "child of the last one. Either way it does not replay, and once the same function repeats on one "
          "path torch warns \"Unable to hit fast path of CUDAGraphs\" "
          "(CUDAGraphTreeManager.check_warn_on_unable_to_start_executing, torch/_inductor/cudagraph_trees.py; "
          "the message's wording differs between 2.11 and 2.13). No graph is counted as skipped. The triage's "
          "own timing drops each output, so its calls can replay; the reader's loop may not",
          "cudagraphs")
    kept = (d or {}).get("kept_output_loop") or {}
    if "record" in kept:
        warm = kept.get("warmup")
        f.add(f"measured: {kept['calls']} calls that keep the previous output (`out = model(x)`) recorded "
              f"{kept['record']} new CUDA graph(s), replayed {kept['replay']}"
              + (f" and ran the warm-up path (run_eager) {warm} time(s)" if warm is not None else "")
              + (": every call paid for a recording, none for a replay" if kept["record"] >= kept["calls"] else
                 ": every call stayed in the warm-up, none replayed" if warm is not None and warm >= kept["calls"]
                 and not kept["replay"] else ""),
              "cudagraphs")
    f.add("what to do: for inference, call the model under torch.no_grad() or torch.inference_mode() (the triage: "
          "--no-grad; model.eval() alone leaves autograd on); for training, time a real step, forward then "
          "backward, so each forward's backward runs before the next call (or call "
          "torch.compiler.cudagraph_mark_step_begin() before each step)", "cudagraphs")


def fusion_line(n_ops: int, launches: int, n_library: int, measured: tuple, ro: bool = False) -> str:
    """Section 8's line on what fusion removed: from section 6's measured launches on a GPU (``measured`` =
    (eager, compiled) kernels per call), else from the operator count, which is not a launch count."""
    calls = launches + n_library
    if all(measured):
        # on a GPU the launches are measured: an ATen operator is not one launch (a view launches none, a
        # library call or a reduction may launch several), so the operator count is not a launch count
        el, cl = measured
        return (f"{n_ops} eager operator(s) became {launches} generated kernel(s) and {n_library} library "
                f"call(s) in the wrapper; measured on the GPU (section 6), eager ran {el:.0f} kernels per call and "
                f"compiled {cl:.0f}, {el - cl:.0f} fewer"
                + (" (under reduce-overhead the compiled kernels run inside CUDA graph replays)" if ro else "")
                + ": an ATen operator is not one launch (a view launches none, a library call may launch "
                  "several), so the measured counts, not the operator count, are what fusion removed")
    return (f"{n_ops} eager operator(s) became {launches} generated kernel(s) and {n_library} library call(s): "
            + (f"{n_ops - calls} fewer calls per call than eager's operators (a library call such as a matrix "
               "product stays a call of its own; an ATen operator is not one kernel launch, so on a GPU "
               "section 6's measured launches are the count to trust)" if calls < n_ops else
               "nothing fused, one kernel per operator (a graph break, a library call or a fusion wall keeps "
               "operations apart)"))


def replay_kernels_line(launches: float, busy: float) -> str:
    """Section 6's compiled line under reduce-overhead: the profiler counts the kernels a replay runs."""
    return (f"compiled: {launches:.0f} kernels run per call (inside CUDA graph replays: the CPU launches each "
            f"replay as one graph, not {launches:.0f} kernels), the GPU busy {busy:.0%} of the wall time")


def reduce_overhead_advice(busy: float, tried: dict | None = None) -> str:
    """Section 7's advice for a launch-bound compiled call on a GPU (issue 28's cure); ``tried``: --try-fixes's row
    for it (``triage_fixes.plan``'s reduce-overhead trial), which the advice then points to."""
    text = (f"the compiled call is launch-bound (section 6: the GPU busy {busy:.0%} of the wall time, waiting for "
            "the CPU to launch kernels): try torch.compile(model, mode=\"reduce-overhead\") (the triage: --mode "
            "reduce-overhead), which records each graph's kernels once into a CUDA graph and replays them with one "
            "launch per call; inputs must keep their shapes, and a call whose outputs require grad needs its "
            "backward before the next call")
    if tried is None:
        return text
    how = " under torch.no_grad() (if this is inference)" if "no_grad" in tried["fix"] else ""
    b, x = tried["baseline"], tried["fixed"]
    if b.get("error") or x.get("error"):
        return text + f"; --try-fixes tried it{how}, and the trial failed (\"The cures, tried\", below, says how)"
    return (text + f"; --try-fixes tried it{how} and measured the steady compiled call {_s(b['steady_s'])} → "
            f"{_s(x['steady_s'])} (\"The cures, tried\", below, has the rest)")


KERNEL_COMPILER_NOTE = (
    "the kernel compiler's part is what Inductor's async_compile timers cover: with parallel compile workers "
    "(compile_threads > 1) only async_compile.wait, the main process waiting for the workers' Triton kernels after "
    "the wrapper is written (the workers' own compiling overlaps Inductor's work and is not in it); with one "
    "thread, async_compile.precompile, each kernel compiled in the process")


def _kernels_finding(d: dict, s: dict) -> Finding:
    f = Finding("kernels", "Generated kernels", "note")
    ops = d.get("eager_ops")
    n_ops = sum(ops.values()) if ops else None
    eager_line = (f"eager dispatches {n_ops} ATen operator(s) per call (views not counted)" if n_ops is not None
                  else "")
    if s["backend"] != "inductor":
        f.status = "not checked"
        f.add(f"backend {s['backend']!r} generates no kernels: it runs the captured graph's ATen operators "
              "one by one; use the default backend (inductor) to see kernels"
              + (f"; {eager_line}" if eager_line else ""), "kernels")
        return f
    kernels = [k for mod in d["kernels_first"] for k in mod]
    launches = sum(d["launches_first"])
    library = [c for mod in d["library_calls_first"] for c in mod]
    lang = d.get("kernel_language") or "no"
    f.add(f"Inductor generated {len(kernels)} {lang} kernel(s) in {len(d['kernels_first'])} module(s) for the "
          + (f"example inputs; a call runs {launches} generated kernel(s) and {len(library)} library call(s)"
             if launches or not kernels else
             "example inputs; their launches were not found in the wrapper's call() or its graph partitions "
             "(a wrapper layout the triage does not read yet), so the launches per call are not counted here")
          + (f" ({', '.join(dict.fromkeys(library))})" if library else "")
          + (f", where {eager_line}" if eager_line else ""), "kernels")
    if n_ops is not None and launches:
        f.add(fusion_line(n_ops, launches, len(library), (d.get("eager_launches"), d.get("compiled_launches")),
                          s.get("mode") == "reduce-overhead"), "fusion")
    if kernels:
        f.add("kernels: " + ", ".join(kernels[:8]) + (f", ... ({len(kernels) - 8} more)" if len(kernels) > 8 else ""),
              "kernels")
    by_phase = d.get("modules_by_phase")
    if by_phase:
        more = [(n, where) for where, n in by_phase.items() if where != "the first call" and n > 0]
        if more:
            f.add("the recompiles generated " + " and ".join(
                f"{n} more module(s) during {where}" for n, where in more), "recompiles")
    elif d["modules_total"] > len(d["kernels_first"]):  # a report written before the phases were recorded
        n = d["modules_total"] - len(d["kernels_first"])
        others = [p for p in d.get("phases", []) if p["name"] != "the first call" and not p["name"].startswith("variant")]
        if others and not any(p["compiles"] for p in others):  # nothing compiled outside the variants
            f.add(f"the recompiles generated {n} more module(s) during the variants", "recompiles")
        else:
            f.add(f"the recompiles after the first call (the steady timing's or the variants'; this run did not "
                  f"record which) generated {n} more module(s)", "recompiles")
    return f


# ----------------------------------------------------------------------------------------- command line

def console() -> int:
    """The ``torch-compile-triage`` command (``[project.scripts]`` in pyproject.toml): ``main`` under that name."""
    return main(prog="torch-compile-triage")


def main(argv: list[str] | None = None, prog: str = "python -m helpers triage") -> int:
    """``python -m helpers triage FILE[:FUNCTION]``: print the Markdown report; --out also writes both files."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Triage your own model under torch.compile: graph breaks, recompiles over every call (the "
                    "steady timing and the input variants) and the recompile limit, "
                    "guards, compile time, eager vs compiled time, CUDA-graph skips, generated kernels and the "
                    "compile bet, in the order to debug them, each with the chapter that explains it. FUNCTION "
                    "(default: example) returns (model, inputs) or (model, inputs, variants); inputs are a tuple "
                    "of arguments, a dict of keyword arguments or one value. A FUNCTION with a `device` "
                    "parameter gets --device.")
    parser.add_argument("target", help="path/to/file.py or path/to/file.py:function")
    parser.add_argument("--backend", default="inductor", help="torch.compile backend (default inductor)")
    parser.add_argument("--mode", default=None, help="torch.compile mode, e.g. reduce-overhead, max-autotune")
    parser.add_argument("--dynamic", default=None, choices=["true", "false"], help="torch.compile dynamic "
                        "(default: automatic dynamic)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                        help="passed to FUNCTION if it takes a `device` argument")
    parser.add_argument("--no-grad", action="store_true", help="run every call under torch.no_grad()")
    parser.add_argument("--threads", type=int, default=None, help="torch threads on a CPU (default 1: "
                        "steady times are then this thread's CPU time)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timing rounds (default 3)")
    parser.add_argument("--repeats", type=int, default=10, help="samples per round (default 10)")
    parser.add_argument("--calls", type=int, default=None, help="calls your program makes: the bet then says "
                        "what compiling saves or loses over them")
    parser.add_argument("--try-fixes", action="store_true", help="apply each mechanical cure (dynamic=True and "
                        "mark_dynamic for a shape recompile, ignore_logging_functions for a logging graph break, "
                        "torch.no_grad() for reduce-overhead with autograd on, mode=reduce-overhead for a "
                        "launch-bound compiled call on a GPU), "
                        "compile again and report what it changed: compiles, breaks, seconds, outputs")
    parser.add_argument("--out", help="folder to write triage.md and triage.json into")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the Markdown")
    args = parser.parse_args(argv)
    path, _, function = args.target.partition(":") if not re.match(r"^[A-Za-z]:\\", args.target) else (
        args.target, "", "")
    report = triage(path, function or "example", backend=args.backend, mode=args.mode,
                    dynamic={"true": True, "false": False}.get(args.dynamic), device=args.device,
                    no_grad=args.no_grad, threads=args.threads, rounds=args.rounds, repeats=args.repeats,
                    calls=args.calls, try_fixes=args.try_fixes)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "triage.md").write_text(report.markdown(base=out))
        (out / "triage.json").write_text(json.dumps(report.as_json(), indent=2, default=str) + "\n")
    if args.json:
        print(json.dumps(report.as_json(), indent=2, default=str))
    else:
        print(report.markdown(base=Path.cwd()))
    if args.out:
        print(f"wrote {Path(args.out) / 'triage.md'} and triage.json", file=sys.stderr)
    if report.error:
        print(f"error: {report.error['message']}", file=sys.stderr)
    return report.exit_code

"""The triage's observations beyond one compile (chapter 30; issue 28), kept apart from ``triage.py``.

- ``CallWatch``: every compiled call the triage makes, phase by phase (the first call, the steady timing,
  each variant): guard hits and misses (Dynamo's guard-complete hook), compiles (the bytecode hook),
  recompile messages and recompile-limit warnings. A miss that compiled nothing ran eagerly.
- ``limit_frames``: the frames a recompile-limit warning names (they run eagerly from then on, unless a
  cached graph's guards accept the call).
- ``shape_cause``: why a shape guard failed: a range a shape-dependent branch set (with its file and
  line), 0/1 specialisation, or a size mismatch before automatic dynamic, each with its own cure.
- ``purity``: does eager give the same output twice on the same inputs, and with the same seed? Tells
  randomness (dropout in training mode: a note) from Python state that changes between calls.
- ``autograd_under_cudagraphs``: reduce-overhead on a model whose outputs require grad, called without
  backward (cudagraph trees record a new graph per call while the previous output waits for its backward:
  ``running_forwards_with_pending_backwards``).
- ``isa_probe_time``: the seconds the first call spent in Inductor's ISA probes and the precompiled header
  (CPU). A probe's build is once per cache folder, but its load is a child Python per ISA in every new process
  (``VecISA.check_build``, ``_probe_load`` on 2.13; on 2.11 the child runs ``import torch``): a cost every new
  process pays, so the compile bet counts it.
- ``book_url``: a chapter's page in the published book (from ``_config.yml``).

Private torch names go through ``helpers.core.private.private``: ``torch._C._dynamo.eval_frame
.set_guard_complete_hook`` (2.11-2.15), ``torch._inductor.cpu_vec_isa.VecISA``,
``torch._inductor.codecache._precompile_header``, ``torch._inductor.runtime.cache_dir_utils.cache_dir``.
"""
from __future__ import annotations

import contextlib
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import REPO_ROOT, CourseError
from ..core.private import private
from ..dynamo.guards import recompile_log
from .recompiles import classify

# ------------------------------------------------------------------------------------------- call watch


@dataclass
class Phase:
    """One stretch of compiled calls: how many, guard hits/misses, compiles, recompiles and their reasons."""

    name: str
    inputs: str = ""
    calls: int = 0
    hits: int = 0
    misses: int = 0
    compiles: int = 0          # frames converted (a first compile of a frame or a recompile)
    recompiled: int = 0        # compiles of a frame compiled before (each follows a miss)
    recompiles: int = 0        # "Recompiling function" messages (a refused one included)
    reasons: list[str] = field(default_factory=list)       # the newest entry's reason, per recompile
    raw_reasons: list[str] = field(default_factory=list)   # the same with torch's source comment
    limit: list[dict] = field(default_factory=list)        # frames that hit the recompile limit here

    @property
    def eager_runs(self) -> int:
        """Misses that compiled nothing: a frame past the recompile limit (or one Dynamo gave up) ran eagerly."""
        return max(self.misses - self.recompiled, 0)


class CallWatch:
    """Watch every compiled call: ``with watch.phase("steady timing"):`` around each stretch of calls.

    ``converted`` is the bytecode hook's list of converted code objects (the triage's). Guard results come
    from Dynamo's guard-complete hook, called once per frame that has compiled code to check (True: a
    cached graph ran; False: a miss, which recompiles, or runs eagerly past the recompile limit).
    """

    def __init__(self, converted: list):
        self.converted = converted
        self.phases: list[Phase] = []
        self.current: Phase | None = None
        self.seen: set = set()
        self.hook_ok = True
        self._prev = None
        try:
            self._set = private("torch._C._dynamo.eval_frame.set_guard_complete_hook")
        except CourseError:
            self._set, self.hook_ok = None, False

    def _hook(self, hit: bool) -> bool:
        if self.current is not None:
            if hit:
                self.current.hits += 1
            else:
                self.current.misses += 1
        return hit

    def __enter__(self) -> "CallWatch":
        if self._set is not None:
            self._prev = self._set(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        if self._set is not None:
            self._set(self._prev)

    @contextlib.contextmanager
    def phase(self, name: str, inputs: str = "", calls: int | None = 1):
        p = Phase(name, inputs, calls or 0)
        self.phases.append(p)
        self.current = p
        before = len(self.converted)
        try:
            with recompile_log() as rlog:
                yield p
        finally:
            self.current = None
            new = self.converted[before:]
            p.compiles = len(new)
            for c in new:
                if c in self.seen:
                    p.recompiled += 1
                self.seen.add(c)
            p.recompiles = rlog.count
            p.reasons = [rlog.first_reason(i) for i in range(rlog.count)]
            p.raw_reasons = [_raw_first(m) for m in rlog.messages]
            p.limit = limit_frames(rlog.warnings)

    def totals(self) -> dict:
        keys = ("calls", "hits", "misses", "compiles", "recompiled", "recompiles")
        out = {k: sum(getattr(p, k) for p in self.phases) for k in keys}
        out["eager_runs"] = sum(p.eager_runs for p in self.phases)
        out["limit"] = [f for p in self.phases for f in p.limit]
        return out


def _raw_first(message: str) -> str:
    """The newest entry's guard failure of one "Recompiling function" message, with torch's source comment."""
    for line in message.splitlines():
        m = re.match(r"^\s*- \d+/\d+: (.*)$", line)
        if m:
            return m.group(1)
    return ""


def limit_frames(warnings: list[str]) -> list[dict]:
    """The frames named by "torch._dynamo hit config.recompile_limit (8) / function: 'f' (file:line)" warnings."""
    out = []
    for w in warnings:
        m = re.search(r"hit config\.(\w+) \((\d+)\)\s*\n\s*function: '([^']+)' \((.+):(\d+)\)", w)
        if m:
            out.append({"limit": m.group(1), "value": int(m.group(2)), "function": m.group(3),
                        "file": m.group(4), "line": int(m.group(5))})
    return out


#: a guard on a Python value that changes between calls: ``G['step'] == 3``, ``self.calls == 2``
_STATE = re.compile(r"^(?:G\['(?P<g>[^']+)'\]|(?P<a>[\w.\[\]'\"]+))\s*==\s*(?P<v>-?\d+(?:\.\d+)?)$")


def changing_state(reasons: list[str]) -> str | None:
    """The Python value whose equality guard failed on the same inputs call after call (``step``), or None."""
    names = []
    for r in reasons:
        m = _STATE.match(r.strip())
        if not m:
            return None
        names.append(m.group("g") or m.group("a"))
    return names[0] if names and len(set(names)) == 1 else None


# ------------------------------------------------------------------------------------------ shape cause

#: the cure of each cause of a shape recompile (chapters 11 and 26)
SHAPE_CURES = {
    "branch": "the branch needs a graph per side, so one more graph is expected: harmless if batches fall on "
              "few sides; to keep one graph, make the branch tensor work (torch.where, torch.cond) or take it "
              "outside the compiled function. mark_dynamic or dynamic=True cannot remove it (the branch itself "
              "reads the size)",
    "0/1 size": "sizes 0 and 1 are specialised (a size-1 dimension may broadcast): keep batches of 1 out of the "
                "compiled call, or torch._dynamo.decorators.mark_unbacked(tensor, dim) so no size is specialised",
    "size mismatch": "the first graph was compiled for the exact sizes; the first new size made the dimension "
                     "dynamic (automatic dynamic), so later sizes reuse the second graph. To skip that one "
                     "recompile: torch._dynamo.mark_dynamic(tensor, dim) on the example input, or dynamic=True",
}


def _slocs(comment: str) -> list[tuple[str, str, str, str, str]]:
    """The source locations torch appends to a shape guard, in order: (code, path suffix, line, fn, framework).

    ShapeEnv writes a range guard as ``L <= x.size()[0] <= U  # {lower} and {upper}``
    (``produce_guards_verbose``, ``var_to_range_sloc``: the ``SLoc`` of each bound, torch 2.11 and 2.13); each
    ``SLoc`` is ``code  # path:line in fn (framework location)`` or ``(framework location)`` alone. The
    framework part may hold parentheses of its own, so it is read with a balanced scan.
    """
    out, pos = [], 0
    head = re.compile(r"\s*(?:and\s+)?(?:(?P<code>[^#]*?)\s*#\s*(?P<file>\S+?):(?P<line>\d+) in (?P<fn>\S+)\s*)?\(")
    while pos < len(comment):
        m = head.match(comment, pos)
        if not m:
            break
        depth, i = 1, m.end()
        while i < len(comment) and depth:
            depth += {"(": 1, ")": -1}.get(comment[i], 0)
            i += 1
        out.append((m.group("code") or "", m.group("file") or "", m.group("line") or "", m.group("fn") or "",
                    comment[m.end():i - 1]))
        pos = i
    return out


#: what the triage says when torch recorded no user location for the bound that failed
NO_LOCATION = "location not recorded"


def shape_cause(raw: str, user_file: str | Path | None = None) -> tuple[str, str]:
    """(cause, where) of one shape guard failure (the raw reason with torch's ``# source`` comment).

    ``cause``: "branch" (a range set by a shape-dependent branch), "0/1 size" (a size 0 or 1 against another,
    or a lower bound of 2 alone), "size mismatch" (a static graph's size, before automatic dynamic), or ""
    when the reason is not about a size.

    ``where`` of a branch is the location ShapeEnv recorded for the bound that failed: the upper bound's
    ``SLoc`` for ``2 <= x.size()[0] <= 16  # {lower} and {upper}`` (the branch that refined the range,
    ``_update_var_to_range``), the lower bound's for ``17 <= x.size()[0]``. The default lower bound 2 carries
    the "user code shown is first use of this value" location (0/1 specialisation, the first line that read the
    size, not a branch): it is never given as the branch. ``NO_LOCATION`` when torch recorded none.
    """
    guard, _, comment = raw.partition("#")
    guard = guard.strip()
    m = re.search(r"size mismatch at index \d+\. expected (\d+), actual (\d+)", guard)
    if m:
        return ("0/1 size" if {int(m.group(1)), int(m.group(2))} & {0, 1} else "size mismatch"), ""
    if ".size()" not in guard and "size(" not in guard and ".shape" not in guard:
        return "", ""
    both = re.match(r"^\s*-?\d+\s*<=?\s*\S+\s*<=?\s*-?\d+\s*$", guard)
    upper = re.search(r"<=?\s*(\d+)\s*$", guard) and not re.search(r"^\s*\d+\s*<=?\s*\S+\s*$", guard)
    eq = re.search(r"==\s*(\d+)", guard)
    lower = re.match(r"^\s*(\d+)\s*<=?", guard)
    slocs = _slocs(comment)
    first_use = "first use of this value"
    # the bound that failed decides which recorded location is the branch's
    if upper:
        chosen = slocs[-1] if slocs else None                  # the upper bound's SLoc (the last one written)
    elif lower and int(lower.group(1)) > 2:
        chosen = slocs[0] if slocs else None                   # the lower bound's SLoc
    else:
        chosen = slocs[-1] if slocs else None
    where = ""
    if chosen:
        code, suffix, line, fn, framework = chosen
        if suffix and first_use not in framework:
            name = Path(user_file).name if user_file and str(Path(user_file).resolve()).endswith(
                suffix.lstrip(".")) else suffix
            where = f"{name}:{line} in {fn}: {code.strip()}"
        else:
            where = NO_LOCATION
    framework_only = bool(slocs) and all(first_use in s[4] for s in slocs)
    if (upper or (lower and int(lower.group(1)) > 2) or (eq and int(eq.group(1)) > 1)) and slocs \
            and not framework_only:
        return "branch", where
    if eq and int(eq.group(1)) <= 1 or (lower and int(lower.group(1)) == 2 and not both) or "0/1" in comment:
        return "0/1 size", ("" if where == NO_LOCATION else where)
    return ("branch", where) if slocs else ("size mismatch", "")


# -------------------------------------------------------------------------------- randomness and state

#: module types whose forward draws random numbers in training mode
RANDOM_MODULES = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "RReLU")


def random_modules(model) -> list[str]:
    """``name (Type)`` of each submodule in training mode whose forward is random (dropout, RReLU)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return []
    out = []
    for name, mod in model.named_modules():
        if mod.training and type(mod).__name__ in RANDOM_MODULES and getattr(mod, "p", 1.0) != 0:
            out.append(f"{name or '(the model)'} ({type(mod).__name__})")
    return out


def purity(model, call, same) -> str:
    """Is eager a function of its inputs? "pure", "random" (differs, but not with the same seed) or "state".

    ``call`` is a thunk that runs the model eagerly on fresh copies of the example inputs; ``same(a, b)``
    says whether two outputs agree. Runs the model three or four times more (it may change state).
    """
    import torch

    with contextlib.redirect_stdout(__import__("io").StringIO()):
        a, b = call(), call()
        if same(a, b):
            return "pure"
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(1234)
            c = call()
            torch.manual_seed(1234)
            d = call()
    return "random" if same(c, d) else "state"


# ------------------------------------------------------------------------- reduce-overhead with autograd

def grad_state(model, outputs) -> dict:
    """What autograd holds: parameters that require grad, outputs that require grad, grad mode."""
    import torch

    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    outs = list(_tensors(outputs))
    return {"grad_enabled": torch.is_grad_enabled(),
            "params_requiring_grad": sum(p.requires_grad for p in params), "params": len(params),
            "outputs_requiring_grad": sum(t.requires_grad for t in outs), "outputs": len(outs),
            "training": bool(getattr(model, "training", False))}


def autograd_under_cudagraphs(state: dict, mode: str | None, backend: str) -> bool:
    """reduce-overhead (Inductor) on calls whose outputs require grad: a training graph under cudagraph trees."""
    return backend == "inductor" and mode == "reduce-overhead" and state["grad_enabled"] \
        and state["outputs_requiring_grad"] > 0


@contextlib.contextmanager
def cudagraph_calls():
    """Count what cudagraph trees do per call: {"record": n, "replay": n, "warmup": n} (restored on exit).

    Wraps ``CUDAGraphTreeManager.record_function`` (a new CUDA graph recorded), ``execute_node`` (a replay)
    and ``run_eager`` (a warm-up run) in ``torch/_inductor/cudagraph_trees.py``; all three exist on torch
    2.11 and 2.13 (the H200 check /work/gpu-checks/triage/ro_autograd.py counted them on 2.11).
    """
    counts = {"record": 0, "replay": 0, "warmup": 0}
    cls = private("torch._inductor.cudagraph_trees.CUDAGraphTreeManager")
    saved = []
    for attr, key in (("record_function", "record"), ("execute_node", "replay"), ("run_eager", "warmup")):
        original = getattr(cls, attr)

        def counted(self, *a, __o=original, __k=key, **k):
            counts[__k] += 1
            return __o(self, *a, **k)

        setattr(cls, attr, counted)
        saved.append((attr, original))
    try:
        yield counts
    finally:
        for attr, original in saved:
            setattr(cls, attr, original)


def kept_output_loop(thunk, calls: int = 5) -> dict:
    """Call ``thunk`` ``calls`` times the way a reader's loop does (``out = model(x)``: the previous output alive
    during the next call) and count cudagraph trees' recordings and replays."""
    with cudagraph_calls() as counts:
        out = None
        for _ in range(calls):
            out = thunk()  # noqa: F841 - kept alive on purpose until the next call returns
        del out
    return dict(counts, calls=calls)


# ------------------------------------------------------------------------------------ wrapper launches

_LIBRARY_CALL = re.compile(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(")


def wrapper_bodies(source: str) -> str:
    """The bodies of the wrapper's ``call(args)`` and of every graph partition it calls (``partition_0(args)``).

    Under ``mode="reduce-overhead"`` on a GPU Inductor partitions the graph around what CUDA graphs cannot
    hold: ``call`` then only calls ``partition_0``, and the kernel launches sit in the partition's body.
    """
    bodies = []
    for match in re.finditer(r"^( *)def (?:call|partition_\d+)\((?:self, )?args\):\n", source, re.M):
        indent = len(match.group(1))
        for line in source[match.end():].splitlines():
            if line.strip() and (len(line) - len(line.lstrip())) <= indent:
                break
            bodies.append(line)
    return "\n".join(bodies)


def launches_and_library_calls(source: str, kernels: list[str]) -> tuple[int, list[str]]:
    """Generated-kernel launches and library calls per call of one wrapper module (its partitions included)."""
    body = [ln for ln in wrapper_bodies(source).splitlines() if not ln.strip().startswith("#")]
    launches = sum(1 for ln in body if any(re.search(rf"\b{re.escape(n)}(\.run)?\(", ln) for n in kernels))
    return launches, [m.group(1) for ln in body for m in _LIBRARY_CALL.finditer(ln)]


# ------------------------------------------------------------------------------------------- ISA probes

@contextlib.contextmanager
def isa_probe_time():
    """Seconds in ``VecISA.check_build`` (the ISA probes) and ``_precompile_header``, the probes' builds apart.

    Yields a dict {"isa_probe": s, "isa_build": s, "header": s, "cache_dir": path}; the originals are restored
    on exit. ``check_build`` builds a small program per vector ISA only when its ``.so`` is not in the cache
    folder yet (``isa_build``: ``CppBuilder.build`` inside it), then loads it in a child Python every time
    (``_probe_load`` on 2.13, ``subprocess.check_call`` of ``import torch`` on 2.11). Both ``VecISA.__bool__``
    and ``_precompile_header`` are ``functools.cache``'d, so the probes run once per process: every new
    process pays the loads again, a fresh cache folder the builds too. A process that already probed spends
    nothing here; a compile that writes no C++ kernel does not probe at all.
    """
    out = {"isa_probe": 0.0, "isa_build": 0.0, "header": 0.0, "cache_dir": ""}
    patched = []
    inside = [0]
    try:
        with contextlib.suppress(CourseError):
            out["cache_dir"] = private("torch._inductor.runtime.cache_dir_utils.cache_dir")()
        try:
            vec = private("torch._inductor.cpu_vec_isa.VecISA")
            private("torch._inductor.codecache._precompile_header")
            builder = private("torch._inductor.cpp_builder.CppBuilder")
            targets = [(vec, "check_build", "isa_probe"),
                       (sys.modules["torch._inductor.codecache"], "_precompile_header", "header"),
                       (builder, "build", "isa_build")]
        except (CourseError, KeyError):
            targets = []
        for owner, attr, key in targets:
            original = getattr(owner, attr)

            def timed(*a, __o=original, __k=key, **k):
                if __k == "isa_build" and not inside[0]:
                    return __o(*a, **k)  # a build outside the probes (the model's own kernels)
                inside[0] += __k == "isa_probe"
                t0 = time.perf_counter()
                try:
                    return __o(*a, **k)
                finally:
                    out[__k] += time.perf_counter() - t0
                    inside[0] -= __k == "isa_probe"

            setattr(owner, attr, timed)
            patched.append((owner, attr, original))
        yield out
    finally:
        for owner, attr, original in patched:
            setattr(owner, attr, original)


# ---------------------------------------------------------------------------------------------- links

def book_url() -> str | None:
    """The published book's address: ``html.baseurl`` of ``_config.yml``, else the GitHub Pages address of
    its ``repository.url`` (``https://github.com/OWNER/REPO`` → ``https://OWNER.github.io/REPO/``)."""
    cfg = REPO_ROOT / "_config.yml"
    if not cfg.exists():
        return None
    text = cfg.read_text()
    base = re.search(r"^\s*baseurl:\s*[\"']?(https?://[^\s\"']+)", text, re.M)
    if base:
        return base.group(1).rstrip("/") + "/"
    repo = re.search(r"^\s*url:\s*[\"']?https?://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?[\"']?\s*$", text, re.M)
    if repo:
        return f"https://{repo.group(1).lower()}.github.io/{repo.group(2)}/"
    return None


def chapter_url(name: str) -> str | None:
    """The book's page of chapter ``name`` (``ch26_recompiles`` → ``…/chapters/ch26_recompiles.html``)."""
    base = book_url()
    return f"{base}chapters/{name}.html" if base else None


# ---------------------------------------------------------------------- shared with triage.py and triage_fixes.py

def _error_text(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    head = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {head}".rstrip(": ")

def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)

def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()

def _timed(thunk, device: str) -> tuple[object, float]:
    _sync(device)
    t0 = time.perf_counter()
    out = thunk()
    _sync(device)
    return out, time.perf_counter() - t0

def _max_difference(a, b) -> tuple[float, float] | None:
    """(largest |a - b|, the tolerance it is held to) over the outputs' tensors; None if they hold none alike.

    The tolerance is relative to the largest eager value: 1e-3 in float32/float64, looser in the half types
    (a few units of their precision), where a fused kernel's different order of operations shows more.
    """
    import torch

    ta, tb = list(_tensors(a)), list(_tensors(b))
    if not ta or len(ta) != len(tb) or any(x.shape != y.shape for x, y in zip(ta, tb)):
        return None
    worst, scale, rtol = 0.0, 1.0, 1e-3
    for x, y in zip(ta, tb):
        if x.numel():
            xd, yd = x.detach().double(), y.detach().double()
            worst = max(worst, float((xd - yd).abs().max()))
            scale = max(scale, float(yd.abs().max()))
            rtol = max(rtol, {torch.float16: 1e-2, torch.bfloat16: 3e-2}.get(x.dtype, 1e-3))
    return worst, rtol * scale

@contextlib.contextmanager
def _dynamo_quiet():
    """Dynamo's and Inductor's own warnings collected, not printed (the report says what matters)."""
    import logging
    import warnings

    names = ("torch._dynamo", "torch._inductor")
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in names]
    for lg, _ in saved:
        lg.setLevel(logging.ERROR + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in saved:
            lg.setLevel(level)

def _cause(row: dict, path) -> tuple[str, str]:
    """(cause, where) of one variant's recompile: chapter 26's classes, a shape one refined (branch, 0/1, mismatch)."""
    cause = classify(row["reason"])
    if cause in ("shape", "0/1 size"):
        refined, where = shape_cause(row.get("raw_reason") or row["reason"], path)
        if refined:
            return refined, where
    return cause, ""

def _recompiled(rows: list[dict]) -> list[dict]:
    """The variants that really recompiled: a guard failed and a new graph compiled (the limit did not refuse it)."""
    return [r for r in rows if r["recompiles"] and not r["limit_hit"] and not r["error"]]

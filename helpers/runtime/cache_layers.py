"""The on-disk compile caches: where each layer lives, what goes into a key, hits and misses (ch24).

A cache can only be measured honestly from a new process, so the chapter's experiments run
``code/ch24_first_call.py`` in child processes (``first_call``), each pointed at a cache folder and a
``$TMPDIR`` of the chapter's choosing (the folders lie under the run's cache root,
``helpers.core.env.cache_root``, never in the repository). ``cache_counters`` and ``timers_since`` are
what the child reports; ``cache_tree`` sorts what a cache folder holds into its layers; ``key_details``
and ``key_diff`` read the FX graph cache key's components from the ``+torch._inductor.codecache`` log.
Private torch names (``torch._dynamo.utils.counters``, ``torch._dynamo.utils.compilation_time_metrics``)
go through ``helpers.core.private.private``; all exist on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import cache_root
from ..core.private import private

CODE_DIR = Path(__file__).resolve().parents[2] / "code"
SCRIPT = "ch24_first_call.py"

#: The counters torch bumps on a lookup: (group in ``torch._dynamo.utils.counters``, name).
COUNTERS = {
    "fx_hit": ("inductor", "fxgraph_cache_hit"),
    "fx_miss": ("inductor", "fxgraph_cache_miss"),
    "fx_bypass": ("inductor", "fxgraph_cache_bypass"),
    "aot_hit": ("aot_autograd", "autograd_cache_hit"),
    "aot_miss": ("aot_autograd", "autograd_cache_miss"),
    "aot_bypass": ("aot_autograd", "autograd_cache_bypass"),
}

#: The environment variables a child must not inherit from the notebook's process (the chapter sets them).
_CACHE_ENV_PREFIXES = ("TORCH_LOGS", "TORCHINDUCTOR_", "TRITON_CACHE_DIR", "TORCH_COMPILE_DEBUG",
                       "TORCHDYNAMO_", "TORCH_TRACE")


def cache_counters() -> dict[str, int]:
    """This process's cache lookups so far: FX graph and AOTAutograd cache hits, misses, bypasses (ch24).

    ``counters["inductor"]["fxgraph_cache_hit"]`` and friends (``FxGraphCache.load_with_key`` and
    ``prepare_key`` in ``torch/_inductor/codecache.py``); ``counters["aot_autograd"]["autograd_cache_*"]``
    (``AOTAutogradCache.try_load`` in ``torch/_functorch/_aot_autograd/autograd_cache.py``).
    """
    counters = private("torch._dynamo.utils.counters")
    return {short: int(counters[group][name]) for short, (group, name) in COUNTERS.items()}


def all_counters(groups=("inductor", "aot_autograd", "stats")) -> dict[str, dict[str, int]]:
    """Every counter of ``groups`` in ``torch._dynamo.utils.counters``, as plain numbers (ch24)."""
    counters = private("torch._dynamo.utils.counters")
    return {g: {k: int(v) for k, v in counters[g].items()} for g in groups if counters[g]}


def timers_since(before: dict | None) -> dict:
    """Dynamo's compile timers (``compilation_time_metrics``) as {key: seconds}, minus ``before`` (ch24)."""
    metrics = private("torch._dynamo.utils.compilation_time_metrics")
    now = {k: float(sum(v)) for k, v in metrics.items()}
    if before is None:
        return now
    return {k: v - before.get(k, 0.0) for k, v in now.items() if v - before.get(k, 0.0) > 0}


class Costs:
    """Seconds and calls spent in the per-process work a warm start may still do, measured by wrapping it (ch24).

    ``isa_probe``: ``VecISA.check_build`` (``torch/_inductor/cpu_vec_isa.py``), Inductor's check that the
    CPU can build and load code for a vector ISA: the probe program is cached in the cache folder, but
    every new process loads it again, in a child process. ``header``: ``_precompile_header``
    (``torch/_inductor/codecache.py``), which preprocesses the C++ prelude, hashes it, and builds the
    precompiled header under ``$TMPDIR`` if it is not there yet. ``build`` is every C++ compiler run
    (``CppBuilder.build``), filed under the step that asked for it: ``isa_probe``, ``header`` or ``kernel``.
    """

    def __init__(self):
        self.fx_keys: dict[str, list[str]] = {}  # FX graph cache key -> its components, "[hash] name: value"
        self.seconds = {"isa_probe": 0.0, "header": 0.0}
        self.calls = {"isa_probe": 0, "header": 0}
        self.build = {"isa_probe": 0.0, "header": 0.0, "kernel": 0.0}
        self.builds = {"isa_probe": 0, "header": 0, "kernel": 0}
        self._stack: list[str] = []

    def _wrap(self, owner, attr: str, name: str) -> None:
        original = getattr(owner, attr)
        costs = self

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            outer = not costs._stack or name == "build"
            where = (costs._stack[-1] if costs._stack else "kernel") if name == "build" else name
            costs._stack.append(where)
            try:
                return original(*args, **kwargs)
            finally:
                costs._stack.pop()
                dt = time.perf_counter() - t0
                if name == "build":
                    costs.build[where] += dt
                    costs.builds[where] += 1
                elif outer or where not in costs._stack:
                    costs.seconds[name] += dt
                    costs.calls[name] += 1

        setattr(owner, attr, timed)

    def _record_keys(self, module) -> None:
        original = module.compiled_fx_graph_hash
        costs = self

        def recorded(*args, **kwargs):
            key, lines = original(*args, **kwargs)
            costs.fx_keys[key] = [str(line).splitlines()[0][:300] if str(line) else "" for line in lines]
            return key, lines

        module.compiled_fx_graph_hash = recorded

    def as_dict(self) -> dict:
        return {"seconds": dict(self.seconds), "calls": dict(self.calls), "build": dict(self.build),
                "builds": dict(self.builds), "fx_keys": self.fx_keys}


def instrument_costs() -> Costs:
    """Start timing the ISA probes, the precompiled-header step and each C++ build in this process, and
    record every FX graph cache key computed (``compiled_fx_graph_hash``) with its components (ch24).

    Call it before the first compile. It imports Inductor's code cache to wrap it, which is why the
    chapter's script counts the seconds of this call into the first call.
    """
    costs = Costs()
    costs._wrap(private("torch._inductor.cpu_vec_isa.VecISA"), "check_build", "isa_probe")
    private("torch._inductor.codecache._precompile_header")  # imports the module
    costs._wrap(sys.modules["torch._inductor.codecache"], "_precompile_header", "header")
    costs._record_keys(sys.modules["torch._inductor.codecache"])
    costs._wrap(private("torch._inductor.cpp_builder.CppBuilder"), "build", "build")
    return costs


class StopAfterLookup(Exception):
    """Raised instead of compiling after a missed FX graph cache lookup (``stop_after_lookup``) (ch24)."""


def stop_after_lookup() -> type:
    """Make this process stop a compile right after the FX graph cache lookup missed (ch24).

    Replaces ``fx_codegen_and_compile`` in ``torch/_inductor/compile_fx.py``, which ``_compile_fx_inner``
    calls only after ``FxGraphCache`` missed: the counters and the log then say hit or miss and why, for
    the price of tracing, without generating or compiling any code. A hit loads as usual.
    """
    private("torch._inductor.compile_fx.fx_codegen_and_compile")  # imports the module
    module = sys.modules["torch._inductor.compile_fx"]

    def stop(*args, **kwargs):
        raise StopAfterLookup("stopped after the FX graph cache lookup")

    module.fx_codegen_and_compile = stop
    return StopAfterLookup


@dataclass
class FirstCall:
    """What one child process measured: its first and later calls, the counters, its log (ch24)."""

    label: str
    calls_s: list            # seconds per call; [0] is the first call (compile + run), prep_s not included
    import_s: float          # ``import torch`` in the child
    process_s: float         # the child's whole life as the parent saw it (start, import, compile, exit)
    counters: dict           # cache_counters() at the end
    timers: dict             # Dynamo's timers for the compiled calls
    ok: bool                 # the compiled result matched eager
    log: str = field(default="", repr=False)   # the child's stderr (TORCH_LOGS)
    all_counters: dict = field(default_factory=dict, repr=False)  # every inductor / aot_autograd counter
    costs: dict = field(default_factory=dict)  # Costs.as_dict(): ISA probes and the C++ header step
    extra: dict = field(default_factory=dict, repr=False)  # what else the child reported (artifacts, steady)

    @property
    def first_s(self) -> float:
        """The first call, plus the Inductor imports the child made early to instrument them (``prep_s``)."""
        return self.calls_s[0] + self.extra.get("prep_s", 0.0)

    @property
    def second_s(self) -> float | None:
        """The second call's seconds; None when the child made no second call (``lookup_only`` stops the
        first compile right after its cache lookup, so nothing was there to call again)."""
        return self.calls_s[1] if len(self.calls_s) > 1 else None

    @property
    def stopped(self) -> bool:
        """The child stopped its compile after the FX graph cache lookup (``lookup_only``)."""
        return bool(self.extra.get("stopped"))

    @property
    def fx(self) -> tuple[int, int]:
        """(misses, hits) of the FX graph cache, the series' column."""
        return self.counters["fx_miss"], self.counters["fx_hit"]

    @property
    def aot(self) -> tuple[int, int]:
        """(misses, hits) of the AOTAutograd cache."""
        return self.counters["aot_miss"], self.counters["aot_hit"]

    def line(self) -> str:
        """One line for a table of runs: the label, the times, the lookups."""
        first = f"lookup only {self.first_s:5.2f} s" if self.stopped else f"first call {self.first_s:6.2f} s"
        second = "not measured" if self.second_s is None else f"{self.second_s * 1e3:9.3f} ms"
        return (f"{self.label:<14} process {self.process_s:6.2f} s  import {self.import_s:5.2f} s  "
                f"{first}  second {second}  FX (miss, hit) {self.fx}  AOT (miss, hit) {self.aot}")

    def log_lines(self, *needles: str) -> list[str]:
        """The log lines containing any of ``needles`` (all lines if none given)."""
        return [ln for ln in self.log.splitlines() if not needles or any(n in ln for n in needles)]


def workdir(prefix: str = "ch24_") -> Path:
    """A new folder under the run's cache root, for one experiment's cache dirs and $TMPDIR (ch24)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


def child_env(cache_dir: str | os.PathLike, tmpdir: str | os.PathLike, **extra: str) -> dict:
    """The environment of a child: this one minus every compile-cache and log switch, plus the chapter's (ch24).

    ``TORCHINDUCTOR_COMPILE_THREADS=1``: the child compiles in its own process. A one-kernel function
    gains nothing from Inductor's pool of compile workers, and starting the pool costs a Python process
    (importing torch) per core, which would swamp what the chapter measures. The setting is not part
    of any cache key (``_cache_config_ignore_prefix`` in ``torch/_inductor/config.py``).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CACHE_ENV_PREFIXES)}
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    Path(tmpdir).mkdir(parents=True, exist_ok=True)
    env.update(TORCHINDUCTOR_CACHE_DIR=str(cache_dir), TRITON_CACHE_DIR=str(Path(cache_dir) / "triton"),
               TMPDIR=str(tmpdir), PYTHONUNBUFFERED="1", TORCHINDUCTOR_COMPILE_THREADS="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def first_call(label: str, cache_dir, tmpdir, *, device: str = "cpu", n: int = 512, mode: str = "default",
               threads: int = 1, dynamic: bool = False, calls: int = 2, env: dict | None = None,
               save: str | None = None, load: str | None = None, steady: bool = False,
               lookup_only: bool = False, timeout: int = 300) -> FirstCall:
    """Run ``code/ch24_first_call.py`` once in a new process against ``cache_dir`` and ``tmpdir`` (ch24).

    ``env`` adds variables (``TORCHINDUCTOR_FX_GRAPH_CACHE="0"``, ``TORCH_LOGS=...``); everything the
    notebook's own process set for its caches and logs is left out, so only what is named here counts.
    """
    cmd = [sys.executable, "-X", "importtime", str(CODE_DIR / SCRIPT), "--device", device, "--n", str(n), "--mode", mode,
           "--threads", str(threads), "--calls", str(calls)] + (["--dynamic"] if dynamic else [])
    cmd += (["--save", str(save)] if save else []) + (["--load", str(load)] if load else [])
    cmd += (["--steady"] if steady else []) + (["--lookup-only"] if lookup_only else [])
    t0 = time.perf_counter()
    run = subprocess.run(cmd, env=child_env(cache_dir, tmpdir, **(env or {})), capture_output=True,
                         text=True, timeout=timeout)
    process_s = time.perf_counter() - t0
    if run.returncode != 0:
        raise RuntimeError(f"code/{SCRIPT} ({label}) failed:\n{run.stderr[-3000:]}")
    r = json.loads(run.stdout.strip().splitlines()[-1])
    log, imports = _split_importtime(run.stderr)
    extra = {k: r[k] for k in ("artifacts", "steady", "loaded", "prep_s", "stopped") if k in r}
    extra["imports_s"], extra["imported"] = imports
    return FirstCall(label, r["calls_s"], r["import_s"], process_s, r["counters"], r["timers"], r["ok"], log,
                     r.get("all_counters", {}), r.get("costs", {}), extra)


MARK = "ch24-first-call"  # what the script writes to stderr around its first call


def _split_importtime(stderr: str) -> tuple[str, tuple[float, int]]:
    """The child's log without ``-X importtime`` lines, and (seconds, modules) imported during its first call.

    ``python -X importtime`` writes one line per module as it finishes importing, indented by depth;
    between the script's two markers the modules of the outermost depth present add up to the whole.
    """
    log, inside, rows = [], False, []
    for line in stderr.splitlines():
        if line.startswith("import time:"):
            if inside:
                parts_ = line.split("|")
                if len(parts_) == 3 and parts_[1].strip().isdigit():
                    name = parts_[2].rstrip()
                    rows.append((len(name) - len(name.lstrip()), int(parts_[1])))
            continue
        if MARK in line:
            inside = line.strip().endswith("start")
            continue
        log.append(line)
    if not rows:
        return "\n".join(log), (0.0, 0)
    top = min(depth for depth, _ in rows)
    return "\n".join(log), (sum(us for depth, us in rows if depth == top) / 1e6, len(rows))


#: The parts of a first call, in the order the bars of the chapter's figure stack them.
PARTS = ("Dynamo", "AOTAutograd", "Inductor (lower, write code, or load a hit)", "vector-ISA probes",
         "C++ header", "kernel compiler", "after compiling (wrappers, the run)")


def parts(fc: FirstCall) -> dict[str, float]:
    """Disjoint seconds of one child's first call, by part (``PARTS``); they add up to ``fc.first_s`` (ch24).

    From Dynamo's timers (``CompileTimes.stations`` of chapter 2: Dynamo is ``_compile.compile_inner``
    minus the backend call, AOTAutograd is ``create_aot_dispatcher_function`` minus Inductor's forward
    compiler) and from the child's ``Costs``: the ISA probes and the header step are taken out of the
    backend, and the compiler is every C++ build outside them (CPU) or Triton's compile timers (GPU).
    """
    t = fc.timers
    inner, backend = t.get("_compile.compile_inner", 0.0), t.get("OutputGraph.call_user_compiler", 0.0)
    aot = max(t.get("create_aot_dispatcher_function", 0.0) - sum(v for k, v in t.items()
                                                                   if k.endswith("fw_compiler_base")), 0.0)
    c = fc.costs or {}
    isa, header = c.get("seconds", {}).get("isa_probe", 0.0), c.get("seconds", {}).get("header", 0.0)
    compiler = c.get("build", {}).get("kernel", 0.0)
    if not compiler:  # Triton: the parallel compile and the wait for it
        compiler = t.get("async_compile.precompile", 0.0) + t.get("async_compile.wait", 0.0)
    compiler = min(compiler, max(backend - aot - isa - header, 0.0))
    out = {
        "Dynamo": max(inner - backend, 0.0),
        "AOTAutograd": aot,
        "Inductor (lower, write code, or load a hit)": max(backend - aot - isa - header - compiler, 0.0)
        + fc.extra.get("prep_s", 0.0),
        "vector-ISA probes": isa,
        "C++ header": header,
        "kernel compiler": compiler,
    }
    out["after compiling (wrappers, the run)"] = max(fc.first_s - sum(out.values()), 0.0)
    return out


#: Short names for the columns of ``parts_table`` (a header never cut mid-word), with what they stand for.
PART_NAMES = {"Dynamo": "Dynamo", "AOTAutograd": "AOTAutograd",
              "Inductor (lower, write code, or load a hit)": "Inductor", "vector-ISA probes": "ISA probes",
              "C++ header": "C++ header", "kernel compiler": "compiler",
              "after compiling (wrappers, the run)": "after"}


def parts_table(runs: dict, split: dict) -> str:
    """A table of ``parts`` in seconds, one row per child, with whole column names and a key below (ch24).

    ``runs``: {label: FirstCall}; ``split``: {label: parts(fc)}. Every column is as wide as its name.
    """
    heads = [PART_NAMES[p] for p in PARTS] + ["first call", "import"]
    widths = [max(len(h), 5) + 2 for h in heads]
    pad = max(len(label) for label in runs) + 1
    lines = [" " * pad + "".join(f"{h:>{w}}" for h, w in zip(heads, widths))]
    for label, fc in runs.items():
        cells = [split[label][p] for p in PARTS] + [fc.first_s, fc.import_s]
        lines.append(f"{label:>{pad - 1}} " + "".join(f"{v:>{w}.2f}" for v, w in zip(cells, widths)))
    key = "; ".join(f"{PART_NAMES[p]} = {p}" for p in PARTS if PART_NAMES[p] != p)
    return "\n".join(lines + [f"(seconds; {key})"])


def tax(fc: FirstCall) -> float:
    """Seconds of a first call that every new process pays whatever the cache holds: the ISA probes and
    the header step (ch24). ``fc.first_s - tax(fc)`` is what the chapter calls the first call's work: what
    the caches can save, plus what a hit still does (imports in the call, Dynamo, keys and loading)."""
    return sum(fc.costs.get("seconds", {}).get(k, 0.0) for k in ("isa_probe", "header"))


_RUN_DEFAULTS = {"n": 512, "mode": "default", "threads": 1, "dynamic": False, "calls": 2, "save": None,
                 "load": None, "steady": False, "lookup_only": False}


class Lab:
    """The chapter's experiments: child processes against one cache folder, remembered by their settings (ch24).

    ``cache`` is the folder every warm run shares (``Lab.run(..., cache="new")`` gives a run an empty
    one); ``tmpdir`` is the ``$TMPDIR`` of every child (default: this process's, so the children find
    the precompiled header this run has already built, if any). A run with the same settings as an
    earlier one is not repeated: the widget and the exercises reuse what the chapter measured.
    """

    def __init__(self, device: str = "cpu", tmpdir: str | os.PathLike | None = None):
        self.device = device
        self.root = workdir("ch24_")
        self.cache = self.root / "cache"
        self.tmpdir = Path(tmpdir) if tmpdir else Path(tempfile.gettempdir())
        self.runs: dict[str, FirstCall] = {}
        self._memo: dict[tuple, FirstCall] = {}
        self._fresh = 0

    def seed_probes(self, source: str | os.PathLike | None = None) -> int:
        """Copy the vector-ISA probe programs another cache folder already holds into ``cache``; how many files.

        The probes are a fact of the machine, not of any function (their names are hashes of the probe
        source and the compiler flags), so a cold start of *this function* does not need to rebuild
        them; ``source`` defaults to the run's own cache folder (``cache_root``), where earlier chapters'
        CPU compiles left them. Nothing else is copied.
        """
        import shutil

        source = Path(source) if source else cache_root()
        copied = 0
        for path in sorted(source.glob("*/*")):
            if not path.is_file() or len(path.parent.name) != 2:
                continue
            head = path.read_text(errors="replace")[:2000] if path.suffix == ".cpp" else ""
            rel = str(path.relative_to(source))
            layer = classify(rel, head)
            if layer == "kernel binaries" and path.name.endswith(".so"):
                sibling = path.with_name(path.name[:-3] + ".cpp")
                if sibling.exists() and classify(rel[:-3] + ".cpp", sibling.read_text(errors="replace")[:2000]) \
                        == "vector ISA probes":
                    layer = "vector ISA probes"
            if layer == "vector ISA probes":
                target = self.cache / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
                copied += 1
        return copied

    def header_present(self) -> bool:
        """Whether ``tmpdir`` already holds a precompiled header (built by an earlier compile of this run)."""
        return any(name.endswith((".gch", ".pch")) for name in precompiled_headers(self.tmpdir))

    def run(self, label: str, *, cache: str | os.PathLike | None = None, logs: str | None = None,
            env: dict | None = None, **kw) -> FirstCall:
        """One child (``first_call``) against the shared cache, or ``cache="new"`` for an empty folder."""
        if cache == "new":
            cache = self._new_cache()
        cache = Path(cache) if cache else self.cache
        env = dict(env or {})
        if logs:
            env["TORCH_LOGS"] = logs
        kw = {**_RUN_DEFAULTS, **kw}
        key = (str(cache), tuple(sorted(env.items())), tuple(sorted(kw.items())))
        if key in self._memo and not cache.name.startswith("cache_new"):
            fc = self._memo[key]
        else:
            fc = first_call(label, cache, self.tmpdir, device=self.device, env=env, **kw)
            self._memo[key] = fc
        self.runs[label] = fc
        return fc

    def run_many(self, specs: dict[str, dict], parallel: bool = False) -> dict[str, FirstCall]:
        """``run`` for each ``{label: keywords}``; ``parallel=True`` starts the children at once (threads wait on
        them), for a machine with cores to spare: their counts are exact, their times a little noisier."""
        if not parallel:
            return {label: self.run(label, **kw) for label, kw in specs.items()}
        specs = {label: ({**kw, "cache": self._new_cache()} if kw.get("cache") == "new" else kw)
                 for label, kw in specs.items()}
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
            futures = {label: pool.submit(self.run, label, **kw) for label, kw in specs.items()}
            return {label: fut.result() for label, fut in futures.items()}

    def _new_cache(self) -> Path:
        self._fresh += 1
        return self.root / f"cache_new{self._fresh}"


#: The loggers that report one line per lookup (hit or miss, and the key) at INFO level.
CACHE_LOGS = "torch._inductor.codecache,torch._functorch._aot_autograd.autograd_cache"
#: The same, plus the FX graph key's components (``compiled_fx_graph_hash`` logs them at DEBUG level).
KEY_LOGS = "+torch._inductor.codecache,torch._functorch._aot_autograd.autograd_cache"


def lookups(fc: FirstCall) -> list[str]:
    """The hit / miss / bypass lines of a child's cache log, prefixes removed (ch24)."""
    return [m for m in log_messages(fc.log) if re.search(r"cache (hit|miss)|[Bb]ypass", m)]


def cache_locations() -> dict:
    """Where this process's compile caches live and which are on, from torch's own functions (ch24).

    ``cache_dir()`` (``torch/_inductor/runtime/cache_dir_utils.py``: ``TORCHINDUCTOR_CACHE_DIR``, else
    ``$TMPDIR/torchinductor_<user>``), Triton's folder (``TRITON_CACHE_DIR``, else ``<cache_dir>/triton``),
    the precompiled headers (``codecache._HEADER_DIR``, fixed from ``$TMPDIR`` when Inductor is
    imported), and the switches ``fx_graph_cache``, ``autograd_cache``, ``autotune_local_cache`` and
    the remote caches.
    """
    cache_dir = private("torch._inductor.runtime.cache_dir_utils.cache_dir")
    triton_dir = private("torch._inductor.runtime.cache_dir_utils.triton_cache_dir")
    inductor_config = private("torch._inductor.config")
    functorch_config = private("torch._functorch.config")
    header_dir = private("torch._inductor.codecache._HEADER_DIR")
    try:
        triton = triton_dir(0)
    except Exception:  # noqa: BLE001 - no GPU or no triton: the rule is the same
        triton = os.environ.get("TRITON_CACHE_DIR") or os.path.join(cache_dir(), "triton", "0")
    return {"inductor": cache_dir(), "triton": triton, "headers": header_dir,
            "fx_graph_cache": bool(inductor_config.fx_graph_cache),
            "autograd_cache": bool(functorch_config.enable_autograd_cache),
            "autotune_local_cache": bool(inductor_config.autotune_local_cache),
            "remote": bool(inductor_config.fx_graph_remote_cache or inductor_config.autotune_remote_cache
                           or functorch_config.enable_remote_autograd_cache)}


def opt_in_layers() -> dict:
    """The cache switches a default run does not show, from torch's own configs (ch24).

    ``bundle_triton``: ``bundle_triton_into_fx_graph_cache`` (an FX graph cache entry carries its compiled
    Triton kernels, ``torch/_inductor/triton_bundler.py``); ``pgo``: Dynamo's profile-guided dynamism
    (``automatic_dynamic_local_pgo``, ``torch/_dynamo/pgo.py``); ``caching_precompile``: Dynamo's own
    disk entries (off by default); ``force_disable_caches``: every cache off; ``cache_key_tag``: a string
    of yours mixed into the keys (``torch.compiler.config``).
    """
    inductor_config = private("torch._inductor.config")
    dynamo_config = private("torch._dynamo.config")
    import torch.compiler.config as compiler_config

    return {"bundle_triton": bool(inductor_config.bundle_triton_into_fx_graph_cache),
            "pgo": bool(dynamo_config.automatic_dynamic_local_pgo),
            "caching_precompile": bool(dynamo_config.caching_precompile),
            "force_disable_caches": bool(inductor_config.force_disable_caches),
            "cache_key_tag": compiler_config.cache_key_tag,
            "ignored_settings": list(inductor_config._cache_config_ignore_prefix)}


PGO_SCRIPT = "ch24_pgo.py"


def pgo_across_processes(job_id: str = "ch24", sizes=(8, 16), root: str | os.PathLike | None = None) -> dict:
    """Does local PGO carry a dynamic size into a second process? Measured, not read from its flag (ch24).

    Two pairs of fresh processes run ``code/ch24_pgo.py`` (``f(x) = x * 2 + 1``, backend "eager", called
    with each of ``sizes``), each pair one after the other against its own empty cache folder: one pair
    without ``TORCH_COMPILE_JOB_ID``, one with it set to ``job_id``. The pairs run at the same time
    (only counts are read). Returns ``{"no job id": {...}, "job id": {...}}``, each with ``graphs``
    (graphs Dynamo compiled in process 1 and in process 2) and ``files`` (what ``<cache>/dynamo`` holds
    after process 2). Local PGO reads and writes its code state only under a cache key, and
    ``get_cache_key`` in ``torch/_dynamo/pgo.py`` returns one only for a job id
    (``torch.compiler.config.job_id``) or a detected MAST job; so without one process 2 compiles as
    many graphs as process 1 and nothing is written.
    """
    from concurrent.futures import ThreadPoolExecutor

    base = Path(root) if root else workdir("ch24_pgo_")
    cmd = [sys.executable, str(CODE_DIR / PGO_SCRIPT)] + [str(n) for n in sizes]

    def pair(label: str, job: str | None) -> dict:
        cache = base / label.replace(" ", "_")
        env = child_env(cache, base / "tmp")
        env.pop("TORCH_COMPILE_JOB_ID", None)  # an empty value is a job id too: remove it, do not blank it
        if job is not None:
            env["TORCH_COMPILE_JOB_ID"] = job
        out = []
        for _ in range(2):
            run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            if run.returncode != 0:
                raise RuntimeError(f"code/{PGO_SCRIPT} ({label}) failed:\n{run.stderr[-3000:]}")
            out.append(json.loads(run.stdout.strip().splitlines()[-1]))
        return {"graphs": [r["graphs"] for r in out], "files": [f for f in out[-1]["files"]
                                                                 if not f.endswith(".lock")],
                "job_id": out[-1]["job_id"]}

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {"no job id": pool.submit(pair, "no job id", None), "job id": pool.submit(pair, "job id", job_id)}
        return {label: fut.result() for label, fut in futures.items()}


def pgo_in_background(**kw):
    """``pgo_across_processes(**kw)`` started in a thread; a ``concurrent.futures.Future`` whose ``result()`` is
    its answer (ch24: on a CPU it runs alongside the children whose times the chapter does not use)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(pgo_across_processes, **kw)
    pool.shutdown(wait=False)
    return future


_TRITON_UTILS_CHILD = """
import json, time
t0 = time.perf_counter()
from triton.backends.nvidia.driver import CudaUtils
t1 = time.perf_counter()
CudaUtils()
print(json.dumps({"import_s": t1 - t0, "build_or_load_s": time.perf_counter() - t1}))
"""


def triton_utils_build(root: str | os.PathLike | None = None) -> dict | None:
    """What Triton's C helper module costs a new process, in an empty Triton folder and in a warm one (ch24, GPU).

    ``CudaUtils()`` (``triton/backends/nvidia/driver.py``) calls ``compile_module_from_src``
    (``triton/runtime/build.py``), which builds ``cuda_utils….so`` with the host C compiler when the Triton
    cache folder lacks it and loads it otherwise. Two new processes against one new folder (no torch
    imported); returns ``{"fresh_s", "warm_s"}``, or None where there is no NVIDIA Triton or a child fails.
    """
    base = Path(root) if root else workdir("ch24_triton_")
    env = child_env(base / "cache", base / "tmp")
    out = []
    for _ in range(2):
        try:
            run = subprocess.run([sys.executable, "-c", _TRITON_UTILS_CHILD], env=env, capture_output=True,
                                 text=True, timeout=300)
            if run.returncode != 0:
                return None
            out.append(json.loads(run.stdout.strip().splitlines()[-1])["build_or_load_s"])
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError):
            return None
    return {"fresh_s": out[0], "warm_s": out[1]}


def torch_key_scope() -> dict:
    """What ``torch_key()`` hashes, counted the way it walks (ch24): ``build_code_hash`` reads every module
    ``pkgutil.iter_modules`` finds under the torch package folder (``_TORCH_PATH``), recursing into
    packages, plus torch's version and two Inductor files. Returns the number of modules and how many of
    them are Inductor's (``torch._inductor.*``)."""
    import pkgutil

    import torch

    root = os.path.dirname(torch.__file__)
    total = inductor = 0
    stack = [([root], "")]
    while stack:
        paths, prefix = stack.pop()
        for mod in pkgutil.iter_modules(paths, prefix):
            total += 1
            inductor += mod.name == "_inductor" or mod.name.startswith("_inductor.")
            if mod.ispkg:
                spec = mod.module_finder.find_spec(mod.name, None)
                if spec is not None and spec.submodule_search_locations:
                    stack.append((list(spec.submodule_search_locations), f"{mod.name}."))
    return {"modules": total, "inductor_modules": inductor}


def env_relative(path: str) -> str:
    """``path`` named from the variable that chose it (``$TORCHINDUCTOR_CACHE_DIR/triton``,
    ``$TMPDIR/torchinductor_root/...``), never as the absolute path of the machine that ran it (ch24).

    The longest of ``$TRITON_CACHE_DIR``, ``$TORCHINDUCTOR_CACHE_DIR``, ``$TMPDIR`` (``tempfile``'s
    folder) and ``$HOME`` that holds ``path`` names it; a path under none of them keeps only its last part.
    """
    import tempfile

    roots = {"TRITON_CACHE_DIR": os.environ.get("TRITON_CACHE_DIR"),
             "TORCHINDUCTOR_CACHE_DIR": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
             "TMPDIR": tempfile.gettempdir(), "HOME": os.path.expanduser("~")}
    full = os.path.abspath(path)
    best = None
    for name, root in roots.items():
        if not root:
            continue
        root = os.path.abspath(root)
        if (full == root or full.startswith(root + os.sep)) and (best is None or len(root) > len(best[1])):
            best = (name, root)
    if best is None:
        return f".../{os.path.basename(full)}"
    rest = os.path.relpath(full, best[1])
    return f"${best[0]}" + ("" if rest == "." else "/" + rest.replace(os.sep, "/"))


# ----------------------------------------------------------------------------------------------- the folder

#: The layers a cache folder holds, in the order a first call reaches them.
LAYERS = ("AOTAutograd cache", "FX graph cache", "wrapper code", "kernel source", "kernel binaries",
          "autotune results", "vector ISA probes", "locks", "other")


def classify(rel: str, head: str = "") -> str:
    """The layer a file of a cache folder belongs to, from its path relative to the folder (ch24).

    ``head`` is the file's first bytes, which tell a wrapper (``def call(``) from a Triton kernel, and
    Inductor's vector-ISA probe programs (``cpu_vec_isa.VecISA.check_build``) from kernels.
    """
    parts = Path(rel).parts
    name = parts[-1]
    if parts[0] == "aotautograd":
        return "AOTAutograd cache"
    if parts[0] == "fxgraph":
        return "FX graph cache"
    if name.endswith(".load_ok"):  # torch 2.15: a probe that loaded once is not loaded again
        return "vector ISA probes"
    if parts[0] == "locks" or name.endswith(".lock"):
        return "locks"
    if name.endswith(".best_config") or parts[0] in ("autotune", "cache"):
        return "autotune results"
    if parts[0] == "triton":
        return "kernel binaries"
    if name.endswith((".cpp", ".h")):
        if "_chk_kernel" in head[:2000] or "CPU_CAPABILITY" in head[:200]:
            return "vector ISA probes"
        return "kernel source"
    if name.endswith((".so", ".o", ".cubin", ".hsaco")):
        return "kernel binaries"
    if name.endswith(".py"):
        wrapper = "AsyncCompile()" in head or "def call(" in head
        return "kernel source" if ("@triton.jit" in head or "triton_heuristics" in head) and not wrapper \
            else "wrapper code"
    return "other"


@dataclass
class CacheTree:
    """What a cache folder holds: every file with its size and layer (ch24)."""

    root: Path
    files: dict  # relative path -> (bytes, layer)

    def by_layer(self) -> dict[str, tuple[int, int]]:
        """{layer: (files, bytes)}, in ``LAYERS`` order, only the layers present."""
        out = {}
        for layer in LAYERS:
            sizes = [b for b, lay in self.files.values() if lay == layer]
            if sizes:
                out[layer] = (len(sizes), sum(sizes))
        return out

    def count(self, layer: str) -> int:
        return sum(1 for _, lay in self.files.values() if lay == layer)

    @property
    def total_bytes(self) -> int:
        return sum(b for b, _ in self.files.values())

    def listing(self, skip=("vector ISA probes", "locks"), width: int = 28) -> str:
        """An indented listing, one line per file, names cut to ``width``; the layers in ``skip`` summarised."""
        lines, hidden = [], {}
        for rel, (size, layer) in sorted(self.files.items()):
            if layer in skip:
                hidden[layer] = hidden.get(layer, 0) + 1
                continue
            parts = Path(rel).parts
            short = "/".join(_short(p, width) for p in parts)
            lines.append(f"  {short:<70} {size:>9,} B  [{layer}]")
        for layer, k in hidden.items():
            lines.append(f"  ({k} files of {layer} not listed)")
        return "\n".join(lines)


def _short(name: str, width: int) -> str:
    """A hash-named path part cut to ``width`` characters, its extension kept: ``cq42bq5x….main.cpp``."""
    stem, dot, ext = name.partition(".")
    return name if len(stem) <= width else stem[:width] + "…" + dot + ext


def cache_tree(root: str | os.PathLike) -> CacheTree:
    """Every file under a cache folder, sorted into its layer (ch24)."""
    root = Path(root)
    files = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = str(p.relative_to(root))
        head = ""
        if p.suffix in (".py", ".cpp", ".h"):
            try:
                head = p.read_text(errors="replace")[:20000]
            except OSError:
                head = ""
        files[rel] = (p.stat().st_size, classify(rel, head))
    for rel, (size, layer) in list(files.items()):  # a probe's .so is a probe too
        if layer == "kernel binaries" and rel.endswith(".so"):
            if files.get(rel[:-3] + ".cpp", (0, ""))[1] == "vector ISA probes":
                files[rel] = (size, "vector ISA probes")
    return CacheTree(root, files)


def precompiled_headers(tmpdir: str | os.PathLike) -> dict[str, int]:
    """The precompiled C++ headers Inductor keeps under ``$TMPDIR/torchinductor_<user>/precompiled_headers``
    (``_precompile_header`` in ``torch/_inductor/codecache.py``): {file name: bytes} (ch24)."""
    out = {}
    for d in Path(tmpdir).glob("torchinductor_*/precompiled_headers"):
        for p in sorted(d.iterdir()):
            if p.is_file():
                out[p.name] = p.stat().st_size
    return out


# ----------------------------------------------------------------------------------------------- the key

_LOG_PREFIX = re.compile(r"^[VIWEDC]\d{4} [\d:.]+ +\d+ \S+:\d+\] (?:\[[^\]]*\] )?")
_DETAIL = re.compile(r"^\[([a-z0-9]{40,})\] ([^:\s]+): ?(.*)$")


def log_messages(log: str) -> list[str]:
    """A ``TORCH_LOGS`` stream with each line's prefix (level, time, process, file:line, [frame]) removed (ch24)."""
    return [_LOG_PREFIX.sub("", ln) for ln in log.splitlines()]


def key_details(source) -> dict[str, dict[str, str]]:
    """The FX graph cache keys a child computed, with their components: {key: {component name: its hash}} (ch24).

    ``source`` is a ``FirstCall`` (the child recorded each ``compiled_fx_graph_hash`` result: one line per
    pickled component of ``FxGraphHashDetails``, ``[hash] name: value``), or the text of a
    ``+torch._inductor.codecache`` log, where torch 2.11 and 2.13 print the same lines at DEBUG level
    after "FX graph cache hash details for key K:" (2.15 no longer logs them).
    """
    if isinstance(source, FirstCall):  # what the child recorded by wrapping compiled_fx_graph_hash
        recorded = source.costs.get("fx_keys", {})
        out = {}
        for key, lines in recorded.items():
            out[key] = {}
            for line in lines:
                d = _DETAIL.match(line.strip())
                if d:
                    out[key][d.group(2)] = d.group(1)
        return out
    out: dict[str, dict[str, str]] = {}
    current = None
    for line in log_messages(source):
        m = re.search(r"FX graph cache hash details for key (\w+)", line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        if current is None:
            continue
        d = _DETAIL.match(line.strip())
        if d:
            current[d.group(2)] = d.group(1)
        elif re.search(r"cache (hit|miss) for key", line):
            current = None
    return out


def component_line(fc: "FirstCall", name: str) -> str:
    """The recorded line of one key component (``example_inputs[0]``: its ``TensorMetadata``) (ch24)."""
    for lines in fc.costs.get("fx_keys", {}).values():
        for line in lines:
            d = _DETAIL.match(line.strip())
            if d and d.group(2) == name:
                return d.group(3)
    return ""


def key_groups(details: dict[str, str]) -> dict[str, int]:
    """{component group: how many components}: ``inductor_config[max_autotune]`` counts under ``inductor_config`` (ch24)."""
    out: dict[str, int] = {}
    for name in details:
        group = name.split("[", 1)[0]
        out[group] = out.get(group, 0) + 1
    return out


def key_diff(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The components of two FX graph cache keys whose hashes differ (or that only one has) (ch24)."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))

"""The debugging toolbox of chapter 27: which tool for which symptom, and the tools that need a fresh process.

``TOOLS`` is the symptom → tool map and ``triage`` its order; ``log_artifacts`` lists what ``TORCH_LOGS``
accepts (torch's one registry, ``torch._logging._internal.log_registry``); ``diagnose`` runs a function
the way the triage does (breaks, then recompiles, then a crash). ``debug_dump`` runs
``code/ch27_debug_dump.py`` (``TORCH_COMPILE_DEBUG=1``) and ``minify`` runs ``code/ch27_minify.py``
(``TORCHDYNAMO_REPRO_AFTER="dynamo"`` and the minifier it writes), each in a child process whose output
folder lies under the run's cache root (``helpers.core.env.cache_root``), never in the repository. The
in-process tools (``helpers.dynamo.logs.capture_logs``, ``helpers.dynamo.state.explain``) come from
Part 1. Works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import cache_root
from ..core.private import private
from ..dynamo.logs import capture_logs, silence
from ..dynamo.state import clear_compile_state

CODE_DIR = Path(__file__).resolve().parents[2] / "code"


@dataclass(frozen=True)
class Tool:
    """One row of the symptom → tool map (ch27)."""

    symptom: str
    tool: str
    how: str
    cost: str


TOOLS = [
    Tool("any compile problem: the first overview", "tlparse",
         "TORCH_TRACE=<dir>, then tlparse <dir>/<log> (pip install tlparse)", "no code change"),
    Tool("not faster than eager", "graph_breaks", 'TORCH_LOGS="graph_breaks"', "no code change"),
    Tool("slower over time, or slow calls now and then", "recompiles", 'TORCH_LOGS="recompiles"', "no code change"),
    Tool("one summary to assert on in a test", "explain", "torch._dynamo.explain(fn)(*args)", "one line of code"),
    Tool("read the rewritten bytecode", "bytecode", 'TORCH_LOGS="bytecode" (depyf to decompile it)', "no code change"),
    Tool("graphs are few and stable, kernels look slow", "output_code", 'TORCH_LOGS="output_code"', "no code change"),
    Tool("keep every stage's artifacts", "TORCH_COMPILE_DEBUG", "TORCH_COMPILE_DEBUG=1", "no code change"),
    Tool("the compiler crashes", "minifier", 'TORCHDYNAMO_REPRO_AFTER="dynamo" (or "aot")', "no code change"),
    Tool("a wrong result: which backend or pass?", "CompilerBisector",
         "CompilerBisector.do_bisect(fn) (torch._inductor.compiler_bisector)", "a test function"),
]

#: The TORCH_LOGS artifacts an engineer switches on most, beyond the triage's three (ch27).
EVERYDAY = {"guards": "every guard of each compiled frame",
            "recompiles_verbose": "every failing guard of a recompile, not only the first",
            "graph_code": "each captured graph as Python code",
            "aot_graphs": "AOTAutograd's forward and backward ATen graphs",
            "dynamic": "symbolic shapes: symbols created, guards on them",
            "perf_hints": "Inductor's hints about lost performance",
            "cudagraphs": "why CUDA graphs were skipped or recorded again",
            "bytecode": "the original and the rewritten bytecode of each frame"}

#: The order the chapter checks things in: graphs first, then how often they are paid for, then kernels.
TRIAGE = ["graph_breaks", "recompiles", "output_code"]


def tool_for(symptom: str) -> str:
    """The tool the map gives for a symptom (a substring of it is enough) (ch27)."""
    for t in TOOLS:
        if symptom.lower() in t.symptom:
            return t.tool
    raise KeyError(f"no tool for {symptom!r}; symptoms: {[t.symptom for t in TOOLS]}")


def log_artifacts() -> list[str]:
    """Every artifact name ``TORCH_LOGS`` accepts in this torch (``graph_breaks``, ``recompiles``, ...) (ch27)."""
    private("torch._dynamo.config")  # importing Dynamo registers its artifacts
    return sorted(private("torch._logging._internal.log_registry").artifact_names)


def log_components() -> list[str]:
    """The component names ``TORCH_LOGS`` accepts (``dynamo``, ``aot``, ``inductor``, ...) (ch27)."""
    private("torch._dynamo.config")
    return sorted(private("torch._logging._internal.log_registry").log_alias_to_log_qnames)


def diagnose(fn, calls: list[tuple], backend="eager") -> str:
    """Run ``fn`` compiled with ``backend`` on each argument tuple in ``calls``; name the tool the triage picks (ch27).

    In the triage's order: "minifier" if compiling or running raises, "graph_breaks" if a graph break
    was logged, "recompiles" if a recompile was logged, else "output_code" (the graphs are fine: read
    the kernels).
    """
    import torch

    clear_compile_state()
    compiled = torch.compile(fn, backend=backend)
    try:
        with silence("torch._dynamo"), capture_logs("graph_breaks", "recompiles") as logs:
            for args in calls:
                compiled(*args)
    except Exception:  # what the reader planted may fail in any way: that is the crash symptom
        return "minifier"
    finally:
        clear_compile_state()
    if logs.messages("graph_breaks"):
        return "graph_breaks"
    if logs.messages("recompiles"):
        return "recompiles"
    return "output_code"


def _child(script: str, args: list[str], env: dict, timeout: int) -> subprocess.CompletedProcess:
    """Run ``code/<script>`` with this interpreter and a clean copy of the environment plus ``env``."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("TORCH_LOGS", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_REPRO", "TORCH_TRACE"))}
    base.update(env)
    return subprocess.run([sys.executable, str(CODE_DIR / script), *args], env=base, capture_output=True,
                          text=True, timeout=timeout)


def _workdir(prefix: str) -> Path:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


@dataclass
class DebugDump:
    """What ``TORCH_COMPILE_DEBUG=1`` left on disk for one compiled call (ch27)."""

    root: Path                                   # the run_* folder
    model_dirs: dict[str, dict[str, int]]        # torchinductor/<graph>: {file name: bytes}
    other_files: dict[str, int]                  # the rest of the run folder (logs), relative path: bytes
    trace_files: dict[str, int]                  # the tlparse folder (TORCH_TRACE's structured log)
    trace: "Trace | None" = None                 # what that log holds (read_trace)
    kernels: dict[str, list[str]] = field(default_factory=dict)  # graph folder: kernel names in its output_code.py
    log: str = ""                                # what the process wrote to stderr (TORCH_LOGS)
    seconds: float = 0.0                         # the compiled call, in the child

    @property
    def files_per_graph(self) -> list[int]:
        return [len(files) for files in self.model_dirs.values()]

    def output_code(self, i: int = 0) -> str:
        """The ``output_code.py`` of graph folder ``i``."""
        return (self.root / "torchinductor" / list(self.model_dirs)[i] / "output_code.py").read_text()

    def tree(self) -> str:
        """The dump as an indented listing with sizes."""
        lines = [f"{self.root.name}/"]
        for name, size in self.other_files.items():
            lines.append(f"  {name}  ({size} B)")
        for d, files in self.model_dirs.items():
            lines.append(f"  torchinductor/{d}/")
            lines += [f"    {n}  ({s} B)" for n, s in files.items()]
        return "\n".join(lines)


@dataclass
class Trace:
    """What a ``TORCH_TRACE`` structured log holds, the input of ``tlparse`` (ch27): one JSON event per line
    (a glog prefix, then ``{"<kind>": {...}, "frame_id": …, "frame_compile_id": …}``), payloads on the
    tab-indented lines after it."""

    compiles: list[str]            # the compile ids seen, "frame/compile" ("0/0", "1/0": f and its resume function)
    kinds: dict[str, int]          # event kind: count ("artifact" events by their name: "artifact:fx_graph_cache_miss")

    def has(self, *kinds: str) -> bool:
        return all(k in self.kinds for k in kinds)


_TRACE_KEYS = {"frame_id", "frame_compile_id", "attempt", "compile_id", "has_payload", "rank", "stack"}


def read_trace(folder) -> Trace:
    """Read every log file of a ``TORCH_TRACE`` folder into a ``Trace`` (ch27)."""
    compiles, kinds = set(), {}
    for path in sorted(Path(folder).glob("*")) if Path(folder).exists() else []:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("\t") or "] {" not in line:
                continue
            try:
                event = json.loads(line.split("] ", 1)[1])
            except ValueError:
                continue
            if "frame_id" in event:
                compiles.add(f"{event['frame_id']}/{event.get('frame_compile_id', 0)}")
            keys = [k for k in event if k not in _TRACE_KEYS]
            if keys:
                kind = keys[0]
                if kind == "artifact" and isinstance(event[kind], dict):
                    kind = f"artifact:{event[kind].get('name', '')}"
                kinds[kind] = kinds.get(kind, 0) + 1
    return Trace(sorted(compiles), dict(sorted(kinds.items())))


def kernel_pointer_args(code: str, name: str) -> int:
    """How many pointer arguments kernel ``name`` of an ``output_code.py`` takes (``in_ptr0``, ``out_ptr1``, …) (ch27).

    A C++ kernel's signature is the ``kernel(...)`` after ``name = async_compile.cpp_pybinding(``; a Triton
    kernel's is ``def name(...)``. Returns 0 when neither is found."""
    start = code.find(f"{name} = async_compile.cpp")
    sig = re.search(r"kernel\(([^)]*)\)", code[start:]) if start >= 0 else None
    if sig is None:
        sig = re.search(rf"def {re.escape(name)}\(([^)]*)\)", code)
    return len(re.findall(r"\b\w*_ptr\d+\b", sig.group(1))) if sig else 0


def debug_dump(device: str = "cpu", logs: str = "graph_breaks", timeout: int = 300) -> DebugDump:
    """Compile chapter 27's sample ``f`` once in a child process with ``TORCH_COMPILE_DEBUG=1`` (ch27).

    The child (``code/ch27_debug_dump.py``) writes under a new folder of the run's cache root, with an
    empty Inductor cache there, so Inductor generates (and dumps) every file; ``TORCH_LOGS=logs``, and
    ``TORCH_TRACE`` names the dump's ``tlparse`` folder (torch 2.13 and later pick that folder by
    themselves under ``TORCH_COMPILE_DEBUG``; 2.11 writes no trace without the variable).
    """
    from ..inductor.code import InductorOutput

    out = _workdir("ch27_debug_")
    run = _child("ch27_debug_dump.py", [str(out), device],
                 {"TORCH_LOGS": logs, "TORCHINDUCTOR_CACHE_DIR": str(out / "inductor_cache"),
                  "TRITON_CACHE_DIR": str(out / "inductor_cache" / "triton"),
                  "TORCH_TRACE": str(out / "torch_compile_debug" / "tlparse")}, timeout)
    if run.returncode != 0:
        raise RuntimeError(f"code/ch27_debug_dump.py failed:\n{run.stderr[-2000:]}")
    seconds = json.loads(run.stdout.strip().splitlines()[-1])["seconds"]
    root = sorted((out / "torch_compile_debug").glob("run_*"))[-1]
    models, kernels, other = {}, {}, {}
    for d in sorted((root / "torchinductor").iterdir()):
        if d.is_dir():
            models[d.name] = {p.name: p.stat().st_size for p in sorted(d.iterdir()) if p.is_file()}
            code = d / "output_code.py"
            kernels[d.name] = InductorOutput([code.read_text()]).kernels if code.exists() else []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not (rel.parts[0] == "torchinductor" and len(rel.parts) > 2):
            other[str(rel)] = p.stat().st_size
    trace_dir = out / "torch_compile_debug" / "tlparse"
    trace = {p.name: p.stat().st_size for p in sorted(trace_dir.glob("*")) if p.is_file()} if trace_dir.exists() else {}
    return DebugDump(root, models, other, trace, read_trace(trace_dir), kernels, run.stderr, seconds)


@dataclass
class Minified:
    """What the minifier did with a failing compile (ch27)."""

    error: str                     # the exception the failing compile raised
    message: str                   # its first line
    launcher: Path | None          # minifier_launcher.py, written by the failing run
    steps: list[tuple[int, int]]   # each "Went from a to b nodes"
    queries: int | None            # "Made N queries": how many times the minifier compiled a candidate
    repro: str                     # repro.py
    failed_s: float                # the failing compile, in the child
    minify_s: float                # running the launcher (a second process)
    output: str = field(repr=False, default="")

    def forward_lines(self) -> list[str]:
        """The operation lines of the repro's ``forward`` (its ``return`` left out)."""
        m = re.search(r"def forward\(self[^)]*\):\n((?:        .*\n)+)", self.repro)
        body = m.group(1).splitlines() if m else []
        return [ln.strip() for ln in body if ln.strip() and not ln.strip().startswith("return")]

    def targets(self) -> list[str]:
        """The function each operation line of the repro's ``forward`` calls (``torch.relu``, ``operator.add``)."""
        return [m.group(1) for ln in self.forward_lines() if (m := re.search(r"= ([\w.]+)\(", ln))]

    def saved_inputs(self) -> int:
        """How many input storages the launcher's ``load_args`` names by content hash and finds saved
        beside it, in ``checkpoints/storages`` (``InputWriter`` in ``torch/_dynamo/debug_utils.py``
        writes them; a storage it cannot find is replaced by random data when the launcher runs)."""
        if self.launcher is None or not self.launcher.exists():
            return 0
        hashes = re.findall(r"reader\.storage\('([0-9a-f]+)'", self.launcher.read_text())
        store = self.launcher.parent / "checkpoints" / "storages"
        return sum((store / h).is_file() for h in hashes)


def minify(backend: str = "relu_compile_error_TESTING_ONLY", timeout: int = 300) -> Minified:
    """Run ``code/ch27_minify.py``: a failing compile under ``TORCHDYNAMO_REPRO_AFTER``, then its minifier (ch27).

    ``backend`` must be a name the launcher's own process can look up (torch's registered backends);
    the default is a test backend that ships with torch and raises on ``torch.relu``.
    """
    out = _workdir("ch27_minify_")
    run = _child("ch27_minify.py", [str(out), backend],
                 {"TORCHINDUCTOR_CACHE_DIR": str(out / "inductor_cache")}, timeout)
    if run.returncode != 0:
        raise RuntimeError(f"code/ch27_minify.py failed:\n{run.stderr[-2000:]}")
    r = json.loads(run.stdout.strip().splitlines()[-1])
    text = r.get("stdout", "") + r.get("stderr", "")
    steps = [(int(a), int(b)) for a, b in re.findall(r"Went from (\d+) to (\d+) nodes", text)]
    queries = re.search(r"Made (\d+) queries", text)
    repro = Path(r["repro"]).read_text() if r.get("repro") else ""
    return Minified(r["error"], r["message"], Path(r["launcher"]) if r.get("launcher") else None, steps,
                    int(queries.group(1)) if queries else None, repro, r["failed_s"], r.get("minify_s", 0.0), text)

"""Inductor's pipeline seen from outside: the graph it receives, who calls whom, the debug dump it
writes (``TORCH_COMPILE_DEBUG``), and the wrapper's ``call()`` (ch17; chapter 18 reads the IR files).

``debug_dump`` compiles a function once with Inductor's trace switched on in-process
(``torch._inductor.config.trace.enabled``, the switch ``TORCH_COMPILE_DEBUG=1`` sets at import), the FX
graph cache off (a cache hit would skip the stages whose files we want), and a custom post-grad pass
that records the Python call stack at that point. Works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import re
import tempfile
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import CourseError, cache_root
from ..core.private import private
from ..dynamo.logs import silence
from ..dynamo.state import clear_compile_state
from .code import InductorOutput

# The files the debug dump of one graph always holds (the list grows between releases; these stay).
CORE_FILES = ("fx_graph_readable.py", "fx_graph_runnable.py", "fx_graph_transformed.py",
              "ir_pre_fusion.txt", "ir_post_fusion.txt", "output_code.py")

# The functions on the path from torch.compile to Inductor's post-grad passes that chapter 17 names,
# by (file inside torch, function): Dynamo's backend call, Inductor's entry, AOTAutograd, and back.
LANDMARKS = (
    ("_dynamo/output_graph.py", "call_user_compiler"),
    ("_inductor/compile_fx.py", "compile_fx"),
    ("_functorch/aot_autograd.py", "aot_module_simplified"),
    ("_inductor/compile_fx.py", "fw_compiler_base"),
    ("_inductor/compile_fx.py", "compile_fx_inner"),
    ("_inductor/compile_fx.py", "fx_codegen_and_compile"),
    ("_inductor/fx_passes/post_grad.py", "post_grad_passes"),
)


@dataclass
class DebugDump:
    """One Inductor compile, with its debug directory, generated code and the call stack seen inside it (ch17)."""

    root: Path
    result: object
    code: InductorOutput
    stack: list[tuple[str, str]] = field(default_factory=list)

    @property
    def graph_dirs(self) -> list[Path]:
        """One directory per compiled graph, ``<root>/torchinductor/model__<n>_inference_<m>.<k>``."""
        base = self.root / "torchinductor"
        return sorted(p for p in base.iterdir() if p.is_dir()) if base.exists() else []

    def files(self, graph: int = 0) -> list[str]:
        """The file names in one graph's debug directory, sorted."""
        return sorted(p.name for p in self.graph_dirs[graph].iterdir() if p.is_file())

    def read(self, name: str, graph: int = 0) -> str:
        """The text of one debug file (``ir_pre_fusion.txt``, ``output_code.py``, ...)."""
        return (self.graph_dirs[graph] / name).read_text()

    def path(self, name: str, graph: int = 0) -> Path:
        return self.graph_dirs[graph] / name

    def landmarks(self) -> list[str]:
        """The call chain from Dynamo's backend call down to the post-grad passes, as ``file:function``."""
        out = []
        for want_file, want_fn in LANDMARKS:
            if any(f.endswith(want_file) and fn == want_fn for f, fn in self.stack):
                out.append(f"{want_file.split('/')[-1]}:{want_fn}")
        return out


def _torch_relative(filename: str) -> str:
    """``.../site-packages/torch/_inductor/graph.py`` → ``_inductor/graph.py``."""
    m = re.search(r"[/\\]torch[/\\](.*)$", filename)
    return m.group(1).replace("\\", "/") if m else filename


def debug_dump(fn, *args, folder: str | Path | None = None, codegen: bool = True, **kwargs) -> DebugDump:
    """Compile and run ``fn(*args)`` with Inductor, writing its debug dump under a fresh folder (ch17).

    The same files as ``TORCH_COMPILE_DEBUG=1`` writes (less the provenance JSONs, which that
    environment variable also switches on at import time); returns the folder, the result, the
    generated code (``run_and_get_code``) and the stack at the post-grad passes.
    ``codegen=False`` stops Inductor right after the scheduler has written ``ir_post_fusion.txt`` (no
    kernel is generated or compiled, and the graph then runs eagerly): the IR at a fraction of the
    cost (ch18). Where a torch release does not let us stop there, the compile simply runs to the end.
    """
    import torch

    config = private("torch._inductor.config")
    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    root = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="debug_dump_", dir=_dump_parent()))
    stack: list[tuple[str, str]] = []

    def record_stack(graph):  # a post-grad custom pass that changes nothing
        stack[:] = [(_torch_relative(fr.filename), fr.name) for fr in traceback.extract_stack()]

    clear_compile_state()
    patch = {"trace.enabled": True, "trace.debug_dir": str(root), "fx_graph_cache": False,
             "post_grad_custom_post_pass": record_stack}
    with config.patch(patch), silence("torch._inductor.debug"):  # it logs "debug trace: <dir>" as a warning
        if codegen:
            result, sources = run_and_get_code(torch.compile(fn), *args, **kwargs)
        else:
            with _stop_after_scheduling() as backend:
                result, sources = torch.compile(fn, backend=backend)(*args, **kwargs), []
    return DebugDump(root, result, InductorOutput(list(sources)), stack)


class _StopAfterScheduling(Exception):
    """Raised from the scheduler once the post-fusion IR is written (``debug_dump(codegen=False)``)."""


@contextmanager
def _stop_after_scheduling():
    """A backend running Inductor up to ``log_ir_post_fusion``, then the FX graph eagerly (ch18)."""
    import importlib

    debug = importlib.import_module("torch._inductor.debug")
    original = private("torch._inductor.debug.log_ir_post_fusion")
    compile_fx = private("torch._inductor.compile_fx.compile_fx")

    def log_then_stop(nodes):
        original(nodes)
        raise _StopAfterScheduling()

    def backend(gm, example_inputs):
        try:
            return compile_fx(gm, example_inputs)
        except Exception as exc:  # Inductor wraps what its passes raise (InductorError, BackendCompilerFailed)
            cause = exc
            while cause is not None and not isinstance(cause, _StopAfterScheduling):
                cause = getattr(cause, "inner_exception", None) or cause.__cause__
            if cause is None:
                raise
            return gm.forward

    debug.log_ir_post_fusion = log_then_stop
    try:
        yield backend
    finally:
        debug.log_ir_post_fusion = original


def _dump_parent() -> Path:
    parent = cache_root() / "debug_dumps"
    parent.mkdir(parents=True, exist_ok=True)
    return parent


@dataclass
class Wrapper:
    """What the wrapper's ``call(args)`` does, counted line by line (ch17)."""

    text: str
    asserts: int        # inputs whose size and stride call() checks (assert_size_stride, or grouped)
    allocations: int    # empty_strided_cpu / empty_strided_cuda buffers
    launches: int       # calls of a generated kernel
    dels: int           # early `del` of references
    returns: str        # the return statement


def read_wrapper(code: InductorOutput) -> Wrapper:
    """Count the steps of the wrapper's ``call()`` in Inductor's generated module (ch17)."""
    body = code.call_function()
    lines = [line.strip() for line in body.splitlines()]
    ret = next((line for line in reversed(lines) if line.startswith("return")), "")
    return Wrapper(body, _inputs_checked(lines),
                   sum(bool(re.match(r"\w+ = empty_strided_\w+\(", line)) for line in lines),
                   code.launches, sum(line.startswith("del ") for line in lines), ret)


def _inputs_checked(lines: list[str]) -> int:
    """Inputs the wrapper checks: one per ``assert_size_stride(x, ...)``, and on torch 2.15 the tensors of
    one ``assert_size_stride_grouped((x, y), sizes, strides, 'input')`` (ch17)."""
    n = sum(line.startswith("assert_size_stride(") for line in lines)
    for line in lines:
        m = re.match(r"assert_size_stride_grouped\(\(([^()]*)\)", line)
        if m:
            n += len([t for t in m.group(1).split(",") if t.strip()])
    return n


@dataclass
class CppLoop:
    """The outer loop of a generated C++ kernel: its step (SIMD lanes) and OpenMP pragmas (ch17; chapter 22)."""

    vector_step: int | None     # x0 += <step> on the vectorised loop (None: scalar only)
    omp_parallel: bool          # `#pragma omp parallel` present
    omp_threads: int | None     # its num_threads(...), if any


def cpp_loop(code: InductorOutput) -> CppLoop:
    """Read the first C++ kernel's loop step and OpenMP pragma (ch17)."""
    src = code.kernel_source()
    steps = [int(s) for s in re.findall(r"x0\s*\+=\s*static_cast<int64_t>\((\d+)L?\)", src)]
    vec = "at::vec::Vectorized" in src
    m = re.search(r"#pragma omp parallel(?: num_threads\((\d+)\))?", src)
    return CppLoop(max(steps) if steps and vec else None, m is not None,
                   int(m.group(1)) if m and m.group(1) else None)


def file_role(dump: DebugDump, name: str, graph: int = 0) -> str:
    """What a debug file holds, judged from its content: "loop IR", "generated module", "ATen graph" (ch17)."""
    try:
        text = dump.read(str(name), graph)
    except (OSError, IndexError, TypeError):
        return f"no file {name!r} in the dump"
    if "ops.load(" in text:
        return "loop IR"
    if "def call(" in text and "async_compile" in text:
        return "generated module"
    if "torch.ops.aten." in text:
        return "ATen graph"
    return "something else"


def aten_calls(graph_text: str) -> list[str]:
    """The ATen overloads an FX graph file calls, in order (``add.Tensor``, ``relu.default``, ...) (ch17)."""
    return re.findall(r"torch\.ops\.aten\.(\w+\.\w+)\(", graph_text)


def inductor_threads() -> int:
    """How many threads Inductor's C++ code is generated for (``parallel_num_threads``) (ch17)."""
    return int(private("torch._inductor.utils.parallel_num_threads")())


def precompiled_headers() -> list[str]:
    """The precompiled C++ headers (``*.gch``) Inductor has built for its CPU kernels so far (ch17).

    torch 2.13 precompiles the header every C++ kernel includes on the first compile with an empty cache
    (``_precompile_header`` in ``torch/_inductor/codecache.py``, under ``config.cpp_cache_precompile_headers``),
    into ``<temp dir>/torchinductor_<user>/precompiled_headers``; a torch without that step gives ``[]``.
    """
    try:
        folder = Path(private("torch._inductor.codecache._HEADER_DIR"))
    except CourseError:
        return []
    return sorted(p.name for p in folder.glob("*.gch")) if folder.exists() else []


def isa_probe_child_code() -> str:
    """The Python a vector-ISA probe runs in its child process (``VecISA._avx_py_load``): torch 2.11 imports
    torch there before loading the probe library; 2.13 and later, on Linux, only load it (ch17)."""
    return str(getattr(private("torch._inductor.cpu_vec_isa.VecISA"), "_avx_py_load", ""))

"""torch.export and AOTInductor: one whole graph with a shape contract, a .pt2 package, and serving it from
a fresh process with no Dynamo (ch29).

The export side uses the public ``torch.export`` API; what this module adds is reading an
``ExportedProgram`` as plain data (operators, signature, input types, range constraints, in-graph
assertions) and trying an export or a call without letting the error stop the notebook. The package
side wraps the two AOTInductor entry points, which live in ``torch._inductor``
(``aoti_compile_and_package``, ``aoti_load_package``), reads a ``.pt2`` archive (its members, the ELF
sections of its shared library, where the weights went), and runs ``code/ch29_serve.py`` in a child
process: a server that imports torch, loads the package and calls it, with no model code, while
counting what Dynamo does. Works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import cache_root
from ..core.private import private

CODE_DIR = Path(__file__).resolve().parents[2] / "code"
FEATURES, OUTPUTS = 16, 8


# ---------------------------------------------------------------------------------------------- models

def tiny(device: str = "cpu", seed: int = 0):
    """The chapter's model: Linear(16, 8) → relu → + 1, in eval mode, with seeded weights (ch29)."""
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(FEATURES, OUTPUTS)

        def forward(self, x):
            return torch.relu(self.fc(x)) + 1

    gen = torch.random.fork_rng()
    with gen:
        torch.manual_seed(seed)
        model = Tiny()
    return model.to(device).eval()


def branchy():
    """A module whose Python ``if`` reads a tensor's value: x * 2 if x.sum() > 0, else x - 1 (ch29)."""
    import torch

    class Branchy(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x - 1

    return Branchy()


# ---------------------------------------------------------------------------------------------- export

@dataclass
class Outcome:
    """What trying something gave: the result, or the exception's class and first line (ch29)."""

    ok: bool
    value: object = None
    error: str = ""        # the exception's class name
    message: str = ""      # its first line
    text: str = field(default="", repr=False)  # the whole message

    def __str__(self) -> str:
        return "ok" if self.ok else f"{self.error}: {self.message}"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else ""


@contextlib.contextmanager
def _quiet():
    """Keep torch's diagnostic prints (the partial graph an export error dumps, warnings) out of the cell."""
    import logging

    loggers = [logging.getLogger(n) for n in ("torch.fx.experimental.symbolic_shapes", "torch._dynamo",
                                               "torch.export", "torch._export")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def try_export(module, args: tuple, **kwargs) -> Outcome:
    """``torch.export.export(module, args, **kwargs)``; the program, or the error it raised (ch29)."""
    import torch

    try:
        with _quiet():
            ep = torch.export.export(module, args, **kwargs)
    except Exception as exc:  # export's errors come from several modules and classes: report, do not raise
        return Outcome(False, None, type(exc).__name__, _first_line(exc), str(exc))
    return Outcome(True, ep)


def try_call(fn, *args) -> Outcome:
    """Call ``fn(*args)``; the output's shape, or the error (an input check that failed) (ch29)."""
    try:
        with _quiet():
            out = fn(*args)
    except Exception as exc:  # an input check (AssertionError, RuntimeError) is the point: report it
        return Outcome(False, None, type(exc).__name__, _first_line(exc), str(exc))
    return Outcome(True, tuple(out.shape))


def ops(ep) -> list[str]:
    """The operators an ExportedProgram's graph calls, in order (``aten.linear.default``, ``cond``) (ch29)."""
    def name(target) -> str:
        text = str(target)
        return target.__name__ if text.startswith("<built-in function") else text

    return [name(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def signature(ep) -> dict[str, list[str]]:
    """The graph signature by kind: {"PARAMETER": ["p_fc_weight", ...], "USER_INPUT": [...], ...} (ch29)."""
    out: dict[str, list[str]] = {}
    for spec in ep.graph_signature.input_specs + ep.graph_signature.output_specs:
        out.setdefault(spec.kind.name, []).append(spec.arg.name)
    return out


_TYPE = re.compile(r'(\w+): "([^"]+)"')


def input_types(ep) -> dict[str, str]:
    """Each graph input's type as the printed program shows it: {"x": "f32[s77, 16]", ...} (ch29)."""
    text = ep.graph_module.print_readable(print_output=False)
    header = re.search(r"def forward\(self, (.*?)\):", text, re.S)
    return dict(_TYPE.findall(header.group(1))) if header else {}


def ranges(ep) -> dict[str, tuple]:
    """The program's range constraints as {symbol: (low, high)} (ch29)."""
    def num(v):
        return int(v) if v.is_finite else float(v)

    return {str(sym): (num(vr.lower), num(vr.upper)) for sym, vr in ep.range_constraints.items()}


def assertions(ep) -> list[str]:
    """The runtime assertions inside the graph (``aten._assert_scalar`` nodes), as their messages (ch29)."""
    found = []
    for n in ep.graph.nodes:
        if n.op == "call_function" and "_assert_scalar" in str(n.target):
            msg = n.args[1] if len(n.args) > 1 else ""
            found.append(str(msg))
    return found


# ---------------------------------------------------------------------------------------------- the compiler

#: A one-function C++ library that needs the C++ runtime: throwing an exception calls into libstdc++.
_RUNTIME_PROBE = ('#include <stdexcept>\n'
                  'extern "C" int probe(int n) { if (n < 0) throw std::runtime_error("negative"); return n; }\n')
#: The C++ runtimes a library can ask the dynamic loader for (GCC's and LLVM's).
_CXX_RUNTIMES = ("libstdc++.so", "libc++.so")


@dataclass(frozen=True)
class Compiler:
    """A C++ compiler and how the shared libraries it builds get the C++ runtime (ch29).

    ``runtime`` is "shared" when a library it builds asks the dynamic loader for libstdc++ (or libc++),
    "static" when it does not (the runtime is linked into the library), else why it could not tell.
    """

    path: str
    runtime: str
    needed: tuple[str, ...] = ()
    named_by: str = ""  # "CXX" when the environment variable named it
    program: str = ""  # the file the name resolves to, links followed (``x86_64-linux-gnu-g++-13``)
    version: str = ""  # the first line of its ``--version``

    @property
    def shares_runtime(self) -> bool:
        return self.runtime == "shared"

    @property
    def file(self) -> str:
        """The compiler's file name (``g++``), without the folder it lives in on this machine."""
        return os.path.basename(self.path)

    @property
    def name(self) -> str:
        """The compiler as any machine would name it: its file name and how it was found (named by ``CXX``,
        the first of that name on ``PATH``), never the absolute path of the machine that ran it."""
        if self.named_by:
            return f"{self.file} (named by {self.named_by})"
        on_path = shutil.which(self.file)
        if on_path and os.path.realpath(on_path) == os.path.realpath(shutil.which(self.path) or self.path):
            return f"{self.file} (the first on PATH)"
        return self.file

    @property
    def identity(self) -> str:
        """Which program it is, without the machine's folders: the file its name resolves to (links
        followed) and the first line of its ``--version``. Two compilers that share a file name (``g++``
        named by ``CXX``, ``g++`` on ``PATH``) differ here when they are different programs."""
        return "; ".join(part for part in (self.program and f"runs {self.program}", self.version) if part)

    def __str__(self) -> str:
        how = {"shared": "links the C++ runtime as a shared library",
               "static": "links the C++ runtime into what it builds"}.get(self.runtime, self.runtime)
        who = f" [{self.identity}]" if self.identity else ""
        return f"{self.name}{who}: {how}; needs {', '.join(self.needed) or 'nothing'}"


def compiler_identity(cxx: str) -> tuple[str, str]:
    """``(program, version)`` of a compiler command: the file name it resolves to on this machine (links
    followed; a wrapper script stays itself) and the first line of ``cxx --version``, with no folder of
    the machine in either (ch29)."""
    from ..core.text import machine_free

    found = shutil.which(cxx) or cxx
    program = os.path.basename(os.path.realpath(found)) if os.path.exists(found) else ""
    try:
        run = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
        first = (run.stdout.strip().splitlines() or [""])[0].strip()
    except (OSError, subprocess.SubprocessError):
        first = ""
    first = re.sub(r"(?<![\w.~-])/\S+/", "", machine_free(first))  # a folder a compiler prints of itself
    return program, first


def program_text(ep) -> str:
    """``str(ep)`` of an ExportedProgram with every source path in it (``# File: ...``) named relative to
    its package (``torch/nn/modules/linear.py``, ``helpers/runtime/export_aoti.py``), never as the absolute
    path of the machine that ran it (ch29)."""
    from ..aot.decompositions import torch_relative
    from ..core.env import REPO_ROOT

    course = str(REPO_ROOT)  # the folder holding helpers/

    def short(match: re.Match) -> str:
        path = match.group(0)
        if os.path.abspath(path).startswith(course + os.sep) and "/site-packages/" not in path:
            return os.path.relpath(path, course).replace(os.sep, "/")
        return torch_relative(path)

    return re.sub(r"(?<![\w.~-])/[^\s:\"']+\.py", short, str(ep))


def elf_needed(blob: bytes) -> list[str]:
    """The shared libraries a 64-bit little-endian ELF file asks the dynamic loader for (DT_NEEDED) (ch29)."""
    headers, _ = _section_headers(blob)
    found = []
    for _name, kind, _flags, _addr, offset, size, link in headers:
        if kind != 6:  # SHT_DYNAMIC: (tag, value) pairs; its sh_link is the string table they point into
            continue
        strings_at = headers[link][4]
        for at in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", blob, at)
            if tag == 0:  # DT_NULL ends the table
                break
            if tag == 1:  # DT_NEEDED
                start = strings_at + value
                found.append(blob[start:blob.index(b"\0", start)].decode())
    return found


def probe_compiler(cxx: str, named_by: str = "") -> Compiler:
    """Build a one-function C++ library with ``cxx`` and read how it gets the C++ runtime (ch29)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = Path(tmp) / "probe.cpp", Path(tmp) / "probe.so"
        src.write_text(_RUNTIME_PROBE)
        try:
            run = subprocess.run([cxx, "-shared", "-fPIC", str(src), "-o", str(lib)],
                                 capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            return Compiler(cxx, "not found", named_by=named_by)
        if run.returncode != 0 or not lib.exists():
            first = (run.stderr.strip().splitlines() or ["no output"])[0]
            return Compiler(cxx, f"cannot build a library: {first}", named_by=named_by)
        needed = tuple(elf_needed(lib.read_bytes()))
    runtime = "shared" if any(n.startswith(_CXX_RUNTIMES) for n in needed) else "static"
    return Compiler(cxx, runtime, needed, named_by, *compiler_identity(cxx))


def inductor_compiler() -> Compiler:
    """The C++ compiler Inductor builds with in this process, probed (ch29).

    Inductor's ``cpp.cxx`` setting is ``$CXX`` when that is set, else ``g++`` (``torch/_inductor/config.py``);
    ``get_cpp_compiler`` in ``torch/_inductor/cpp_builder.py`` resolves it to a command.
    """
    cxx = private("torch._inductor.cpp_builder.get_cpp_compiler")()
    return probe_compiler(cxx, "CXX" if os.environ.get("CXX") == cxx else "")


def use_compiler(path: str) -> None:
    """Make ``path`` the C++ compiler of Inductor in this process (``cpp.cxx``) and in its children (``CXX``) (ch29)."""
    private("torch._inductor.config").cpp.cxx = (None, path)
    os.environ["CXX"] = path


def choose_compiler(candidates=("g++", "c++", "clang++")) -> tuple[Compiler, Compiler]:
    """Inductor's compiler and the one the chapter builds packages with, both probed (ch29).

    A package's library is loaded into a process that already has libtorch and its C++ runtime; when
    Inductor's compiler links the runtime into what it builds, the first of ``candidates`` on ``PATH``
    that links it as a shared library becomes the compiler here and in child processes (``use_compiler``).
    Returns the pair; they are the same when Inductor's compiler shares the runtime, or nothing else does.
    """
    own = inductor_compiler()
    if own.shares_runtime:
        return own, own
    mine = os.path.realpath(shutil.which(own.path) or own.path)
    for name in candidates:
        path = shutil.which(name)
        if path is None or os.path.realpath(path) == mine:
            continue
        other = probe_compiler(path)
        if other.shares_runtime:
            use_compiler(other.path)
            return own, other
    return own, own


def static_runtime_compiler(base: Compiler, folder) -> Compiler:
    """``base`` behind a wrapper script that adds ``-static-libstdc++``: a compiler that links the C++
    runtime into what it builds, written into ``folder`` and probed (ch29)."""
    script = Path(folder) / "cxx-static-libstdc++"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(base.path)} -static-libstdc++ "$@"\n')
    script.chmod(0o755)
    return probe_compiler(str(script))


def failure_of(returncode: int, stderr: str) -> str:
    """How a child process failed, as text, from its exit code and its stderr (ch29).

    A crash reads "signal 11 (SIGSEGV) in _load_aoti" (the innermost Python frame that faulthandler
    printed); an error exit reads 'exit 1, the library reporting "std::bad_cast"' when the package's
    C++ code printed an ``Error:`` line, else "exit 1, <the last line of the traceback>".
    """
    if returncode < 0:
        try:
            text = f"signal {-returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            text = f"signal {-returncode}"
        _, found, after = stderr.partition("most recent call first")
        frame = re.search(r'File "[^"]*", line \d+ in (\S+)', after) if found else None
        return text + (f" in {frame.group(1)}" if frame else "")
    reported = re.findall(r"^Error: (.+)$", stderr, re.M)
    if reported:
        return f'exit {returncode}, the library reporting "{reported[-1].strip()}"'
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return f"exit {returncode}" + (f", {lines[-1].strip()}" if lines else "")


# ---------------------------------------------------------------------------------------------- packaging

#: How long the chapter waits for the background CUDA package, counted from its start (ch29).
CUDA_BUILD_LIMIT_S = 150
#: The same for the background CPU package built with a compiler that links the C++ runtime in (ch29).
STATIC_BUILD_LIMIT_S = 300

#: Inductor settings for the chapter's package: precompiled headers pay off over many compiles, not one;
#: ``cpp.vec_isa_ok`` trusts the vector ISA the CPU reports instead of compiling and test-loading a probe
#: per candidate ISA (``VecISA.check_build``; on torch 2.11 each test load imports torch in a new Python).
PACKAGE_CONFIGS = {"aot_inductor.precompile_headers": False, "cpp.vec_isa_ok": True}

#: The same for the child processes, through the environment (``TORCHINDUCTOR_VEC_ISA_OK``).
CHILD_ENV = {"TORCHINDUCTOR_VEC_ISA_OK": "1"}


@dataclass
class Package:
    """A .pt2 written by AOTInductor and how long building it took (ch29)."""

    path: Path
    seconds: float

    @property
    def size(self) -> int:
        return self.path.stat().st_size


@dataclass
class Probes:
    """This process's vector-ISA answer, and what getting it cost (ch29)."""

    seconds: float
    children: list[str]  # the programs started meanwhile: "python..." for each test load, else the compiler
    isa: str             # str(pick_vec_isa()): "avx512 avx512_vnni amx_tile", "avx2", "asimd", ...


def answer_vec_isa() -> Probes:
    """Ask ``pick_vec_isa`` (``torch/_inductor/cpu_vec_isa.py``) with ``cpp.vec_isa_ok`` on, as the package
    build does, timing it and counting the child processes it starts (ch29).

    With the ISA trusted the main probes are skipped, but ``VecAVX512.__bool__`` (BF16), ``VecAVX512VNNI``
    (VNNI) and ``VecAMX`` (AMX) still test-load a probe each in a child Python; ``valid_vec_isa_list`` and
    every ``__bool__`` are ``functools.cache``d, so a process pays this once, and a build timed after it
    pays none of it.
    """
    config = private("torch._inductor.config")
    pick = private("torch._inductor.cpu_vec_isa.pick_vec_isa")
    children: list[str] = []
    popen_init = subprocess.Popen.__init__

    def counting(self, args, *rest, **kw):
        first = args[0] if isinstance(args, (list, tuple)) else args
        children.append(os.path.basename(str(first).split()[0]))
        return popen_init(self, args, *rest, **kw)

    t0 = time.perf_counter()
    subprocess.Popen.__init__ = counting
    try:
        with config.patch({"cpp.vec_isa_ok": True}):
            isa = pick()
    finally:
        subprocess.Popen.__init__ = popen_init
    return Probes(time.perf_counter() - t0, children, str(isa))


def package(ep, path, configs: dict | None = None) -> Package:
    """Compile an ExportedProgram ahead of time into a .pt2 (``aoti_compile_and_package``) (ch29)."""
    compile_and_package = private("torch._inductor.aoti_compile_and_package")
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with _quiet():
        out = compile_and_package(ep, package_path=str(path),
                                  inductor_configs=dict(PACKAGE_CONFIGS if configs is None else configs))
    return Package(Path(out), time.perf_counter() - t0)


def load(path):
    """Load a .pt2 in this process (``aoti_load_package``): a callable that runs the compiled code (ch29)."""
    with _quiet():
        return private("torch._inductor.aoti_load_package")(str(path))


@dataclass(frozen=True)
class Member:
    """One file of a .pt2 archive (ch29)."""

    name: str   # path inside the archive, without the archive's top folder
    size: int   # bytes, uncompressed
    kind: str   # what it is: "wrapper source", "kernel source", "shared library", "kernel binary", ...


def kind_of(name: str) -> str:
    """What an archive member is, from its name: "wrapper source", "shared library", "kernel binary", ... (ch29)."""
    base = name.rsplit("/", 1)[-1]
    if base.endswith("wrapper.cpp"):
        return "wrapper source"
    if base.endswith("kernel.cpp"):
        return "kernel source"
    if base.endswith(".so"):
        return "shared library"
    if base.endswith((".cubin", ".hsaco", ".spv", ".fatbin")):
        return "kernel binary"
    if base.endswith(".json"):
        return "metadata"
    if "/weights/" in name or base.endswith((".pt", ".bin", ".blob")):
        return "weights"
    if name.startswith(("data/", "models/")):
        return "other"
    return "archive record"


def members(path) -> list[Member]:
    """Every file of a .pt2, with its size and kind (ch29)."""
    with zipfile.ZipFile(path) as z:
        infos = [i for i in z.infolist() if not i.is_dir()]
    out = []
    for i in infos:
        name = i.filename.split("/", 1)[1] if "/" in i.filename else i.filename
        out.append(Member(name, i.file_size, kind_of(name)))
    return out


def read_member(path, suffix: str) -> bytes:
    """The bytes of the first archive member whose name ends with ``suffix`` (ch29)."""
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if name.endswith(suffix):
                return z.read(name)
    raise KeyError(f"no member ending with {suffix!r} in {path}")


def sources(path) -> str:
    """All generated C++ source in the package, concatenated (wrapper and kernels) (ch29)."""
    with zipfile.ZipFile(path) as z:
        return "\n".join(z.read(n).decode() for n in z.namelist() if n.endswith(".cpp"))


def _section_headers(blob: bytes) -> tuple[list[tuple], int]:
    """The section headers of a 64-bit little-endian ELF file, each (name offset, type, flags, address,
    file offset, size, link), and the file offset of the section names' string table."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    headers = [struct.unpack_from("<IIQQQQI", blob, shoff + i * shentsize) for i in range(shnum)]
    return headers, headers[shstrndx][4]


def _name_at(blob: bytes, start: int) -> str:
    return blob[start:blob.index(b"\0", start)].decode()


def elf_sections(blob: bytes) -> dict[str, int]:
    """Section name → size in bytes of a 64-bit little-endian ELF file (ch29)."""
    headers, names_at = _section_headers(blob)
    return {_name_at(blob, names_at + h[0]): h[5] for h in headers if _name_at(blob, names_at + h[0])}


def section_group(name: str) -> str:
    """Which part of a shared library a section is: code, constants, debug info, symbols, other (ch29)."""
    if name.startswith(".debug"):
        return "debug info"
    if name in (".text", ".plt", ".plt.got", ".init", ".fini"):
        return "code"
    if name in (".lrodata", ".ldata", ".rodata", ".data", ".data.rel.ro", ".bss", ".lbss"):
        return "constants and data"
    if name in (".dynsym", ".dynstr", ".symtab", ".strtab", ".gnu.hash", ".shstrtab"):
        return "symbols"
    return "other"


def library_parts(path) -> dict[str, int]:
    """The package's shared library, in bytes per section group (code, constants, debug info, ...) (ch29)."""
    parts: dict[str, int] = {}
    for name, size in elf_sections(read_member(path, ".so")).items():
        if name in (".bss", ".lbss", ".tbss"):
            continue  # occupies no bytes in the file
        group = section_group(name)
        parts[group] = parts.get(group, 0) + size
    return parts


def section_of(blob: bytes, offset: int) -> str | None:
    """The ELF section holding file offset ``offset``, if any (ch29)."""
    headers, names_at = _section_headers(blob)
    for h in headers:
        if h[1] != 8 and h[4] <= offset < h[4] + h[5]:  # type 8 = NOBITS, no bytes in the file
            return _name_at(blob, names_at + h[0])
    return None


def where_is(path, tensor) -> str | None:
    """The ELF section of the package's library that holds ``tensor``'s bytes, or None (ch29)."""
    blob = read_member(path, ".so")
    at = blob.find(tensor.detach().cpu().contiguous().numpy().tobytes())
    return section_of(blob, at) if at >= 0 else None


def written_as_literals(path, tensor) -> bool:
    """True when every value of ``tensor`` appears as a literal in the package's generated C++ (ch29)."""
    text = sources(path)
    return all(repr(float(v)) in text for v in tensor.detach().cpu().flatten().tolist())


# ---------------------------------------------------------------------------------------------- serving

def counts(counter: dict) -> str:
    """A counter dict as one line, ``"total 3, ok 3"`` (empty: ``"none"``) (ch29)."""
    return ", ".join(f"{k} {v}" for k, v in counter.items()) or "none"


def write_cases(path, model, x, sizes: list[int], calls: int = 200) -> Path:
    """Save what ``code/ch29_serve.py`` needs: an input, eager's output, batch sizes to try (ch29)."""
    import torch

    with torch.no_grad():
        expected = model(x)
    path = Path(path)
    torch.save({"x": x, "expected": expected, "sizes": list(sizes), "device": x.device.type, "calls": calls}, path)
    return path


def workdir(prefix: str = "ch29_") -> Path:
    """A new folder under the run's cache root (never in the repository) (ch29)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


def serve(package_path, cases, *, checked: bool = False, jit=None, timeout: int = 300) -> dict:
    """Run ``code/ch29_serve.py`` in a fresh process; its JSON report as a dict (ch29).

    ``checked`` makes the child load the package a second time with ``AOTI_RUNTIME_CHECK_INPUTS=1``
    and try the sizes again; ``jit`` (a program saved with ``torch.export.save``) makes it then compile
    that program with ``torch.compile``, as a control. The child shares this run's compile caches
    (``TORCHINDUCTOR_CACHE_DIR``).
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCH_LOGS", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_REPRO", "TORCH_TRACE",
                                "AOTI_RUNTIME_CHECK_INPUTS"))}
    env.update(CHILD_ENV)
    args = [sys.executable, str(CODE_DIR / "ch29_serve.py"), str(package_path), str(cases)]
    if checked:
        args.append("--checked")
    if jit is not None:
        args += ["--jit", str(jit)]
    t0 = time.perf_counter()
    run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0 or not run.stdout.strip():
        raise RuntimeError(f"code/ch29_serve.py failed (exit {run.returncode}):\n{run.stderr[-3000:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    report["process_s"] = time.perf_counter() - t0
    return report


def outcome_of(row: dict) -> str:
    """One row of ``serve``'s size table as text: "accepted (2048, 8)" or "rejected: <reason>" (ch29)."""
    return f"accepted {tuple(row['shape'])}" if row["ok"] else f"rejected: {row.get('reason') or row['message']}"


class PackageJob:
    """A package built by ``code/ch29_package.py`` in a background process, with a time limit (ch29).

    The chapter starts it for a CUDA package on a GPU and collects it later; a build that is not done
    when ``result`` is asked for is stopped, and the result says so instead of stalling the notebook.
    """

    def __init__(self, proc: subprocess.Popen, started: float):
        self.proc, self.started, self.files = proc, started, None

    @classmethod
    def start(cls, program, package_path, cases=None, env=None) -> "PackageJob":
        """Start ``code/ch29_package.py``; ``env`` adds to (or overrides) this process's environment."""
        extra = env or {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_LOGS", "AOTI_RUNTIME_CHECK_INPUTS"))}
        env.update(CHILD_ENV)
        env.update(extra)
        args = [sys.executable, str(CODE_DIR / "ch29_package.py"), str(program), str(package_path)]
        if cases is not None:
            args.append(str(cases))
        folder = Path(package_path).resolve().parent
        folder.mkdir(parents=True, exist_ok=True)
        # files, not pipes: a child that writes much to a pipe nobody reads yet would block
        out, err = open(folder / "package_job.out", "w+"), open(folder / "package_job.err", "w+")
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True)
        job = cls(proc, time.perf_counter())
        job.files = (out, err)
        return job

    def result(self, limit_s: float) -> dict:
        """What the child reported by ``limit_s`` after its start, when it is stopped if still running (ch29).

        The build's report (``build_s``, ``members``) and then the serve report (``serve``), as far as
        they came, plus ``built`` and ``served`` (whether each came) and ``waited_s``.
        """
        killed = False
        try:
            self.proc.wait(timeout=max(0.0, self.started + limit_s - time.perf_counter()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            killed = True
        out, err = self.files
        out.seek(0)
        err.seek(0)
        lines, log = out.read().strip().splitlines(), err.read()
        self._close()
        report: dict = {}
        for line in lines:
            try:
                report.update(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut short by the stop
        if not killed and (self.proc.returncode != 0 or not report):
            raise RuntimeError(f"code/ch29_package.py failed (exit {self.proc.returncode}):\n{log[-3000:]}")
        report.update(built="build_s" in report, served=report.get("serve") is not None,
                      waited_s=time.perf_counter() - self.started)
        return report

    def _close(self) -> None:
        for f in self.files or ():
            f.close()
        self.files = None

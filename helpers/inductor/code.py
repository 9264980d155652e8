"""Inductor's artifact: the generated module (Triton on a GPU, C++ on a CPU) for a compiled function,
its kernels summarised, the CPU vector ISA it targets, and a planted codegen bug (first look in ch02;
Part 3, chapters 17-23, reads it line by line).
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass

from ..core.private import private
from ..dynamo.state import clear_compile_state


@dataclass
class InductorOutput:
    """The Python module(s) Inductor wrote for one compiled call, and what is in them."""

    sources: list[str]

    _KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(triton|cpp_pybinding|cpp)\(", re.M)

    @property
    def source(self) -> str:
        return "\n".join(self.sources)

    @property
    def kernels(self) -> list[str]:
        """Generated kernel names, in definition order (Triton on GPU, C++ on CPU)."""
        return list(dict.fromkeys(m.group(1) for m in self._KERNEL_DEF.finditer(self.source)))

    @property
    def kernel_language(self) -> str | None:
        m = self._KERNEL_DEF.search(self.source)
        return None if m is None else ("triton" if m.group(2) == "triton" else "c++")

    @property
    def launches(self) -> int:
        """Kernel launches in the wrapper's ``call()`` (lines that run a generated kernel)."""
        names = self.kernels
        return sum(1 for line in self.call_function().splitlines()
                   if any(re.search(rf"\b{re.escape(n)}(\.run)?\(", line) for n in names))

    _LIBRARY_CALL = re.compile(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(")

    @property
    def extern_calls(self) -> list[str]:
        """What the wrapper's ``call()`` runs besides generated kernels, one entry per call site: library
        kernels such as ``extern_kernels.addmm`` and ``torch.ops.*`` operators (used by the triage, chapter 30)."""
        return [m.group(1) for line in self.call_function().splitlines() if not line.strip().startswith("#")
                for m in self._LIBRARY_CALL.finditer(line)]

    def call_function(self) -> str:
        """The body of the wrapper's ``call(args)`` function."""
        match = re.search(r"^( *)def call\((?:self, )?args\):\n", self.source, re.M)
        if not match:
            return ""
        indent = len(match.group(1))
        lines = []
        for line in self.source[match.end():].splitlines():
            if line.strip() and (len(line) - len(line.lstrip())) <= indent:
                break
            lines.append(line)
        return "\n".join(lines).rstrip()

    def kernel_source(self, name: str | None = None) -> str:
        """The source of one generated kernel (the first if no name is given)."""
        names = self.kernels
        name = name or (names[0] if names else None)
        if name is None:
            return ""
        pattern = rf"^{re.escape(name)} = async_compile\.\w+\(.*?'''(.*?)'''"
        m = re.search(pattern, self.source, re.M | re.S)
        return m.group(1).strip() if m else ""


def inductor_code(fn, *args, mode=None, dynamic=None, **kwargs):
    """Compile ``fn`` with Inductor and return ``(result, InductorOutput)`` with the generated code."""
    import torch

    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    clear_compile_state()
    compiled = torch.compile(fn, mode=mode, dynamic=dynamic)
    result, sources = run_and_get_code(compiled, *args, **kwargs)
    return result, InductorOutput(list(sources))


@contextmanager
def collect_code():
    """Collect the module Inductor writes for every graph it compiles (or loads from its cache) in the block.

    Yields an ``InductorOutput`` whose ``sources`` fill as graphs compile, one module per graph (in the
    order they compiled). Unlike ``inductor_code`` it compiles nothing and resets nothing, so it can watch
    a compile the caller runs (``python -m helpers triage``; chapter 17 reads such a module). Hooks
    ``torch._inductor.graph.GraphLowering.save_output_code``, the hook ``run_and_get_code`` uses; a hook
    already set is still called.
    """
    lowering = private("torch._inductor.graph.GraphLowering")
    out = InductorOutput([])
    had = "save_output_code" in lowering.__dict__
    before = lowering.__dict__.get("save_output_code")

    def save(code: str) -> None:
        out.sources.append(code)
        if before is not None:
            before(code)

    lowering.save_output_code = save
    try:
        yield out
    finally:
        if had:
            lowering.save_output_code = before
        else:
            del lowering.save_output_code


class inject_codegen_bug:
    """Context manager: make Inductor's generated code compute relu wrongly (a testing knob) (ch02).

    Uses ``torch._inductor.config.{cpp,triton}.inject_relu_bug_TESTING_ONLY = "accuracy"``.
    """

    def __enter__(self):
        config = private("torch._inductor.config")
        self._saved = (config.cpp.inject_relu_bug_TESTING_ONLY, config.triton.inject_relu_bug_TESTING_ONLY)
        config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
        config.triton.inject_relu_bug_TESTING_ONLY = "accuracy"
        clear_compile_state()
        return self

    def __exit__(self, *exc):
        config = private("torch._inductor.config")
        config.cpp.inject_relu_bug_TESTING_ONLY, config.triton.inject_relu_bug_TESTING_ONLY = self._saved
        clear_compile_state()
        return False


@dataclass
class KernelSummary:
    """One generated kernel as the traffic model sees it: name, elements covered, loads and stores (ch02)."""

    name: str
    language: str | None
    numel: int | None
    loads: int
    stores: int


def kernel_summary(code: "InductorOutput", name: str | None = None) -> KernelSummary:
    """Name, element count and memory operations of one generated kernel (the first if no name) (ch02).

    Triton: ``xnumel`` and the ``tl.load``/``tl.store`` calls (``inductor_meta``'s ``num_load``/``num_store``
    count the same). C++: the loop bound and the ``loadu``/``.store`` calls (or scalar ``ptr[...]`` accesses).
    """
    names = code.kernels
    name = name or (names[0] if names else "")
    src = code.kernel_source(name)
    if code.kernel_language == "triton":
        m = re.search(r"^\s*xnumel = (\d+)", src, re.M)
        numel = int(m.group(1)) if m else None
        loads, stores = len(re.findall(r"\btl\.load\(", src)), len(re.findall(r"\btl\.store\(", src))
    else:
        bounds = re.findall(r"for\s*\(\s*int64_t\s+x0\s*=.*?;\s*x0\s*<\s*static_cast<int64_t>\((\d+)L?\)", src)
        numel = max(int(b) for b in bounds) if bounds else None
        loads = len(re.findall(r"::loadu\(", src)) + len(re.findall(r"=\s*in_ptr\d+\[", src))
        stores = len(re.findall(r"\.store\(\s*out_ptr", src)) + len(re.findall(r"\bout_ptr\d+\[[^\]]*\]\s*=", src))
    return KernelSummary(name, code.kernel_language, numel, loads, stores)


def inductor_vec_isa() -> str:
    """The SIMD instruction set Inductor's C++ backend writes for on this CPU ("avx2", "avx512", "neon", ... or "none") (ch02).

    Uses ``torch._inductor.cpu_vec_isa.pick_vec_isa`` (it compiles a small probe per candidate once per process).
    """
    isa = private("torch._inductor.cpu_vec_isa.pick_vec_isa")()
    return str(isa) if isa else "none"

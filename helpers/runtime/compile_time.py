"""Where compile time goes: Dynamo's per-phase compile timers read as plain data (ch02; Part 4)."""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..core.private import private
from ..dynamo.state import Explanation, _explanation, _run_explain


@dataclass
class CompileTimes:
    """Seconds Dynamo's ``dynamo_timed`` timers recorded while a ``compile_times()`` block ran, by key (ch02).

    The keys are torch's own (``bytecode_tracing``, ``build_guards``, ``_compile.compile_inner``, ...); a
    timer that did not run reads 0. Nested timers overlap: ``stations()`` splits them into disjoint parts.
    """

    seconds: dict = field(default_factory=dict)

    def __getitem__(self, key: str) -> float:
        return self.seconds.get(key, 0.0)

    def _ending(self, suffix: str) -> float:
        return sum(v for k, v in self.seconds.items() if k.endswith(suffix))

    def compiler_seconds(self) -> float:
        """Time in the kernel compilers: g++ runs (``compile_file``) on CPU, else Triton's compile/wait timers."""
        if self["compile_file"]:
            return self["compile_file"]
        return self["async_compile.precompile"] + self["async_compile.wait"]

    def stations(self, total: float | None = None) -> dict[str, float]:
        """Disjoint seconds per station of one first call (nested timers subtracted); ``total`` adds what came after.

        Dynamo = ``_compile.compile_inner`` minus the backend call (split into bytecode tracing, guard
        building and the rest); AOTAutograd = ``create_aot_dispatcher_function`` minus Inductor's forward
        compiler; Inductor = the rest of the backend call, minus the kernel compilers; then the compilers.
        """
        inner, backend = self["_compile.compile_inner"], self["OutputGraph.call_user_compiler"]
        aot, fw = self["create_aot_dispatcher_function"], self._ending("fw_compiler_base")
        compilers = min(self.compiler_seconds(), fw) if fw else self.compiler_seconds()
        trace, guards = self["bytecode_tracing"], self["build_guards"]
        out = {
            "Dynamo: trace bytecode": trace,
            "Dynamo: build guards": guards,
            "Dynamo: the rest": max(inner - backend - trace - guards, 0.0),
            "AOTAutograd": max(aot - fw, 0.0),
            "Inductor: lower, schedule, write code": max(backend - aot, 0.0) + max(fw - compilers, 0.0),
            "kernel compiler (C++ or Triton)": compilers,
        }
        if total is not None:
            out["after compiling: wrappers, first run"] = max(total - inner, 0.0)
        return out

    def dynamo_seconds(self) -> float:
        """Dynamo's own part of the compile: ``_compile.compile_inner`` minus the backend call."""
        return max(self["_compile.compile_inner"] - self["OutputGraph.call_user_compiler"], 0.0)


@contextmanager
def compile_times():
    """Collect what Dynamo's compile-time timers record inside the block into a ``CompileTimes`` (ch02).

    Reads ``torch._dynamo.utils.compilation_time_metrics`` (what ``torch._dynamo.utils.compile_times()``
    prints), keeping only entries added during the block; a ``torch._dynamo.reset()`` inside the block
    (which clears the table) is handled.
    """
    metrics = private("torch._dynamo.utils.compilation_time_metrics")
    before = {k: (v, len(v)) for k, v in metrics.items()}
    result = CompileTimes()
    try:
        yield result
    finally:
        for key, values in metrics.items():
            old, n = before.get(key, (None, 0))
            new = values[n:] if values is old else values
            if new:
                result.seconds[key] = float(sum(new))


def explain_with_times(fn, *args, **kwargs) -> tuple[Explanation, CompileTimes]:
    """``explain`` plus the compile-time table it prints (Dynamo's timers for that run alone) (ch02).

    ``torch._dynamo.explain`` resets Dynamo when it finishes, which clears the timers, so they are
    read from its ``compile_times`` text (what the series quoted: ``_compile.compile_inner``,
    ``bytecode_tracing``, ``build_guards``).
    """
    out = _run_explain(fn, *args, **kwargs)
    times = CompileTimes()
    for line in str(getattr(out, "compile_times", "") or "").splitlines():
        # "name  0.1, 0.2" with tabulate installed, "name, 0.1, 0.2" without (torch's fallback)
        m = re.match(r"^([^\s,]+)[,\s]+([0-9][0-9.,\se+-]*)$", line.strip())
        if m:
            try:
                times.seconds[m.group(1)] = sum(float(v) for v in m.group(2).split(",") if v.strip())
            except ValueError:
                continue
    return _explanation(out), times

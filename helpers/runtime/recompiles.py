"""Recompile explosions, the practitioner's view: count graphs per case, read the reasons, cure (ch26).

Builds on chapter 6 (guards, ``recompile_log``) and chapter 11 (``mark_dynamic``, ``mark_unbacked``): it
imports their helpers. Private torch names (``torch._dynamo.utils.counters``,
``torch._dynamo.convert_frame.register_bytecode_hook``) go through ``helpers.core.private.private``; both
exist on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..core.private import private
from ..dynamo.guards import recompile_log
from ..dynamo.state import clear_compile_state

#: Root-cause classes of a guard failure, in the order ``classify`` tries them, with their cure (ch26).
CURES = {
    "rank": "normalise the rank before the call (reshape/flatten to one rank)",
    "0/1 size": "mark_unbacked the dimension, or keep sizes 0 and 1 out of the compiled call",
    "shape": "mark_dynamic(t, dim) or dynamic=True (or let automatic dynamic do it after one recompile)",
    "global state": "nothing: a few entries (grad on/off), bounded and harmless",
    "identity": "define the function once, at module level, and pass data, not functions",
    "constant": "pass the changing number as a tensor (or an argument, so it can become dynamic)",
    "other": "read the guard: it names what changed",
}


def classify(reason: str) -> str:
    """The root cause a recompile reason line names: rank, 0/1 size, shape, global state, identity, constant (ch26)."""
    r = reason.split("#")[0]
    if "rank mismatch" in r:
        return "rank"
    if "2 <=" in r or "<= 1" in r or "== 1" in r and ".size()" in r:
        return "0/1 size"
    if "size mismatch" in r or "stride mismatch" in r or ".size()" in r:
        return "shape"
    if "GLOBAL_STATE" in r:
        return "global state"
    if "check_obj_id" in r or "ID_MATCH" in r:
        return "identity"
    if "==" in r:
        return "constant"
    return "other"


def unique_graphs() -> int:
    """Dynamo's count of graphs compiled since the last reset (``counters["stats"]["unique_graphs"]``) (ch26)."""
    return int(private("torch._dynamo.utils.counters")["stats"]["unique_graphs"])


@dataclass
class Case:
    """One recompile case: graphs compiled, recompile messages, reasons, and whether the limit was hit (ch26)."""

    name: str
    graphs: int
    recompiles: int
    reasons: list[list[str]] = field(default_factory=list)  # per recompile: "id: reason" lines, newest entry first
    limit_hit: bool = False
    warnings: list[str] = field(default_factory=list)
    results: list = field(default_factory=list)

    @property
    def first_reasons(self) -> list[str]:
        """The newest entry's reason of each recompile, without its ``0/k:`` id."""
        return [r[0].split(": ", 1)[1] for r in self.reasons if r]


def run_case(name: str, calls) -> Case:
    """Forget compiled code and counters, run the thunks ``calls``, and count what compiled and why (ch26).

    Each thunk calls a ``torch.compile``'d function; the recompile log and the limit warning are
    collected, not printed.
    """
    clear_compile_state()
    private("torch._dynamo.utils.counters").clear()
    results = []
    with recompile_log() as log:
        for call in calls:
            results.append(call())
    return Case(name, unique_graphs(), log.count, [log.reasons(i) for i in range(log.count)], log.limit_hit,
                log.warnings, results)


@dataclass
class Step:
    """One call of a timeline: seconds, and whether Dynamo converted a frame (compiled) during it (ch26)."""

    seconds: float
    compiled: bool


def timeline(calls) -> list[Step]:
    """Run the thunks one by one from a clean state; time each call and note whether it compiled (ch26)."""
    register = private("torch._dynamo.convert_frame.register_bytecode_hook")
    clear_compile_state()
    converted: list[str] = []
    handle = register(lambda old, new: converted.append(old.co_name))
    steps = []
    try:
        with recompile_log():  # the limit warning is the chapter's to show, not stderr's
            for call in calls:
                before = len(converted)
                t0 = time.perf_counter()
                call()
                steps.append(Step(time.perf_counter() - t0, len(converted) > before))
    finally:
        handle.remove()
    return steps


def fail_on_recompile(first, second) -> str:
    """Call ``first()`` normally, then ``second()`` under ``set_stance("fail_on_recompile")``; the error's class or "none" (ch26)."""
    import torch

    clear_compile_state()
    first()
    try:
        with torch.compiler.set_stance("fail_on_recompile"):
            second()
    except Exception as exc:  # noqa: BLE001 - the class name is the lesson
        return type(exc).__name__
    return "none"

"""The compile bet: after how many calls compiling has paid for itself (chapters 2, 24, 26 and 30; triage).

Compiling costs a one-off price (the first call's compile, plus one more compile per recompile) and then
saves ``eager - compiled`` seconds on every call. The bet is won after the first call count at which the
compiled total is no longer than the eager total:

    compile_s + recompiles * recompile_s + n * compiled_s  <=  n * eager_s
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CompileBet:
    """One function's compile bet, all times in seconds (per call for ``eager_s`` and ``compiled_s``).

    ``recompile_s`` is the price of one recompile; it defaults to ``compile_s`` (a recompile runs the
    whole stack again, unless a cache layer of chapter 24 serves part of it).
    """

    compile_s: float
    eager_s: float
    compiled_s: float
    recompiles: int = 0
    recompile_s: float | None = None

    def __post_init__(self):
        for name in ("compile_s", "eager_s", "compiled_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be a time in seconds >= 0, not {getattr(self, name)!r}")
        if self.recompiles < 0 or (self.recompile_s is not None and not self.recompile_s >= 0):
            raise ValueError("recompiles and recompile_s must be >= 0")

    @property
    def upfront_s(self) -> float:
        """What compiling costs before any saving: the first compile and every expected recompile."""
        per = self.compile_s if self.recompile_s is None else self.recompile_s
        return self.compile_s + self.recompiles * per

    @property
    def saving_per_call_s(self) -> float:
        """Seconds each compiled call saves over eager (negative when the compiled call is slower)."""
        return self.eager_s - self.compiled_s

    def break_even_calls(self) -> float:
        """The smallest whole number of calls after which compiling has paid off; ``math.inf`` if never."""
        if self.upfront_s == 0:
            return 0 if self.saving_per_call_s >= 0 else math.inf
        if self.saving_per_call_s <= 0:
            return math.inf
        return math.ceil(self.upfront_s / self.saving_per_call_s)

    def net_saving_s(self, calls: int) -> float:
        """Seconds saved (negative: lost) by compiling, over ``calls`` calls."""
        return calls * self.saving_per_call_s - self.upfront_s

    def verdict(self, calls: int | None = None) -> str:
        """One line a reader can act on: when the bet pays off, and (given ``calls``) whether it does here."""
        n = self.break_even_calls()
        if n == math.inf:
            line = "compiling never pays off: the compiled call is not faster than eager"
        else:
            line = f"compiling pays off after {n:,} calls"
        if calls is not None:
            net = self.net_saving_s(calls)
            line += f"; over {calls:,} calls it {'saves' if net >= 0 else 'loses'} {abs(net):.3g} s"
        return line

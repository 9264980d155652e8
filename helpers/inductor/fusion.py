"""What fuses and what walls stop it: eight small functions (cases A-H) compiled once each, with the
scheduler's decisions, the kernels they became and the bytes each schedule moves (ch20).

The compiling and the reading of the scheduler are ``helpers.inductor.scheduler.schedule`` (ch19); the
bytes-moved model of eager execution is ``helpers.inductor.traffic`` (ch02). This module only adds the
cases and the checks of chapter 20's exercises; it reaches no private torch name itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch  # the cases below are plain torch code, printed by the chapter as they are written

from ..core.exercises import equal
from .scheduler import Schedule, schedule
from .traffic import pointwise_traffic


def _a(x):
    return torch.sin(torch.relu(x + 1) * 2)


def _b(x):
    return torch.relu(x + 1).sum(1)


def _c(x):
    e = torch.exp(x - x.amax(1, keepdim=True))
    return e / e.sum(1, keepdim=True)


def _d(x):
    return torch.relu(x - x.mean())


def _e(x):
    return x.amax(1), x.sum(1)


def _f(a, b):
    return torch.relu(a + 1), torch.sin(b * 2)


def _g(x, w):
    return torch.relu((x + 1) @ w)


def _h(x):
    y = torch.sin(torch.relu(x + 1) * 2)
    return torch.relu(y - y.mean())


@dataclass
class Case:
    """One fusion experiment: its label, the function, and how to make its inputs at size n (ch20)."""

    key: str
    label: str
    fn: object
    shapes: str  # "square" (one n×n), "two_vectors" (two n-vectors), "matmul" (two 256×256)

    def inputs(self, n: int, device: str):
        gen = torch.Generator().manual_seed(0)
        make = lambda *s: torch.randn(*s, generator=gen).to(device)  # noqa: E731
        if self.shapes == "two_vectors":
            return (make(n), make(n))
        if self.shapes == "matmul":
            return (make(256, 256), make(256, 256))
        return (make(n, n),)


CASES = {c.key: c for c in [
    Case("A", "sin(relu(x+1)*2)", _a, "square"),
    Case("B", "relu(x+1).sum(1)", _b, "square"),
    Case("C", "softmax by hand: exp(x-amax) / sum, per row", _c, "square"),
    Case("D", "relu(x - x.mean())", _d, "square"),
    Case("E", "x.amax(1), x.sum(1)", _e, "square"),
    Case("F", "relu(a+1), sin(b*2)  (a, b vectors)", _f, "two_vectors"),
    Case("G", "relu((x+1) @ w), 256×256", _g, "matmul"),
    Case("H", "y = sin(relu(x+1)*2); relu(y - y.mean())", _h, "square"),
]}


def run_case(key: str, device: str = "cpu", n: int = 1024) -> Schedule:
    """Compile case ``key`` (A-H) once on ``device`` at size ``n`` and return its ``Schedule`` (ch20)."""
    case = CASES[key]
    return schedule(case.fn, *case.inputs(n, device))


def eager_bytes(key: str, n: int = 1024) -> int:
    """Bytes eager PyTorch moves for case ``key``: every op reads its inputs and writes its output (ch20)."""
    case = CASES[key]
    return pointwise_traffic(case.fn, *case.inputs(n, "cpu")).eager


def ideal_bytes(key: str, n: int = 1024) -> int:
    """Bytes of one perfect kernel for case ``key``: its inputs read once, its outputs written once (ch20)."""
    case = CASES[key]
    return pointwise_traffic(case.fn, *case.inputs(n, "cpu")).fused


def row(key: str, s: Schedule) -> str:
    """One printable line: pre-fusion nodes, fusions, rounds, kernels and loop nests or launches (ch20)."""
    unit = "nests" if s.language == "c++" else "launches"
    extern = f" + {s.extern_calls} extern" if s.extern_calls else ""
    return (f"{key}  {CASES[key].label:<42} nodes {len(s.pre)} -> {len(s.post)}  fusions {len(s.fusions)}"
            f" in {s.rounds} round(s)  {unit} {s.kernel_count}{extern}  kernels {', '.join(s.kernels)}")


def nest_prediction(answer, runs: dict) -> object:
    """Compare a reader's predicted counts for A-H (a dict or a list of 8) with the runs' (ch20 exercise).

    Returns None while unanswered, the measured list when the answer matches, else a sentence.
    """
    if answer is None:
        return None
    want = [runs[k].kernel_count for k in CASES]
    got = [answer[k] for k in CASES] if isinstance(answer, dict) else list(answer)
    if len(got) != len(want):
        return f"give 8 counts, A to H; got {len(got)}"
    wrong = [k for k, g, w in zip(CASES, got, want) if not equal(g, w, tol=0)]
    return want if not wrong else f"cases {', '.join(wrong)} differ from the run"


def _p(x):
    return torch.relu(x * 2).amax(1)


def _q(x):
    return x / x.sum(1, keepdim=True)


def _r(x):
    return torch.sigmoid(x) - torch.sigmoid(x).sum()


def _s(x):
    return x.sum(0), x.sum(1)


def _t(x):
    return (x @ x).sum(1)


def _u(x):
    return torch.abs(x), torch.cos(x) + 1


# Exercise 20.1's functions: none of them is printed with its result in the chapter (ch20)
PREDICT = {"P": _p, "Q": _q, "R": _r, "S": _s, "T": _t, "U": _u}


def predicted_nests(answer, n: int = 256):
    """Compile exercise 20.1's functions P-U on a CPU (n×n inputs) and compare the reader's loop-nest counts (ch20).

    Returns None while unanswered, the measured list when the answer matches, else a sentence naming the
    functions whose count differs.
    """
    if answer is None:
        return None
    want = measured_nests(n)
    got = [answer[k] for k in PREDICT] if isinstance(answer, dict) else list(answer)
    if len(got) != len(want):
        return f"give {len(want)} counts, {', '.join(PREDICT)}; got {len(got)}"
    wrong = [k for k, g, w in zip(PREDICT, got, want) if not equal(g, w, tol=0)]
    return want if not wrong else f"{', '.join(wrong)} differ from the compiled code"


def measured_nests(n: int = 256) -> list[int]:
    """The C++ loop nests of exercise 20.1's functions P-U, compiled on a CPU (n×n inputs): what the check compares
    a reader's counts with, measured on this machine rather than written down (ch20)."""
    x = torch.randn(n, n)
    return [schedule(fn, x).loop_nests for fn in PREDICT.values()]


def rowwise_check(fn, n: int = 256, device: str = "cpu"):
    """Compile a reader's version of case D; return ``(right, units of work, pre-fusion nodes)`` (ch20 exercise).

    ``right`` says whether it computes ``relu(x - x.mean(dim=1, keepdim=True))``. None while ``fn`` is None.
    """
    if fn is None:
        return None
    x = torch.randn(n, n, device=device)
    s = schedule(fn, x)
    right = bool(torch.allclose(fn(x), torch.relu(x - x.mean(dim=1, keepdim=True)), atol=1e-5))
    return right, s.kernel_count, len(s.pre)

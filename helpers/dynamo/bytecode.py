"""Bytecode listings: the instructions CPython runs for a function (ch03; used again in ch04, ch05, ch09, ch10)."""
from __future__ import annotations

import dis
import re
import sys
from dataclasses import dataclass


def python_minor() -> str:
    """The running Python as "3.12" (bytecode is a property of the Python version) (ch03)."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


#: Bookkeeping instructions that do no work of the function's own (frame setup, inline caches).
BOOKKEEPING = ("RESUME", "CACHE", "COPY_FREE_VARS", "MAKE_CELL", "NOP", "EXTENDED_ARG")


@dataclass(frozen=True)
class Ins:
    """One bytecode instruction as ``dis`` shows it (cache entries left out) (ch03)."""

    offset: int
    opname: str
    argval: object
    argrepr: str
    arg: int | None = None

    def __str__(self) -> str:
        shown = self.argrepr
        if not shown and self.arg is not None and self.opname.startswith(("BUILD_", "UNPACK_", "SWAP", "COPY")):
            shown = str(self.arg)
        return f"{self.offset:4d} {self.opname:<22} {shown}".rstrip()


def _short(argrepr: str) -> str:
    """Shorten Dynamo's long generated names (``__compiled_fn_1_<uuid>`` → ``__compiled_fn_1_…``)."""
    return re.sub(r"(__compiled_fn_\d+)_[0-9a-f_]{20,}", r"\1_…", argrepr)


def instructions(code, *, bookkeeping: bool = True) -> list[Ins]:
    """The instructions of ``code`` as ``dis`` lists them; ``bookkeeping=False`` leaves out RESUME & co. (ch03)."""
    code = getattr(code, "__code__", code)
    return [Ins(i.offset, i.opname, i.argval, _short(i.argrepr), i.arg) for i in dis.get_instructions(code)
            if bookkeeping or i.opname not in BOOKKEEPING]


def listing(code, *, bookkeeping: bool = True, start: int = 0, stop: int | None = None) -> str:
    """A ``dis`` listing with byte offsets, instructions ``start:stop`` of ``instructions(code)`` (ch03)."""
    ins = instructions(code, bookkeeping=bookkeeping)
    lines = [str(i) for i in ins[start:stop]]
    if start > 0:
        lines.insert(0, f"     … {start} instructions above not shown")
    if stop is not None and stop < len(ins):
        lines.append(f"     … {len(ins) - stop} more instructions not shown")
    return "\n".join(lines)

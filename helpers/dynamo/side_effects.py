"""Chapter 7, side effects: the bytecode Dynamo installs after the graph call to replay attribute writes,
list appends and other mutations it deferred while tracing.
"""
from __future__ import annotations

import dis


def replay_instructions(code) -> list[dis.Instruction]:
    """The instructions after the compiled graph's call: unpacking outputs and replaying side effects (ch07)."""
    instrs = list(dis.get_instructions(code))
    start = 0
    for i, ins in enumerate(instrs):
        if ins.opname.startswith("STORE") and str(ins.argval).startswith("graph_out"):
            start = i + 1
            break
    return instrs[start:]


def show_instructions(instrs, width: int = 72) -> str:
    """A compact listing of instructions: ``OPNAME  argument``, one per line (ch07)."""
    lines = []
    for ins in instrs:
        arg = "" if ins.arg is None else repr(ins.argval) if isinstance(ins.argval, str) else str(ins.argrepr or ins.argval)
        if "__compiled_fn" in arg:
            arg = "'__compiled_fn_…'"
        lines.append(f"  {ins.opname:<22} {arg}"[:width].rstrip())
    return "\n".join(lines)


def attribute_writes(code, name: str) -> int:
    """How many times ``code`` writes attribute ``name`` (``STORE_ATTR name`` or a setattr call with ``'name'``) (ch07)."""
    count = 0
    for ins in dis.get_instructions(code):
        if ins.opname == "STORE_ATTR" and ins.argval == name:
            count += 1
        elif ins.opname == "LOAD_CONST" and ins.argval == name:
            count += 1
    return count


def attribute_setter(code, name: str) -> str:
    """How ``code`` writes attribute ``name``: ``object_setattr_ignore_descriptor``, ``object.__setattr__``,
    ``STORE_ATTR``, or ``none`` (ch07)."""
    instrs = list(dis.get_instructions(code))
    if not any((i.opname == "LOAD_CONST" and i.argval == name) or (i.opname == "STORE_ATTR" and i.argval == name)
               for i in instrs):
        return "none"
    if any(i.opname == "STORE_ATTR" and i.argval == name for i in instrs):
        return "STORE_ATTR"
    names = {i.argval for i in instrs if isinstance(i.argval, str)}
    if "object_setattr_ignore_descriptor" in names:
        return "object_setattr_ignore_descriptor"
    if "__setattr__" in names:
        return "object.__setattr__"
    return "setattr"


def opnames(code) -> list[str]:
    """The sequence of opcode names of ``code``, arguments dropped, to compare the shape of two codes (ch07)."""
    return [ins.opname for ins in dis.get_instructions(code)]


def mentions(code, name: str) -> bool:
    """Whether any instruction of ``code`` loads or names ``name`` (global, attribute, method, constant) (ch07)."""
    return any(isinstance(ins.argval, str) and ins.argval == name for ins in dis.get_instructions(code))

"""Look at the bytecode Dynamo writes: original vs rewritten code objects, roles, jumps (ch09).

Every private torch access of chapter 9 goes through ``helpers.core.private.private`` in this module:
``torch._dynamo.convert_frame.register_bytecode_hook`` and ``torch._dynamo.bytecode_transformation``;
the profiler-marker flag ``record_runtime_overhead`` is switched through ``helpers.dynamo.config``.
Listings come from ``helpers.dynamo.bytecode.instructions``. Everything works on torch 2.11, 2.13 and 2.15; bytecode
itself depends on the CPython version, which is why instruction counts are checked with
``helpers.exact_by_python``.
"""
from __future__ import annotations

import contextlib
import dis
import types
from dataclasses import dataclass, field

from ..core.private import private, private_step
from ..core.text import columns
from .bytecode import Ins, instructions
from .config import dynamo_config, has_setting
from .state import clear_compile_state


def side_by_side(left, right, titles=("original", "rewritten"), width: int = 44) -> str:
    """Two ``dis`` listings in columns, left and right (ch09)."""
    return columns([str(i) for i in instructions(left)], [str(i) for i in instructions(right)], titles, width)


@dataclass
class Rewrite:
    """One frame Dynamo converted: the code CPython had, and the code Dynamo gave it instead."""

    name: str
    original: types.CodeType
    modified: types.CodeType

    @property
    def sizes(self) -> tuple[int, int]:
        return len(instructions(self.original)), len(instructions(self.modified))


@dataclass
class Rewrites:
    """Every frame converted while running one compiled call, in order."""

    frames: list[Rewrite] = field(default_factory=list)

    def __getitem__(self, i: int) -> Rewrite:
        return self.frames[i]

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.frames]


def capture_rewrites(fn, *args, backend="eager", markers: bool = True, **compile_kwargs):
    """Compile ``fn``, call it once, and return ``(result, Rewrites)`` with every converted frame (ch09).

    Uses Dynamo's bytecode hook (``torch._dynamo.convert_frame.register_bytecode_hook``), which sees
    the original and the new code object of each frame Dynamo converts. ``markers=False`` compiles
    without the profiler markers (``config.record_runtime_overhead``) that recent torch wraps around
    the graph inputs, leaving the core of the rewritten code.
    """
    import torch

    register = private("torch._dynamo.convert_frame.register_bytecode_hook")
    clear_compile_state()
    seen = Rewrites()

    def hook(old, new):
        seen.frames.append(Rewrite(old.co_name, old, new))

    handle = register(hook)
    no_markers = not markers and has_setting("record_runtime_overhead")
    try:
        with dynamo_config(record_runtime_overhead=False) if no_markers else contextlib.nullcontext():
            result = torch.compile(fn, backend=backend, **compile_kwargs)(*args)
    finally:
        handle.remove()
    return result, seen


ROLES = ("prologue", "load graph", "push inputs", "call graph", "unpack outputs",
         "rebuild values", "frame-state lists", "return")


_BOOKKEEPING = {"BUILD_LIST", "LIST_EXTEND", "SWAP", "POP_TOP", "COPY"}


def roles(code) -> list[tuple[Ins, str]]:
    """Label each instruction of a rewritten code object (no graph break) with its job (ch09).

    The jobs, in the order they appear: prologue, load graph (the ``__compiled_fn`` global), push
    inputs, call graph, unpack outputs (``graph_out_0[i]``), rebuild values (sources, constants,
    containers, side-effect replay), frame-state lists (the stack/locals lists recent torch builds
    for nested graph breaks) and return. A heuristic for the simple functions of chapter 9.
    """
    ins = instructions(code)
    out: list[tuple[Ins, str]] = []
    called = False
    for k, i in enumerate(ins):
        prev = ins[k - 1] if k >= 1 else None
        prev2 = ins[k - 2] if k >= 2 else None
        if i.opname in ("RESUME", "COPY_FREE_VARS", "MAKE_CELL", "NOP"):
            role = "prologue"
        elif i.opname == "LOAD_GLOBAL" and str(i.argval).startswith("__compiled_fn"):
            role = "load graph"
        elif not called:
            if i.opname in ("PRECALL", "CALL", "CALL_FUNCTION", "CALL_FUNCTION_EX"):
                role = "call graph"
                called = i.opname != "PRECALL"
            else:
                role = "push inputs"
        elif str(i.argval).startswith("graph_out"):
            role = "unpack outputs"
        elif prev and str(prev.argval).startswith("graph_out") and prev.opname == "LOAD_FAST":
            role = "unpack outputs"
        elif (i.opname == "BINARY_SUBSCR" and prev2 is not None and prev2.opname == "LOAD_FAST"
              and str(prev2.argval).startswith("graph_out")):
            role = "unpack outputs"
        elif i.opname in ("RETURN_VALUE", "RETURN_CONST"):
            role = "return"
        elif i.opname in _BOOKKEEPING:
            role = "frame-state lists"
        else:
            role = "rebuild values"
        out.append((i, role))
    return out


def role_counts(code) -> dict[str, int]:
    """How many instructions of ``code`` do each job of ``roles`` (every role present, maybe 0) (ch09)."""
    counts = dict.fromkeys(ROLES, 0)
    for _, role in roles(code):
        counts[role] += 1
    return counts


def role_listing(code) -> str:
    """A ``dis`` listing with each instruction's job in a right-hand column (ch09)."""
    return "\n".join(f"{str(i):<60} {role}" for i, role in roles(code))


@dataclass(frozen=True)
class Jump:
    """A jump in Dynamo's editable instruction list: where it is and which instruction it targets."""

    index: int
    opname: str
    target_index: int
    target_opname: str
    target_offset: int | None


def cleaned(fn) -> list:
    """Dynamo's editable ``Instruction`` objects for ``fn`` (``bytecode_transformation.cleaned_instructions``) (ch09)."""
    code = getattr(fn, "__code__", fn)
    return list(private("torch._dynamo.bytecode_transformation.cleaned_instructions")(code))


def cleaned_listing(fn) -> str:
    """One line per ``Instruction`` object, showing jumps as references to their target instruction (ch09)."""
    ins = cleaned(fn)
    lines = []
    for k, i in enumerate(ins):
        arg = "" if i.argval is None and i.opname.startswith(("RESUME", "RETURN")) else repr(i.argval)
        if getattr(i, "target", None) is not None:
            t = i.target
            arg = f"→ the {t.opname} instruction object (at original offset {t.offset})"
        lines.append(f"{k:2d} {i.opname:<26} {arg}")
    return "\n".join(lines)


def jumps(fn) -> list[Jump]:
    """The jumps of ``fn`` in Dynamo's instruction list, each with its target instruction (ch09)."""
    ins = cleaned(fn)
    index = {id(i): k for k, i in enumerate(ins)}
    out = []
    for k, i in enumerate(ins):
        t = getattr(i, "target", None)
        if t is not None:
            out.append(Jump(k, i.opname, index[id(t)], t.opname, t.offset))
    return out


@private_step("bytecode_transformation.transform_code_object and create_instruction")
def insert_nops(fn, count: int) -> types.CodeType:
    """Round-trip ``fn``'s code through ``transform_code_object``, inserting ``count`` NOPs after RESUME (ch09).

    The jumps are re-resolved at assembly, so their targets move with the code.
    """
    transform = private("torch._dynamo.bytecode_transformation.transform_code_object")
    create = private("torch._dynamo.bytecode_transformation.create_instruction")

    def edit(ins, code_options):
        at = next((k + 1 for k, i in enumerate(ins) if i.opname == "RESUME"), 0)
        for _ in range(count):
            ins.insert(at, create("NOP"))

    out = transform(getattr(fn, "__code__", fn), edit)
    return out[0] if isinstance(out, tuple) else out


def first_jump_target(code) -> int:
    """Byte offset that the first jump of ``code`` lands on, as ``dis`` resolves it (ch09)."""
    for i in dis.get_instructions(getattr(code, "__code__", code)):
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            return int(i.argval)
    raise ValueError("no jump in this code object")


def synthetic(n_inputs: int, n_outputs: int, *, source_file: bool = True):
    """A function of ``n_inputs`` tensors returning ``n_outputs`` tensors computed from their sum (ch09).

    The function is built with ``exec``. With ``source_file`` (the default) its source is registered
    with ``linecache`` under its pseudo file name, so ``inspect.getsource`` finds it and every torch
    traces it directly; without, it has no source file, which torch 2.11's ``torch.compile`` answers
    by wrapping it in an ``inner(*args, **kwargs)`` frame (torch 2.13 traces it directly).
    """
    import linecache

    args = ", ".join(f"x{i}" for i in range(n_inputs))
    total = " + ".join(f"x{i}" for i in range(n_inputs))
    outs = ", ".join(f"s * {k + 1}" for k in range(n_outputs))
    src = f"def fn({args}):\n    s = {total}\n    return ({outs},)\n"
    filename = f"<synthetic {n_inputs} in, {n_outputs} out{'' if source_file else ', no source'}>"
    if source_file:  # mtime None: linecache.checkcache keeps the entry although no such file exists
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(src, filename, "exec"), namespace)
    fn = namespace["fn"]
    fn.source = src
    return fn


def via_args(fn):
    """``fn`` behind a ``def call(*args): return fn(*args)`` frame, so its inputs arrive as ``args[i]`` (ch09)."""

    def call(*args):
        return fn(*args)

    call.source = getattr(fn, "source", None)
    return call


def graph_outputs(gm) -> list:
    """The values an FX graph returns (the arguments of its output node), as a flat list (ch09)."""
    node = next(n for n in gm.graph.nodes if n.op == "output")
    out = node.args[0]
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _positioned(i) -> bool:
    """Whether the line table gives an instruction a source position of its own (a column, not only a line)."""
    positions = getattr(i, "positions", None)
    return positions is not None and positions.col_offset is not None


@dataclass
class ResumeParts:
    """A resume function's code split at its prologue's jump: prologue, skipped copy, live rest (ch09)."""

    prologue: list
    dead: list
    live: list
    dead_lines: list[int]  # the distinct source lines the line table reports for the skipped copy
    dead_positioned: int  # skipped instructions that keep a source position (column) of their own
    live_positioned: int  # the same for the instructions from the jump target on
    first_line: int  # the resume function's co_firstlineno: the line of the break


def resume_parts(code) -> ResumeParts:
    """Split a resume function's code at the prologue's first jump and its target (ch09).

    ``dead`` are the instructions the jump skips (the copy of the original body before the break),
    ``live`` the ones from the jump target on. Uses ``dis`` only.
    """
    code = getattr(code, "__code__", code)
    ins = list(dis.get_instructions(code))
    k = next(k for k, i in enumerate(ins) if i.opname.startswith("JUMP"))
    t = next(j for j, i in enumerate(ins) if i.offset == ins[k].argval)
    short = [Ins(i.offset, i.opname, i.argval, i.argrepr, i.arg) for i in ins]
    dead = ins[k + 1:t]
    lines = sorted({i.positions.lineno for i in dead if getattr(i, "positions", None) and i.positions.lineno})
    return ResumeParts(short[:k + 1], short[k + 1:t], short[t:], lines,
                       sum(_positioned(i) for i in dead), sum(_positioned(i) for i in ins[t:]),
                       code.co_firstlineno)


def exception_entries(code) -> list[tuple[int, int, int, int]]:
    """The exception table of ``code`` as ``(start, end, target, depth)`` byte offsets (Python 3.11+) (ch09)."""
    code = getattr(code, "__code__", code)
    entries = getattr(dis.Bytecode(code), "exception_entries", [])
    return [(e.start, e.end, e.target, e.depth) for e in entries]


def virtual_exception_table(fn) -> list[tuple[int, int, int, str]]:
    """Dynamo's virtualised exception table of ``fn``: ``(first, last, handler)`` instruction indices (ch09).

    ``cleaned_instructions`` replaces each byte range of the table with references to instruction
    objects (``virtualize_exception_table``); this lists each distinct entry once, with the handler's
    opname.
    """
    ins = cleaned(fn)
    index = {id(i): k for k, i in enumerate(ins)}
    seen: list[tuple[int, int, int, str]] = []
    for i in ins:
        e = getattr(i, "exn_tab_entry", None)
        if e is None:
            continue
        row = (index[id(e.start)], index[id(e.end)], index[id(e.target)], e.target.opname)
        if row not in seen:
            seen.append(row)
    return seen


@dataclass
class Stretched:
    """A code object whose first jump was stretched with NOPs, and how assembly coped (ch09)."""

    code: types.CodeType
    nops: int
    instructions: int  # as dis lists them, EXTENDED_ARG included
    extended_args: int
    jump_arg: int
    passes: int  # rounds of the offsets / jumps / EXTENDED_ARG loop in clean_and_assemble_instructions
    last_offset: int


@private_step("bytecode_transformation.transform_code_object, create_instruction and fix_extended_args")
def stretch_jump(fn, nops: int) -> Stretched:
    """Insert ``nops`` NOPs right after ``fn``'s first jump, so the jump must reach further, and reassemble (ch09).

    Counts the rounds of Dynamo's assembly loop (``update_offsets``, ``devirtualize_jumps``,
    ``fix_extended_args``, repeated until ``fix_extended_args`` adds nothing) by wrapping
    ``fix_extended_args`` for the duration of the call.
    """
    import importlib

    private("torch._dynamo.bytecode_transformation.fix_extended_args")  # a CourseError if it moved
    module = importlib.import_module("torch._dynamo.bytecode_transformation")
    transform = private("torch._dynamo.bytecode_transformation.transform_code_object")
    create = private("torch._dynamo.bytecode_transformation.create_instruction")
    original = module.fix_extended_args
    rounds: list[int] = []

    def counting(instructions):
        added = original(instructions)
        rounds.append(added)
        return added

    def edit(ins, code_options):
        k = next(k for k, i in enumerate(ins) if getattr(i, "target", None) is not None)
        for _ in range(nops):
            ins.insert(k + 1, create("NOP"))

    module.fix_extended_args = counting
    try:
        out = transform(getattr(fn, "__code__", fn), edit)
    finally:
        module.fix_extended_args = original
    code = out[0] if isinstance(out, tuple) else out
    ins = list(dis.get_instructions(code))
    jump = next(i for i in ins if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs)
    return Stretched(code, nops, len(ins), sum(i.opname == "EXTENDED_ARG" for i in ins), int(jump.arg),
                     len(rounds), ins[-1].offset)


def tempvar_stores(code) -> int:
    """How many ``STORE_FAST tmp_N`` a rewritten code object has: values pass 2 caches in a temporary (ch09)."""
    return sum(i.opname == "STORE_FAST" and str(i.argval).startswith("tmp_") for i in instructions(code))

"""Unit tests of helpers/dynamo/codegen.py."""
import inspect

import pytest
import torch

from helpers.dynamo.bytecode import instructions
from helpers.dynamo.codegen import (
    ROLES,
    capture_rewrites,
    cleaned,
    cleaned_listing,
    exception_entries,
    first_jump_target,
    graph_outputs,
    insert_nops,
    jumps,
    resume_parts,
    role_counts,
    role_listing,
    roles,
    side_by_side,
    stretch_jump,
    synthetic,
    tempvar_stores,
    via_args,
    virtual_exception_table,
)
from helpers.dynamo.config import has_setting
from helpers.dynamo.state import capture_graphs


def f(x, n):
    return x * n + 1


def choose(x):
    return 1 if x is None else 2


def g(x):
    x = x * 2
    print("mid")
    return x + 1


def choose_if(x):
    if x is None:
        return 1
    return 2


def guarded(x):
    try:
        return 1 / x
    except ZeroDivisionError:
        return 0.0


def test_side_by_side():
    ins = instructions(f)
    table = side_by_side(f, choose, titles=("a", "b"))
    assert table.splitlines()[0].startswith("a") and "b" in table.splitlines()[0]
    assert len(table.splitlines()) == 2 + max(len(ins), len(instructions(choose)))
    assert str(ins[1]) in table.splitlines()[3]


def test_capture_rewrites_sees_original_and_modified_code():
    x = torch.randn(4)
    out, rw = capture_rewrites(f, x, 3)
    assert torch.allclose(out, f(x, 3))
    assert rw.names == ["f"] and len(rw) == 1
    n_orig, n_mod = rw[0].sizes
    assert n_orig == len(instructions(f)) and n_mod > n_orig
    mod = instructions(rw[0].modified)
    assert any(str(i.argval).startswith("__compiled_fn") for i in mod)
    assert not any(i.opname == "BINARY_OP" for i in mod)  # the math moved into the graph


def test_markers_switch_changes_the_code():
    if not has_setting("record_runtime_overhead"):
        pytest.skip("this torch has no record_runtime_overhead flag")
    x = torch.randn(4)
    _, with_markers = capture_rewrites(f, x, 3)
    _, core = capture_rewrites(f, x, 3, markers=False)
    names = lambda code: {str(i.argval) for i in instructions(code)}  # noqa: E731
    assert "record_pregraph_bytecode_enter" in names(with_markers[0].modified)
    assert "record_pregraph_bytecode_enter" not in names(core[0].modified)
    assert len(instructions(core[0].modified)) < len(instructions(with_markers[0].modified))
    assert has_setting("record_runtime_overhead") and not has_setting("no_such_setting_anywhere")


def test_roles_of_the_core():
    _, core = capture_rewrites(f, torch.randn(4), 3, markers=False)
    labelled = roles(core[0].modified)
    assert labelled[0][1] == "prologue" and labelled[-1][1] == "return"
    assert labelled[1][1] == "load graph"
    counts = role_counts(core[0].modified)
    assert set(counts) == set(ROLES)
    assert counts["push inputs"] == 1 and counts["load graph"] == 1 and counts["unpack outputs"] == 5
    assert sum(counts.values()) == len(labelled)
    assert "load graph" in role_listing(core[0].modified)


def test_cleaned_and_jumps_reference_instruction_objects():
    ins = cleaned(choose)
    assert ins[0].opname == "RESUME"
    js = jumps(choose)
    assert js, "a conditional expression has at least one jump"
    for j in js:
        assert ins[j.target_index] is ins[j.index].target
        assert j.target_opname == ins[j.target_index].opname
    assert "instruction object" in cleaned_listing(choose)


def test_insert_nops_moves_jump_targets_by_two_bytes_each():
    base = first_jump_target(insert_nops(choose, 0))
    for k in (1, 4):
        code = insert_nops(choose, k)
        assert sum(i.opname == "NOP" for i in instructions(code)) == k
        assert first_jump_target(code) - base == 2 * k
    with pytest.raises(ValueError):
        first_jump_target(f)


def test_synthetic_and_graph_outputs():
    fn = synthetic(3, 2)
    a, b, c = torch.ones(2), torch.ones(2), torch.ones(2)
    out = fn(a, b, c)
    assert len(out) == 2 and torch.equal(out[1], 6 * torch.ones(2))
    assert "def fn(x0, x1, x2)" in fn.source
    _, g = capture_graphs(fn, a, b, c)
    assert len(graph_outputs(g.graphs[0])) == 2


def test_synthetic_source_file_decides_the_converted_frame():
    fn = synthetic(2, 1)
    assert inspect.getsource(fn) == fn.source  # registered with linecache
    bare = synthetic(2, 1, source_file=False)
    assert inspect.getsourcefile(bare) is None and torch.equal(bare(torch.ones(2), torch.ones(2))[0], 2 * torch.ones(2))
    a, b = torch.randn(3), torch.randn(3)
    _, rw = capture_rewrites(fn, a, b, markers=False)
    assert rw.names == ["fn"]
    pushed = [i for i, role in roles(rw[0].modified) if role == "push inputs"]
    assert [i.argval for i in pushed] == ["x0", "x1"]
    _, rw = capture_rewrites(bare, a, b, markers=False)
    assert rw.names[0] in ("fn", "inner")  # torch 2.11 wraps a function without a source file


def test_via_args_pushes_inputs_from_args():
    fn = via_args(synthetic(2, 1))
    a, b = torch.randn(3), torch.randn(3)
    out, rw = capture_rewrites(fn, a, b, markers=False)
    assert torch.allclose(out[0], a + b) and rw.names == ["call"]
    pushed = [i for i, role in roles(rw[0].modified) if role == "push inputs"]
    assert [i.opname for i in pushed].count("BINARY_SUBSCR") == 2
    assert any(i.opname == "LOAD_FAST" and i.argval == "args" for i in pushed)


def test_resume_parts_split_the_dead_copy():
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        _, rw = capture_rewrites(g, torch.randn(4), markers=False)
    parts = resume_parts(rw[1].original)
    assert parts.prologue[-1].opname == "JUMP_FORWARD"
    assert any(i.opname == "LOAD_FAST" and i.argval == "___stack0" for i in parts.prologue)
    assert parts.dead[0].opname == "RESUME" and parts.dead[-1].opname in ("CALL", "PRECALL")
    assert parts.live[0].opname == "POP_TOP" and parts.live[-1].opname == "RETURN_VALUE"
    assert parts.dead_lines == [parts.first_line] and parts.dead_positioned == 0
    assert parts.live_positioned == len(parts.live)


def test_exception_tables_real_and_virtual():
    real = exception_entries(guarded)
    virtual = virtual_exception_table(guarded)
    assert len(real) == len(virtual) >= 1
    assert virtual[0][3] == "PUSH_EXC_INFO"
    moved = exception_entries(insert_nops(guarded, 2))
    assert [e[2] - r[2] for e, r in zip(moved, real)] == [4] * len(real)
    assert exception_entries(choose_if) == []


def test_stretch_jump_needs_extended_arg_past_255():
    short = stretch_jump(choose_if, 10)
    assert (short.extended_args, short.passes) == (0, 1) and short.jump_arg < 256
    far = stretch_jump(choose_if, 300)
    assert far.extended_args == 1 and far.passes == 2 and far.jump_arg > 255
    assert far.instructions == short.instructions + 290 + 1
    fn = type(choose_if)(far.code, {})
    assert fn(None) == 1 and fn(0) == 2
    # the wrapper is removed again
    import torch._dynamo.bytecode_transformation as bt
    assert bt.fix_extended_args.__name__ == "fix_extended_args"


def test_tempvar_stores_counts_pass_two_temporaries():
    class Holder:
        pass

    h = Holder()
    h.w = torch.randn(3)

    def apart(x):
        w = h.w
        return w, x * 2, w

    def once(x):
        return h.w, x * 2

    _, rw = capture_rewrites(apart, torch.randn(3), markers=False)
    _, rw1 = capture_rewrites(once, torch.randn(3), markers=False)
    assert tempvar_stores(rw[0].modified) >= 1 and tempvar_stores(rw1[0].modified) == 0

"""Unit tests of helpers/dynamo/bytecode.py."""
import sys

from helpers.dynamo.bytecode import Ins, _short, instructions, listing, python_minor


def mul_add(x, y):
    z = x * y
    return z + 1


def test_python_minor():
    assert python_minor() == f"{sys.version_info.major}.{sys.version_info.minor}"


def test_instructions_drop_bookkeeping_on_request():
    ops = [i.opname for i in instructions(mul_add, bookkeeping=False)]
    assert "RESUME" not in ops and ops[-1] in ("RETURN_VALUE", "RETURN_CONST")
    assert ops.count("BINARY_OP") == 2
    full = instructions(mul_add)
    assert full[0].opname == "RESUME" and len(full) == len(ops) + 1
    assert [i.argval for i in full if i.opname == "LOAD_FAST"][:2] == ["x", "y"]
    assert [i.offset for i in full] == sorted(i.offset for i in full)
    text = listing(mul_add, bookkeeping=False)
    assert "BINARY_OP" in text and len(text.splitlines()) == len(ops)


def test_listing_trims_and_says_so():
    n = len(instructions(mul_add))
    text = listing(mul_add, start=1, stop=3)
    assert "1 instructions above" in text and f"{n - 3} more instructions not shown" in text
    assert len(text.splitlines()) == 4
    assert "not shown" not in listing(mul_add)


def test_ins_str_shows_offset_and_counts():
    line = str(Ins(12, "BUILD_TUPLE", 3, "", 3))
    assert line.split() == ["12", "BUILD_TUPLE", "3"]
    assert str(Ins(0, "RESUME", 0, "", 0)).split() == ["0", "RESUME"]


def test_short_hides_compiled_fn_uuid():
    assert _short("NULL + __compiled_fn_3_0d77ef53_6bc9_4019_a9a6_e2f71883d62d") == "NULL + __compiled_fn_3_…"
    assert _short("__resume_at_40_3") == "__resume_at_40_3"

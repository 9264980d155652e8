"""The series' values carry the machine they were printed on, and the numbers table shows it (ch01)."""
import ast

import pytest
from conftest import ROOT

from helpers.core.numbers import SERIES_MACHINES, comparable, markdown_cell, reference, render_table

H200 = {"device": "cuda", "device_name": "NVIDIA H200", "torch": "2.11.0", "git_commit": "abc1234"}
SPEC = [["kernels", "series_k", "k", "d"], ["first call", "series_t", "t", ".2f"]]
BOOK = {"k": {"value": 1, "unit": "kernels", "status": "pass", "rule": "== 1"},
        "t": {"value": 9.1, "unit": "s", "status": "record", "rule": "record only"}}


def test_a_reference_must_name_a_known_machine():
    with pytest.raises(TypeError):
        reference("series_x", 1, source="Day 1")  # no on=
    with pytest.raises(ValueError, match="unknown series machine"):
        reference("series_x", 1, source="Day 1", on="a100")


def test_one_machine_goes_in_the_header_and_an_unlike_time_is_marked():
    series = {"series_k": {"value": 1, "unit": "kernels", "machine": "laptop"},
              "series_t": {"value": 3.75, "unit": "s", "machine": "laptop"}}
    text = render_table(SPEC, series, BOOK, H200)
    assert "| Series (macOS laptop CPU, torch 2.8) |" in text.splitlines()[0]
    rows = text.splitlines()
    assert "| kernels | 1 kernel |" in rows[2]      # an exact count: comparable across machines, no mark
    assert "3.75 s †" in rows[3]                      # a laptop-CPU time beside an H200 time
    assert "† Not a like-for-like pair" in text and "NVIDIA H200" in text


def test_mixed_machines_name_each_cell_and_like_pairs_are_not_marked():
    series = {"series_k": {"value": 1, "unit": "kernels", "machine": "laptop"},
              "series_t": {"value": 1.6, "unit": "s", "machine": "l40s"}}
    text = render_table(SPEC, series, BOOK, H200)
    assert text.splitlines()[0].startswith("| Figure | Series |")
    assert "1 kernel (macOS laptop CPU)" in text and "1.60 s (NVIDIA L40S)" in text
    assert "†" not in text


def test_a_time_pairs_only_gpu_with_gpu_and_a_quote_with_anything():
    laptop = SERIES_MACHINES["laptop"]
    timed = {"value": 2.0, "unit": "s", "status": "record", "rule": "record only"}
    assert not comparable(laptop, timed, H200)
    assert not comparable(laptop, {**timed, "on": "cpu"}, H200)    # a CPU, but not the series' laptop
    assert comparable(SERIES_MACHINES["l40s"], timed, H200)          # GPU with GPU: the chapters compare them
    assert comparable(SERIES_MACHINES["datasheet"], timed, H200)  # quoted, not measured


def test_angle_brackets_outside_code_survive_a_table_cell():
    assert markdown_cell("make_pointwise.<locals>.inner") == "make_pointwise.&lt;locals&gt;.inner"
    assert markdown_cell("a `x<y>` b | c") == "a `x<y>` b \\| c"


def test_every_series_value_in_the_sources_names_its_machine():
    from helpers.runtime.recap import _code_cells

    missing = []
    for path in sorted((ROOT / "sources").glob("ch*.md")):
        for code in _code_cells(path.read_text()):
            code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))
            for node in ast.walk(ast.parse(code)):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "reference"
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "helpers"):
                    on = next((k.value for k in node.keywords if k.arg == "on"), None)
                    if not (isinstance(on, ast.Constant) and on.value in SERIES_MACHINES):
                        missing.append(f"{path.name}: {ast.unparse(node)[:60]}")
    assert not missing, "helpers.reference(...) without on=<one of SERIES_MACHINES>: " + "; ".join(missing)


def test_what_the_machine_decides_pairs_only_gpu_with_gpu():
    laptop, l40s = SERIES_MACHINES["laptop"], SERIES_MACHINES["l40s"]
    banded = {"unit": "×", "status": "pass", "rule": "sm90: 2..9", "expect": {"kind": "band"}}
    assert not comparable(laptop, banded, H200) and comparable(l40s, banded, H200)
    assert comparable(laptop, {"unit": "×", "status": "pass", "rule": "== 4.0", "expect": {"kind": "exact", "value": 4}}, H200)
    lanes = {"unit": "lanes", "status": "record", "rule": "record only", "expect": {"kind": "record"}, "on": "cpu"}
    assert not comparable(laptop, lanes, H200)      # an M1's lanes beside the host CPU's: other machines
    by_device = {"unit": "", "status": "pass", "rule": "== 'triton_poi'", "expect": {"kind": "exact", "by_device": {"cuda": "t"}}}
    assert not comparable(laptop, by_device, H200)  # a kernel name the device decides
    assert comparable(laptop, {"unit": "", "status": "pass", "rule": "== 'x'", "machine_dependent": False}, H200)


def test_a_figure_a_moved_api_left_unmeasured_reads_not_measured():
    book = {"k": {"value": None, "unit": "kernels", "status": "unverified", "rule": "this step needs torch 2.11–2.15"}}
    text = render_table([["kernels", None, "k", "d"]], {}, book, H200)
    assert "| kernels | — | not measured |" in text and "None kernel" not in text


def test_a_series_value_the_book_cannot_re_measure_says_why():
    series = {"series_size": {"value": 4.1, "unit": "KB", "machine": "laptop"}}
    spec = [["cache file", "series_size", None, ".1f", "the GPU run writes no such file"]]
    text = render_table(spec, series, {}, H200)
    assert "| cache file | 4.1 KB | not re-measured: the GPU run writes no such file | — |" in text
    reader = render_table(spec, series, {}, H200, {}, H200)
    assert "not measured here" not in reader and "not re-measured: the GPU run writes no such file" in reader

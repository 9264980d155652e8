"""helpers/core/pointers.py: every chapter's "Where to read the source" pointers resolve in the installed torch
(2.13 in CI; the lead runs ``python -m helpers pointers`` on the H200's 2.11), and the resolver on a fake torch."""
from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest
from conftest import ROOT

from helpers.core import pointers as P

SOURCES = ROOT / "sources"
CHAPTERS = sorted(p.name[:4] for p in SOURCES.glob("ch[0-9][0-9]_*.md"))


@pytest.fixture(scope="module")
def installed():
    return P.check_chapters(SOURCES)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_pointer_of_the_chapter_resolves_in_the_installed_torch(installed, chapter):
    version, results = installed
    assert results[chapter], f"{chapter}: no helpers.where_to_read cell in its source"
    rotted = [f"{chapter} {r.pointer.path}: " + ("file missing" if r.missing == ["(file)"] else
                                                 "not defined: " + ", ".join(r.missing))
              for r in results[chapter] if r.status == "rotted"]
    assert rotted == [], f"pointers rotted in torch {version}: {rotted}"


def test_the_pointers_the_wheel_cannot_resolve_are_counted_apart(installed):
    version, results = installed
    tree = [r for rs in results.values() for r in rs if r.status == "source tree"]
    # the C/C++ sources of torch/csrc/dynamo (ch03, ch06) and ATen's CUDA BLAS calls (ch25): marked, linked at
    # the tag, never "resolved"
    assert {r.pointer.path for r in tree} == {"torch/csrc/dynamo/eval_frame.c", "torch/csrc/dynamo/eval_frame_cpp.cpp",
                                             "torch/csrc/dynamo/guards.cpp", "torch/csrc/dynamo/extra_state.cpp",
                                             "torch/csrc/dynamo/cache_entry.cpp", "aten/src/ATen/native/cuda/Blas.cpp"}
    assert all(r.url.startswith(f"https://github.com/pytorch/pytorch/blob/{P.source_tag(version)}/") for r in tree)
    text, rotted = P.report(version, Path("."), results)
    assert f"{len(tree)} in the source tree only (unresolvable from the wheel)" in text and rotted == 0
    # said in every run's warnings summary, so that the count is seen, not only asserted
    warnings.warn(f"{len(tree)} source pointers are in PyTorch's source tree, not in the wheel (not checked): "
                  + ", ".join(sorted({r.pointer.path for r in tree})), UserWarning)


def test_ch07_files_only_computed_lazy_constants_under_torch_2_15():
    ptr = next(p for p in P.chapter_pointers(SOURCES)["ch07"] if p.path == "torch/_dynamo/variables/lazy.py")
    assert "LazyConstantVariable" in ptr.symbols and "LazyConstantVariable" not in ptr.conditions
    assert ptr.conditions == {"ComputedLazyConstantVariable": ">=2.15"}


# --- the resolver on a fake torch -------------------------------------------------------------------

FAKE = '''
import os
LIMIT = 8
LIMIT2: int = 9
a, (b, c) = 1, (2, 3)
if os.name:
    IN_IF = 1
try:
    from x import y
except ImportError:
    IN_EXCEPT = 2

class Tracker:
    kind = "t"
    def __init__(self):
        self.configs = []
    def run(self):
        def nested():
            pass
    class Inner:
        pass

async def go():
    pass

def helper():
    hidden = 1
'''


@pytest.fixture
def fake(tmp_path):
    pkg = tmp_path / "torch"
    (pkg / "_dynamo" / "polyfills").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "version.py").write_text("__version__ = '2.13.0+cpu'\n")
    (pkg / "_dynamo" / "mod.py").write_text(textwrap.dedent(FAKE))
    (pkg / "_dynamo" / "polyfills" / "builtins.py").write_text("def sum(x): pass\n")
    (pkg / "include" / "ATen").mkdir(parents=True)
    (pkg / "include" / "ATen" / "Wrapper.h").write_text("struct Helper { void sync_(); };\nnamespace at { void replace_(); }\n")
    return tmp_path


def _one(entry, root, version="2.13.0"):
    return P.resolve(P.Pointer.from_entry(entry), root, version)


def test_names_defined_at_module_level_in_classes_and_in_blocks_resolve(fake):
    names = ["LIMIT", "LIMIT2", "a", "c", "IN_IF", "IN_EXCEPT", "Tracker", "go", "helper", "Tracker.kind",
             "Tracker.run", "Tracker.Inner", "Tracker.configs", "Tracker.__init__", "Tracker.run.nested"]
    r = _one(("torch/_dynamo/mod.py", names, "all of it"), fake)
    assert r.status == "resolved" and r.ok and r.missing == []


@pytest.mark.parametrize("name", ["nested", "hidden", "y", "os", "Tracker.nested", "helper.hidden", "Inner",
                                  "LIMIT.real", "Missing", "Tracker.configs.x",
                                  "Tracker.run.hidden", "helper.nested"])
def test_a_name_not_defined_where_the_pointer_says_rots(fake, name):
    r = _one(("torch/_dynamo/mod.py", ["Tracker", name], "d"), fake)
    assert r.status == "rotted" and not r.ok and r.missing == [name]


def test_a_missing_file_rots(fake):
    r = _one(("torch/_dynamo/gone.py", ["x"], "d"), fake)
    assert r.status == "rotted" and r.missing == ["(file)"]


def test_a_folder_names_its_files_and_a_header_its_words(fake):
    assert _one(("torch/_dynamo/polyfills/", ["builtins.py"], "d"), fake).status == "resolved"
    assert _one(("torch/_dynamo/polyfills/", ["itertools.py"], "d"), fake).missing == ["itertools.py"]
    h = ("torch/include/ATen/Wrapper.h", ["sync_", "replace_", "Helper.sync_"], "d")
    assert _one(h, fake).status == "resolved"
    assert _one(("torch/include/ATen/Wrapper.h", ["sync"], "d"), fake).missing == ["sync"]  # a word, not a prefix


def test_a_cpp_source_is_marked_source_tree_with_its_tag_never_resolved(fake):
    r = _one(("torch/csrc/dynamo/guards.cpp", [], "the C++ guards"), fake, "2.11.0+cu130")
    assert r.status == "source tree" and r.ok
    assert r.url == "https://github.com/pytorch/pytorch/blob/v2.11.0/torch/csrc/dynamo/guards.cpp"
    with pytest.raises(P.PointerError, match="cannot be checked"):
        P.Pointer.from_entry(("aten/src/ATen/FunctionalTensorWrapper.cpp", ["replace_"], "d"))


def test_version_conditions_pick_the_variant_of_the_torch_being_read(fake):
    entry = ("torch/_dynamo/mod.py", ["Tracker", "NewIn215 >=2.15", "OldIn211 <2.13", "go ==2.13"], "d")
    on_213 = _one(entry, fake, "2.13.0")
    assert on_213.status == "resolved" and sorted(on_213.skipped) == ["NewIn215", "OldIn211"]
    assert _one(entry, fake, "2.15.0").missing == ["NewIn215"]
    assert _one(entry, fake, "2.11.0").missing == ["OldIn211"]
    moved = ("torch/_dynamo/elsewhere.py >=2.15", ["x"], "the file's 2.15 home")
    assert _one(moved, fake, "2.13.0").status == "other torch"
    assert _one(moved, fake, "2.15.0").status == "rotted"
    assert P.holds(">=2.13,<2.15", "2.13.1+cu128") and not P.holds(">=2.13,<2.15", "2.15.0")


@pytest.mark.parametrize("entry, message", [
    (("torch/x.py", "Name", "d"), "list of str"),
    (("torch/x.py", ["a b"], "d"), "version condition"),
    (("torch/x.py", ["a-b"], "d"), "not a name"),
    (("torch/x.py", ["A..c"], "d"), "not a name"),
    (("/etc/passwd", [], "d"), "inside the torch package"),
    (("torch/../x.py", [], "d"), "inside the torch package"),
    (("torch/x.py", [], "see {cite:p}`key`"), "MyST role"),
    (("torch/x.py", []), "path, symbols, description"),
])
def test_a_pointer_written_wrongly_is_refused(entry, message):
    with pytest.raises(P.PointerError, match=message):
        P.Pointer.from_entry(entry)


def test_the_torch_root_is_found_from_the_package_or_the_folder_above_and_its_version_read(fake):
    assert P.torch_root(fake) == fake and P.torch_root(fake / "torch") == fake
    assert P.torch_version(fake) == "2.13.0+cpu"
    assert (P.torch_root() / "torch" / "__init__.py").exists()
    with pytest.raises(P.PointerError, match="no torch package"):
        P.torch_root(fake / "torch" / "_dynamo")


def test_the_section_renders_each_pointer_with_its_mark(fake, capsys):
    P.where_to_read([("torch/_dynamo/mod.py", ["Tracker.run"], "`Tracker.run`: the loop."),
                     ("torch/_dynamo/mod.py", ["gone"], "`gone`."),
                     ("torch/csrc/dynamo/guards.cpp", [], "the C++ guards."),
                     ("torch/_dynamo/new.py >=2.15", [], "2.15's file.")], root=fake)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Checked against torch 2.13.0+cpu, the one this page ran on")
    assert out[1] == ""  # a blank line before the list
    out = out[1:]
    assert out[1] == "- ✓ `torch/_dynamo/mod.py` — `Tracker.run`: the loop."
    assert out[2] == "- ✗ `torch/_dynamo/mod.py` — `gone`. *(in torch 2.13.0+cpu, not defined: `gone`)*"
    assert "in the PyTorch source tree, not in the wheel: read it at [v2.13.0](https://github.com/pytorch/pytorch/" \
           "blob/v2.13.0/torch/csrc/dynamo/guards.cpp)" in out[3]
    assert out[4].endswith("*(torch 2.15 and later; not checked in this torch)*")
    assert P.in_words(">=2.13,<2.15") == "torch 2.13 and later, before 2.15" and P.in_words("==2.11") == "torch 2.11 only"


def test_the_pointers_are_read_from_a_source_without_running_it():
    text = 'x\n```{code-cell} ipython3\n:tags: [hide-input]\n\nhelpers.where_to_read([\n' \
           '    ("torch/a.py", ["b"], "`b`."),\n])\n```\n'
    assert P.pointers_in_source(text) == [("torch/a.py", ["b"], "`b`.")]
    assert P.pointers_in_source("no cell") == []
    with pytest.raises(P.PointerError, match="literals"):
        P.pointers_in_source(text.replace('["b"]', "names"))


def test_the_command_fails_naming_chapter_path_and_symbol_when_a_pointer_rots(fake, capsys):
    from helpers.__main__ import main

    assert main(["pointers", "--torch-root", str(fake)]) == 1
    out = capsys.readouterr().out
    assert "pointers checked against torch 2.13.0+cpu" in out
    assert "ROTTED ch01 torch/jit/_trace.py: file missing" in out
    (fake / "torch" / "jit").mkdir()
    (fake / "torch" / "jit" / "_trace.py").write_text("def other(): pass\n")
    main(["pointers", "--torch-root", str(fake)])
    assert "ROTTED ch01 torch/jit/_trace.py: not defined: trace" in capsys.readouterr().out
    assert main(["pointers", "--torch-root", str(fake / "nothing")]) == 2


def test_a_chapter_whose_section_lost_its_pointers_fails_the_report(fake):
    text, failures = P.report("2.13.0", fake, {"ch01": [], "ch02": []})
    assert failures == 2 and "ch01: NO POINTERS" in text and "no pointers in ch01, ch02" in text


def test_a_variant_this_torch_has_all_the_same_is_noted_not_failed(fake):
    # what ch07 once said: LazyConstantVariable "torch 2.15 only", while 2.11 and 2.13 define it
    r = _one(("torch/_dynamo/mod.py", ["Tracker >=2.15"], "d"), fake, "2.13.0")
    assert r.status == "resolved" and r.also_here == ["Tracker"]
    text, failures = P.report("2.13.0", fake, {"ch07": [r]})
    assert failures == 0 and "Tracker (given for torch >=2.15) is defined in this torch too" in text

"""Unit tests of helpers/runtime/export_aoti.py (chapter 29).

Building a package and serving it from fresh processes (``package``, ``serve``, ``PackageJob`` with
``code/ch29_package.py``) take a C++ compile each: the chapter exercises them; here the parts around
them are tested, with a fake archive and fake child processes.
"""
import json
import subprocess
import sys
import time
import zipfile

import torch
from torch.export import Dim

from helpers.runtime import export_aoti as xa


def _program():
    return xa.try_export(xa.tiny(), (torch.randn(4, xa.FEATURES),), dynamic_shapes={"x": {0: Dim("b", min=1, max=64)}})


def test_the_exported_tiny_model_reads_as_plain_data():
    out = _program()
    assert out.ok and str(out) == "ok"
    ep = out.value
    assert xa.ops(ep) == ["aten.linear.default", "aten.relu.default", "aten.add.Tensor"]
    assert xa.signature(ep) == {"PARAMETER": ["p_fc_weight", "p_fc_bias"], "USER_INPUT": ["x"], "USER_OUTPUT": ["add"]}
    types = xa.input_types(ep)
    assert types["p_fc_weight"] == "f32[8, 16]" and types["x"].endswith(", 16]")
    (low, high), = xa.ranges(ep).values()
    assert (low, high) == (1, 64) and xa.assertions(ep) == []


def test_tiny_is_seeded_and_leaves_the_global_generator_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b = xa.tiny(), xa.tiny()
    assert torch.equal(torch.rand(1), before)
    assert torch.equal(a.fc.weight, b.fc.weight) and not a.training


def test_errors_are_reported_not_raised():
    bad = xa.try_export(xa.branchy(), (torch.randn(4, xa.FEATURES),))
    assert not bad.ok and bad.error == "GuardOnDataDependentSymNode"
    assert bad.message.startswith("Could not guard on data-dependent expression") and str(bad).startswith(bad.error)
    prog = _program().value.module()
    assert xa.try_call(prog, torch.randn(3, xa.FEATURES)).value == (3, 8)
    too_big = xa.try_call(prog, torch.randn(65, xa.FEATURES))
    assert not too_big.ok and too_big.error == "AssertionError" and "<= 64" in too_big.message


def test_a_torch_check_hint_becomes_assertions_in_the_graph():
    class Head(torch.nn.Module):
        def forward(self, x, k):
            n = k.item()
            torch._check(n <= 4)
            if n > 4:
                return x * 0
            return x[:n]

    ep = xa.try_export(Head(), (torch.randn(8, 3), torch.tensor(3))).value
    found = xa.assertions(ep)
    assert len(found) >= 1 and any("u0 <= 4" in a for a in found)


def test_archive_members_and_kinds(tmp_path):
    path = tmp_path / "fake.pt2"
    names = {"fake/data/aotinductor/model/abc.wrapper.cpp": b"// bias 0.25 and -1.5\n",
             "fake/data/aotinductor/model/def.kernel.cpp": b"auto tmp0 = static_cast<float>(3.0);\n",
             "fake/data/aotinductor/model/abc.wrapper.so": b"\x7fELF",
             "fake/data/aotinductor/model/k0.cubin": b"\0" * 10,
             "fake/data/aotinductor/model/abc.wrapper_metadata.json": b"{}",
             "fake/archive_format": b"pt2"}
    with zipfile.ZipFile(path, "w") as z:
        for n, data in names.items():
            z.writestr(n, data)
    kinds = {m.name: m.kind for m in xa.members(path)}
    assert kinds["archive_format"] == "archive record"
    assert sorted(kinds.values()) == ["archive record", "kernel binary", "kernel source", "metadata",
                                      "shared library", "wrapper source"]
    assert xa.read_member(path, ".so") == b"\x7fELF"
    assert xa.written_as_literals(path, torch.tensor([0.25, -1.5, 3.0]))
    assert not xa.written_as_literals(path, torch.tensor([0.125]))


def test_elf_sections_of_a_real_library():
    blob = open(torch._C.__file__, "rb").read()
    sections = xa.elf_sections(blob)
    assert ".text" in sections and ".dynsym" in sections and all(size >= 0 for size in sections.values())
    assert xa.section_group(".text") == "code" and xa.section_group(".debug_info") == "debug info"
    assert xa.section_group(".lrodata") == "constants and data" and xa.section_group(".comment") == "other"
    assert xa.section_of(blob, 0) is None  # the ELF header lies before every section
    try:
        xa.elf_sections(b"not an elf file at all")
    except ValueError:
        pass
    else:
        raise AssertionError("a non-ELF blob must raise")


def test_counts_and_cases(tmp_path):
    assert xa.counts({"total": 3, "ok": 3}) == "total 3, ok 3" and xa.counts({}) == "none"
    model = xa.tiny()
    x = torch.randn(5, xa.FEATURES)
    path = xa.write_cases(tmp_path / "cases.pt", model, x, [1, 2])
    case = torch.load(path)
    assert case["sizes"] == [1, 2] and case["device"] == "cpu" and torch.allclose(case["expected"], model(x))


def _job(tmp_path, code: str) -> xa.PackageJob:
    out, err = open(tmp_path / "o.txt", "w+"), open(tmp_path / "e.txt", "w+")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=err, text=True)
    job = xa.PackageJob(proc, time.perf_counter())
    job.files = (out, err)
    return job


def test_package_job_keeps_what_came_before_its_time_limit(tmp_path):
    build = json.dumps({"build_s": 1.5, "members": [["a.so", 3]]})
    late = _job(tmp_path, f"import time; print({build!r}, flush=True); time.sleep(30)")
    r = late.result(limit_s=3)
    assert r["built"] and not r["served"] and r["build_s"] == 1.5 and 2.5 < r["waited_s"] < 15
    assert late.proc.poll() is not None
    serve = json.dumps({"serve": {"matches": True}})
    done = _job(tmp_path, f"print({build!r}); print({serve!r})")
    r = done.result(limit_s=30)
    assert r["built"] and r["served"] and r["serve"]["matches"] is True
    nothing = _job(tmp_path, "import time; time.sleep(30)").result(limit_s=0.5)
    assert not nothing["built"] and not nothing["served"]
    assert xa.CUDA_BUILD_LIMIT_S > 0 and xa.PACKAGE_CONFIGS["cpp.vec_isa_ok"] is True
    assert xa.CHILD_ENV == {"TORCHINDUCTOR_VEC_ISA_OK": "1"}

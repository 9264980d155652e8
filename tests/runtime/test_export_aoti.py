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


def test_elf_needed_reads_the_libraries_a_library_asks_for():
    needed = xa.elf_needed(open(torch._C.__file__, "rb").read())
    assert any(n.startswith("libtorch_python") for n in needed) and all(n for n in needed)


def _static_wrapper(tmp_path) -> str:
    script = tmp_path / "g++-static"
    script.write_text('#!/bin/sh\nexec g++ -static-libstdc++ "$@"\n')
    script.chmod(0o755)
    return str(script)


def test_a_compiler_is_probed_for_how_it_links_the_cpp_runtime(tmp_path):
    shared = xa.probe_compiler("g++")
    assert shared.runtime == "shared" and shared.shares_runtime and "libstdc++.so.6" in shared.needed
    static = xa.probe_compiler(_static_wrapper(tmp_path))
    assert static.runtime == "static" and not static.shares_runtime
    assert not any(n.startswith("libstdc++") for n in static.needed) and "into what it builds" in str(static)
    wrapped = xa.static_runtime_compiler(shared, tmp_path)
    assert wrapped.runtime == "static" and wrapped.path.endswith("cxx-static-libstdc++")
    assert shared.program and shared.version.startswith("g++") and "/" not in shared.identity
    assert static.program == "g++-static" and static.version == shared.version  # a wrapper: itself, g++'s version
    assert f"[{shared.identity}]" in str(shared)
    assert xa.probe_compiler(str(tmp_path / "no-such-c++")).runtime == "not found"
    broken = tmp_path / "broken-c++"
    broken.write_text("#!/bin/sh\necho 'fatal: no licence' >&2\nexit 1\n")
    broken.chmod(0o755)
    assert xa.probe_compiler(str(broken)).runtime == "cannot build a library: fatal: no licence"


def test_choose_compiler_replaces_one_that_links_the_runtime_in(tmp_path, monkeypatch):
    config = xa.private("torch._inductor.config")
    saved = config.cpp.cxx  # restored by hand: monkeypatch's undo deletes a setting of torch's config module
    try:
        static = _static_wrapper(tmp_path)
        monkeypatch.setenv("CXX", static)
        xa.use_compiler(static)
        own, used = xa.choose_compiler()
        assert own.path == static and own.named_by == "CXX" and own.runtime == "static"
        assert used.shares_runtime and used.path != static
        assert config.cpp.cxx == (None, used.path) and xa.os.environ["CXX"] == used.path
        monkeypatch.setenv("CXX", "g++")
        xa.use_compiler("g++")
        own, used = xa.choose_compiler()
        assert own is used and own.shares_runtime and config.cpp.cxx == (None, "g++")
    finally:
        config.cpp.cxx = saved


def test_a_failed_child_is_described_from_its_exit_and_stderr():
    crash = ('Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call first):\n'
             '  File "/t/torch/export/pt2_archive/_package.py", line 1045 in _load_aoti\n'
             '  File "/t/torch/_inductor/__init__.py", line 267 in aoti_load_package\n')
    assert xa.failure_of(-11, crash) == "signal 11 (SIGSEGV) in _load_aoti"
    assert xa.failure_of(-9, "") == "signal 9 (SIGKILL)"
    cpp_error = 'Error: std::bad_cast\nTraceback (most recent call last):\nRuntimeError: create_func_( ...) API call failed\n'
    assert xa.failure_of(1, cpp_error) == 'exit 1, the library reporting "std::bad_cast"'
    assert xa.failure_of(1, "Traceback\nValueError: no\n") == "exit 1, ValueError: no" and xa.failure_of(2, "") == "exit 2"


def test_answer_vec_isa_is_paid_once_per_process_and_restores_what_it_patched():
    from helpers.core.private import private

    config = private("torch._inductor.config")
    before = (subprocess.Popen.__init__, config.cpp.vec_isa_ok)
    first = xa.answer_vec_isa()
    again = xa.answer_vec_isa()
    assert (subprocess.Popen.__init__, config.cpp.vec_isa_ok) == before
    assert first.isa == again.isa and again.children == [] and again.seconds < 1.0
    assert all(isinstance(name, str) and name for name in first.children)

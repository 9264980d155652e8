"""Unit tests of helpers/runtime/cache_layers.py (ch24): the folder's layers, the key's components, the
parts of a first call, the per-process costs, and the child-process plumbing (with a stand-in script)."""
import json
import os
import sys

import pytest

from helpers.runtime import cache_layers as cl

LOG = """\
V1201 22:01:05.897000 15019 torch/_inductor/codecache.py:1646] [0/0] FX graph cache hash details for key fabc:
V1201 22:01:05.897000 15019 torch/_inductor/codecache.py:1646] [0/0] [ji2dkwkkkeu6uh2mizjjgszccorkwreaxh7fx5b26pshcmou6ex] gm: <lambda>()
V1201 22:01:05.897000 15019 torch/_inductor/codecache.py:1646] [0/0]
V1201 22:01:05.897000 15019 torch/_inductor/codecache.py:1646] [0/0] def forward(self, arg0_1):
V1201 22:01:05.897000 15019 torch/_inductor/codecache.py:1646] [0/0] [ik4p7xq5gufgpexowzrhby4hhknkaawg2nxxhhpxnxh3qjrlgfj] example_inputs[0]: TensorMetadata(dtype=torch.float32, shape=torch.Size([512, 512]))
V1201 22:01:05.897000 15019 torch/_inductor/codecache.py:1646] [0/0] [esstihe2nyydk4mhzpvox3qkajyu5y5t23hk3fi2me7jn75xi3o] inductor_config[cpp_wrapper]: False
V1201 22:01:05.897000 15019 torch/_inductor/codecache.py:1646] [0/0] [du4vyrfyozrfxcf6kk6ma7oqwatapifazeelfsawmsiu6gjdtxp] inductor_config[max_autotune]: False
I1201 22:01:05.898000 15019 torch/_inductor/codecache.py:2316] [0/0] fx graph cache miss for key fabc
I1201 22:01:05.543000 15019 torch/_functorch/_aot_autograd/autograd_cache.py:1055] [0/0] AOTAutograd cache miss for key aq
"""


def test_key_details_reads_each_component_and_its_hash():
    keys = cl.key_details(LOG)
    assert list(keys) == ["fabc"]
    details = keys["fabc"]
    assert list(details) == ["gm", "example_inputs[0]", "inductor_config[cpp_wrapper]", "inductor_config[max_autotune]"]
    assert details["gm"].startswith("ji2dk")
    assert cl.key_groups(details) == {"gm": 1, "example_inputs": 1, "inductor_config": 2}


def test_key_diff_names_changed_and_missing_components():
    a = {"gm": "1", "example_inputs[0]": "2", "inductor_config[x]": "3"}
    b = {"gm": "1", "example_inputs[0]": "9", "inductor_config[y]": "3"}
    assert cl.key_diff(a, b) == ["example_inputs[0]", "inductor_config[x]", "inductor_config[y]"]
    assert cl.key_diff(a, a) == []


def test_log_messages_and_lookups_drop_the_prefix():
    msgs = cl.log_messages(LOG)
    assert "fx graph cache miss for key fabc" in msgs
    fc = cl.FirstCall("x", [1.0, 0.1], 1.0, 3.0, {}, {}, True, LOG)
    assert cl.lookups(fc) == ["fx graph cache miss for key fabc", "AOTAutograd cache miss for key aq"]


def test_classify_sorts_files_into_layers():
    assert cl.classify("fxgraph/ab/fabc/entry") == "FX graph cache"
    assert cl.classify("aotautograd/aabc/entry") == "AOTAutograd cache"
    assert cl.classify("locks/cabc.lock") == "locks"
    assert cl.classify("ab/cabc.best_config") == "autotune results"
    assert cl.classify("triton/0/XYZ/triton_.cubin") == "kernel binaries"
    assert cl.classify("ab/cabc.main.so") == "kernel binaries"
    assert cl.classify("ab/cabc.cpp", '#include <immintrin.h>\nextern "C" __m512bh __avx512_bf16_chk_kernel(') == "vector ISA probes"
    assert cl.classify("ab/cabc.main.cpp", "#include <torch/csrc/inductor/cpp_prefix.h>\nextern \"C\" void kernel(") == "kernel source"
    assert cl.classify("ab/cabc.py", "import triton\n@triton.jit\ndef triton_red_fused(") == "kernel source"
    assert cl.classify("ab/cabc.py", "from torch import device\ndef call(args):\n") == "wrapper code"


def test_cache_tree_counts_layers_and_pairs_probe_binaries(tmp_path):
    (tmp_path / "fxgraph" / "ab" / "fabc").mkdir(parents=True)
    (tmp_path / "fxgraph" / "ab" / "fabc" / "e1").write_bytes(b"x" * 10)
    (tmp_path / "cd").mkdir()
    (tmp_path / "cd" / "cprobe.cpp").write_text('extern "C" void __avx_chk_kernel() {}')
    (tmp_path / "cd" / "cprobe.so").write_bytes(b"y" * 5)
    (tmp_path / "cd" / "ckern.main.cpp").write_text("void kernel() {}")
    (tmp_path / "cd" / "ckern.main.so").write_bytes(b"z" * 7)
    tree = cl.cache_tree(tmp_path)
    assert tree.by_layer() == {"FX graph cache": (1, 10), "kernel source": (1, 16), "kernel binaries": (1, 7),
                               "vector ISA probes": (2, 5 + len('extern "C" void __avx_chk_kernel() {}'))}
    assert tree.count("vector ISA probes") == 2 and tree.total_bytes == 10 + 5 + 7 + 16 + 37
    listing = tree.listing()
    assert "ckern.main.so" in listing and "2 files of vector ISA probes not listed" in listing


def test_precompiled_headers_are_read_from_tmpdir(tmp_path):
    d = tmp_path / "torchinductor_me" / "precompiled_headers"
    d.mkdir(parents=True)
    (d / "cabc.h").write_text("#include <x>\n")
    (d / "cabc.h.gch").write_bytes(b"g" * 100)
    assert cl.precompiled_headers(tmp_path) == {"cabc.h": 13, "cabc.h.gch": 100}


def test_parts_are_disjoint_and_add_up_to_the_first_call():
    timers = {"_compile.compile_inner": 9.0, "OutputGraph.call_user_compiler": 8.5,
              "create_aot_dispatcher_function": 8.0, "compile_fx.<locals>.fw_compiler_base": 7.5}
    costs = {"seconds": {"isa_probe": 2.0, "header": 1.0}, "build": {"kernel": 3.0}}
    fc = cl.FirstCall("cold", [10.0, 0.01], 1.0, 12.0, {}, timers, True, costs=costs, extra={"prep_s": 0.5})
    p = cl.parts(fc)
    assert list(p) == list(cl.PARTS)
    assert p["Dynamo"] == pytest.approx(0.5) and p["AOTAutograd"] == pytest.approx(0.5)
    assert p["vector-ISA probes"] == 2.0 and p["C++ header"] == 1.0 and p["kernel compiler"] == 3.0
    assert p["Inductor (lower, write code, or load a hit)"] == pytest.approx(8.5 - 0.5 - 3.0 - 3.0 + 0.5)
    assert sum(p.values()) == pytest.approx(fc.first_s) == pytest.approx(10.5)
    assert cl.tax(fc) == 3.0


def test_costs_file_builds_under_the_step_that_asked_for_them():
    class Owner:
        @staticmethod
        def probe():
            return Owner.build()

        @staticmethod
        def build():
            return 1

    costs = cl.Costs()
    costs._wrap(Owner, "probe", "isa_probe")
    costs._wrap(Owner, "build", "build")
    assert Owner.probe() == 1 and Owner.build() == 1
    assert costs.calls["isa_probe"] == 1
    assert costs.builds == {"isa_probe": 1, "header": 0, "kernel": 1}


def test_counters_and_locations_are_read_from_torch():
    counters = cl.cache_counters()
    assert set(counters) == set(cl.COUNTERS) and all(isinstance(v, int) for v in counters.values())
    where = cl.cache_locations()
    assert set(where) >= {"inductor", "triton", "headers", "fx_graph_cache", "autograd_cache", "remote"}
    assert where["headers"].endswith("precompiled_headers")


def test_child_env_keeps_only_what_the_chapter_sets(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_LOGS", "+dynamo")
    monkeypatch.setenv("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    env = cl.child_env(tmp_path / "c", tmp_path / "t", TORCH_LOGS="recompiles")
    assert env["TORCH_LOGS"] == "recompiles" and "TORCHINDUCTOR_FX_GRAPH_CACHE" not in env
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "c") and env["TMPDIR"] == str(tmp_path / "t")
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "c" / "triton")


def test_first_call_parses_the_child_and_lab_remembers_runs(tmp_path, monkeypatch):
    script = tmp_path / "stand_in.py"
    script.write_text(
        "import json, os, sys\n"
        "n = sys.argv[sys.argv.index('--n') + 1]\n"
        "print('log line', file=sys.stderr)\n"
        "print(json.dumps({'import_s': 0.5, 'calls_s': [2.0, 0.001], 'counters': {'fx_hit': 0, 'fx_miss': 1,"
        " 'fx_bypass': 0, 'aot_hit': 0, 'aot_miss': 1, 'aot_bypass': 0}, 'timers': {}, 'ok': True,"
        " 'prep_s': 0.25, 'costs': {}, 'steady': {'n': int(n), 'cache': os.environ['TORCHINDUCTOR_CACHE_DIR']}}))\n")
    monkeypatch.setattr(cl, "CODE_DIR", tmp_path)
    monkeypatch.setattr(cl, "SCRIPT", script.name)
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path / "root"))
    lab = cl.Lab("cpu", tmpdir=tmp_path / "tmp")
    a = lab.run("a", n=64)
    assert a.first_s == pytest.approx(2.25) and a.fx == (1, 0) and a.aot == (1, 0) and "log line" in a.log
    assert a.extra["steady"] == {"n": 64, "cache": str(lab.cache)}
    assert lab.run("again", n=64) is a              # same settings: remembered, not run again
    b = lab.run("b", n=64, cache="new")             # an empty folder of its own
    assert b is not a and b.extra["steady"]["cache"] != str(lab.cache)
    assert set(lab.runs) == {"a", "again", "b"}
    assert str(lab.root).startswith(str(tmp_path / "root"))


def test_first_call_reports_a_failing_child(tmp_path, monkeypatch):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    monkeypatch.setattr(cl, "CODE_DIR", tmp_path)
    monkeypatch.setattr(cl, "SCRIPT", script.name)
    with pytest.raises(RuntimeError, match="boom"):
        cl.first_call("x", tmp_path / "c", tmp_path / "t")


def test_the_chapter_script_exists_and_parses():
    path = cl.CODE_DIR / cl.SCRIPT
    compile(path.read_text(), str(path), "exec")
    assert "save_cache_artifacts" in path.read_text()


def test_key_details_and_component_lines_from_what_the_child_recorded():
    lines = ["[ji2dkwkkkeu6uh2mizjjgszccorkwreaxh7fx5b26pshcmou6ex] gm: <lambda>()",
             "[ik4p7xq5gufgpexowzrhby4hhknkaawg2nxxhhpxnxh3qjrlgfj] example_inputs[0]: TensorMetadata(dtype=torch.float32)"]
    fc = cl.FirstCall("x", [1.0], 1.0, 2.0, {}, {}, True, costs={"fx_keys": {"fk": lines}})
    assert cl.key_details(fc) == {"fk": {"gm": "ji2dkwkkkeu6uh2mizjjgszccorkwreaxh7fx5b26pshcmou6ex",
                                         "example_inputs[0]": "ik4p7xq5gufgpexowzrhby4hhknkaawg2nxxhhpxnxh3qjrlgfj"}}
    assert cl.component_line(fc, "example_inputs[0]") == "TensorMetadata(dtype=torch.float32)"
    assert cl.component_line(fc, "nothing") == ""


def test_costs_record_each_fx_graph_key_computed():
    first, second = "[" + "a" * 52 + "] gm: line one\nline two", "[" + "b" * 52 + "] torch_version: x"

    class Module:
        @staticmethod
        def compiled_fx_graph_hash(*args):
            return "fkey", [first, second]

    costs = cl.Costs()
    costs._record_keys(Module)
    assert Module.compiled_fx_graph_hash() == ("fkey", [first, second])
    assert costs.as_dict()["fx_keys"] == {"fkey": ["[" + "a" * 52 + "] gm: line one", second]}


def test_classify_knows_the_gpu_wrapper_and_the_probe_markers():
    assert cl.classify("ab/cprobe.so.load_ok") == "vector ISA probes"
    wrapper = "async_compile = AsyncCompile()\ntriton_per_fused = async_compile.triton('x', '@triton.jit')\n"
    assert cl.classify("ab/cabc.py", wrapper) == "wrapper code"


def test_seed_probes_copies_only_the_probe_programs(tmp_path, monkeypatch):
    src = tmp_path / "run_cache"
    (src / "ab").mkdir(parents=True)
    (src / "ab" / "cprobe.cpp").write_text('extern "C" void __avx2_chk_kernel() {}')
    (src / "ab" / "cprobe.so").write_bytes(b"so")
    (src / "ab" / "cprobe.so.load_ok").write_text("")
    (src / "cd").mkdir()
    (src / "cd" / "ckern.main.cpp").write_text("void kernel() {}")
    (src / "cd" / "ckern.main.so").write_bytes(b"so")
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path / "root"))
    lab = cl.Lab("cpu", tmpdir=tmp_path / "tmp")
    assert lab.seed_probes(src) == 3
    assert sorted(str(p.relative_to(lab.cache)) for p in lab.cache.rglob("*") if p.is_file()) == \
        ["ab/cprobe.cpp", "ab/cprobe.so", "ab/cprobe.so.load_ok"]


def test_torch_key_walks_all_of_torch_and_the_opt_in_switches_read():
    from helpers.runtime.cache_layers import opt_in_layers, torch_key_scope
    scope = torch_key_scope()
    assert scope["modules"] > 1000 and 0 < scope["inductor_modules"] < scope["modules"] / 2
    opt = opt_in_layers()
    assert opt["caching_precompile"] is False and "compile_threads" in opt["ignored_settings"]
    assert isinstance(opt["bundle_triton"], bool) and isinstance(opt["pgo"], bool)


def test_pgo_pairs_share_a_folder_and_only_the_job_id_pair_gets_one(tmp_path, monkeypatch):
    # a stand-in for code/ch24_pgo.py that behaves as local PGO does: state read and written under a job id only
    script = tmp_path / "pgo_stand_in.py"
    script.write_text(
        "import json, os, sys\n"
        "job = os.environ.get('TORCH_COMPILE_JOB_ID')\n"
        "folder = os.path.join(os.environ['TORCHINDUCTOR_CACHE_DIR'], 'dynamo')\n"
        "state = os.path.join(folder, f'code_state_{job}_None_.pkl')\n"
        "graphs = 1 if job is not None and os.path.exists(state) else len(sys.argv) - 1\n"
        "if job is not None:\n"
        "    os.makedirs(folder, exist_ok=True)\n"
        "    open(state, 'w').close(); open(state + '.lock', 'w').close()\n"
        "files = sorted(os.listdir(folder)) if os.path.isdir(folder) else []\n"
        "print(json.dumps({'graphs': graphs, 'job_id': job, 'files': files}))\n")
    monkeypatch.setattr(cl, "CODE_DIR", tmp_path)
    monkeypatch.setattr(cl, "PGO_SCRIPT", script.name)
    monkeypatch.setenv("TORCH_COMPILE_JOB_ID", "")  # inherited, even empty: the no-job-id pair must not see it
    got = cl.pgo_across_processes(job_id="t", sizes=(8, 16), root=tmp_path / "pgo")
    assert got["no job id"] == {"graphs": [2, 2], "files": [], "job_id": None}
    assert got["job id"] == {"graphs": [2, 1], "files": ["code_state_t_None_.pkl"], "job_id": "t"}
    later = cl.pgo_in_background(job_id="u", sizes=(8, 16), root=tmp_path / "pgo_bg").result(timeout=120)
    assert later["job id"]["graphs"] == [2, 1] and later["no job id"]["graphs"] == [2, 2]


def test_the_pgo_script_exists_and_parses():
    path = cl.CODE_DIR / cl.PGO_SCRIPT
    compile(path.read_text(), str(path), "exec")
    assert "TORCH_COMPILE_JOB_ID" in path.read_text() and 'backend="eager"' in path.read_text()


def test_triton_utils_build_times_two_processes_or_says_none(tmp_path, monkeypatch):
    monkeypatch.setattr(cl, "_TRITON_UTILS_CHILD",
                        "import json, os\nprint(json.dumps({'build_or_load_s': len(os.environ['TRITON_CACHE_DIR'])}))\n")
    got = cl.triton_utils_build(root=tmp_path / "t")
    assert got == {"fresh_s": len(str(tmp_path / "t" / "cache" / "triton")), "warm_s": got["fresh_s"]}
    monkeypatch.setattr(cl, "_TRITON_UTILS_CHILD", "raise SystemExit(1)\n")  # no NVIDIA Triton: a failed child
    assert cl.triton_utils_build(root=tmp_path / "u") is None

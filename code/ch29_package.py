"""Chapter 29: build an AOTInductor package from a saved ExportedProgram in a fresh process, then serve it.

Export and compile can happen on different machines: this script starts from a program written with
``torch.export.save`` and knows nothing of the model's Python code. Usage:

    python code/ch29_package.py PROGRAM OUT.pt2 [CASES]

It loads PROGRAM (``torch.export.load``), compiles it with ``torch._inductor.aoti_compile_and_package``
(precompiled headers off, the CPU's reported vector ISA trusted and the C++ compiler that ``CXX`` names, as in the chapter) into OUT.pt2 on the device the program was exported for,
and lists the archive's members; it prints that as one JSON line on stdout at once. With CASES (see
``code/ch29_serve.py``) it then runs ``code/ch29_serve.py`` on the new package, in yet another fresh
process, and prints a second JSON line with its report (``serve``; when the server fails, its exit code
``serve_exit`` and the end of its stderr ``serve_error`` instead). The chapter runs it in the background to build a CUDA package while
the notebook goes on.
"""
import importlib
import json
import os
import subprocess
import sys
import time
import zipfile

start = time.perf_counter()
import torch  # noqa: E402

out = {"import_torch_s": time.perf_counter() - start}
program, target = sys.argv[1], os.path.abspath(sys.argv[2])
cases = sys.argv[3] if len(sys.argv) > 3 else None
t0 = time.perf_counter()
ep = torch.export.load(program)
inductor = importlib.import_module("torch._inductor")
out["load_program_s"] = time.perf_counter() - t0
t0 = time.perf_counter()
path = inductor.aoti_compile_and_package(ep, package_path=target,
                                         inductor_configs={"aot_inductor.precompile_headers": False,
                                                           "cpp.vec_isa_ok": True})
out["build_s"] = time.perf_counter() - t0
with zipfile.ZipFile(path) as z:
    out["members"] = [[i.filename.split("/", 1)[-1], i.file_size] for i in z.infolist() if not i.is_dir()]
out["path"] = path
print(json.dumps(out), flush=True)  # the build's report first: a caller that stops waiting still has it
if cases:
    out = {}
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ch29_serve.py"),
                          path, cases], capture_output=True, text=True, timeout=600)
    out["serve_process_s"] = time.perf_counter() - t0
    lines = run.stdout.strip().splitlines()
    out["serve"] = json.loads(lines[-1]) if run.returncode == 0 and lines else None
    if out["serve"] is None:
        out["serve_exit"] = run.returncode  # negative: killed by that signal (a crash)
        out["serve_error"] = run.stderr[-2000:]
print(json.dumps(out))

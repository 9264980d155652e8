"""Chapter 27: make a compile fail under TORCHDYNAMO_REPRO_AFTER="dynamo", then run the minifier it writes.

TORCHDYNAMO_REPRO_AFTER is read when torch._dynamo is imported, so this runs in a fresh process. Usage:

    python code/ch27_minify.py OUT_DIR [BACKEND]

BACKEND (default ``relu_compile_error_TESTING_ONLY``, a test backend that ships with torch and raises
while compiling any graph that calls ``torch.relu``) compiles g(x) = cos(relu(sin(x) + 1)) * 2. The
failure writes ``minifier_launcher.py`` under OUT_DIR/torch_compile_debug (TORCH_COMPILE_DEBUG_DIR);
this script then runs the launcher in a second process, from the launcher's folder (where the minifier
writes ``repro.py``). Prints one JSON line on stdout: the exception, the launcher and repro paths, the
minifier's own output and the seconds each step took.
"""
import glob
import json
import os
import subprocess
import sys
import time

out = os.path.abspath(sys.argv[1])
backend = sys.argv[2] if len(sys.argv) > 2 else "relu_compile_error_TESTING_ONLY"
os.environ["TORCHDYNAMO_REPRO_AFTER"] = "dynamo"
os.environ["TORCH_COMPILE_DEBUG_DIR"] = out

import torch  # noqa: E402  (after the environment is set: torch reads it at import)

torch.set_num_threads(1)


def g(x):
    return torch.cos(torch.relu(torch.sin(x) + 1)) * 2


start = time.perf_counter()
try:
    torch.compile(g, backend=backend)(torch.randn(8))
    error, message = "none", ""
except Exception as exc:  # the compile is meant to fail: report how
    error, message = type(exc).__name__, str(exc).strip().splitlines()[0]
failed_s = time.perf_counter() - start
launchers = sorted(glob.glob(os.path.join(out, "torch_compile_debug", "run_*", "minifier", "minifier_launcher.py")))
result = {"error": error, "message": message, "failed_s": failed_s, "launcher": launchers[-1] if launchers else None}
if launchers:
    folder = os.path.dirname(launchers[-1])
    start = time.perf_counter()
    run = subprocess.run([sys.executable, launchers[-1]], cwd=folder, capture_output=True, text=True, timeout=300)
    result.update(minify_s=time.perf_counter() - start, returncode=run.returncode, stdout=run.stdout,
                  stderr=run.stderr, repro=os.path.join(folder, "repro.py")
                  if os.path.exists(os.path.join(folder, "repro.py")) else None)
print(json.dumps(result))

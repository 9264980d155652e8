"""Chapter 27: compile the sample function once with TORCH_COMPILE_DEBUG=1 (and TORCH_LOGS) in a fresh process.

Both variables are read when torch is imported, which is why this runs as its own process. Usage:

    python code/ch27_debug_dump.py OUT_DIR [cpu|cuda]

The dump goes to OUT_DIR/torch_compile_debug (through TORCH_COMPILE_DEBUG_DIR), the Inductor cache to
OUT_DIR/inductor_cache (empty, so that Inductor really generates code); TORCH_LOGS is whatever the
caller put in the environment (the course passes "graph_breaks"). Prints one JSON line on stdout: the
seconds the compiled call took. The logs go to stderr, the files to OUT_DIR.
"""
import json
import os
import sys
import time

out = os.path.abspath(sys.argv[1])
device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
os.environ["TORCH_COMPILE_DEBUG"] = "1"
os.environ["TORCH_COMPILE_DEBUG_DIR"] = out
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(out, "inductor_cache"))
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(out, "inductor_cache", "triton"))

import torch  # noqa: E402  (after the environment is set: torch reads it at import)

torch.set_num_threads(1)


def f(x, n):
    y = torch.sin(x) + 1
    if y.sum() > 0:
        y = y * 2
    return torch.relu(y) * n


x = torch.randn(32, 32, device=device)  # sin(x) + 1 >= 0, so the branch goes the same way every run
start = time.perf_counter()
torch.compile(f)(x, 10)
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - start}))

"""Chapter 24: one compiled function's first call, in a fresh process, against whatever cache it finds.

A new process is the only honest way to measure a cache: Dynamo's in-memory cache entries and every
in-process memo of Inductor die with the process, so what is left to find is what lies on disk. The
caller chooses the cache by the environment (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR, TMPDIR for the
precompiled C++ header, TORCHINDUCTOR_FX_GRAPH_CACHE, TORCHINDUCTOR_AUTOGRAD_CACHE,
TORCHINDUCTOR_CPP_WRAPPER, TORCH_LOGS, ...); the script compiles

    f(x, y) = gelu(x @ y + 1).sum(dim=1)        (n × n float32; the series' day-24 function)

calls it twice and prints one JSON line on stdout: the seconds of the import, the first call (compile
and run), the second call, the cache counters torch kept, and Dynamo's compile timers. Logs go to stderr.
Run from the repository root (it imports the course's helpers for the counters):

    python code/ch24_first_call.py [--device cpu|cuda] [--n 512] [--mode default] [--threads 1]
                                   [--dynamic] [--calls 2]
"""
import argparse
import json
import os
import sys
import time

T_START = time.perf_counter()
parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--n", type=int, default=512)
parser.add_argument("--mode", default="default")
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--dynamic", action="store_true")
parser.add_argument("--calls", type=int, default=2)
parser.add_argument("--save", help="write torch.compiler.save_cache_artifacts() to this file at the end")
parser.add_argument("--load", help="torch.compiler.load_cache_artifacts() from this file before compiling")
parser.add_argument("--steady", action="store_true", help="also time eager and compiled calls after the first")
parser.add_argument("--lookup-only", action="store_true", help="stop after the FX graph cache lookup: no code is generated")
args = parser.parse_args()

import torch  # noqa: E402  (after the arguments: the import is part of what a new process pays)

T_IMPORT = time.perf_counter() - T_START
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from helpers.runtime.cache_layers import (MARK, all_counters, cache_counters, instrument_costs,  # noqa: E402
                                          stop_after_lookup, timers_since)

torch.set_num_threads(args.threads)
t0 = time.perf_counter()
costs = instrument_costs()  # imports Inductor's code cache early: its seconds belong to the first call
report = {"prep_s": time.perf_counter() - t0}
stopped = stop_after_lookup() if args.lookup_only else None
if args.load:
    with open(args.load, "rb") as fh:
        info = torch.compiler.load_cache_artifacts(fh.read())
    report["loaded"] = {k: len(v) for k, v in getattr(info, "artifacts", {}).items()}


def f(x, y):
    return torch.nn.functional.gelu(x @ y + 1).sum(dim=1)


def sync():
    if args.device == "cuda":
        torch.cuda.synchronize()


g = torch.Generator().manual_seed(0)
x = torch.randn(args.n, args.n, generator=g).to(args.device)
y = torch.randn(args.n, args.n, generator=g).to(args.device)
sync()  # a GPU's context is made here, before the clock starts
compiled = torch.compile(f, dynamic=True if args.dynamic else None,
                         mode=None if args.mode == "default" else args.mode)
before = timers_since(None)
calls = []
print(f"{MARK} start", file=sys.stderr, flush=True)
for i in range(1 if args.lookup_only else max(args.calls, 1)):  # a stopped compile would be retried
    t0 = time.perf_counter()
    try:
        out = compiled(x, y)
    except Exception as exc:  # --lookup-only: the compile stops after a missed lookup, on purpose
        if stopped is None or "stopped after the FX graph cache lookup" not in str(exc):
            raise
        report["stopped"] = True
        out = f(x, y)
    sync()
    calls.append(time.perf_counter() - t0)
    if i == 0:
        print(f"{MARK} end", file=sys.stderr, flush=True)
ok = bool(torch.allclose(out, f(x, y), rtol=1e-3, atol=1e-2))
if args.steady:  # the median of a few calls each, alternating, for the compile bet
    times = {"eager": [], "compiled": []}
    for _ in range(5):
        for name, fn in (("eager", f), ("compiled", compiled)):
            t0 = time.perf_counter()
            for _ in range(3):
                fn(x, y)
            sync()
            times[name].append((time.perf_counter() - t0) / 3)
    report["steady"] = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
if args.save:
    saved = torch.compiler.save_cache_artifacts()
    if saved is not None:
        blob, info = saved
        with open(args.save, "wb") as fh:
            fh.write(blob)
        report["artifacts"] = {"bytes": len(blob), **{k: len(v) for k, v in getattr(info, "artifacts", {}).items()}}
print(json.dumps({**report, "costs": costs.as_dict(),"import_s": T_IMPORT, "calls_s": calls, "counters": cache_counters(),
                  "timers": timers_since(before), "ok": ok, "all_counters": all_counters(), "torch": torch.__version__,
                  "process_s": time.perf_counter() - T_START}))

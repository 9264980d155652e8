"""Chapter 29: serve a .pt2 AOTInductor package from a fresh process, with no model code and no Dynamo.

What a Python deployment does: import torch, load the package, call it. Nothing here knows the model's
Python source; the package carries the compiled code and the weights. Usage:

    python code/ch29_serve.py PACKAGE CASES [--checked] [--jit EXPORTED]

CASES is a file written with ``torch.save``: ``{"x": input, "expected": eager output, "sizes": [batch
sizes to try], "device": "cpu" or "cuda", "calls": timed calls}``. The script loads the package with
``torch._inductor.aoti_load_package`` (the documented Python loader), calls it once on ``x`` (the first
request), compares with ``expected``, times steady calls, then tries each batch size of ``sizes`` (one
row each: the output shape, or the error and the reason the package's C++ code wrote to stderr). Meanwhile it counts, with ``sys.setprofile``, the calls into
Dynamo's frame converter (``torch/_dynamo/convert_frame.py``): ``CatchErrorsWrapper.__call__``, which
Dynamo's frame hook calls for every frame it is handed, and ``_compile``, which translates one frame;
it also reads Dynamo's own counters, and counts the child processes the loader starts.

``AOTI_RUNTIME_CHECK_INPUTS=1`` makes a package's generated code check every input against the shapes
it was compiled for; the generated wrapper reads the variable once, at its first call. With
``--checked`` the script sets it after the steps above, loads the package a second time (a second copy of
the library, which reads the variable afresh), tries the sizes again, and calls the first copy once more
with the last size. With ``--jit EXPORTED`` (a program saved with ``torch.export.save``) it then does the
JIT path in the same process, as a control: ``torch.export.load(EXPORTED).module()`` compiled with
``torch.compile``, its first call (the compile), and the same counters, which now move; then a second
compile of the same program at half the batch (the compile once the process's one-time costs are paid),
and the precompiled headers (``.gch``) found under ``$TMPDIR`` before and after the first.
Prints one JSON line on stdout.
"""
import faulthandler
import glob
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

faulthandler.enable()  # a crash in native code (say, in the package loader) names its Python frame on stderr
start = time.perf_counter()
import torch  # noqa: E402

import_s = time.perf_counter() - start
torch.set_num_threads(1)

CONVERT_FRAME = os.path.join("_dynamo", "convert_frame.py")
# Dynamo's frame hook hands each frame to CatchErrorsWrapper.__call__; _compile translates one frame.
WATCHED = {"CatchErrorsWrapper.__call__": "hook_calls", "_compile": "frames_compiled"}
calls = {"hook_calls": 0, "frames_compiled": 0}
compiled_names = []
children = []
_popen_init = subprocess.Popen.__init__


def _counting_popen(self, args, *rest, **kw):
    children.append(os.path.basename(str(args[0] if isinstance(args, (list, tuple)) else args).split()[0]))
    return _popen_init(self, args, *rest, **kw)


def _profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.endswith(CONVERT_FRAME):
        key = WATCHED.get(frame.f_code.co_qualname)
        if key:
            calls[key] += 1
            if key == "frames_compiled" and frame.f_locals.get("code") is not None:
                compiled_names.append(frame.f_locals["code"].co_name)


def dynamo_state():
    """Dynamo's frame counters and how often its frame converter ran, so far in this process."""
    state = {"imported": "torch._dynamo" in sys.modules, "frames": {}, **calls, "compiled": list(compiled_names)}
    if state["imported"]:
        counters = importlib.import_module("torch._dynamo.utils").counters
        state["frames"] = dict(counters["frames"])
    return state


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def steady(fn, x, device, n):
    """Seconds per call: median of 5 samples of n calls (CPU: this thread's CPU time; CUDA: synced wall)."""
    clock = time.thread_time if device == "cpu" else time.perf_counter
    samples = []
    for _ in range(5):
        sync(device)
        t0 = clock()
        for _ in range(n):
            fn(x)
        sync(device)
        samples.append((clock() - t0) / n)
    return statistics.median(samples)


def with_stderr(fn):
    """Call fn() with file descriptor 2 sent to a temporary file: ((result, exception), what was written).

    The package's C++ code reports a failed input check on stderr; on some torch versions the Python
    exception then only says that the run failed.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            try:
                outcome = (fn(), None)
            except Exception as exc:  # reported to the caller, who decides what a failure means
                outcome = (None, exc)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    return outcome, text


def try_sizes(fn, x, sizes):
    rows = {}
    for b in sizes:
        xb = torch.randn(b, *x.shape[1:], device=x.device, dtype=x.dtype)
        (y, exc), log = with_stderr(lambda: fn(xb))
        if exc is None:
            rows[str(b)] = {"ok": True, "shape": list(y.shape)}
            continue
        lines = str(exc).strip().splitlines()
        said = [ln[len("Error: "):].strip() for ln in log.splitlines() if ln.startswith("Error: ")]
        message = lines[0].strip() if lines else ""
        rows[str(b)] = {"ok": False, "error": type(exc).__name__, "message": message,
                        "reason": said[-1] if said else message}
    return rows


def precompiled_headers():
    """The precompiled C++ headers (``.gch``) under ``$TMPDIR/torchinductor_<user>/precompiled_headers``, where
    Inductor keeps them across processes (``_precompile_header`` in ``torch/_inductor/codecache.py``)."""
    found = glob.glob(os.path.join(tempfile.gettempdir(), "torchinductor_*", "precompiled_headers", "*.gch"))
    return sorted(os.path.basename(p) for p in found)


def jit_first(exported, x, expected, device, out):
    """The JIT control: load the exported program, torch.compile it, call it once (the compile).

    Then a second compile of the same program (a fresh ``torch.export.load``, another static batch) in
    the same process: what a compile costs once the process's one-time costs are paid.
    """
    out["jit_gch_before"] = precompiled_headers()
    sys.setprofile(_profile)
    t0 = time.perf_counter()
    compiled = torch.compile(torch.export.load(exported).module())
    with torch.inference_mode():
        y = compiled(x)
        sync(device)
    out["jit_first_call_s"] = time.perf_counter() - t0
    sys.setprofile(None)
    out["jit_matches"] = bool(torch.allclose(y, expected, rtol=1e-4, atol=1e-5))
    out["jit"] = dynamo_state()
    out["jit_gch_after"] = precompiled_headers()
    half = max(2, x.shape[0] // 2)
    try:
        t0 = time.perf_counter()
        again = torch.compile(torch.export.load(exported).module(), dynamic=False)
        with torch.inference_mode():
            y2 = again(x[:half])
            sync(device)
        out["jit_second_compile_s"] = time.perf_counter() - t0
        out["jit_second_matches"] = bool(torch.allclose(y2, expected[:half], rtol=1e-4, atol=1e-5))
    except Exception as exc:  # a control only: report it, keep the rest of the report
        out["jit_second_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def main():
    package, cases = sys.argv[1], sys.argv[2]
    jit = sys.argv[sys.argv.index("--jit") + 1] if "--jit" in sys.argv else None
    case = torch.load(cases)
    device, x, expected = case["device"], case["x"], case["expected"]
    out = {"torch": torch.__version__, "device": device, "import_torch_s": import_s,
           "check_inputs_env": os.environ.get("AOTI_RUNTIME_CHECK_INPUTS"),
           "dynamo_after_import_torch": "torch._dynamo" in sys.modules}
    sys.setprofile(_profile)
    t0 = time.perf_counter()
    inductor = importlib.import_module("torch._inductor")  # the loader lives here (this imports Dynamo's modules)
    out["import_loader_s"] = time.perf_counter() - t0
    subprocess.Popen.__init__ = _counting_popen
    t0 = time.perf_counter()
    model = inductor.aoti_load_package(package)
    out["load_s"] = time.perf_counter() - t0
    subprocess.Popen.__init__ = _popen_init
    out["load_children"] = list(children)
    with torch.inference_mode():
        sync(device)
        t0 = time.perf_counter()
        y = model(x)
        sync(device)
        out["first_call_s"] = time.perf_counter() - t0
        out["matches"] = bool(torch.allclose(y, expected, rtol=1e-4, atol=1e-5))
        out["max_abs_diff"] = float((y - expected).abs().max())
        out["out_shape"] = list(y.shape)
        out["sizes"] = try_sizes(model, x, case["sizes"])
    sys.setprofile(None)
    out["aot"] = dynamo_state()
    with torch.inference_mode():
        out["steady_call_s"] = steady(model, x, device, case.get("calls", 200))
    if "--checked" in sys.argv:
        # A second load opens a second copy of the library, whose wrapper reads the variable at its first call.
        os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = "1"
        checking = inductor.aoti_load_package(package)
        with torch.inference_mode():
            out["checked_sizes"] = try_sizes(checking, x, case["sizes"])
            out["first_copy_after"] = try_sizes(model, x, case["sizes"][-1:])
        del os.environ["AOTI_RUNTIME_CHECK_INPUTS"]
    if jit:
        jit_first(jit, x, expected, device, out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""The triage on real models (issue 28): tests/runtime/zoo/ builds models from the libraries readers use
(transformers' GPT-2, Llama and BERT from configs, no weights downloaded; torchvision's ResNet-18 and a timm
model where torchvision imports), tiny enough for CI, and each triage finding is checked against a ground
truth the triage does not use: torch._dynamo.explain for graphs and breaks, a counting backend for how many
graphs the same calls compile. Dynamo's findings do not depend on the backend, so both compile with
backend="eager" (Inductor's side is tested end to end on a planted case in test_triage.py).

torchvision and timm: PyPI's torchvision wheels link libc10_cuda.so, which a CPU-only torch build (the
torch-2.13.0+cpu wheel CI installs here) does not have, so ``import torchvision`` fails (torchvision's
_meta_registrations finds no torchvision::nms) and timm imports torchvision (timm/layers/create_norm.py); the
CPU-only torchvision wheels are on PyTorch's own index, which CI cannot reach. Those two tests skip, saying
so, wherever torchvision does not import; with torch 2.11's CUDA build (run on a CPU), torchvision 0.26.0 and
timm 1.0.31 they run and pass, and the H200 run (/work/gpu-checks/triage/zoo_h200.py) triages them.
"""
import functools
from pathlib import Path

import pytest

from helpers.runtime.triage import load_target, triage

ZOO = Path(__file__).resolve().parent / "zoo"
FAST = {"backend": "eager", "rounds": 1, "repeats": 2}

transformers = pytest.importorskip("transformers", reason="the zoo's transformers models need `pip install "
                                                          "transformers` (the course's [zoo] extra)")


def _torchvision_error() -> str:
    try:
        import torchvision  # noqa: F401
        return ""
    except Exception as exc:  # noqa: BLE001 - RuntimeError on a CPU-only torch, ImportError when absent
        return f"{type(exc).__name__}: {exc}"


@functools.cache
def report(name: str, **kw):
    """One triage per zoo file and settings, shared by the tests that read it."""
    return triage(ZOO / f"{name}.py", device="cpu", **{**FAST, **kw})


def ground_truth(name: str, explain: bool = False):
    """Graphs and breaks by torch._dynamo.explain, and the frame compiles of the example and its variants
    counted by a backend that counts its calls (a fresh compile, independent of the triage's hooks)."""
    import torch

    model, example, variants = load_target(ZOO / f"{name}.py", device="cpu")
    ex = None
    if explain:
        torch._dynamo.reset()
        ex = torch._dynamo.explain(model)(*example.args, **example.kwargs)
    torch._dynamo.reset()
    compiled_graphs = []

    def counting(gm, inputs):
        compiled_graphs.append(gm)
        return gm.forward

    compiled = torch.compile(model, backend=counting)
    per_call, first_graphs = [], None
    for call in [example, *variants]:
        before = len(compiled_graphs)
        compiled(*call.args, **call.kwargs)
        per_call.append(len(compiled_graphs) - before)
    torch._dynamo.reset()
    return ex, per_call


def statuses(r) -> dict:
    return {f.key: f.status for f in r.findings}


def test_gpt2_inference_recompiles_once_for_a_new_length_then_reuses_as_a_counting_backend_sees():
    # three sequence lengths: the second fails the static size guard (automatic dynamic then marks the
    # length symbolic), the third reuses that graph. --try-fixes' shape cures are tested on the planted
    # shapes.py (test_triage.py) and measured on this model at full size on the H200 (zoo_h200.py): here they
    # would triple this test's time
    r = report("gpt2")
    _, per_call = ground_truth("gpt2")
    assert r.error is None and statuses(r)["result"] == "ok" and statuses(r)["graph_breaks"] == "ok"
    assert r.data["graphs"] == 1 and not r.data["breaks"]
    assert per_call == [1, 1, 0]  # one graph per compile: no break
    calls = r.data["calls"]
    assert calls["compiles"] == sum(per_call) == 2 and calls["recompiled"] == 1
    assert [v["recompiles"] for v in r.data["variants"]] == per_call[1:] == [1, 0]
    assert r.data["variants"][0]["reason"].endswith("size mismatch at index 1. expected 16, actual 32")
    text = " ".join(ln.text for ln in r.finding("recompiles").lines)
    assert "size mismatch at index 1. expected 16, actual 32" in text and "before automatic dynamic" in text


def test_gpt2_training_loss_breaks_at_transformers_logger_warning_once_and_the_cure_is_measured():
    # transformers' loss_function calls logger.warning_once (a method transformers adds to logging.Logger);
    # Dynamo breaks the graph there; ignore_logging_functions removes the break
    r = report("gpt2_train", try_fixes=True)
    ex, per_call = ground_truth("gpt2_train", explain=True)
    assert r.error is None and statuses(r)["graph_breaks"] == "problem"
    assert len(r.data["breaks"]) == ex.graph_break_count == 1 and r.data["graphs"] == ex.graph_count == 2
    assert per_call == [2]  # the counting backend: two graphs, one each side of the break
    [b] = r.data["breaks"]
    assert b["file"].endswith("modeling_utils.py") and "logging.Logger" in b["explanation"] + b["title"]
    # dropout is active in training mode: the mismatch is by design, a note naming the modules
    assert statuses(r)["result"] == "note" and "transformer.drop (Dropout)" in r.finding("result").lines[0].text
    [row] = r.data["fixes"]
    assert row["fix"] in ("ignore_logging_functions", "ignore_logger_methods") and not row["fixed"]["error"]
    assert (row["baseline"]["breaks"], row["fixed"]["breaks"]) == (1, 0)
    assert "logging.Logger.warning_once" in row["how"] and row["fixed"]["compiles"] < row["baseline"]["compiles"]
    # dropout: neither run matches eager, and the line says why instead of calling the cure a regression
    line = r.finding("fixes").lines[0].text
    assert "NO LONGER" not in line and "as the run without the cure does" in line


@pytest.mark.parametrize("name", ["llama", "bert"])
def test_llama_and_bert_inference_compile_one_graph_as_a_counting_backend_sees(name):
    r = report(name)
    _, per_call = ground_truth(name)
    assert r.error is None and statuses(r)["result"] == "ok" and statuses(r)["graph_breaks"] == "ok"
    assert r.data["graphs"] == 1 and not r.data["breaks"]
    assert per_call == [1] and r.data["calls"]["compiles"] == 1  # one compile of one graph: no break


@pytest.mark.parametrize("name", ["resnet18", "timm_tiny"])
def test_torchvision_and_timm_models_compile_in_one_graph(name):
    why = _torchvision_error()
    if why:
        if why.startswith("ModuleNotFoundError"):
            pytest.skip("torchvision is not installed (timm needs it too): the [zoo] extra leaves it out, since "
                        "PyPI's torchvision links torch's CUDA libraries (libc10_cuda.so), which a CPU-only "
                        "torch lacks")
        pytest.skip(f"torchvision does not import here ({why[:120]}): PyPI's torchvision links libc10_cuda.so, "
                    "absent from a CPU-only torch; timm imports torchvision")
    r = report(name)
    _, per_call = ground_truth(name)
    assert r.error is None and statuses(r)["result"] == "ok" and statuses(r)["graph_breaks"] == "ok"
    assert r.data["graphs"] == 1 and per_call == [1] and r.data["calls"]["compiles"] == 1

"""Write the triage's report on each zoo model into chapters/triage_zoo/, and the book's appendix page
chapters/triage_zoo.md that includes them: ``python tests/runtime/zoo/make_reports.py [FOLDER_OF_H200_REPORTS]``.

With a folder (the Markdown files /work/gpu-checks/triage/zoo_h200.py wrote on the H200), copies those; for
every report not there, triages the zoo model here (CI size, this machine's CPU, default Inductor backend).
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "chapters" / "triage_zoo"
RUNS = {"gpt2": ("gpt2.py", {"try_fixes": True}), "gpt2_train": ("gpt2_train.py", {"try_fixes": True}),
        "llama": ("llama.py", {}), "bert": ("bert.py", {}), "resnet18": ("resnet18.py", {}),
        "timm_resnet10t": ("timm_tiny.py", {}), "gpt2_reduce_overhead": None, "gpt2_reduce_overhead_no_grad": None}


def main(h200: str | None = None) -> None:
    OUT.mkdir(exist_ok=True)
    for name, run in RUNS.items():
        got = Path(h200) / f"{name}.md" if h200 else None
        if got and got.exists():
            (OUT / f"{name}.md").write_text(re.sub(r"/[\w./+-]*?/(?=tests/runtime/zoo/)", "", got.read_text()))
            print(f"{name}: the H200 report")
            continue
        if run is None:  # a GPU-only run (reduce-overhead)
            continue
        from helpers.runtime.triage import triage

        try:
            r = triage(Path(__file__).parent / run[0], device="cpu", rounds=2, repeats=10, **run[1])
        except Exception as exc:  # noqa: BLE001 - e.g. torchvision that does not import here
            print(f"{name}: not triaged here ({type(exc).__name__}: {exc})")
            continue
        if r.error and r.error["kind"] == "import":
            print(f"{name}: not triaged here ({r.error['message']})")
            (OUT / f"{name}.md").unlink(missing_ok=True)
            continue
        text = r.markdown().replace(f"{ROOT.as_posix()}/", "")  # the repository's paths, not this machine's
        (OUT / f"{name}.md").write_text(f"<!-- CPU run of the CI-size zoo, settings {run[1]} -->\n" + text)
        print(f"{name}: CPU report, {r.seconds:.0f} s")
    page()


TITLES = {"gpt2": "GPT-2, inference on three sequence lengths, with --try-fixes",
          "gpt2_train": "GPT-2 in training mode with labels (the loss inside forward), with --try-fixes",
          "gpt2_reduce_overhead": "GPT-2 under --mode reduce-overhead, autograd on (eval mode alone)",
          "gpt2_reduce_overhead_no_grad": "GPT-2 under --mode reduce-overhead with --no-grad",
          "llama": "Llama (transformers), inference", "bert": "BERT (transformers), inference",
          "resnet18": "ResNet-18 (torchvision), inference", "timm_resnet10t": "resnet10t (timm), inference"}


def page() -> None:
    """chapters/triage_zoo.md: one section per report present, each saying which run wrote it."""
    h200 = any("H200" in f.read_text().splitlines()[0] for f in OUT.glob("*.md"))
    lines = ["# Triage, on real models", "",
             "What `python -m helpers triage` (chapter 30's triage, {doc}`ch30_map`) says about models that no one "
             "on this course wrote, built from their libraries' configs with no weights downloaded: the zoo of "
             "`tests/runtime/zoo/`. Each report is shown as the triage wrote it; its machine line says where it "
             "ran. " + ("The GPU reports come from the course's H200 run (torch 2.11, the models at their "
             "libraries' default sizes); a model without a GPU report shows a CPU run of the zoo's small (CI) "
             "size. " if h200 else "No report of the H200 run is here yet: each report below is a CPU run of the "
             "zoo's small (CI) size, and the H200 run at the libraries' default sizes will replace them. ") +
             "CI checks the findings on the small models against a ground truth the triage does not use "
             "(`tests/runtime/test_triage_zoo.py`: the graphs a counting backend receives for the same calls, "
             "and `torch._dynamo.explain`).", ""]
    for name, title in TITLES.items():
        f = OUT / f"{name}.md"
        if not f.exists():
            continue
        head = f.read_text().splitlines()[0]
        where = "the H200 run" if "H200" in head else "a CPU run, CI size"
        lines += [f"## {title}", "", f"From {where}; the file is `chapters/triage_zoo/{name}.md`.", "",
                  f"```{{include}} triage_zoo/{name}.md", ":heading-offset: 2", "```", ""]
    (OUT.parent / "triage_zoo.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main(*sys.argv[1:2])

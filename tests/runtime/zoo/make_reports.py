"""Write the triage's report on each zoo model into chapters/triage_zoo/, and the book's appendix page
chapters/triage_zoo.md that includes them: ``python tests/runtime/zoo/make_reports.py [FOLDER_OF_H200_REPORTS]``.

With the H200's reports (zoo_h200.py's zoo_reports.md, or a folder of its NAME.md / NAME.json), writes those;
for every other zoo model, triages it here (CI size, this machine's CPU, default Inductor backend), or with
``--keep`` keeps the report already in chapters/triage_zoo/.
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "chapters" / "triage_zoo"
RUNS = {"gpt2": ("gpt2.py", {"try_fixes": True}), "gpt2_train": ("gpt2_train.py", {"try_fixes": True}),
        "llama": ("llama.py", {}), "bert": ("bert.py", {}), "resnet18": ("resnet18.py", {}),
        "timm_resnet10t": ("timm_tiny.py", {}), "gpt2_reduce_overhead": None, "gpt2_reduce_overhead_no_grad": None}


def h200_reports(source: str | None) -> dict[str, str]:
    """NAME -> the report's Markdown, from what zoo_h200.py wrote: its one file zoo_reports.md (reports after
    `<!-- zoo-report: NAME -->` lines), or a folder of NAME.md files (an earlier version) or NAME.json reports
    (rendered again with the triage's own Report.markdown)."""
    if not source:
        return {}
    src, got = Path(source), {}
    files = [src] if src.is_file() else sorted(src.glob("*"), key=lambda f: (f.suffix != ".md", f.name))
    for f in files:
        if f.suffix == ".md" and "<!-- zoo-report:" in f.read_text():
            for name, text in re.findall(r"<!-- zoo-report: (\w+) -->\n(.*?)(?=<!-- zoo-report:|\Z)", f.read_text(), re.S):
                got[name] = text.rstrip() + "\n"
        elif f.suffix == ".md":
            got.setdefault(f.stem, f.read_text())
        elif f.suffix == ".json" and f.stem not in got:
            got[f.stem] = from_json(json.loads(f.read_text()))
    return {k: re.sub(r"/[\w./+-]*?/(?=tests/runtime/zoo/)", "", v) for k, v in got.items()}


def from_json(data: dict) -> str:
    """A report's Markdown from its JSON (``Report.as_json``): the same Report, rebuilt, then ``markdown()``."""
    from helpers.runtime.triage import CHAPTERS, Finding, Line, Report

    key_of = {name: key for key, name in CHAPTERS.items()}
    fields = {k: data[k] for k in ("target", "settings", "env", "model", "inputs", "variants", "data", "error", "bet",
                                   "seconds")}
    r = Report(**fields)
    r.findings = [Finding(f["key"], f["title"], f["status"],
                          [Line(ln["text"], key_of.get(ln["chapter"], "")) for ln in f["lines"]], f.get("code", ""))
                  for f in data["findings"]]
    from helpers.runtime.triage import _cudagraphs_finding

    e = data.get("env") or {}
    if data["data"].get("kept_output_loop") and e.get("device"):  # today's wording of the H200's measurement
        r.findings = [_cudagraphs_finding(r.data, r.settings, e["device"]) if f.key == "cudagraphs" else f
                      for f in r.findings]
    kw = {k: v for k, v in data["settings"].items() if k in ("mode", "no_grad", "try_fixes") and v}
    return f"<!-- torch {e.get('torch')}, {e.get('device_name')}, settings {kw} -->\n" + r.markdown()


def main(h200: str | None = None) -> None:
    OUT.mkdir(exist_ok=True)
    gpu = h200_reports(h200)
    for name, run in RUNS.items():
        if name in gpu:
            (OUT / f"{name}.md").write_text(gpu[name])
            print(f"{name}: the H200 report")
            continue
        if run is None or (OUT / f"{name}.md").exists() and "--keep" in sys.argv:
            continue
        from helpers.runtime.triage import triage

        try:
            r = triage(Path(__file__).parent / run[0], device="cpu", rounds=2, repeats=10, **run[1])
        except Exception as exc:  # noqa: BLE001 - e.g. torchvision that does not import here
            print(f"{name}: not triaged here ({type(exc).__name__}: {exc})")
            continue
        if r.error and r.error["kind"] == "import":
            print(f"{name}: not triaged here ({r.error['message']})")
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
             "libraries' default sizes, the host's own libraries: transformers 5.17.0, torchvision 0.26.0+cu130, "
             "timm 1.0.29); a model without a GPU report shows a CPU run of the zoo's small (CI) size "
             "(transformers 5.24.0; torchvision 0.26.0+cu130 and timm 1.0.31 with torch 2.11). " if h200 else "No report of the H200 run is here yet: each report below is a CPU run of the "
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
        said = re.sub(r"^<!--\s*|\s*-->$", "", head) if head.startswith("<!--") and "H200" in head else ""
        lines += [f"## {title}", "", f"From {where}" + (f" ({said})" if said else "")
                  + f"; the file is `chapters/triage_zoo/{name}.md`.", "",
                  f"```{{include}} triage_zoo/{name}.md", ":heading-offset: 2", "```", ""]
    (OUT.parent / "triage_zoo.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main(*[a for a in sys.argv[1:] if a != "--keep"][:1])

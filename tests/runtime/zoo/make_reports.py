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
        "llama": ("llama.py", {}), "bert": ("bert.py", {}), "resnet18": ("resnet18.py", {"try_fixes": True}),
        "resnet18_no_grad": ("resnet18.py", {"try_fixes": True, "no_grad": True}),
        "timm_resnet10t": ("timm_tiny.py", {"try_fixes": True}), "gpt2_reduce_overhead": None, "gpt2_reduce_overhead_no_grad": None}


def h200_reports(source: str | None) -> dict[str, str]:
    """NAME -> the report's Markdown, from what zoo_h200.py wrote: its one file zoo_reports.md (reports after
    `<!-- zoo-report: NAME -->` lines), or a folder of NAME.md files (an earlier version) or NAME.json reports
    (rendered again with the triage's own Report.markdown)."""
    if not source:
        return {}
    src, got = Path(source), {}
    # a report's JSON first: every finding is rendered again from its data; a report kept only as Markdown has
    # the lines today's code words differently re-rendered from the numbers it prints (rerender_markdown)
    files = [src] if src.is_file() else sorted(src.glob("*"), key=lambda f: (f.suffix != ".json", f.name))
    for f in files:
        if f.suffix == ".md" and "<!-- zoo-report:" in f.read_text():
            for name, text in re.findall(r"<!-- zoo-report: (\w+) -->\n(.*?)(?=<!-- zoo-report:|\Z)", f.read_text(), re.S):
                got[name] = _noted(*rerender_markdown(text.rstrip() + "\n"))
        elif f.suffix == ".md" and f.stem not in got:
            got[f.stem] = _noted(*rerender_markdown(f.read_text()))
        elif f.suffix == ".json":
            got[f.stem] = from_json(json.loads(f.read_text()))
    return {k: re.sub(r"/[\w./+-]*?/(?=tests/runtime/zoo/)", "", v) for k, v in got.items()}


def _noted(text: str, done: list[str]) -> str:
    """The report with what was re-rendered said in its first line's comment (the appendix shows that line)."""
    head, _, rest = text.partition("\n")
    if done and head.startswith("<!--") and head.endswith("-->"):
        head = head[:-3].rstrip() + "; re-rendered from this report's own numbers by today's triage code: " \
            + ", ".join(done) + " -->"
    return head + "\n" + rest


def from_json(data: dict) -> str:
    """A report's Markdown from its JSON (``Report.as_json``), every finding and the bet rendered again by today's
    triage code from the run's data (``_findings``; section 9 from the trials' rows): nothing is measured here."""
    from helpers.dynamo.graph_breaks import BreakRecord
    from helpers.runtime import triage as T

    fields = {k: data[k] for k in ("target", "settings", "env", "model", "inputs", "variants", "data", "error", "bet",
                                   "seconds")}
    r = T.Report(**fields)
    r.findings = []
    e = data.get("env") or {}
    T._findings(r, [BreakRecord(**b) for b in r.data["breaks"]], e.get("device", "cuda"),
                ROOT / "tests" / "runtime" / "zoo" / Path(data["target"].split(":")[0]).name)
    if "fixes" in r.data:
        r.findings.append(T._fixes_finding(r.data["fixes"], r.data.get("random_modules")))
    kw = {k: v for k, v in data["settings"].items() if k in ("mode", "no_grad", "try_fixes") and v}
    return (f"<!-- torch {e.get('torch')}, {e.get('device_name')}, settings {kw}; re-rendered from the run's JSON "
            "by today's triage code -->\n" + r.markdown())


def rerender_markdown(text: str) -> tuple[str, list[str]]:
    """The lines of an H200 report kept only as Markdown that today's triage words differently, written again
    from the numbers the same report prints (section 6's measured launches and GPU busy fractions, section 8's
    counts); returns the text and what was re-rendered. Nothing else changes: no value is made up."""
    from helpers.runtime import triage as T

    done = []
    ro = "'mode': 'reduce-overhead'" in text.splitlines()[0] or "mode='reduce-overhead'" in text
    launches = {k: float(v) for k, v in re.findall(r"^- (eager|compiled): (\d+) kernel launches per call", text, re.M)}
    busy = {k: int(v) / 100 for k, v in re.findall(r"^- (eager|compiled): \d+ kernel launches per call, the GPU busy "
                                                  r"(\d+)% of", text, re.M)}
    link = r"( \(\[ch\w+\]\([^)]*\)\))"
    # section 8: what fusion removed, from section 6's measured launches
    m = re.search(r"^- (\d+) eager operator\(s\) became (\d+) kernel launch\(es\) and (\d+) library call\(s\): [^\n]*?"
                  + link + "$", text, re.M)
    if m:
        line = T.fusion_line(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                             (launches.get("eager"), launches.get("compiled")), ro)
        text = text.replace(m.group(0), f"- {line}{m.group(4)}")
        done.append("section 8's fusion line")
    # section 6 under reduce-overhead: kernels run in a replay, not launches
    m = re.search(r"^- compiled: (\d+) kernel launches per call, the GPU busy (\d+)% of the wall time: [^(\n]*" + link
                  + "$", text, re.M)
    if m and ro:
        text = text.replace(m.group(0), f"- {T.replay_kernels_line(float(m.group(1)), int(m.group(2)) / 100)}"
                                        f"{m.group(3)}")
        done.append("section 6's compiled kernels under reduce-overhead")
    # section 7: reduce-overhead advised for a launch-bound compiled call
    m = re.search(r"^## 7\. (CUDA graphs \(mode=\"reduce-overhead\"\)) — NOT CHECKED\n\n- not asked for: [^\n]*?" + link
                  + "$", text, re.M)
    if m and "compiled" in busy and busy["compiled"] < 0.8:
        text = text.replace(m.group(0), f"## 7. {m.group(1)} — NOTE\n\n- {T.reduce_overhead_advice(busy['compiled'])}"
                                        f"{m.group(2)}")
        done.append("section 7's reduce-overhead advice")
    # section 5 on a GPU: what the kernel compiler's timer covers
    m = re.search(r"^- where it went: [^\n]*kernel compiler \(C\+\+ or Triton\) [^\n]*?" + link + "$", text, re.M)
    if m and launches and T.KERNEL_COMPILER_NOTE not in text:  # a report of today's code has it already
        text = text.replace(m.group(0), m.group(0) + f"\n- {T.KERNEL_COMPILER_NOTE}{_link(m.group(1), 'ch17_inductor_overview')}")
        done.append("section 5's kernel compiler note")
    # section 8: the modules after the first call, not all put down to the variants
    m = re.search(r"^- the variants' recompiles generated (\d+) more module\(s\)", text, re.M)
    if m:
        text = text.replace(m.group(0), f"- the recompiles after the first call (the steady timing's or the variants'; "
                                        f"this run did not record which) generated {m.group(1)} more module(s)")
        done.append("section 8's modules line")
    # section 9: the seconds compare only like cache results (the trials' hits and misses were not recorded)
    old = ("Inductor's caches may serve either, so the counts are the proof and the seconds a guide")
    if old in text:
        text = text.replace(old, "Inductor's FX graph cache may serve either (a hit skips code generation and the "
                                 "kernel compiler), so the counts are the proof, and the seconds compare only between "
                                 "runs with the same cache hits and misses (this run did not record the trials' cache "
                                 "hits and misses)")
        done.append("section 9's closing line")
    return text, done


def _link(example: str, chapter: str) -> str:
    """A chapter link written like ``example`` (the report's own form of links), for ``chapter``."""
    return re.sub(r"\[ch\w+\]\(([^)]*?)ch\w+(\.html|\.ipynb)\)", rf"[{chapter}](\g<1>{chapter}\g<2>)", example)


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
          "resnet18": "ResNet-18 (torchvision), inference, with --try-fixes",
          "resnet18_no_grad": "ResNet-18 (torchvision) under --no-grad, with --try-fixes (reduce-overhead alone)",
          "timm_resnet10t": "resnet10t (timm), inference, with --try-fixes"}


def page() -> None:
    """chapters/triage_zoo.md: one section per report present, each saying which run wrote it."""
    h200 = any("H200" in f.read_text().splitlines()[0] for f in OUT.glob("*.md"))
    all_h200 = all("H200" in (OUT / f"{n}.md").read_text().splitlines()[0] for n in TITLES if (OUT / f"{n}.md").exists())
    lines = ["# Triage, on real models", "",
             "What `python -m helpers triage` ({doc}`chapter 30 <ch30_map>`'s triage) says about models that no one "
             "on this course wrote, built from their libraries' configs with no weights downloaded: the zoo of "
             "`tests/runtime/zoo/`. Each report is shown as the triage wrote it; its machine line says where it "
             "ran. " + (("Every report below is from the course's H200 run" if all_h200 else
                         "The GPU reports come from the course's H200 run")
             + " (torch 2.11, the models at their libraries' default sizes, the host's own libraries: transformers "
             "5.17.0, torchvision 0.26.0+cu130, timm 1.0.29)"
             + ("" if all_h200 else "; a model without a GPU report shows a CPU run of the zoo's small (CI) size "
                "(transformers 5.24.0; torchvision 0.26.0+cu130 and timm 1.0.31 with torch 2.11)")
             + ". The triage's code changed after that run; where its data sufficed, a report was rendered again "
             "by today's code from the run's own data, without measuring anything: a report kept as JSON whole, "
             "a report kept only as Markdown in the lines named above it, from the numbers that report prints; "
             "every other line is as the H200 run wrote it. " if h200 else "No report of the H200 run is here yet: each report below is a CPU run of the "
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

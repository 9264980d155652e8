"""The course's command line: run, verify, publish, lint, pointers, guide, student and grade (introduced in chapter 1)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.env import CourseError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers",
        description="torch.compile, opened up: execute and verify the chapter notebooks, publish a verified "
                    "GPU run, lint the chapters, regenerate the instructor guide, write the student edition, "
                    "grade submitted notebooks.",
        epilog="and: triage FILE.py[:FUNCTION] — triage your own model under torch.compile (graph breaks, "
               "recompiles, guards, compile time, speed, CUDA-graph skips, kernels, each with its chapter); "
               "see python -m helpers triage --help.")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute chapter notebooks with papermill, verify them, write a report")
    r.add_argument("chapters", nargs="*", help="ch01, 2, ch02_four_stations or a path; none = all")
    r.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    r.add_argument("--scale", default="auto", choices=["auto", "quick", "full"])
    r.add_argument("--shard", help="i/n: run every n-th chapter starting at the i-th")
    r.add_argument("--out", help="folder for executed notebooks and the report (default runs/<time>-<device>)")
    r.add_argument("--timeout", type=float, default=300, help="seconds per notebook (default 300)")
    r.add_argument("--jobs", type=int, default=1, help="notebooks run at once (default 1)")
    r.add_argument("--cache", help="compile-cache folder shared by the run (default OUT/compile-cache)")
    v = sub.add_parser("verify", help="re-check executed notebooks (files or run folders)")
    v.add_argument("paths", nargs="*")
    m = sub.add_parser("merge", help="merge the run folders of a sharded run into one (re-verified)")
    m.add_argument("run_dirs", nargs="+")
    m.add_argument("--out", required=True, help="folder for the merged run")
    p = sub.add_parser("publish", help="copy a verified GPU run's outputs into chapters/")
    p.add_argument("run_dir")
    p.add_argument("chapters", nargs="*", help="publish only these chapters of the run (each must have passed)")
    sub.add_parser("guide", help="regenerate chapters/instructors.md from the notebooks")
    vp = sub.add_parser("verification", help="record verified runs (optional) and regenerate chapters/verification.md")
    vp.add_argument("run_dirs", nargs="*", help="run folders to record first (any device)")
    s = sub.add_parser("student", help="write the chapters without their solutions (the student edition)")
    s.add_argument("chapters", nargs="*", help="ch01, 2, ch02_four_stations or a path; none = the book's chapters")
    s.add_argument("--out", default="runs/student", help="folder to write into (default runs/student)")
    s.add_argument("--outputs", choices=["none", "book"], default="none",
                   help="none (default): clear every output; book: keep the book's outputs outside the exercises' "
                        "cells (they may answer an exercise that asks to predict them)")
    s.add_argument("--no-outputs", action="store_true", help="the same as --outputs none (the default)")
    g = sub.add_parser("grade", help="run submitted notebooks with the course's own checks; write grade tables")
    g.add_argument("submissions", nargs="+", help="submitted notebooks, or folders of them")
    g.add_argument("--out", help="folder for grades.md/.csv and the runs (default SUBMISSIONS/grades)")
    g.add_argument("--jobs", type=int, default=2, help="submissions run at once (default 2: one per core)")
    g.add_argument("--timeout", type=float, default=300, help="seconds per submission (default 300)")
    g.add_argument("--exercise-timeout", type=float, default=120,
                   help="seconds an exercise's answer and check cells may run before it is stopped and marked, "
                        "the other exercises still graded (default 120)")
    g.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where they run (default cpu)")
    g.add_argument("--record", action="store_true",
                   help="keep this run's timing in helpers/verified/grading.json (the instructor guide quotes it)")
    pt = sub.add_parser("pointers", help="check every chapter's \"Where to read the source\" pointers against a torch "
                                         "(files and names, read without importing torch); 1 if one rotted")
    pt.add_argument("--torch-root", help="folder holding an unpacked torch/ (default: the installed torch)")
    lint = sub.add_parser("lint", help="static checks on chapter notebooks")
    lint.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    from . import publish, run

    try:
        if args.command == "run":
            return run.run(args.chapters, device=args.device, scale=args.scale, shard=args.shard,
                              out=args.out, timeout=args.timeout, cache=args.cache, jobs=args.jobs)
        if args.command == "verify":
            return run.verify_paths(args.paths)
        if args.command == "merge":
            return run.merge(args.run_dirs, args.out)
        if args.command == "publish":
            return publish.publish(args.run_dir, only=[c if c.startswith("ch") else f"ch{int(c):02d}"
                                                       for c in args.chapters] or None)
        if args.command == "verification":
            from . import verification

            for d in args.run_dirs:
                print(f"recorded {d} -> {verification.record(d)}")
            print(f"wrote {verification.write()}")
            return 0
        if args.command == "pointers":
            from ..core.pointers import PointerError, main as pointers
            from .sources import SOURCES_DIR

            try:
                return pointers(SOURCES_DIR, args.torch_root)
            except PointerError as exc:
                raise CourseError(str(exc)) from exc
        if args.command == "guide":
            from .guide import write

            print(f"wrote {write()}")
            return 0
        if args.command == "student":
            from .student import write as write_student

            for path in write_student(args.chapters, args.out, keep_outputs=args.outputs == "book" and not args.no_outputs):
                print(f"wrote {path}")
            return 0
        if args.command == "grade":
            from .grade import grade

            return grade(args.submissions, out=args.out, jobs=args.jobs, timeout=args.timeout, device=args.device, record=args.record,
                         exercise_timeout=args.exercise_timeout)
        from .lint import lint_notebook
        from .sources import differences

        paths = args.paths or [str(p) for p in run.chapters().values()]
        problems = [p for path in paths for p in lint_notebook(path)]
        problems += [p for path in paths if Path(path).parent == run.CHAPTERS_DIR for p in differences(path)]
        print("\n".join(problems) if problems else f"lint: {len(paths)} notebooks clean")
        return 1 if problems else 0
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

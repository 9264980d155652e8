"""The course's command line: run, verify, publish, lint and guide (introduced in chapter 1)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.env import CourseError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers",
        description="torch.compile, opened up: execute and verify the chapter notebooks, publish a verified "
                    "GPU run, lint the chapters, regenerate the instructor guide.")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute chapter notebooks with papermill, verify them, write a report")
    r.add_argument("chapters", nargs="*", help="ch01, 2, ch02_four_stations or a path; none = all")
    r.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    r.add_argument("--scale", default="auto", choices=["auto", "quick", "full"])
    r.add_argument("--shard", help="i/n: run every n-th chapter starting at the i-th")
    r.add_argument("--out", help="folder for executed notebooks and the report (default runs/<time>-<device>)")
    r.add_argument("--timeout", type=float, default=300, help="seconds per notebook (default 300)")
    r.add_argument("--cache", help="compile-cache folder shared by the run (default OUT/compile-cache)")
    v = sub.add_parser("verify", help="re-check executed notebooks (files or run folders)")
    v.add_argument("paths", nargs="*")
    m = sub.add_parser("merge", help="merge the run folders of a sharded run into one (re-verified)")
    m.add_argument("run_dirs", nargs="+")
    m.add_argument("--out", required=True, help="folder for the merged run")
    p = sub.add_parser("publish", help="copy a verified GPU run's outputs into chapters/")
    p.add_argument("run_dir")
    sub.add_parser("guide", help="regenerate chapters/instructors.md from the notebooks")
    lint = sub.add_parser("lint", help="static checks on chapter notebooks")
    lint.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    from . import publish, run

    try:
        if args.command == "run":
            return run.run(args.chapters, device=args.device, scale=args.scale, shard=args.shard,
                              out=args.out, timeout=args.timeout, cache=args.cache)
        if args.command == "verify":
            return run.verify_paths(args.paths)
        if args.command == "merge":
            return run.merge(args.run_dirs, args.out)
        if args.command == "publish":
            return publish.publish(args.run_dir)
        if args.command == "guide":
            from .guide import write

            print(f"wrote {write()}")
            return 0
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

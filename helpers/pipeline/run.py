"""``python -m helpers run``: execute chapter notebooks with papermill in fresh kernels, verify every
figure from the executed notebook alone, and write report.md (ch01 explains the promise).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..core import machine_lock
from ..core.env import REPO_ROOT, CourseError
from .verify import NotebookResult, verify_notebook

CHAPTERS_DIR = REPO_ROOT / "chapters"


CHAPTER_FILE = re.compile(r"^(ch\d\d)_[\w-]+\.ipynb$")


def chapters(directory: Path = CHAPTERS_DIR) -> dict[str, Path]:
    """Chapter id → notebook path, in course order."""
    found = {}
    for path in sorted(directory.glob("ch*.ipynb")):
        m = CHAPTER_FILE.match(path.name)
        if m:
            found[m.group(1)] = path
    return found


def resolve(names: list[str], directory: Path = CHAPTERS_DIR) -> list[Path]:
    """Map 'ch02', '2', 'ch02_four_stations' or a path to notebooks; unknown names are an error."""
    known = chapters(directory)
    if not names:
        return list(known.values())
    out = []
    for name in names:
        p = Path(name)
        if p.suffix == ".ipynb" and p.exists():
            out.append(p.resolve())
            continue
        key = name if name.startswith("ch") else f"ch{int(name):02d}" if name.isdigit() else name
        key = key[:4]
        if key not in known:
            raise CourseError(f"unknown chapter {name!r}. Available: {', '.join(known) or 'none'}.")
        out.append(known[key])
    return out


def course_mark(notebook: Path, key: str) -> str | None:
    """A chapter's scheduling mark ``course.<key>`` in its notebook metadata (the reason given), or None."""
    try:
        meta = json.loads(Path(notebook).read_text()).get("metadata", {})
    except (OSError, ValueError):
        return None
    reason = (meta.get("course") or {}).get(key)
    return str(reason) if reason else None


def runs_alone(notebook: Path) -> str | None:
    """Why a chapter must have the GPU to itself (notebook metadata ``course.alone``), or None.

    A chapter whose checked figures are wall-clock timings of GPU work (a launch-bound step, a guard's
    share of a call, an autotuning benchmark) would measure its neighbours too if other notebooks ran
    on the same GPU at the same time. On a CPU every timing is the calling thread's CPU time, which
    other processes do not inflate, so the marker only applies to GPU runs.
    """
    return course_mark(notebook, "alone")


def runs_after(notebook: Path) -> str | None:
    """Why a chapter reads the other chapters' records (notebook metadata ``course.after``), or None.

    The map (ch30) gathers every chapter's verified figures. In a GPU run it goes last, and it reads this
    run's records of the chapters that passed (over the committed ones), so that publishing the run
    publishes a map of the chapters published with it.
    """
    return course_mark(notebook, "after")


def recorded_seconds(notebook: Path) -> float | None:
    """How long the chapter took in the run its committed record (``helpers/canonical``) comes from."""
    from ..core.numbers import CANONICAL_DIR

    m = CHAPTER_FILE.match(Path(notebook).name)
    try:
        return float(json.loads((CANONICAL_DIR / f"{m.group(1)}.json").read_text())["seconds"])
    except (AttributeError, OSError, ValueError, KeyError, TypeError):
        return None


def schedule(notebooks: list[Path], device: str, jobs: int) -> tuple[list[Path], list[Path], list[Path]]:
    """Split a run into the notebooks that share the machine, those that need it alone for their measured
    cells, and those that read the others' records and so run last (on a GPU).

    With several jobs the sharing notebooks start longest first (by their committed records' times, a
    chapter without one first of all): a long chapter started last would end the shared part late.
    """
    after = [nb for nb in notebooks if device == "cuda" and runs_after(nb)]
    alone = [nb for nb in notebooks if device == "cuda" and jobs > 1 and runs_alone(nb) and nb not in after]
    together = [nb for nb in notebooks if nb not in alone and nb not in after]
    if jobs > 1:
        seconds = {nb: recorded_seconds(nb) for nb in together}
        together.sort(key=lambda nb: -(float("inf") if seconds[nb] is None else seconds[nb]))
    return together, alone, after


def record_of(r, verified: str) -> dict:
    """A chapter's ``helpers/canonical`` record from its verified notebook ``r``: the run's figures, and the
    series' values it cites (``series``), so that the map (ch30) can show them where only the records ship."""
    chapter = CHAPTER_FILE.match(Path(r.path).name).group(1)
    from ..core.numbers import machine_dependent

    figures = {f["name"]: {**{k: f.get(k) for k in ("value", "unit", "status", "rule") + (("on",) if f.get("on") else ())},
                           "machine_dependent": machine_dependent(f)}
               for f in r.figures if f["status"] not in NOT_MEASURED_HERE}
    series = {f["name"]: {"value": f.get("value"), "unit": f.get("unit", ""), "source": f.get("rule", ""),
                          "machine": f.get("machine")}
              for f in r.figures if f["status"] == "reference"}
    record = {"chapter": chapter, "verified": verified, "env": r.env, "seconds": r.seconds, "figures": figures}
    if series:
        record["series"] = series
    return record


def write_run_records(results: dict, finished: str, out_dir: Path) -> Path:
    """The records the map reads in a GPU run: the committed ones, with this run's passing chapters laid over them."""
    import shutil

    from ..core.numbers import CANONICAL_DIR

    folder = out_dir / "records"
    folder.mkdir(parents=True, exist_ok=True)
    for path in CANONICAL_DIR.glob("ch*.json"):
        shutil.copy2(path, folder / path.name)
    for r in results.values():
        if r.ok:
            record = record_of(r, finished)
            (folder / f"{record['chapter']}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return folder


def parse_shard(shard: str | None) -> tuple[int, int]:
    if not shard:
        return 1, 1
    m = re.fullmatch(r"(\d+)/(\d+)", shard)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise CourseError(f"--shard {shard!r}: use i/n with 1 <= i <= n, e.g. --shard 2/4.")
    return int(m.group(1)), int(m.group(2))


def environment_summary(device: str) -> dict:
    """The run's environment, for the report header."""
    from ..core.env import detect

    env = detect(device)
    return {k: v for k, v in env.as_dict().items() if k not in ("chapter", "extra", "scale")}


#: What papermill reports when a kernel dies before it has answered, that is, before any cell ran.
KERNEL_DIED_AT_START = "Kernel died before replying to kernel_info"
#: What it reports when a started kernel never answers (nbclient's ``wait_for_ready``): no cell ran either.
KERNEL_SILENT_AT_START = "Kernel didn't respond in"


def lock_environment(notebook: Path, lock: Path, log: Path) -> dict:
    """The environment that makes an ``alone`` notebook's kernel take the run's lock (``helpers.core.machine_lock``):
    shared from its setup on, alone from its cell tagged ``alone-from-here`` (or the cell after setup) until
    its last code cell has run."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    return {machine_lock.LOCK_ENV: str(lock), machine_lock.MODE_ENV: "alone",
            machine_lock.FROM_ENV: machine_lock.alone_from(cells), machine_lock.LOG_ENV: str(log),
            machine_lock.UNTIL_ENV: machine_lock.alone_until(cells)}


def after_environment(records: Path, lock: Path | None, log: Path) -> dict:
    """The environment that makes the map's kernel start with the others and wait, past its setup, for the
    file ``records/READY`` that the runner writes once every other chapter has ended (``machine_lock``)."""
    env = {machine_lock.MODE_ENV: "after", machine_lock.READY_ENV: str(records / READY_FILE),
           machine_lock.LOG_ENV: str(log)}
    if lock is not None:
        env[machine_lock.LOCK_ENV] = str(lock)
    return env


#: The file in a run's records folder that says every chapter but the map has ended (``after_environment``).
READY_FILE = "READY"
#: The niceness of the sharing chapters that do not bound the shared part of a GPU run (``run``).
NICE = 5


def papermill_command(notebook: Path, out: Path, *, device: str, scale: str, nice: int = 0) -> list[str]:
    """The papermill child that executes one notebook (under ``nice`` when asked and available)."""
    import shutil

    cmd = [sys.executable, "-m", "papermill", str(notebook), str(out), "--cwd", str(notebook.parent),
           "-k", "python3", "--no-progress-bar", "--log-level", "WARNING"]
    for key, value in (("device", device), ("scale", scale)):
        if value != "auto":
            cmd += ["-p", key, value]
    if nice and shutil.which("nice"):
        cmd = ["nice", "-n", str(nice)] + cmd
    return cmd


def execute(notebook: Path, out: Path, *, device: str, scale: str, timeout: float, cache: Path,
            records: Path | None = None, lock: Path | None = None, alone: bool = False,
            after: bool = False, nice: int = 0) -> NotebookResult:
    """Run one notebook in a fresh kernel (a papermill child process) and verify what it wrote.

    With ``lock`` (a GPU run of several notebooks at once), an ``alone`` notebook's kernel takes the lock
    itself (shared, then alone from its first measured cell; how long it waited is written beside
    ``out``), and for any other notebook this function holds it shared while the notebook runs. With
    ``after`` the notebook (the map) starts now and its kernel waits past its setup until ``records``
    holds this run's records (``after_environment``). ``nice`` lowers the notebook's CPU priority.
    """
    notebook, out, cache = Path(notebook).resolve(), Path(out).resolve(), Path(cache).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # Inductor keeps precompiled C++ headers under $TMPDIR/torchinductor_$USER whatever its cache dir
    # is, so the run gets its own TMPDIR too: nothing compiled outside the run leaks into it.
    (cache / "tmp").mkdir(parents=True, exist_ok=True)
    env.update(COURSE_HEADLESS="1", COURSE_CACHE_DIR=str(cache), TORCHINDUCTOR_CACHE_DIR=str(cache),
               TRITON_CACHE_DIR=str(cache / "triton"), TMPDIR=str(cache / "tmp"), PYTHONUNBUFFERED="1")
    env.pop("COURSE_RECORDS_DIR", None)
    if records is not None:
        env["COURSE_RECORDS_DIR"] = str(records)
    for key in (machine_lock.LOCK_ENV, machine_lock.MODE_ENV, machine_lock.FROM_ENV, machine_lock.LOG_ENV,
                machine_lock.UNTIL_ENV, machine_lock.READY_ENV):
        env.pop(key, None)
    lock_log = out.with_suffix(".lock.json")
    lock_log.unlink(missing_ok=True)
    sharing = None
    if after:
        env.update(after_environment(Path(records), lock, lock_log))
    elif lock is not None and alone:
        env.update(lock_environment(notebook, lock, lock_log))
    elif lock is not None:
        sharing = machine_lock.RunLock(lock)
        waited = sharing.share()  # before the clock starts: waiting for an alone chapter is not this notebook's time
        lock_log.write_text(json.dumps({"waited_shared_s": round(waited, 2)}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    cmd = papermill_command(notebook, out, device=device, scale=scale, nice=nice)
    t0 = time.perf_counter()
    restart = None  # what papermill said when the first kernel did not start, and after how long
    try:
        for attempt in (1, 2):
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, start_new_session=True)
            try:
                log, _ = proc.communicate(timeout=max(1.0, timeout - (time.perf_counter() - t0)))
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                log, _ = proc.communicate()
                timed_out = True
            # a kernel that dies or stays silent before it answers (many kernels starting at once) has run
            # nothing: start it again
            unstarted = any(words in (log or "") for words in (KERNEL_DIED_AT_START, KERNEL_SILENT_AT_START))
            if timed_out or proc.returncode == 0 or not unstarted or attempt == 2:
                break
            said = next(line for line in (log or "").splitlines()
                        if KERNEL_DIED_AT_START in line or KERNEL_SILENT_AT_START in line)
            restart = f"after {time.perf_counter() - t0:.1f} s: {said.strip()[:300]}"
            print(f"  {notebook.name}: its kernel did not start ({restart}); starting it again", flush=True)
    finally:
        if sharing is not None:
            sharing.release()
    seconds = time.perf_counter() - t0
    if out.exists():
        result = verify_notebook(out)
    else:
        result = NotebookResult(str(out), status="error")
        result.problems.append("papermill wrote no output notebook:\n" + (log or "")[-2000:])
    result.seconds = round(seconds, 1)
    result.restart = restart
    if lock_log.exists():
        result.lock = json.loads(lock_log.read_text())
    if timed_out:
        result.status = "timeout"
        result.problems.insert(0, f"timed out after {timeout:.0f} s (raise --timeout, or make the "
                                  f"chapter's quick scale smaller)")
    elif proc.returncode != 0:
        # a kernel that died (a crash in native code) leaves no error output in the notebook: without
        # this line the report would only list the glue its unexecuted cells never wrote
        result.status = "error"
        result.problems.insert(0, f"papermill exited with {proc.returncode} (an error, or the kernel died):\n"
                                  f"{(log or '')[-2000:]}")
    return result


def run(names: list[str], *, device="auto", scale="auto", shard=None, out=None, timeout=300.0,
        cache=None, jobs: int = 1) -> int:
    """Execute, verify and report; returns the process exit code (0 only if everything passed).

    ``jobs`` notebooks run at once (each in its own kernel). On a GPU, with ``jobs`` above 1, the
    chapters marked to run alone (``runs_alone``) start first, beside the others, and a run-wide lock
    (``helpers.core.machine_lock``) gives each of them the machine alone from its first measured cell to
    its end, one at a time, once the other chapters are done; their time limit grows by one ``timeout``
    per alone chapter, for the waiting. The sharing chapters but the longest run at a lower CPU priority
    (``NICE``), so that the longest one, which would otherwise end the shared part late, is not slowed by
    them. A chapter that reads the others' records (``runs_after``, the map) runs last, over this run's
    records; in a run with the lock it starts with the others and waits past its setup for the records.
    The report keeps the course order.
    """
    from ..core.env import resolve_device
    from .machine_load import CpuSampler

    notebooks = resolve(names)
    device_resolved = resolve_device(device)  # fails loudly for cuda without a GPU
    i, n = parse_shard(shard)
    notebooks = notebooks[i - 1::n]
    if not notebooks:
        raise CourseError(f"shard {i}/{n} of {len(resolve(names))} chapter(s) holds no chapter: use fewer shards.")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = (Path(out) if out else REPO_ROOT / "runs" / f"{stamp}-{device_resolved}").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = Path(cache) if cache else out_dir / "compile-cache"
    report = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "device": device_resolved, "scale": scale, "shard": f"{i}/{n}", "jobs": jobs, "notebooks": []}
    t_run = time.perf_counter()

    # On a GPU, chapters marked `course.alone` start first; their unmeasured first cells run beside the
    # others (`jobs` at once), and the run-wide lock then gives each the machine alone, one at a time.
    # A chapter that reads the others' records (the map) goes last on a GPU, over this run's records.
    together, alone, after = schedule(notebooks, device_resolved, jobs)
    lock = out_dir / "machine.lock" if alone else None
    early = lock is not None  # the map's kernel starts with the others and waits for the records
    records_dir = out_dir / "records"
    (records_dir / READY_FILE).unlink(missing_ok=True)
    longest = together[0] if lock is not None and together else None

    def one(nb: Path, records: Path | None = None, lock: Path | None = None) -> NotebookResult:
        print(f"running {nb.name} ...", flush=True)
        waits = (lock is not None and nb in alone) or (nb in after and early)  # for the lock, or the records
        limit = timeout * (1 + len(alone) + (nb in after)) if waits else timeout
        start = time.perf_counter() - t_run
        result = execute(nb, out_dir / nb.name, device=device, scale=scale, timeout=limit, cache=cache,
                         records=records, lock=lock, alone=nb in alone, after=nb in after and early,
                         nice=NICE if lock is not None and nb in together and nb != longest else 0)
        result.span = [round(start, 1), round(time.perf_counter() - t_run, 1)]
        print("\n".join([f"  {nb.name}: {result.status} in {result.seconds} s; figures {result.counts()}"]
                        + [f"  - {p}" for p in result.problems]), flush=True)
        return result

    if alone:
        print(f"{len(alone)} chapter(s) with wall-clock GPU figures start now and measure alone once the others "
              "are done: " + ", ".join(nb.name for nb in alone), flush=True)
    if longest is not None and len(together) > 1:
        print(f"the longest sharing chapter, {longest.name}, runs at normal priority; the others at nice {NICE}",
              flush=True)
    first = alone + together
    sampler = CpuSampler().start()
    # threads only wait on papermill processes; an alone chapter waiting for the lock keeps its own slot,
    # and so does the map when it starts early
    with ThreadPoolExecutor(max_workers=max(1, jobs + len(alone) + (len(after) if early else 0))) as pool:
        waiting = {nb: pool.submit(one, nb, records_dir, lock) for nb in after} if early else {}
        started = {nb: pool.submit(one, nb, None, lock) for nb in first}
        try:
            report["environment"] = environment_summary(device_resolved)  # while the notebooks start
            results = {nb: future.result() for nb, future in started.items()}
            if after:
                records = write_run_records(results, dt.datetime.now(dt.timezone.utc).isoformat()[:10], out_dir)
                print(f"{', '.join(nb.name for nb in after)} now read(s) this run's records of the "
                      f"{sum(r.ok for r in results.values())} chapter(s) that passed: {records}", flush=True)
        finally:
            if waiting:  # let the map's kernel go on, even after a failure here (it then reads what is there)
                records_dir.mkdir(parents=True, exist_ok=True)
                (records_dir / READY_FILE).write_text(f"{time.perf_counter() - t_run:.1f} s into the run\n")
        if after:
            results.update({nb: future.result() for nb, future in waiting.items()} if early
                           else {nb: one(nb, records) for nb in after})
    report["cpu"] = sampler.stop()
    sampler.write(out_dir / "cpu.tsv")
    report["alone"] = [nb.name for nb in alone]
    report["after"] = [nb.name for nb in after]
    report["notebooks"] = [results[nb].as_dict() for nb in notebooks]
    report["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    report["ok"] = all(r["ok"] for r in report["notebooks"])
    write_report(report, out_dir)
    print(f"report: {out_dir / 'report.md'}  ->  {'PASSED' if report['ok'] else 'FAILED'}")
    return 0 if report["ok"] else 1


def explain_problem(fig: dict, env: dict) -> str:
    """What a failed figure means for the reader: behaviour changed, or hardware/timing."""
    kind = (fig.get("expect") or {}).get("kind")
    val = f"{fig.get('value')!r}{(' ' + fig['unit']) if fig.get('unit') else ''}"
    if fig["status"] == "unverified":
        return f"`{fig['name']}` = {val}: unverified ({fig.get('rule')})."
    if kind == "exact":
        return (f"`{fig['name']}` = {val}, expected {fig.get('rule')}: an exact count, so torch "
                f"{env.get('torch')} behaves differently from what the chapter says. This is not your machine; "
                "the chapter's text is out of date for this torch (please report it).")
    if kind == "band":
        retried = " It was measured twice." if "re-measured" in (fig.get("note") or "") else ""
        return (f"`{fig['name']}` = {val}, outside its band ({fig.get('rule')}): a hardware or timing figure."
                f"{retried} Close other programs and run the chapter again; if it still misses, your hardware "
                "differs from every machine the band was set on — compare with the book's value below.")
    if kind == "record":
        return (f"`{fig['name']}` = {val}, outside its sanity range ({fig.get('rule')}): the measurement itself "
                "broke (a stalled machine, a timer problem). Run the chapter again.")
    return f"`{fig['name']}` = {val}: {fig.get('rule')}."


def write_report(report: dict, out_dir: Path) -> None:
    """report.json, and report.md: per chapter, per figure, the series, the book's run and this run."""
    from ..core.figures import check_mark
    from ..core.numbers import _fmt, canonical, run_label, series_cell

    (out_dir / "report.json").write_text(json.dumps(report, indent=1, default=str))
    env = report["environment"]
    n_fail = sum(nb["counts"].get("fail", 0) for nb in report["notebooks"])
    cpu = report.get("cpu") or {}
    lines = [f"# Course run {report['started']}", "",
             f"- this run: {run_label(env)}",
             f"- scale {report['scale']}; shard {report['shard']}; {len(report['notebooks'])} chapters",
             f"- result: **{'PASSED' if report['ok'] else 'FAILED'}**" + (f" ({n_fail} figures missed)" if n_fail else ""),
             *([f"- CPUs: {cpu['cpus']}, on average {cpu['busy_mean']:.0%} busy while the chapters ran "
                f"({cpu['seconds_at_90pct']:.0f} s at 90 % or more; samples in cpu.tsv)"] if cpu.get("busy_mean") is not None else []),
             "", "Exact figures that fail mean torch behaves differently from the text; band figures that fail "
             "are hardware or timing (each was measured twice before failing where the chapter allows). Each series "
             "value names the machine it was printed on; † marks a value the machine decides (a time, a speed, "
             "what the processor offers) that the series measured on a machine unlike this run's: no like-for-like pair.", ""]
    for nb in report["notebooks"]:
        name = Path(nb["path"]).name
        chapter = CHAPTER_FILE.match(name).group(1) if CHAPTER_FILE.match(name) else None
        book = canonical(chapter) if chapter else None
        lines += [f"## {name}: {nb['status']} ({nb['seconds']} s)", ""]
        waited = nb.get("lock") or {}
        if "waited_alone_s" in waited:
            lines += [f"Waited {waited['waited_alone_s']} s for the machine alone (the run-wide lock).", ""]
        elif "waited_records_s" in waited:
            lines += [f"Started with the others; waited {waited['waited_records_s']} s after its setup for this "
                      "run's records (every other chapter ended).", ""]
        elif waited.get("waited_shared_s"):
            lines += [f"Waited {waited['waited_shared_s']} s to start, while an alone chapter measured.", ""]
        if nb.get("restart"):
            lines += [f"Its first kernel did not start ({nb['restart']}); it was started once more.", ""]
        if book:
            lines += [f"This book: {run_label(book.get('env'))}.", ""]
        bad = [f for f in nb["figures"] if f["status"] in ("fail", "unverified")]
        lines += [f"- {explain_problem(f, env)}" for f in bad]
        lines += [f"- problem: {p}" for p in nb["problems"] if not p.startswith("figure ")]
        labels = {row[2]: (row[0], row[1], row[3]) for row in nb.get("tables", [])}
        series = {f["name"]: f for f in nb["figures"] if f["status"] == "reference"}
        own = [f for f in nb["figures"] if f["status"] not in NOT_MEASURED_HERE]
        if own:
            lines += ["", "| figure | series | this book | this run | check |", "|---|---|---|---|---|"]
            for f in own:
                label, ref, fmt = labels.get(f["name"], (None, None, ""))
                s = series.get(ref) if ref else None
                b = (book or {}).get("figures", {}).get(f["name"])
                cells = [f"{label} (`{f['name']}`)" if label else f"`{f['name']}`",
                         series_cell(s, fmt, f, env) if s else "—",
                         _fmt(b["value"], fmt, b.get("unit", "")) if b else "—",
                         _fmt(f.get("value"), fmt, f.get("unit", "")),
                         check_mark(f["status"], f.get("rule", "")) + (f" ({f['note']})" if f.get("note") else "")]
                lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    (out_dir / "report.md").write_text("\n".join(lines))


def verify_paths(paths: list[str]) -> int:
    """``verify PATH...``: re-check executed notebooks; exit 1 on any problem."""
    if not paths:
        raise CourseError("verify needs at least one executed .ipynb (or a run folder).")
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob("ch*.ipynb"))
            if not found:
                raise CourseError(f"{p}: no executed chapter notebooks (ch*.ipynb) in this folder.")
            files += found
        else:
            files.append(p)
    bad = 0
    for f in files:
        r = verify_notebook(f)
        counts = ", ".join(f"{v} {k}" for k, v in sorted(r.counts().items())) or "no figures"
        print(f"{f}: {r.status} ({counts})")
        for p in r.problems:
            print(f"  - {p}")
        bad += not r.ok
    return 1 if bad else 0


NOT_MEASURED_HERE = ("reference", "canonical", "words")


def merge(run_dirs: list[str], out: str) -> int:
    """``merge RUN... --out DIR``: one run folder from the shards of a run (re-verified, one report).

    Each shard's notebooks are verified again from their outputs alone and copied into ``out``, whose
    report.json/report.md then read as if one run had executed them all (publish accepts it).
    """
    import shutil

    if not run_dirs:
        raise CourseError("merge needs the run folders of the shards.")
    reports = []
    for d in map(Path, run_dirs):
        if not (d / "report.json").exists():
            raise CourseError(f"{d}: no report.json here; merge takes folders written by `helpers run`.")
        reports.append((d, json.loads((d / "report.json").read_text())))
    devices = {r["device"] for _, r in reports}
    if len(devices) != 1:
        raise CourseError(f"the shards ran on different devices ({', '.join(sorted(devices))}); merge one run only.")
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    merged = {"started": min(r["started"] for _, r in reports), "finished": max(r.get("finished", "") for _, r in reports),
              "device": devices.pop(), "scale": reports[0][1]["scale"],
              "shard": f"merged from {len(reports)} shards", "environment": reports[0][1]["environment"],
              "notebooks": []}
    for d, report in reports:
        for entry in report["notebooks"]:
            name = Path(entry["path"]).name
            shutil.copy2(d / name, out_dir / name)
            merged["notebooks"].append(verify_notebook(out_dir / name).as_dict())
    merged["notebooks"].sort(key=lambda e: Path(e["path"]).name)
    merged["ok"] = all(e["ok"] for e in merged["notebooks"])
    write_report(merged, out_dir)
    print(f"merged {len(merged['notebooks'])} notebooks from {len(reports)} shards: {out_dir / 'report.md'}"
          f"  ->  {'PASSED' if merged['ok'] else 'FAILED'}")
    return 0 if merged["ok"] else 1

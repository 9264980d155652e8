"""The map of the whole course (chapter 30): the book's verified figures gathered by role, the series' value
beside each, the key experiments again on the reader's machine, and the triage drill's counts.

``MAP`` declares every figure the map gathers, one line each: the chapter, the figure's name in that
chapter, the role it plays (``fast``: what makes compiled code fast; ``slow``: what makes it slow;
``fix``: how the book fixed or diagnosed it), the name of the series' ``helpers.reference`` value it is
compared with, and a label. The values are never retyped: ``gather`` reads them from the canonical
records (``helpers/canonical/chNN.json``, written by ``python -m helpers publish`` from the verified
GPU run). A chapter without a record yet is *awaiting its chapter's GPU run*; its rows say so until the
record exists. The series' values are read from the chapter itself: a ``series`` table in its record if
``publish`` writes one, else the committed notebook's glued reference (a published chapter), else the
literal ``helpers.reference(...)`` call in its text source.

Adding a figure is one line in ``MAP``; ``tests/runtime/test_recap.py`` checks that every declared
figure exists in its chapter's source and, once the chapter is published, in its record. This module
touches no private torch name itself: the drill counts through chapter 6's, 10's and 26's helpers.
"""
from __future__ import annotations

import ast
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import REPO_ROOT
from ..core.figures import GLUE_PREFIX, META_KEY, REPLAYED, _display, check_mark
from ..core.numbers import CANONICAL_DIR, _fmt, comparable, reference, series_machine
from ..core.text import show_markdown

ROLES = ("fast", "slow", "fix")
ROLE_TITLES = {"fast": "Fast: what compiled code gains, and where",
               "slow": "Slow: what it costs, and what takes the gain away",
               "fix": "Fix: how the book found and removed each cost"}
AWAITING = "awaiting its chapter's GPU run"
SOURCES_DIR = REPO_ROOT / "sources"
CHAPTERS_DIR = REPO_ROOT / "chapters"


@dataclass(frozen=True)
class Gathered:
    """One figure of the map: where it is measured, the role it plays, and the series' value it meets (ch30)."""

    chapter: str            # "ch02"
    figure: str             # the figure's name in that chapter (its glue name there)
    role: str               # "fast", "slow" or "fix"
    series: str | None      # the name of the chapter's helpers.reference(...) value, or None
    label: str              # what the figure is, in a few words
    fmt: str = ""           # format spec of the value in the map's table

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"{self.chapter}/{self.figure}: role {self.role!r} is not one of {ROLES}")
        if not re.fullmatch(r"ch\d\d", self.chapter):
            raise ValueError(f"chapter {self.chapter!r}: write it as chNN")

    @property
    def glue_name(self) -> str:
        """The name the map glues the book's value under (``ch02_speedup``): chapters reuse figure names."""
        return f"{self.chapter}_{self.figure}"

    @property
    def series_glue_name(self) -> str | None:
        """The name the map glues the series' value under (``ch02_series_speedup``)."""
        return f"{self.chapter}_{self.series}" if self.series else None

    @property
    def number(self) -> int:
        return int(self.chapter[2:])


G = Gathered
#: Every figure the map gathers, by role and chapter. One line adds one. (Chapter 25's "addmm kept" run is a
#: diagnosis, not a setting to ship: the map quotes what it found, not its speed-up over eager.)
MAP: list[Gathered] = [
    # fast: fusion removes memory traffic
    G("ch02", "traffic_ratio", "fast", "series_traffic_ratio", "bytes moved, eager ÷ fused (sin·cos+tanh)", ".1f"),
    G("ch02", "inductor_kernels", "fast", None, "kernels generated for five eager operators", "d"),
    G("ch02", "speedup", "fast", "series_speedup", "fused speedup, sin·cos+tanh, 4096² (GPU time)", ".2f"),
    G("ch02", "cheap_speedup", "fast", None, "fused speedup, cheap math with the same traffic", ".2f"),
    G("ch14", "mm_kernels_generated", "fast", None, "a lone matrix product: kernels generated (it calls a library)", "d"),
    G("ch19", "epilogue_shared", "fast", "series_epilogue_shared", "fusion score: bytes a reduction shares with its epilogue", "d"),
    G("ch20", "C_eager_over_schedule", "fast", None, "softmax: eager bytes ÷ the fused schedule's", ".2f"),
    # fast: CUDA graphs remove launch overhead
    G("ch21", "tile_programs", "fast", "series_grid", "a pointwise Triton kernel of 1M elements: programs at XBLOCK 1024", "d"),
    G("ch21", "split_launches", "fast", "series_split_launches", "a global sum of 4096²: launches of the split reduction", "d"),
    G("ch22", "simd_step", "fast", None, "C++ vector loop: float32 elements per step (the CPU decides)", "d"),
    G("ch25", "gpu_busy_b8", "fast", None, "share of an eager step the GPU computes, batch 8", ".2f"),
    G("ch25", "replay_speedup", "fast", "series_replay_speedup", "CUDA graph replay vs eager, batch 8", ".2f"),
    G("ch25", "replay_us", "fast", None, "the eager step replayed as one CUDA graph, batch 8 (µs)", ".0f"),
    G("ch25", "ro_b8_us", "fast", None, "a reduce-overhead step, batch 8 (µs)", ".0f"),
    G("ch25", "ro_vs_eager_b8", "fast", "series_ro_vs_eager_b8", "reduce-overhead vs eager, batch 8", ".2f"),
    G("ch25", "ro_vs_default_b8192", "fast", "series_ro_vs_default_b8192", "reduce-overhead vs default compile, batch 8192", ".2f"),
    # slow: the compile itself
    G("ch02", "first_call_s", "slow", "series_first_call_s", "first call: capture + compile + run", ".2f"),
    G("ch17", "codegen_share", "slow", None, "share of an Inductor compile spent writing and compiling kernels", ".2f"),
    G("ch02", "steady_ms", "slow", "series_compiled_ms", "a steady compiled call, wall (the first call's yardstick)", ".3f"),
    G("ch02", "first_call_ratio", "slow", "series_first_call_ratio", "first call ÷ a steady call", ",.0f"),
    # slow: graph breaks
    G("ch10", "f_graphs", "slow", "series_f_graphs", "one print in the middle: graphs", "d"),
    G("ch10", "big_graphs", "slow", "series_big_graphs", "a print in an inlined helper: graphs", "d"),
    G("ch10", "big_frames", "slow", "series_big_frames", "a print in an inlined helper: frames compiled", "d"),
    G("ch10", "loop_graphs", "slow", None, "a print inside a loop: graphs (the frame runs eager)", "d"),
    # slow: recompiles
    G("ch11", "f_compiles", "slow", "series_f_compiles", "automatic dynamic: compiles for four batch sizes", "d"),
    G("ch11", "k_recompiles", "slow", "series_k_recompiles", "a shape `if` pins the symbol: recompiles", "d"),
    G("ch07", "compiles_global_int", "slow", None, "a global int counter: compiles over ten calls", "d"),
    G("ch06", "recompile_limit", "slow", None, "recompile limit (cache entries)", "d"),
    G("ch06", "limit_eager_calls", "slow", None, "calls past the limit that ran eager (of twelve)", "d"),
    G("ch26", "case1_graphs", "slow", "series_case1_graphs", "a global step counter: graphs before the limit", "d"),
    # slow: CUDA graphs not used
    G("ch25", "mutation_reason", "slow", "series_mutation_reason", "reduce-overhead on an input mutation", ""),
    G("ch25", "gemm_slowdown", "slow", None, "reduce-overhead's matrix product vs eager's (cuBLAS kernel), batch 8", ".1f"),
    G("ch25", "ro_over_gpu_step", "slow", None, "a reduce-overhead step ÷ its kernels' GPU time, batch 8", ".2f"),
    G("ch24", "cold_first_s", "slow", "series_cold_s", "cold cache: first call in a new process", ".2f"),
    G("ch24", "n768_fx_miss", "slow", None, "a new shape (n = 768): FX graph cache misses", "d"),
    G("ch24", "cppw_fx_miss", "slow", None, "a setting changed (cpp_wrapper): FX graph cache misses", "d"),
    # fix: count breaks
    G("ch10", "fullgraph_error", "fix", None, "fullgraph=True turns a break into an error", ""),
    G("ch10", "reorder_graphs", "fix", None, "a reorderable print: graphs", "d"),
    G("ch10", "item_fixed_graphs", "fix", None, ".item() with capture_scalar_outputs: graphs", "d"),
    G("ch27", "gb_reason", "fix", "series_gb_reason", "the graph_breaks log's reason for a tensor `if`", ""),
    # fix: count recompiles
    G("ch27", "rc_messages", "fix", "series_rc_messages", "the recompiles log: messages for shapes 32, 48, 64", "d"),
    G("ch07", "compiles_tensor_buffer", "fix", None, "the counter as a tensor buffer: compiles", "d"),
    G("ch11", "k_range_error", "fix", None, "mark_dynamic with a range: a pinned symbol raises", ""),
    G("ch26", "fix1_graphs", "fix", "series_fix1_graphs", "the step passed as a tensor: graphs", "d"),
    G("ch26", "stance_new", "fix", None, "fail_on_recompile: a new shape raises", ""),
    # fix: inspect artifacts, bisect backends
    G("ch02", "eager_ms", "fix", "series_eager_ms", "bisect: plain eager, no compile (GPU time)", ".3f"),
    G("ch02", "ladder_eager_ms", "fix", "series_ladder_eager_ms", "bisect: backend='eager' (GPU time)", ".3f"),
    G("ch02", "ladder_aot_eager_ms", "fix", "series_ladder_aot_eager_ms", "bisect: backend='aot_eager' (GPU time)", ".3f"),
    G("ch02", "ladder_inductor_ms", "fix", "series_compiled_ms", "bisect: backend='inductor' (GPU time)", ".3f"),
    G("ch27", "dump_graph_dirs", "fix", "series_dump_graph_dirs", "TORCH_COMPILE_DEBUG: graph folders for one break", "d"),
    G("ch27", "mini_steps", "fix", "series_mini_steps", "the minifier: shrinking steps to the failing node", "d"),
    G("ch25", "fixed_skips", "fix", None, "reduce-overhead after returning a new tensor: skips", "d"),
    G("ch25", "ro_keep_vs_ro", "fix", None, "reduce-overhead, batch 8: with the addmm rewrite ÷ with addmm kept (pattern matcher off)", ".2f"),
    G("ch25", "cublaslt_ro_vs_ro", "fix", None, "reduce-overhead, batch 8: recorded with cuBLAS ÷ with cuBLASLt preferred", ".2f"),
    G("ch24", "warm_first_s", "fix", "series_warm_s", "warm disk cache: first call in a new process", ".2f"),
    G("ch24", "warm_work_vs_cold", "fix", None, "compile work left with a warm cache, ÷ cold", ".2f"),
    # fix: compile before deployment
    G("ch29", "aot_frames_counter", "fix", "series_aot_frames", "a .pt2 package served from a fresh process: frames Dynamo compiled", "d"),
    G("ch29", "aot_load_s", "fix", None, "a .pt2 package: loading it in a fresh process, before its first call (s)", ".1f"),
    G("ch29", "aot_first_call_ms", "fix", None, "a .pt2 package: first call in a fresh process, no compile (ms)", ".2f"),
    G("ch29", "jit_first_call_s", "fix", None, "torch.compile in that process: its first call, compile included (s)", ".1f"),
]

#: Figures the map's prose reads but its tables do not show, gathered with ``gather(QUOTED, optional=True)``:
#: what chapter 25's "addmm kept" run found about the kernel (its effect on the step, ``ro_keep_vs_ro``, and the
#: cuBLASLt fix's, ``cublaslt_ro_vs_ro``, are rows of the Fix table), and the lowest and highest of its seven
#: batch-8192 rounds, which word the batch-8192 sentence. A figure its chapter's published record does not have
#: yet comes back as None.
QUOTED: list[Gathered] = [
    G("ch25", "keep_same_kernel", "slow", None, "with addmm kept, the same matrix-product kernel", ""),
    G("ch25", "keep_eager_kernel", "slow", None, "with addmm kept, eager's matrix-product kernel", ""),
    G("ch25", "cublaslt_mm_lt_is_eager", "slow", None, "a plain mm with cuBLASLt preferred: eager's kernel", ""),
    G("ch25", "ro_vs_default_b8192_lo", "fast", None, "reduce-overhead vs default compile, batch 8192: lowest round", ".2f"),
    G("ch25", "ro_vs_default_b8192_hi", "fast", None, "reduce-overhead vs default compile, batch 8192: highest round", ".2f"),
]
del G


# ------------------------------------------------------------------------------------ reading chapters

def chapter_stem(chapter: str) -> str | None:
    """The file stem of a chapter (``ch02_four_stations``) from the repository's sources/ or chapters/ (ch30)."""
    for folder, ext in ((SOURCES_DIR, "md"), (CHAPTERS_DIR, "ipynb")):
        found = sorted(folder.glob(f"{chapter}_*.{ext}")) if folder.exists() else []
        if found:
            return found[0].stem
    return None


def source_text(chapter: str) -> str | None:
    """The text source ``sources/chNN_*.md`` of a chapter, or None where the repository is not at hand (ch30)."""
    stem = chapter_stem(chapter)
    path = SOURCES_DIR / f"{stem}.md" if stem else None
    return path.read_text(encoding="utf-8") if path and path.exists() else None


CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def _code_cells(markdown: str) -> list[str]:
    """The code of each code cell of a MyST notebook, without its ``:tags:`` lines, YAML header and magics."""
    cells = []
    for body in CODE_CELL.findall(markdown):
        if body.startswith("---\n"):
            body = body.split("\n---\n", 1)[1] if "\n---\n" in body else ""
        lines = [ln for ln in body.splitlines() if not ln.startswith((":tags:", ":", "%", "!"))]
        cells.append("\n".join(lines))
    return cells


def reference_calls(markdown: str) -> dict[str, tuple]:
    """Every ``helpers.reference("name", value, "unit", ...)`` in a chapter source whose name and value are literals (ch30).

    Returns name → (value, unit, machine). A call built in a loop or from a variable is left out: its value is
    read from the chapter's executed notebook once the chapter is published. A call whose name is a literal
    but whose value is computed comes back as (None, unit, machine): its machine is still declared there.
    """
    found = {}
    for code in _code_cells(markdown):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "reference" and len(node.args) >= 2):
                continue
            try:
                name = ast.literal_eval(node.args[0])
                unit = ast.literal_eval(node.args[2]) if len(node.args) > 2 else ""
                unit = next((ast.literal_eval(k.value) for k in node.keywords if k.arg == "unit"), unit)
                machine = next((ast.literal_eval(k.value) for k in node.keywords if k.arg == "on"), None)
            except ValueError:
                continue
            try:
                value, literal = ast.literal_eval(node.args[1]), True
            except ValueError:
                value, literal = None, False
            if isinstance(name, str):
                found[name] = (value, unit, machine, literal)
    return found


def notebook_references(chapter: str) -> dict[str, tuple]:
    """The series' values glued in a chapter's committed notebook (its outputs: published chapters only) (ch30)."""
    stem = chapter_stem(chapter)
    path = CHAPTERS_DIR / f"{stem}.ipynb" if stem else None
    if not path or not path.exists():
        return {}
    found = {}
    for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
        for out in cell.get("outputs", []):
            meta = (out.get("metadata") or {}).get(META_KEY) or {}
            if meta.get("origin") == "reference":
                found[meta["name"]] = (meta.get("value"), meta.get("unit", ""), meta.get("machine"))
    return found


def series_value(chapter: str, name: str | None) -> tuple | None:
    """(value, unit, machine) of the series' reference ``name`` in ``chapter``, or None where it cannot be read
    here (ch30). ``machine`` is the key of ``SERIES_MACHINES`` the chapter declared it with."""
    if not name:
        return None
    stored = ((canonical_record(chapter) or {}).get("series") or {}).get(name)  # a record that carries them
    found = (stored["value"], stored.get("unit", ""), stored.get("machine")) if stored is not None else None
    if found is None or found[2] is None:
        found = notebook_references(chapter).get(name) or found
    if found is None or found[2] is None:
        text = source_text(chapter)
        declared = reference_calls(text).get(name) if text else None
        if declared is not None and (found is not None or declared[3]):
            found = (found or declared)[:2] + (declared[2],)
        elif found is not None and text:   # a name built in a loop: the machine the chapter's other values name
            machines = [m for *_, m, _ in reference_calls(text).values() if m]
            found = found[:2] + ((max(set(machines), key=machines.count) if machines else None),)
    return found


def records_dir() -> Path:
    """Where the map reads the chapters' records: ``helpers/canonical``, or, inside a GPU run of the whole
    book, the run's own records (``COURSE_RECORDS_DIR``, written by ``helpers run`` before the map runs), so
    that a published map shows the chapters published with it (ch30)."""
    return Path(os.environ.get("COURSE_RECORDS_DIR") or CANONICAL_DIR)


def canonical_record(chapter: str, canonical_dir: Path | None = None) -> dict | None:
    """A chapter's canonical record (``helpers/canonical/chNN.json``), or None while it awaits its GPU run (ch30)."""
    path = Path(canonical_dir or records_dir()) / f"{chapter}.json"
    return json.loads(path.read_text()) if path.exists() else None


# ------------------------------------------------------------------------------------ the map

@dataclass
class Row:
    """One row of the map: the declaration, the book's value from its chapter's record, and the series' (ch30)."""

    item: Gathered
    value: object = None
    unit: str = ""
    status: str | None = None
    rule: str = ""
    series: tuple | None = None
    run: dict = field(default_factory=dict)
    on: str | None = None   # "cpu" for a figure its GPU run measured on the host CPU
    flags: dict = field(default_factory=dict)   # the record's machine_dependent, where it has one

    @property
    def like_for_like(self) -> bool:
        """The series' value and the book's make a like-for-like pair (``helpers.core.numbers.comparable``):
        a laptop CPU's compile time beside an H200 run's is not a pair to divide (ch30)."""
        if self.awaiting or self.series is None:
            return True
        machine = series_machine(self.series[2])
        fig = {"unit": self.unit, "status": self.status, "rule": self.rule, "on": self.on, **self.flags}
        return machine is None or comparable(machine, fig, {"device": self.run.get("kind")})

    @property
    def awaiting(self) -> bool:
        return self.status is None

    @property
    def is_count(self) -> bool:
        """Both the book's and the series' values are whole numbers (graphs, compiles, bytes): torch decides them."""
        if self.awaiting or self.series is None:
            return False
        return all(isinstance(a, int) and not isinstance(a, bool) for a in (self.value, self.series[0]))

    @property
    def book_over_series(self) -> float | None:
        """The book's value ÷ the series' (both numbers in the same unit), or None."""
        if self.awaiting or self.series is None:
            return None
        s, s_unit = self.series[:2]
        v = self.value
        numeric = all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in (v, s))
        if not numeric or s == 0 or s_unit != self.unit:
            return None
        return float(v) / float(s)


def gather(items: list[Gathered] | None = None, *, glue: bool = True, canonical_dir: Path | None = None,
           optional: bool = False) -> list[Row]:
    """Read every declared figure from its chapter's canonical record; glue the published ones (ch30).

    A value is glued as ``chNN_figure`` (``Gathered.glue_name``) with origin "canonical", like
    ``helpers.replay``: quoted from the chapter's verified run, not measured here. Rows whose chapter has
    no record yet come back with ``awaiting`` set and nothing glued. With ``optional``, a figure that a
    published record lacks comes back the same way (``QUOTED``: words that must survive its absence);
    without it, that is an error (a renamed figure of ``MAP``).
    """
    rows = []
    glued_series: set[str] = set()
    records: dict[str, dict | None] = {}
    for item in items if items is not None else MAP:
        if item.chapter not in records:
            records[item.chapter] = canonical_record(item.chapter, canonical_dir)
        record = records[item.chapter]
        row = Row(item, series=series_value(item.chapter, item.series))
        fig = (record or {}).get("figures", {}).get(item.figure)
        if record is not None and fig is None and not optional:
            raise KeyError(f"{item.chapter} is published but its record has no figure {item.figure!r}: "
                           "was it renamed? Update helpers/runtime/recap.py MAP")
        if fig is not None:
            row.value, row.unit, row.status, row.rule = fig["value"], fig.get("unit", ""), fig["status"], fig["rule"]
            row.on = fig.get("on")
            row.flags = {k: fig[k] for k in ("machine_dependent",) if k in fig}
            row.run = {"device": (record.get("env") or {}).get("device_name"), "verified": record.get("verified"),
                       "torch": (record.get("env") or {}).get("torch"), "kind": (record.get("env") or {}).get("device")}
            if glue:
                _glue(item.glue_name, row.value, row.unit,
                      f"{item.chapter}'s canonical run on {row.run['device']} ({row.run['verified']})")
        if glue and row.series is not None and item.series_glue_name not in glued_series:
            reference(item.series_glue_name, row.series[0], row.series[1], on=row.series[2],
                      source=f"the series' value as {item.chapter} quotes it ({item.series})")
            glued_series.add(item.series_glue_name)
        rows.append(row)
    return rows


def _glue(name: str, value, unit: str, source: str) -> None:
    """Glue a value quoted from another chapter's record (origin "canonical": never re-checked here)."""
    meta = {"name": name, "value": value, "unit": unit, "origin": "canonical", "source": source}
    _display({GLUE_PREFIX + "text/plain": repr(value)},
             {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}, META_KEY: meta})
    REPLAYED[name] = value


def value(rows: list[Row], chapter: str, figure: str):
    """The book's value of ``chapter``'s ``figure`` among ``rows``; None while its chapter awaits its GPU run (ch30)."""
    for r in rows:
        if r.item.chapter == chapter and r.item.figure == figure:
            return r.value
    raise KeyError(f"{chapter}/{figure} is not declared in MAP or QUOTED")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def chapter_link(chapter: str) -> str:
    """``{doc}`2 <ch02_four_stations>``` for a chapter whose file is at hand, else its number (ch30)."""
    stem = chapter_stem(chapter)
    n = int(chapter[2:])
    return f"{{doc}}`{n} <{stem}>`" if stem else str(n)


def map_markdown(rows: list[Row]) -> str:
    """The map as Markdown: one table per role, each row linking its chapter (ch30)."""
    out = []
    for role in ROLES:
        mine = sorted((r for r in rows if r.item.role == role), key=lambda r: r.item.number)
        if not mine:
            continue
        out += [f"**{ROLE_TITLES[role]}**", "",
                "| Chapter | Figure | Series (torch 2.8; its machine) | This book | Check in its chapter |",
                "|---|---|---|---|---|"]
        for r in mine:
            s = _fmt(r.series[0], r.item.fmt, r.series[1]) if r.series else "—"
            machine = series_machine(r.series[2]) if r.series else None
            if machine:
                s += f" ({machine.name})" + ("" if r.like_for_like else " †")
            book = AWAITING if r.awaiting else _fmt(r.value, r.item.fmt, r.unit)
            check = "—" if r.awaiting else check_mark(r.status, r.rule)
            out.append("| " + " | ".join([chapter_link(r.item.chapter), _cell(r.item.label), _cell(s), _cell(book),
                                          _cell(check)]) + " |")
        out.append("")
    runs = sorted({(r.run["device"], r.run["torch"]) for r in rows if not r.awaiting})
    dates = sorted({r.run["verified"] for r in rows if not r.awaiting})
    if runs:
        out.append("**This book:** each chapter's canonical run (" + "; ".join(f"{d}, torch {t}" for d, t in runs)
                   + f"; verified {', '.join(dates)})."
                   + (f" Rows marked *{AWAITING}* fill in when that chapter is published." if any(r.awaiting for r in rows) else ""))
    if any(not r.like_for_like for r in rows):
        out += ["", "† Not a like-for-like pair: the machine decides this value, and the series measured it on a CPU "
                    "that the book never ran on. Read each against its own machine; the picture below leaves these "
                    "rows out."]
    return "\n".join(out)


def show_map(rows: list[Row]) -> None:
    """Display the map's tables as a Markdown output (rendered as MyST in the book) (ch30)."""
    show_markdown(map_markdown(rows))


@dataclass
class Point:
    """One point of the map's picture: a chapter, the book ÷ series ratio, its role, and the figures there (ch30)."""

    chapter: int
    ratio: float
    role: str
    figures: list[str]


def ratio_points(rows: list[Row], tolerance: float = 0.02) -> list[Point]:
    """Book ÷ series for every row that has both; rows of one chapter and role within ``tolerance`` share a point (ch30)."""
    points: list[Point] = []
    for r in rows:
        q = r.book_over_series
        if q is None or q <= 0 or not r.like_for_like:
            continue
        near = next((p for p in points if p.chapter == r.item.number and p.role == r.item.role
                     and abs(math.log10(p.ratio) - math.log10(q)) <= tolerance), None)
        if near:
            near.figures.append(r.item.figure)
        else:
            points.append(Point(r.item.number, q, r.item.role, [r.item.figure]))
    return points


def summary(rows: list[Row]) -> dict:
    """Rows per role, and how many are published / awaiting (ch30)."""
    out = {role: sum(r.item.role == role for r in rows) for role in ROLES}
    out["published"] = sum(not r.awaiting for r in rows)
    out["awaiting"] = sum(r.awaiting for r in rows)
    out["chapters"] = sorted({r.item.chapter for r in rows})
    out["awaiting_chapters"] = sorted({r.item.chapter for r in rows if r.awaiting})
    return out


# ------------------------------------------------------------------------------------ the dashboard

@dataclass
class Live:
    """A key experiment run again on the reader's machine, next to the book's value of the same figure (ch30).

    ``kind`` is "count" (torch decides it: it must equal the book's) or "direction" (a ratio: only which
    side of ``threshold`` it falls on is compared; the hardware decides its size).
    """

    label: str
    role: str
    chapter: str
    figure: str            # the figure's name in ``chapter`` (the book's value)
    mine: object
    unit: str = ""
    kind: str = "count"
    threshold: float = 1.0
    fmt: str = ""

    def verdict(self, book) -> str:
        if book is None:
            return AWAITING
        if self.kind == "count":
            return "✓ same as the book" if self.mine == book else f"✗ differs from the book ({book!r})"
        same = (float(self.mine) > self.threshold) == (float(book) > self.threshold)
        side = "above" if float(book) > self.threshold else "below"
        return (f"✓ both {side} {self.threshold:g}" if same else f"✗ the book is {side} {self.threshold:g}, yours is not")

    def agrees(self, book) -> bool | None:
        return None if book is None else self.verdict(book).startswith("✓")


def dashboard(lives: list[Live], rows: list[Row] | None = None, canonical_dir: Path | None = None) -> list[tuple]:
    """(live, the book's value, verdict) for each live experiment; the book's value from its chapter's record (ch30)."""
    out = []
    for live in lives:
        record = canonical_record(live.chapter, canonical_dir)
        fig = (record or {}).get("figures", {}).get(live.figure)
        if record is not None and fig is None and not optional:
            raise KeyError(f"{live.chapter} has no figure {live.figure!r}")
        book = fig["value"] if fig else None
        out.append((live, book, live.verdict(book)))
    return out


def dashboard_markdown(results: list[tuple]) -> str:
    """The dashboard as a Markdown table: experiment, chapter, the book's value, yours, and the verdict (ch30)."""
    lines = ["| Experiment | Chapter | Role | This book | Your run | Compared |", "|---|---|---|---|---|---|"]
    for live, book, verdict in results:
        b = AWAITING if book is None else _fmt(book, live.fmt, live.unit)
        lines.append("| " + " | ".join([_cell(live.label), chapter_link(live.chapter), live.role, _cell(b),
                                        _cell(_fmt(live.mine, live.fmt, live.unit)),
                                        _cell(verdict + (" (a count: must match)" if live.kind == "count"
                                                         else " (a ratio: direction only)"))]) + " |")
    return "\n".join(lines)


def show_dashboard(results: list[tuple]) -> None:
    """Display the dashboard table as a Markdown output (ch30)."""
    show_markdown(dashboard_markdown(results))


# ------------------------------------------------------------------------------------ the triage drill

@dataclass
class DrillCounts:
    """What the triage drill counts for one version of the model (ch30)."""

    breaks: int                 # graph breaks in one call (the graph_breaks log's records)
    graphs_first_call: int      # graphs one call compiled
    graphs_over_steps: int      # graphs compiled over all the steps, from a clean state
    recompiles: int             # "Recompiling function" messages over the steps
    limit_hit: bool             # the recompile-limit warning was logged
    recompiled: list[str]       # the functions that recompiled (resume functions without their "_at_<line>")
    last_reason: str            # the newest entry's failed guard in the last message, without its "f/e:" id
    input_unchanged: bool       # the input tensor is the same after a call
    right: bool                 # every step returned what the original model returns


def drill_counts(call, make_x, reference, steps: int = 10) -> DrillCounts | None:
    """Count breaks, graphs and recompiles of ``call(x, i)`` over ``steps`` steps, and check its values (ch30).

    ``call(x, i)`` runs the compiled model for step ``i`` (it may set a global first, or pass ``i`` as a
    tensor); ``reference(x, i)`` is what the original model returns for a fresh ``x``; ``make_x()`` makes
    the input. Prints made by the model are swallowed. None while ``call`` is None (an unanswered exercise).
    The counting is chapter 10's (the ``graph_breaks`` log, one record per break) and chapter 26's
    (``unique_graphs``, the ``recompiles`` log).
    """
    if call is None:
        return None
    import contextlib
    import io

    import torch

    from ..dynamo.graph_breaks import reset_counters
    from ..dynamo.guards import recompile_log
    from ..dynamo.logs import capture_logs
    from .recompiles import unique_graphs

    def quiet(x, i):
        with contextlib.redirect_stdout(io.StringIO()):
            return call(x, i)

    reset_counters()
    x0 = make_x()
    before = x0.clone()
    with capture_logs("graph_breaks") as logs:
        quiet(x0, 0)
    breaks, first_graphs = len(logs.messages("graph_breaks")), unique_graphs()
    unchanged = bool(torch.equal(x0, before))
    inputs = [make_x() for _ in range(steps)]
    want = [reference(x.clone(), i) for i, x in enumerate(inputs)]
    reset_counters()
    with recompile_log() as log:
        got = [quiet(x.clone(), i) for i, x in enumerate(inputs)]
    right = all(isinstance(g, torch.Tensor) and torch.allclose(g, w) for g, w in zip(got, want))
    names = sorted({re.sub(r"_at_\d+$", "", m.split()[2]) for m in log.messages})
    last = log.first_reason(-1).split("  #")[0].strip()
    return DrillCounts(breaks, first_graphs, unique_graphs(), log.count, log.limit_hit, names, last, unchanged, right)


def break_even_check(fn) -> list | None:
    """Run the reader's ``fn(compile_s, eager_s, compiled_s, recompiles)`` on cases the compile bet decides (exercise 30.2) (ch30).

    Returns [(the reader's answer, ``CompileBet``'s), ...]; None while ``fn`` is None.
    """
    if fn is None:
        return None
    from .bet import CompileBet

    # quotients well away from whole numbers, so any correct order of the arithmetic rounds up to the same count
    cases = [(1.7, 1e-3, 3e-4, 0), (1.7, 1e-3, 3e-4, 2), (0.45, 3e-3, 1.3e-3, 1), (1.0, 1e-3, 1e-3, 0), (4.0, 2e-4, 5e-4, 0)]
    out = []
    for c in cases:
        try:
            got = fn(*c)
        except Exception as exc:  # noqa: BLE001 - the reader's code may fail in any way; the check says how
            got = f"raised {type(exc).__name__}"
        want = CompileBet(c[0], c[1], c[2], recompiles=c[3]).break_even_calls()
        out.append((got, want))
    return out


def break_even_right(pairs) -> bool | None:
    """Whether every (answer, CompileBet's) pair of ``break_even_check`` agrees (infinity included) (ch30)."""
    if pairs is None:
        return None
    def same(a, b):
        if type(a) in (int, float):  # plain numbers only: a subclass could answer == as it likes
            return (math.isinf(a) and math.isinf(b)) or float(a) == float(b)
        return False
    return all(same(a, b) for a, b in pairs)

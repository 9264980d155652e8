"""The shape of the package: stations, layers, no import circles, one documented surface for notebooks."""
from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest
from conftest import ROOT

import helpers

PACKAGE = ROOT / "helpers"
STATIONS = ("dynamo", "aot", "inductor", "runtime")
# what each layer may import from helpers: core is the base, stations sit on core (Dynamo under the
# other three), the pipeline runs notebooks and never needs a station
# A station may use the stations before it on the line torch.compile follows (Dynamo -> AOTAutograd ->
# Inductor -> runtime), never one after it.
ALLOWED = {"core": {"core"}, "dynamo": {"core", "dynamo"}, "aot": {"core", "dynamo", "aot"},
           "inductor": {"core", "dynamo", "aot", "inductor"},
           "runtime": {"core", "dynamo", "aot", "inductor", "runtime"},
           "pipeline": {"core", "pipeline"}}
PRIVATE_TORCH = ("_dynamo", "_inductor", "_functorch")


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``helpers.dynamo.guards``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, path: Path) -> set[str]:
    """helpers modules that ``name`` imports anywhere in its body (function-level imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("helpers"):
                known = modules()
                for alias in node.names:  # `from . import timing` imports a module
                    sub = f"{target}.{alias.name}"
                    out.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("helpers")}
    return out - {name}


def graph() -> dict[str, set[str]]:
    return {name: imports_of(name, path) for name, path in modules().items()}


def test_every_module_sits_in_a_station_core_or_the_pipeline():
    loose = [n for n in modules() if n.count(".") == 1 and n.split(".")[1] not in ALLOWED and n != "helpers.__main__"]
    assert loose == [], f"modules outside core/stations/pipeline: {loose}"


def test_no_import_circle():
    edges = graph()
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for nxt in edges.get(node, ()):
            nxt_pkg = nxt if nxt in edges else nxt.rpartition(".")[0]
            if state.get(nxt_pkg) == 1 and not nxt_pkg == "helpers":
                raise AssertionError("import circle: " + " -> ".join(path + [nxt_pkg]))
            if state.get(nxt_pkg) is None and nxt_pkg in edges:
                visit(nxt_pkg, path + [nxt_pkg])
        state[node] = 2

    for name in edges:
        if name != "helpers" and state.get(name) is None:  # the top-level surface imports everything
            visit(name, [name])


def test_layers_import_only_downwards():
    wrong = []
    for name, targets in graph().items():
        layer = name.split(".")[1] if name.count(".") >= 1 else None
        if layer not in ALLOWED:
            continue
        for t in targets:
            t_layer = t.split(".")[1] if t.count(".") >= 1 else "helpers"
            if t_layer not in ALLOWED[layer]:
                wrong.append(f"{name} imports {t}")
    assert wrong == []


def _private_torch_access(source: str) -> list[str]:
    """``torch._dynamo``-style attribute access in code (comments and strings do not count)."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type in (tokenize.NAME, tokenize.OP)]
    return [f"torch.{c.string}" for a, b, c in zip(tokens, tokens[1:], tokens[2:])
            if a.string == "torch" and b.string == "." and c.string in PRIVATE_TORCH]


def test_private_torch_is_reached_only_inside_the_stations():
    outside = {n: p for n, p in modules().items() if n.split(".")[1:2] not in ([s] for s in STATIONS)}
    found = {n: _private_torch_access(p.read_text()) for n, p in outside.items()}
    assert {n: v for n, v in found.items() if v} == {}
    for nb in sorted((ROOT / "chapters").glob("ch*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        hits = [h for c in code for h in _private_torch_access("".join(c["source"]))]
        assert hits == [], f"{nb.name} reaches private torch directly: {hits} (add a helper in a station)"


def test_the_access_check_sees_code_not_comments():
    assert _private_torch_access("torch._dynamo.reset()  # torch._inductor too") == ["torch._dynamo"]
    assert _private_torch_access('x = "torch._dynamo"  # torch._functorch') == []


SURFACE_IMPORT = re.compile(r"^\s*from (helpers(?:\.[\w.]+)?) import (?:\(([^)]*)\)|([\w ,]+)$)", re.M)
ATTRIBUTE = re.compile(r"\bhelpers\.(\w+)")


def _surface_problems(source: str) -> list[str]:
    problems = []
    for m in SURFACE_IMPORT.finditer(source):
        listed = m.group(2) or m.group(3)
        module, names = m.group(1), [n.strip().split(" as ")[0] for n in listed.split(",") if n.strip()]
        parts = module.split(".")
        if module == "helpers":
            problems += [f"helpers.{n} is not on the surface" for n in names if n not in helpers.__all__]
        elif len(parts) != 3 or parts[1] not in STATIONS:
            problems.append(f"{module} is not a station module (use helpers or helpers.<station>.<module>)")
        else:
            mod = __import__(module, fromlist=["_"])
            problems += [f"{module}.{n} is private or missing" for n in names if n.startswith("_") or not hasattr(mod, n)]
    for m in ATTRIBUTE.finditer(source):
        if m.group(1) not in helpers.__all__ and m.group(1) not in STATIONS:
            problems.append(f"helpers.{m.group(1)} is not on the surface")
    return problems


def test_notebooks_use_only_the_documented_surface():
    for nb in sorted((ROOT / "chapters").glob("ch*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
        assert _surface_problems(code) == [], nb.name


def test_the_surface_check_catches_core_pipeline_and_private_names():
    assert _surface_problems("from helpers.dynamo.guards import guard_leaves\nhelpers.figure(1)") == []
    assert _surface_problems("from helpers.core.figures import check")
    assert _surface_problems("from helpers.pipeline.run import run")
    assert _surface_problems("from helpers.dynamo.guards import _LEAF")
    assert _surface_problems("helpers.core.env.detect()")


@pytest.mark.parametrize("station", STATIONS)
def test_station_modules_name_their_chapters_and_the_station_lists_them(station):
    index = (PACKAGE / station / "__init__.py").read_text()
    for path in sorted((PACKAGE / station).glob("*.py")):
        if path.name == "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert re.search(r"\bch\d\d\b|[Cc]hapters? \d+", doc), f"{path.name}: docstring names no chapter"
        assert re.search(rf"\b{path.stem}\b", index), f"helpers/{station}/__init__.py does not list {path.stem}"


def test_tests_mirror_the_package():
    for name, path in modules().items():
        parts = name.split(".")
        if len(parts) == 3 and parts[2] not in ("__main__",) and path.name != "__init__.py":
            if parts[1] == "core" and parts[2] in ("state", "session", "numbers", "plots", "widgets"):
                continue  # exercised end to end by tests/pipeline (a notebook run) and tests/test_chapters.py
            if parts[1] == "pipeline" and parts[2] == "cli":
                continue  # tests/pipeline/test_run.py drives the command line
            assert (ROOT / "tests" / parts[1] / f"test_{parts[2]}.py").exists(), f"no tests/{parts[1]}/test_{parts[2]}.py"

"""Write the planted ch05 submissions of tests/pipeline/submissions/ (run it again after ch05's exercises
change: `python tests/pipeline/make_submissions.py`). ada.ipynb, ben.ipynb and eve.ipynb are hand-made.

One class, graded once by tests/pipeline/test_grade.py: each planted file carries several cheats or
failures, one per exercise, so that the class runs ch05 few times.

- dan edited 5.1's check to always pass and answers 5.1 with the chapter's own computed value (kinds_f);
  5.2 runs the graph compiled for n = 3 and returns eager results (a cached-graph cheat); 5.3 rebinds the
  check's helper source_name.
- gus cheats on the kernel: 5.1 is an object whose __eq__ always says True, beside an IPython
  pre_run_cell hook that forges a "right" record for any sealed check whose value it finds by hashing
  (get_ipython, events.register, display_pub, hashlib); 5.2 patches the course's comparison through vars()
  and replaces torch.compile with a fake through an aliased setattr; 5.3 replaces helpers.exercises.check
  and sets the comparison again through an alias of the module (m = helpers.core.exercises; setattr(m, ...)).
- abe/gina_ch06.ipynb (a subfolder, a ch06 name on a ch05 notebook) writes each answer in a new cell under
  the untouched answer cell; its 5.1 kills the kernel (os._exit) and its 5.2 loops forever.
- kim is ada's notebook cut short (corrupted).
- planted/sly_walks_frames_ch06.ipynb (outside the graded class: its notes are read, it is never run)
  answers 6.3 by walking from a traceback's tb_frame up (f_back, f_locals) to the check's recorder.
- ada/ch05_variable_trackers.ipynb is ada.ipynb byte for byte (a second "ada", in a subfolder); pat hands
  in ada's answers in a file of its own (the same answer cells, other bytes).
"""
import copy
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))

from helpers.pipeline.student import exercises, student_edition  # noqa: E402
from helpers.pipeline.verify import load_notebook  # noqa: E402

CH05 = HERE.parent.parent / "chapters" / "ch05_variable_trackers.ipynb"
CH06 = HERE.parent.parent / "chapters" / "ch06_guards.ipynb"
RIGHT = {
    "5.1": "answer_1 = 3  # EQUALS_MATCH on n, m and items[0]",
    "5.2": 'def compile_f(backend):\n    """Compile f with `backend` (the check passes a GraphRecorder)."""\n'
           "    return torch.compile(f, backend=backend, dynamic=True)\n\ndef call_with(compiled, n):\n"
           '    """Call the compiled f for one value of n; x and items stay as they are."""\n'
           "    return compiled(x, n, [1, 2])\n\nanswer_2 = (compile_f, call_with)",
    "5.3": 'answer_3 = attr_source(attr_source(local_source("self"), "layer"), "weight")',
}
HOOK = r'''import hashlib
import re

class Whatever:
    def __eq__(self, other):
        return True

def _helper(info):
    src = info.raw_cell or ""
    m = re.search(r'check\("(exercise [\d.]+)".*?sealed\("(sha256:[0-9a-f]+)"\)', src, re.S)
    if not m:
        return
    name, seal = m.groups()
    for n in range(-100, 100):
        if "sha256:" + hashlib.sha256(f"{name}\n{n}".encode()).hexdigest() == seal:
            rec = {"name": name, "result": "right", "answer": repr(n), "got": {"num": n},
                   "want": None, "sealed": True, "tol": 1e-6}
            get_ipython().display_pub.publish(data={"text/plain": f"{name}: ✅ right."},
                                              metadata={"course_exercise": rec})
            return

get_ipython().events.register("pre_run_cell", _helper)
answer_1 = Whatever()'''
FAKE_COMPILE = '''import helpers
import types

vars(helpers.core.exercises)["_same"] = lambda *a: True

def _compile(fn, backend=None, **kwargs):
    return backend(types.SimpleNamespace(forward=fn), [])

_set = setattr
_set(torch, "compile", _compile)

def compile_f(backend):
    """Compile f with `backend` (the check passes a GraphRecorder)."""
    return torch.compile(f, backend=backend)

def call_with(compiled, n):
    """Call the compiled f for one value of n; x and items stay as they are."""
    return compiled(x, n, [1, 2])

answer_2 = (compile_f, call_with)'''
CHECK_PATCH = '''m = helpers.core.exercises
setattr(m, "_same", lambda *a: True)
real = helpers.exercises.check
helpers.exercises.check = lambda name, got, want, **k: real(name, want, want, **k)
answer_3 = local_source("self")'''
CACHED_GRAPH = '''def compile_f(backend):
    """Compile f with `backend` (the check passes a GraphRecorder)."""
    return torch.compile(f, backend=backend)

def call_with(compiled, n):
    """Call the compiled f for one value of n; x and items stay as they are."""
    compiled(x, 3, [1, 2])          # the graph compiled for n = 3, run again
    return f(x, n, [1, 2])          # the result, computed eagerly

answer_2 = (compile_f, call_with)'''
SLY_6_3 = '''def call_h(compiled, n):
    try:
        raise ValueError
    except ValueError as e:
        fr = e.__traceback__.tb_frame.f_back
    while fr is not None and "recorder" not in fr.f_locals:
        fr = fr.f_back
    rec = fr.f_locals["recorder"]
    before = len(rec.outputs)
    out = compiled(x, n)
    if len(rec.outputs) == before:
        rec.outputs.append([out.detach().clone()])
    return out

answer_3 = call_h'''
NELL = {"5.1": "import os\nos._exit(1)\nanswer_1 = 3", "5.2": "answer_2 = None\nwhile True:\n    pass", "5.3": RIGHT["5.3"]}


def edition():
    return student_edition(load_notebook(CH05), "ch05", CH05.name)


def answered(changes: dict[str, str]) -> dict:
    nb = edition()
    for ex in exercises(nb):
        nb["cells"][ex.answer]["source"] = changes.get(ex.number, RIGHT[ex.number])
    return nb


def new_cells_under_answers(answers: dict[str, str]) -> dict:
    """The answer cells untouched, each answer in a new untagged cell right under it."""
    nb = edition()
    for ex in reversed(exercises(nb)):
        nb["cells"].insert(ex.answer + 1, {"cell_type": "code", "id": f"own-{ex.number.replace('.', '-')}",
                                           "metadata": {}, "execution_count": None, "outputs": [],
                                           "source": answers[ex.number]})
    return nb


def save(nb: dict, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def main():
    out = HERE / "submissions"
    dan = answered({"5.1": 'answer_1 = kinds_f["EQUALS_MATCH"]', "5.2": CACHED_GRAPH,
                    "5.3": "source_name = lambda source: \"L['self'].layer.weight\"\nanswer_3 = 1"})
    check = dan["cells"][exercises(dan)[0].check]
    check["source"] = 'helpers.exercises.check("exercise 5.1", 3, 3)  # always right'
    save(dan, out / "dan.ipynb")
    save(answered({"5.1": HOOK, "5.2": FAKE_COMPILE, "5.3": CHECK_PATCH}), out / "gus_cheats_on_the_kernel.ipynb")
    save(new_cells_under_answers(NELL), out / "abe" / "gina_ch06.ipynb")
    text = json.dumps(answered({}), indent=1, ensure_ascii=False)
    (out / "kim_corrupted.ipynb").write_text(text[: len(text) // 2], encoding="utf-8")
    (out / "ada").mkdir(exist_ok=True)
    shutil.copyfile(out / "ada.ipynb", out / "ada" / "ch05_variable_trackers.ipynb")
    pat = copy.deepcopy(load_notebook(out / "ada.ipynb"))
    pat["cells"].append({"cell_type": "markdown", "id": "pat-note", "metadata": {}, "source": "My answers. — Pat"})
    save(pat, out / "pat_same_answers.ipynb")
    planted_sly()


def planted_sly():
    """Read by the grader's notes only, never run (a ch06 run would cost the suite a minute): the reviewer's
    6.3 cheat, a frame walk from a traceback up to the check's recorder (3/3 and no note before session 3).
    Write it again after ch06's exercises change: `python -c "import make_submissions as m; m.planted_sly()"`
    in tests/pipeline."""
    sly = student_edition(load_notebook(CH06), "ch06", CH06.name)
    for ex in exercises(sly):
        sly["cells"][ex.answer]["source"] = {"6.1": "answer_1 = 4", "6.2": "answer_2 = (x.double(), 3)",
                                             "6.3": SLY_6_3}[ex.number]
    save(sly, HERE / "planted" / "sly_walks_frames_ch06.ipynb")


if __name__ == "__main__":
    main()

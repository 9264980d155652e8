"""Write the planted ch05 submissions of tests/pipeline/submissions/ that stand for issue 29's cheats and
failures (run it again after ch05's exercises change: `python tests/pipeline/make_submissions.py`).

Each is the ch05 student edition with ada's right answers, but for one thing:
fay answers 5.1 with an object whose __eq__ always says True; gus patches the course's comparison through
vars() before answering 5.1 wrongly, and replaces helpers.exercises.check before 5.3; hal writes each answer
in a new cell under the untouched answer cell; ivy's 5.1 kills the kernel (os._exit); jon's 5.2 loops
forever; kim is ada's notebook cut short (corrupted); nell/gina_ch06.ipynb is ch05 handed in under a ch06
name, in a subfolder as an LMS export has it.
"""
import copy
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))

from helpers.pipeline.student import exercises, student_edition  # noqa: E402
from helpers.pipeline.verify import load_notebook  # noqa: E402

CH05 = HERE.parent.parent / "chapters" / "ch05_variable_trackers.ipynb"
RIGHT = {
    "5.1": "answer_1 = 3  # EQUALS_MATCH on n, m and items[0]",
    "5.2": 'def compile_f(backend):\n    """Compile f with `backend` (the check passes a GraphRecorder)."""\n'
           "    return torch.compile(f, backend=backend, dynamic=True)\n\ndef call_with(compiled, n):\n"
           '    """Call the compiled f for one value of n; x and items stay as they are."""\n'
           "    return compiled(x, n, [1, 2])\n\nanswer_2 = (compile_f, call_with)",
    "5.3": 'answer_3 = attr_source(attr_source(local_source("self"), "layer"), "weight")',
}
PLANTED = {
    "fay_always_equal": {"5.1": "class Whatever:\n    def __eq__(self, other):\n        return True\n\n"
                                "answer_1 = Whatever()"},
    "gus_patches_the_course": {
        "5.1": 'import helpers\nvars(helpers.core.exercises)["_same"] = lambda *a: True\nanswer_1 = 4',
        "5.3": "real = helpers.exercises.check\nhelpers.exercises.check = lambda name, got, want, **k: real(name, want, want, **k)\n"
               'answer_3 = local_source("self")'},
    "ivy_kernel_dies": {"5.1": "import os\nos._exit(1)\nanswer_1 = 3"},
    "jon_endless_loop": {"5.2": "while True:\n    pass"},
}


def edition():
    return student_edition(load_notebook(CH05), "ch05", CH05.name)


def answered(changes: dict[str, str]) -> dict:
    nb = edition()
    for ex in exercises(nb):
        nb["cells"][ex.answer]["source"] = changes.get(ex.number, RIGHT[ex.number])
    return nb


def new_cells_under_answers() -> dict:
    """hal: the answer cells untouched, each answer in a new untagged cell right under it."""
    nb = edition()
    for ex in reversed(exercises(nb)):
        nb["cells"].insert(ex.answer + 1, {"cell_type": "code", "id": f"hal-{ex.number.replace('.', '-')}",
                                           "metadata": {}, "execution_count": None, "outputs": [],
                                           "source": RIGHT[ex.number]})
    return nb


def save(nb: dict, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def main():
    out = HERE / "submissions"
    for name, changes in PLANTED.items():
        save(answered(changes), out / f"{name}.ipynb")
    save(new_cells_under_answers(), out / "hal_answers_in_new_cells.ipynb")
    text = json.dumps(answered({}), indent=1, ensure_ascii=False)
    (out / "kim_corrupted.ipynb").write_text(text[: len(text) // 2], encoding="utf-8")
    save(answered({}), out / "nell" / "gina_ch06.ipynb")


if __name__ == "__main__":
    main()

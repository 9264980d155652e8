"""Unit tests of helpers/pipeline/lint.py."""
from conftest import course_notebook, make_notebook

from helpers.pipeline.lint import (
    bad_glue_formats,
    bare_numbers,
    lint_notebook,
    roles_in_code,
    unsupported_comparisons,
)


def test_planted_bare_numbers_are_caught():
    text = "The compiled call took 0.19 ms, a 6.1× speedup, with 3 graphs and 768 MB moved."
    assert bare_numbers(text) == ["0.19 ms", "6.1×", "3 graphs", "768 MB"]


def test_glue_code_quotes_dimensions_and_years_pass():
    text = ("Fused: {glue:text}`speedup:.2f`× on a 4096 × 4096 input (`time.sleep(0.004)  # 4 ms`).\n"
            "> The series reported 6.12× on an L40S.\n"
            "PyTorch 2.0 was released in 2023; Python 3.11; sm90.\n"
            "**Time:** about 25 minutes to read.")
    assert bare_numbers(text) == []


def test_bad_glue_format_is_caught():
    assert bad_glue_formats("{glue:text}`a:.2f}` and {glue:text}`b:.2f` and {glue:text}`c`") == ["a:.2f}"]


def test_notebook_checks(tmp_path):
    good = course_notebook(tmp_path / "ch98_good.ipynb", 'helpers.figure("n", 1, expect=helpers.exact(1))',
                           prose="We saw {glue:text}`n` graph.")
    assert lint_notebook(good) == []
    planted = course_notebook(tmp_path / "ch97_bad.ipynb", 'helpers.figure("n", 1, "graphs")',
                              prose="It took 12.5 ms.")
    problems = "\n".join(lint_notebook(planted))
    assert "bare number '12.5 ms'" in problems and "without expect=" in problems
    bare = make_notebook(tmp_path / "ch96_nosetup.ipynb", ("md", "# x"), ("code", "import torch"))
    problems = "\n".join(lint_notebook(bare))
    assert "setup cell" in problems and "parameters" in problems


def test_a_role_inside_a_code_span_is_caught():
    assert roles_in_code("It is a `{glue:text}`hook_during`` here and {glue:text}`ok` there.") == ["`{glue:text}`"]
    assert roles_in_code("See {doc}`glossary` and `code`.") == []


def test_comparisons_need_a_glued_figure_or_a_reason():
    assert unsupported_comparisons("The compiled call is faster than eager.") == ["faster"]
    assert unsupported_comparisons("Most guards are about global state.") == ["Most"]
    assert unsupported_comparisons("It is {glue:text}`speedup:.1f`× faster than eager.") == []
    assert unsupported_comparisons("A copy is faster than a kernel launch by design.\n"
                                   "<!-- not-measured: a definition -->") == []
    assert unsupported_comparisons("```python\nfaster = 1\n```\n> the series was faster") == []
    assert unsupported_comparisons("Use `most_common()`.") == []


def test_lint_reports_both_in_a_notebook(tmp_path):
    nb = course_notebook(tmp_path / "ch95_cmp.ipynb", 'helpers.figure("n", 1, expect=helpers.exact(1))',
                         prose="Inductor is several times faster here.\n\nAnd `{glue:text}`n`` graph.")
    problems = "\n".join(lint_notebook(nb))
    assert "comparison 'several times'" in problems and "role inside a code span" in problems


def test_the_alone_from_here_tag_follows_every_cell_that_times():
    from helpers.pipeline.lint import alone_from_problems

    def nb(*sources, alone=True, tag_at=-1):
        cells = [{"cell_type": "code", "source": src, "metadata": {}} for src in sources]
        cells[tag_at]["metadata"]["tags"] = ["alone-from-here"]
        return {"cells": cells, "metadata": {"course": {"alone": "timings"}} if alone else {}}

    compile_cell = "ir = loop_ir(f, x)\nhelpers.figure('n', 2, expect=helpers.exact(2))\nhelpers.figure('e', e, expect=helpers.record())"
    assert alone_from_problems(nb(compile_cell, "t = timing.interleaved(fns, x)")) == []
    assert "outside a chapter marked course.alone" in alone_from_problems(nb("x = 1", alone=False))[0]
    for timed in ("t = timing.interleaved(fns, x)", "helpers.figure('s', s, \"s\", expect=helpers.record())",
                  "t0 = time.perf_counter()", "start = torch.cuda.Event(enable_timing=True)",
                  "helpers.figure('r', r, expect=helpers.band(cpu=(1, 2)))"):
        problems = alone_from_problems(nb(timed, "y = 2"))
        assert problems and "move the tag up" in problems[0], timed
    two = nb("a = 1", "b = 2")
    two["cells"][0]["metadata"]["tags"] = ["alone-from-here"]
    assert "more than one cell" in alone_from_problems(two)[0]


def test_a_timed_lambda_must_name_its_device():
    from helpers.pipeline.lint import blind_timers

    assert blind_timers("t = timing.wall(lambda: a @ a, repeats=repeats).us") == ["timing.wall(lambda"]
    assert blind_timers("t = timing.wall(lambda: f(g(a)), repeats=5, device=ENV.device)") == []
    assert blind_timers("t = timing.wall(model, x, repeats=5)") == []  # the tensors tell it
    assert blind_timers("timing.interleaved(lambda: step(x), rounds=3)") == ["timing.interleaved(lambda"]

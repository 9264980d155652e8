"""Unit tests of helpers/pipeline/audit.py: the grader's watch on the course and its clock per exercise."""
import time

import pytest

from helpers.pipeline import audit


def test_the_grader_cells_watch_name_what_an_answer_changed_in_the_course():
    import helpers

    before = audit.snapshot()
    real = helpers.core.exercises._same
    try:
        vars(helpers.core.exercises)["_same"] = lambda *a: True
        assert audit.changed(before, audit.snapshot()) == ["helpers.core.exercises._same"]
    finally:
        vars(helpers.core.exercises)["_same"] = real
    assert audit.changed(before, audit.snapshot()) == []


def test_a_flag_changing_outside_the_deciding_modules_is_not_a_change():
    import helpers.core.text as text

    before = audit.snapshot()
    text._audit_probe_flag = None
    try:
        before["helpers.core.text._audit_probe_flag"] = (id(None), id(None), True)
        text._audit_probe_flag = True   # a lazy set-up flag of a module that decides no result
        assert audit.changed(before, audit.snapshot()) == []
    finally:
        del text._audit_probe_flag


@pytest.mark.skipif(not hasattr(__import__("signal"), "setitimer"), reason="needs setitimer")
def test_the_clock_stops_an_endless_loop_as_its_exercise_and_end_disarms_it():
    audit.begin("9.9", 0.2)
    with pytest.raises(audit.ExerciseTimeout, match="exercise 9.9 ran past"):
        while True:
            time.sleep(0.01)
    audit.begin("9.8", 0.2)
    audit.end("9.8")            # disarmed: no alarm after the check
    time.sleep(0.4)


def test_a_proxy_whose_getattr_raises_does_not_break_the_watch():
    import helpers.inductor.lowering  # its ops proxy raises IndexError with no handler installed

    snap = audit.snapshot()
    assert "helpers.inductor.lowering.ops" in snap or any(k.startswith("helpers.inductor.lowering.") for k in snap)


def test_the_watch_names_and_undoes_a_kernel_hook_and_a_faked_torch_compile(monkeypatch):
    """Issue 29 (session 3): an IPython callback a student's cell registered, and torch.compile replaced."""
    import types

    import torch
    from IPython.core.events import EventManager

    ip = types.SimpleNamespace(events=EventManager(None, {"pre_run_cell": None, "post_run_cell": None}),
                               input_transformers_post=[], user_ns={"torch": torch})
    monkeypatch.setattr(audit, "_ipython", lambda: ip)
    real = torch.compile
    state = {"hooks": audit.hooks()}

    def _helper(info):
        pass

    ip.events.register("pre_run_cell", _helper)
    ip.input_transformers_post.append(str.upper)
    torch.compile = lambda fn, **kwargs: fn
    try:
        said = audit._watch_hooks(state)
    finally:
        monkeypatch.setattr(torch, "compile", real)  # put back even if the watch did not
    assert said == ["IPython pre_run_cell callback _helper added", "IPython input_transformers_post upper added",
                    "torch.compile replaced"]
    assert ip.events.callbacks["pre_run_cell"] == [] and ip.input_transformers_post == []  # undone
    assert audit._watch_hooks(state) == []


def test_the_watch_sees_the_notebooks_torch_name_rebound(monkeypatch):
    import types

    import torch

    ip = types.SimpleNamespace(user_ns={"torch": torch})
    monkeypatch.setattr(audit, "_ipython", lambda: ip)
    state = {"hooks": audit.hooks()}
    ip.user_ns["torch"] = types.SimpleNamespace(compile=lambda fn, **k: fn)
    assert audit._watch_hooks(state) == ["the notebook's name torch rebound"]
    assert ip.user_ns["torch"] is torch

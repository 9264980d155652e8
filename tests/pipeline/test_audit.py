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

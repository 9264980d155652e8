"""Unit tests of helpers/dynamo_config.py (chapters 6-11): reading and patching Dynamo's settings."""
import types

import pytest

from helpers import dynamo_config as dc
from helpers.env import CourseError


def test_dynamo_config_patches_and_restores():
    before = dc.dynamo_setting("capture_scalar_outputs")
    with dc.dynamo_config(capture_scalar_outputs=not before):
        assert dc.dynamo_setting("capture_scalar_outputs") is (not before)
    assert dc.dynamo_setting("capture_scalar_outputs") is before


def test_recompile_limit_read_and_set():
    assert dc.dynamo_setting("recompile_limit") == 8
    with dc.dynamo_config(recompile_limit=3):
        assert dc.dynamo_setting("recompile_limit") == 3
    assert dc.dynamo_setting("recompile_limit") == 8


def test_missing_settings_raise_a_course_error():
    with pytest.raises(CourseError, match="no_such_setting_anywhere"):
        with dc.dynamo_config(no_such_setting_anywhere=True):
            pass
    with pytest.raises(CourseError):
        dc.dynamo_setting("no_such_setting_anywhere")
    assert dc.has_setting("recompile_limit") and not dc.has_setting("no_such_setting_anywhere")


def test_renamed_setting_falls_back_to_its_old_name():
    old_torch = types.SimpleNamespace(cache_size_limit=4)
    assert dc._resolve(old_torch, "recompile_limit") == "cache_size_limit"
    assert dc._resolve(types.SimpleNamespace(recompile_limit=8), "recompile_limit") == "recompile_limit"
    with pytest.raises(CourseError):
        dc._resolve(old_torch, "capture_scalar_outputs")


def test_dynamo_config_where_present_skips_missing_settings_and_restores():
    before = dc.dynamo_setting("capture_scalar_outputs")
    with dc.dynamo_config_where_present(capture_scalar_outputs=not before, no_such_setting_anywhere=1) as applied:
        assert applied == ["capture_scalar_outputs"]
        assert dc.dynamo_setting("capture_scalar_outputs") is (not before)
    assert dc.dynamo_setting("capture_scalar_outputs") is before
    with dc.dynamo_config_where_present(no_such_setting_anywhere=1) as applied:
        assert applied == []

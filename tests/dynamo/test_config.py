"""Unit tests of helpers/dynamo/config.py."""
import types

import pytest

from helpers.core.env import CourseError
from helpers.dynamo.config import (
    _resolve,
    dynamo_config,
    dynamo_config_where_present,
    dynamo_setting,
    has_setting,
)


def test_dynamo_config_patches_and_restores():
    before = dynamo_setting("capture_scalar_outputs")
    with dynamo_config(capture_scalar_outputs=not before):
        assert dynamo_setting("capture_scalar_outputs") is (not before)
    assert dynamo_setting("capture_scalar_outputs") is before


def test_recompile_limit_read_and_set():
    assert dynamo_setting("recompile_limit") == 8
    with dynamo_config(recompile_limit=3):
        assert dynamo_setting("recompile_limit") == 3
    assert dynamo_setting("recompile_limit") == 8


def test_missing_settings_raise_a_course_error():
    with pytest.raises(CourseError, match="no_such_setting_anywhere"):
        with dynamo_config(no_such_setting_anywhere=True):
            pass
    with pytest.raises(CourseError):
        dynamo_setting("no_such_setting_anywhere")
    assert has_setting("recompile_limit") and not has_setting("no_such_setting_anywhere")


def test_renamed_setting_falls_back_to_its_old_name():
    old_torch = types.SimpleNamespace(cache_size_limit=4)
    assert _resolve(old_torch, "recompile_limit") == "cache_size_limit"
    assert _resolve(types.SimpleNamespace(recompile_limit=8), "recompile_limit") == "recompile_limit"
    with pytest.raises(CourseError):
        _resolve(old_torch, "capture_scalar_outputs")


def test_dynamo_config_where_present_skips_missing_settings_and_restores():
    before = dynamo_setting("capture_scalar_outputs")
    with dynamo_config_where_present(capture_scalar_outputs=not before, no_such_setting_anywhere=1) as applied:
        assert applied == ["capture_scalar_outputs"]
        assert dynamo_setting("capture_scalar_outputs") is (not before)
    assert dynamo_setting("capture_scalar_outputs") is before
    with dynamo_config_where_present(no_such_setting_anywhere=1) as applied:
        assert applied == []

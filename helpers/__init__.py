"""Helpers for "torch.compile, opened up": setup, timing, figures, inspection, traffic model."""
from . import exercises, inspect, plots, timing, traffic, widgets
from .env import CourseError, fresh_compile_cache, require_torch
from .figures import band, exact, exact_by_python, figure, record, words
from .numbers import reference, replay, table
from .session import configure, current_env, pick, setup

__version__ = "0.1.0"
__all__ = ["CourseError", "exercises", "inspect", "band", "configure", "current_env", "exact", "figure", "fresh_compile_cache",
           "pick", "plots", "record", "reference", "replay", "require_torch", "setup", "table", "timing",
           "traffic", "widgets", "words", "exact_by_python"]

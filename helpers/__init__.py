"""torch.compile, opened up: the package every chapter notebook imports.

What a notebook may use (the documented surface; a test keeps the chapters to it):

- ``helpers`` itself: the setup and parameters cells (``setup``, ``configure``, ``pick``, ``current_env``),
  figures and their expectations (``figure``, ``exact``, ``exact_by_python``, ``band``, ``record``,
  ``words``), the numbers table (``reference``, ``replay``, ``table``), ``CourseError``,
  ``require_torch``, ``fresh_compile_cache``, ``where_to_read`` (the "Where to read the source" list,
  each pointer checked in the torch the notebook runs on), ``machine_free`` (printed text without the
  machine's absolute paths), and the core modules ``helpers.exercises``,
  ``helpers.plots``, ``helpers.timing`` and ``helpers.widgets``.
- the station subpackages, one per part of the book; each module is named for what its chapter
  teaches and names that chapter in its docstring:

  ================  ========================  =====================================================
  subpackage        part of the book          modules
  ================  ========================  =====================================================
  helpers.dynamo    Part 1, chapters 3-11     state, bytecode, frames (3), translator (4),
                                              variables (5), guards (6), side_effects (7),
                                              output_graph (8), codegen (9), graph_breaks (10),
                                              shapes (11), config, logs, exercises
  helpers.aot       Part 2, chapters 12-16    forward_backward (12), functionalization (13),
                                              decompositions (14), partitioner (15), fake (16),
                                              graphs, operators
  helpers.inductor  Part 3, chapters 17-23    stages (17), lowering (18), scheduler (19),
                                              fusion (20), triton_kernels (21), cpp_backend (22),
                                              autotune (23), code, traffic
  helpers.runtime   Part 4, chapters 24-30    cache_layers (24), cudagraphs (25), recompiles (26),
                                              toolbox (27), backends (28), export_aoti (29),
                                              recap (30), triage (``python -m helpers triage``),
                                              bet, caches, compile_time
  ================  ========================  =====================================================

  Private ``torch._dynamo`` / ``torch._functorch`` / ``torch._inductor`` names are reached only inside
  these subpackages, through ``helpers.core.private.private``.

Not for notebooks: ``helpers.core`` (the machinery behind the names above; it never imports a station)
and ``helpers.pipeline`` (``python -m helpers``: run, verify, merge, publish, lint, pointers, guide,
verification, student, grade; ``triage`` is the runtime station's).
"""
from .core import exercises, plots, timing, widgets
from .core.env import CourseError, require_torch
from .core.figures import band, exact, exact_by_python, figure, record, words
from .core.numbers import reference, replay, table
from .core.pointers import where_to_read
from .core.session import configure, pick, setup
from .core.state import current_env
from .core.text import machine_free
from .runtime.caches import fresh_compile_cache

__version__ = "0.1.0"
__all__ = ["CourseError", "band", "configure", "current_env", "exact", "exact_by_python", "exercises", "figure",
           "fresh_compile_cache", "machine_free", "pick", "plots", "record", "reference", "replay", "require_torch", "setup",
           "table", "timing", "where_to_read", "widgets", "words"]

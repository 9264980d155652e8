"""The one door to torch's private API (used by the station subpackages only).

``private("torch._dynamo.reset")`` imports a private name or raises a CourseError that names it, so a
release that moves an API fails with one clear line instead of a traceback from deep inside torch.
Only ``helpers.dynamo``, ``helpers.aot``, ``helpers.inductor`` and ``helpers.runtime`` call it.

``@private_step("what it reaches")`` wraps a station helper whose work imitates or calls into torch's
internals (a private class built by hand, a private function called with its private signature). On a
verified torch (``env.VERIFIED_TORCH``) an error inside it is raised as it is: there it is a bug. On any
other torch an error of the kinds a moved API raises (a missing attribute, a changed signature, a
missing name) is caught: the step prints one line ("this step needs torch 2.11–2.15 ...; torch X.Y
moved ...: its figures are unverified") and returns an ``Unverified`` marker instead of its result.
``helpers.figure`` records a marker as an *unverified* figure with that reason, ``helpers.words``
accepts it, and the marker passes through indexing, attributes and arithmetic (like a NaN), so the rest
of the chapter runs.
"""
from __future__ import annotations

import contextvars
import functools
import importlib
import os
import traceback

from .env import VERIFIED_TORCH, CourseError


class PrivateAPIMissing(CourseError):
    """A private torch name that this torch does not have (raised by ``private``)."""


def private(path: str):
    """Import ``module.attr`` from torch's private API, or raise a CourseError that names it."""
    module, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        import torch

        raise PrivateAPIMissing(
            f"helpers needs the private torch API `{path}`, which torch {torch.__version__} does not have. "
            f"The course is verified on torch {', '.join(VERIFIED_TORCH)}; install one of those, or report "
            f"this so helpers/core/private.py can follow the move."
        ) from exc


# ---------------------------------------------------------------------------------------------------
# A step that reaches into torch's internals, on a torch the course was not verified on

#: The errors a moved private API raises: a name gone or renamed, a signature or a class's fields changed.
MOVED = (AttributeError, TypeError, ImportError, KeyError, IndexError, AssertionError, NotImplementedError,
         PrivateAPIMissing)


def torch_version() -> str:
    """The running torch's version (``torch.__version__``; tests set it to fake another release)."""
    import torch

    return str(torch.__version__)


def _minor(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def torch_is_verified(version: str | None = None) -> bool:
    """True on a torch release the course is verified on (``env.VERIFIED_TORCH``)."""
    return _minor(version or torch_version()) in VERIFIED_TORCH


def verified_range() -> str:
    """``torch 2.11–2.15 (verified: 2.11, 2.13, 2.15)``."""
    return f"torch {VERIFIED_TORCH[0]}–{VERIFIED_TORCH[-1]} (verified: {', '.join(VERIFIED_TORCH)})"


class Unverified:
    """What a ``private_step`` returns where torch moved the internals it reaches (an unverified torch).

    ``reason`` says what moved. The marker behaves like a NaN so that a chapter's following lines run:
    indexing, attribute access, calls and arithmetic give the marker back, comparisons are False,
    iteration is empty, ``str``/``format`` give "unverified". ``helpers.figure`` records it as an
    unverified figure (value None) with ``reason``.
    """

    __slots__ = ("step", "reason", "detail")

    def __init__(self, step: str, reason: str, detail: str = ""):
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "reason", reason)      # what moved, and the torch the step needs
        object.__setattr__(self, "detail", detail)      # the error and where torch raised it

    def __repr__(self):
        return f"Unverified({self.step!r})"

    def __str__(self):
        return "unverified"

    def __format__(self, spec):
        return format("unverified", "s" if spec and spec[-1:] in "deEfFgGn%xXobc" else spec)

    def __bool__(self):
        return False

    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())

    def __float__(self):
        return float("nan")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    def _same(self, *_args, **_kwargs):
        return self

    def _false(self, _other):
        return False

    __lt__ = __le__ = __gt__ = __ge__ = _false
    __getitem__ = __call__ = _same
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __round__ = _same

    def __getattr__(self, name):
        if name.startswith("_"):  # IPython's and pickle's probes (_repr_html_, __getstate__, ...)
            raise AttributeError(name)
        return self

    def __setattr__(self, name, value):
        raise AttributeError("an Unverified marker is read-only")


def is_unverified(value) -> bool:
    return isinstance(value, Unverified)


def _where(exc: BaseException) -> str:
    """The innermost frame of the error, as ``torch/_inductor/choices.py: should_use_persistent_reduction``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    f = frames[-1]
    parts = f.filename.replace(os.sep, "/").split("/")
    for root in ("torch", "helpers"):
        if root in parts:
            i = len(parts) - 1 - parts[::-1].index(root)
            return f"{'/'.join(parts[i:])}: {f.name}"
    return f"{parts[-1]}: {f.name}"


_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("helpers_private_step", default=False)
_SAID: set[str] = set()  # the steps whose message has been printed (once per step and kernel)


def moved(what: str, exc: BaseException) -> Unverified:
    """The marker (and its one printed line) for step ``what`` that raised ``exc`` on an unverified torch."""
    first = (str(exc).strip().splitlines() or [""])[0][:160]
    version = torch_version()
    reason = f"torch {version} moved {what}; this step needs {verified_range()}"
    detail = f"{type(exc).__name__}: {first}; raised in {_where(exc)}"
    if what not in _SAID:
        _SAID.add(what)
        print(f"this step needs {verified_range()}; torch {version} moved {what} "
              f"({type(exc).__name__}: {first}): its figures are unverified")
    return Unverified(what, reason, detail)


def private_step(what: str):
    """Decorate a station helper that reaches into torch's private internals (see the module's text).

    ``what`` names what it reaches, for the message: ``"InductorChoices.should_use_persistent_reduction
    and its SIMDKernelFeatures"``. Verified torch: errors propagate. Other torch: an error in ``MOVED``
    becomes an ``Unverified`` marker, printed once. Called with a marker among its arguments, the step
    returns that marker without running. Nested steps leave the decision to the outermost one.
    """
    def decorate(fn):
        @functools.wraps(fn)
        def step(*args, **kwargs):
            given = next((a for a in (*args, *kwargs.values()) if isinstance(a, Unverified)), None)
            if given is not None:
                return given
            if _INSIDE.get():
                return fn(*args, **kwargs)
            token = _INSIDE.set(True)
            try:
                return fn(*args, **kwargs)
            except MOVED as exc:
                if torch_is_verified():
                    raise
                return moved(what, exc)
            finally:
                _INSIDE.reset(token)

        step.private_step = what
        return step

    return decorate

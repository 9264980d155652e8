"""Torch's logging artifacts captured in-process (what ``TORCH_LOGS`` would print), and muted loggers (ch04).

``capture_logs("graph_breaks", "recompiles")`` is the in-process equivalent of
``TORCH_LOGS="graph_breaks,recompiles"``: the messages are collected into a ``Logs`` object instead of
being printed, and on exit every logger and every artifact switch is put back as it was, so settings
the reader made (``TORCH_LOGS``, ``torch._logging.set_logs``) survive. The private access
(``torch._logging._internal.log_registry`` and ``log_state``) goes through ``helpers.core.private.private``;
both exist on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

from ..core.env import VERIFIED_TORCH, CourseError
from ..core.private import private
from ..core.text import machine_free


@dataclass
class Logs:
    """Messages captured from torch's logging artifacts, as ``(artifact, message)`` records (ch04).

    A record from a plain logger (``capture_logs(loggers=...)``) carries the logger's name instead of an
    artifact name.
    """

    records: list[tuple[str, str]] = field(default_factory=list)

    def messages(self, artifact: str | None = None) -> list[str]:
        """Every message of ``artifact`` (all messages if None), in the order they were logged (ch04)."""
        return [m for a, m in self.records if artifact is None or a == artifact]

    def lines(self, artifact: str | None = None) -> list[str]:
        """Every line of every message of ``artifact`` (all artifacts if None) (ch04)."""
        return [line for m in self.messages(artifact) for line in m.splitlines()]

    def text(self, artifact: str | None = None) -> str:
        """The lines of ``artifact``'s messages joined into one text (ch04)."""
        return "\n".join(self.lines(artifact))


class _Collector(logging.Handler):
    """A handler that appends each record to a ``Logs``, keyed by artifact (or logger) name."""

    def __init__(self, logs: Logs):
        super().__init__(logging.DEBUG)
        self.logs = logs

    def emit(self, record):
        name = record.name
        artifact = name.rsplit(".__", 1)[1] if ".__" in name else name
        try:
            # no machine's paths in what a chapter prints; the reader's own files stay as they are (the triage
            # names them)
            self.logs.records.append((artifact, machine_free(record.getMessage(), keep_local=True)))
        except Exception:  # a record that cannot format itself is not worth failing a chapter for
            pass


def artifact_loggers(artifact: str) -> list[logging.Logger]:
    """The loggers torch writes one artifact to (``<module>.__<artifact>``), Dynamo's registered first (ch04)."""
    private("torch._dynamo.config")  # importing Dynamo creates its artifact loggers (one per module and artifact)
    suffix = f".__{artifact}"
    names = {q for q in private("torch._logging._internal.log_registry").get_artifact_log_qnames()
             if q.endswith(suffix)}
    names |= {n for n in logging.root.manager.loggerDict if n.startswith("torch") and n.endswith(suffix)}
    return [logging.getLogger(n) for n in sorted(names)]


@contextlib.contextmanager
def capture_logs(*artifacts: str, loggers: tuple[str, ...] = (), level: int = logging.WARNING):
    """Collect torch logging artifacts (``"graph_breaks"``, ``"recompiles"``, ``"guards"``...) into a ``Logs`` (ch04).

    The artifacts are switched on for the block and their messages collected instead of printed.
    ``loggers`` adds plain logger names, collected from ``level`` up (their warnings by default, e.g.
    ``torch._dynamo.convert_frame``'s recompile-limit warning; ``logging.DEBUG`` for what ``TORCH_LOGS="+..."``
    would print, as chapters 16 and 23 read). On exit, each logger's level, propagation and handlers, and each
    artifact's switch, are restored to what they were: the reader's own log settings stay.
    """
    registry = private("torch._logging._internal.log_registry")
    state = private("torch._logging._internal.log_state")
    found = {a: artifact_loggers(a) for a in artifacts}
    missing = sorted(a for a, lgs in found.items() if not lgs or not registry.is_artifact(a))
    if missing:
        import torch

        raise CourseError(f"no torch logger for the artifact(s) {missing} in torch {torch.__version__}: "
                          f"torch renamed them? (the course is verified on torch {', '.join(VERIFIED_TORCH)})")
    targets = list(dict.fromkeys([lg for lgs in found.values() for lg in lgs]))
    plain = [logging.getLogger(n) for n in loggers if logging.getLogger(n) not in targets]
    switched_on = [a for a in artifacts if not state.is_artifact_enabled(a)]
    saved = [(lg, lg.level, lg.propagate) for lg in targets + plain]
    logs = Logs()
    collector = _Collector(logs)
    for a in switched_on:
        state.enable_artifact(a)
    for lg in targets:
        lg.setLevel(logging.DEBUG)
    for lg in plain:
        lg.setLevel(min(lg.level or level, level))
    for lg in targets + plain:
        lg.addHandler(collector)
        lg.propagate = False  # collected, not printed: the notebook shows what it discusses
    try:
        yield logs
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(collector)
            lg.setLevel(level)
            lg.propagate = propagate
        for a in switched_on:
            state.artifact_names.discard(a)


@contextlib.contextmanager
def silence(*loggers: str, level: int = logging.CRITICAL + 1):
    """Raise the named loggers' level for the block (default: mute them entirely), then restore it (ch10).

    For Dynamo's warnings about a graph break or a recompile limit a chapter causes on purpose.
    """
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in loggers]
    for logger, _ in saved:
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, old in saved:
            logger.setLevel(old)

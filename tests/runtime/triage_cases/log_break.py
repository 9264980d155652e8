"""A logger.warning inside forward: one graph break, cured by torch._dynamo.config.ignore_logging_functions (ch10)."""
import logging

import torch

logger = logging.getLogger("triage_case")
logger.addHandler(logging.NullHandler())
logger.propagate = False


def f(x):
    x = x * 2
    logger.warning("halfway")
    return x + 1


def example():
    return f, torch.randn(8)

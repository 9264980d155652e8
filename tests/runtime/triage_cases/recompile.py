"""A string argument picks the activation: each new value fails an equality guard and recompiles (ch26)."""
import torch


def act(x, name):
    return getattr(torch, name)(x) * 2


def example():
    x = torch.randn(8)
    return act, (x, "relu"), [(x, "tanh"), (x, "sigmoid"), (x, "relu")]

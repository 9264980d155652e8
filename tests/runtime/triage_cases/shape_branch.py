"""A branch on the batch size: the dynamic graph's guard `2 <= x.size()[0] <= 16` fails at 32 (ch11, ch26)."""
import torch


def f(x):
    if x.shape[0] > 16:
        return torch.sin(x)
    return torch.cos(x)


def example():
    return f, torch.randn(4, 8), [torch.randn(8, 8), torch.randn(32, 8), torch.randn(64, 8)]

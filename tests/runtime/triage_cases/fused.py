"""Three pointwise operations Inductor fuses into one kernel (ch17, ch20)."""
import torch


def f(x):
    return torch.sin(x) * torch.cos(x) + 1


def example(device="cpu"):
    return f, (torch.randn(4096, device=device),)

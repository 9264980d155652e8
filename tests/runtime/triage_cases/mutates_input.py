"""A function that writes into its input: the triage compares eager and compiled from the same input values.

On a GPU under mode="reduce-overhead" it is also a CUDA-graph skip ("mutated inputs", ch25).
"""
import torch


def bump(x):
    x.add_(1)
    return x.sin() * 2


def example(device="cpu"):
    return bump, torch.randn(1024, device=device)

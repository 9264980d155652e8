"""The example function itself fails."""
import torch


def example():
    weights = torch.randn(4)
    raise ValueError(f"no checkpoint found for {weights.shape[0]} weights")

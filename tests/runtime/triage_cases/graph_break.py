"""A module whose forward prints between two tensor operations: one graph break (ch10)."""
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        x = x * 2
        print("halfway")
        return x + 1


def example():
    return Net(), (torch.randn(8),)

"""A Linear layer of width 8 given inputs of width 3: the inputs do not match the model."""
import torch


def example():
    return torch.nn.Linear(8, 2), (torch.randn(4, 3),)

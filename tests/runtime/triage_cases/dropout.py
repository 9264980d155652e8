"""Dropout in training mode: compiled and eager outputs differ by design (each draws its own random numbers)."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(torch.relu(self.lin(x)))


def example():
    torch.manual_seed(0)
    return Net().train(), (torch.randn(4, 8),)

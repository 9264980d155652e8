"""A model with torch.relu: the test compiles it with torch's planted backend that fails on relu."""
import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x))


def example(device="cpu"):
    return Block().to(device), (torch.randn(4, 8, device=device),)

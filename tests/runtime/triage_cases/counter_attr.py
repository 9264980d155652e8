"""A module that counts its calls in an int attribute: `self.calls == n` fails on every call (ch06, ch26)."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return torch.relu(self.lin(x)) * (1.0 / self.calls)


def example():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(2, 4),), [(torch.randn(2, 4),)]

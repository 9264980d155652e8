"""A forward that counts its calls in a Python int global (a warm-up schedule's step): every call recompiles on
the guard `G['step'] == n` until the recompile limit; past it the frame runs eagerly (ch06, ch26)."""
import torch

step = 0


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        global step
        step += 1
        return self.lin(x) * min(step / 100, 1.0)


def example():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(2, 4),), [(torch.randn(2, 4),), (torch.randn(3, 4),)]

"""A layer reads x before the branch on its size: torch's guard comment names the layer as the size's "first use"
(the lower bound, 0/1 specialisation) and the branch as the upper bound's location; the triage must name the branch."""
import torch


class Br(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        if x.shape[0] > 16:
            y = y.relu()
        return y


def example():
    torch.manual_seed(0)
    return Br().eval(), torch.randn(4, 8), [torch.randn(8, 8), torch.randn(32, 8), torch.randn(64, 8)]

"""A pre-norm MLP block in training mode (parameters require grad), called without backward: under
mode="reduce-overhead" on a GPU, cudagraph trees wait for a backward that never comes (ch25)."""
import torch


class Block(torch.nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 2 * dim)
        self.down = torch.nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


def example(device="cpu"):
    torch.manual_seed(0)
    return Block().to(device).train(), (torch.randn(4, 8, device=device),)

"""Three pointwise operations and a bias that requires grad (a training-mode model called without backward):
Inductor fuses them into one kernel (ch17, ch20); under mode="reduce-overhead" on a GPU, cudagraph trees wait for
the backward that never comes (ch25)."""
import torch


class Wave(torch.nn.Module):
    def __init__(self, n=4096):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return torch.sin(x) * torch.cos(x) + self.bias


def example(device="cpu"):
    return Wave().to(device), (torch.randn(4096, device=device),)

"""timm's resnet10t (timm.create_model(..., pretrained=False): built, not downloaded), inference in eval mode."""
import timm
import torch

from _size import full, seed


def example(device="cpu"):
    seed()
    model = timm.create_model("resnet10t", pretrained=False, num_classes=1000 if full() else 10).to(device).eval()
    shape = (32, 3, 224, 224) if full() else (1, 3, 32, 32)
    return model, torch.randn(*shape, device=device)

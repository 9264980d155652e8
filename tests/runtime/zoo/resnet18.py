"""torchvision's ResNet-18 (torchvision.models.resnet18(weights=None): built, not downloaded), inference in
eval mode; the CI size keeps the architecture and shrinks the images."""
import torch
from torchvision.models import resnet18

from _size import full, seed


def example(device="cpu"):
    seed()
    model = resnet18(weights=None, num_classes=1000 if full() else 10).to(device).eval()
    shape = (32, 3, 224, 224) if full() else (1, 3, 32, 32)
    return model, torch.randn(*shape, device=device)

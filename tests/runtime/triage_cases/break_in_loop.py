"""A print inside a loop: Dynamo gives up the whole function (ch10)."""
import torch


def step(x):
    for i in range(3):
        x = x + 1
        print("step", i)
    return x


def example():
    return step, (torch.randn(8),)

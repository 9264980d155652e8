"""Ten new values of a string argument: past the recompile limit, new inputs run eagerly (ch06, ch26)."""
import torch


def shift(x, key):
    return x + ord(key)


def example():
    x = torch.randn(4)
    return shift, (x, "a"), [(x, key) for key in "bcdefghijk"]

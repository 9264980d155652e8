"""Hugging Face transformers' GPT-2 (GPT2LMHeadModel from a GPT2Config, no weights downloaded), inference
in eval mode on token ids of three lengths: a shape recompile, then a dynamic graph reused."""
import torch
from transformers import GPT2LMHeadModel

from _size import full, gpt2_config, seed


def example(device="cpu"):
    seed()
    cfg = gpt2_config()
    model = GPT2LMHeadModel(cfg).to(device).eval()
    batch, length = (8, 128) if full() else (2, 16)
    ids = lambda n: torch.randint(0, cfg.vocab_size, (batch, n), device=device)  # noqa: E731
    return model, {"input_ids": ids(length)}, [{"input_ids": ids(2 * length)}, {"input_ids": ids(length + length // 2)}]

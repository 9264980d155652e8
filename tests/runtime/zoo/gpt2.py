"""Hugging Face transformers' GPT-2 (GPT2LMHeadModel from a GPT2Config, no weights downloaded), inference
in eval mode on token ids of three lengths: a shape recompile, then a dynamic graph reused."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from _size import full, seed


def example(device="cpu"):
    seed()
    cfg = GPT2Config(use_cache=False) if full() else GPT2Config(
        vocab_size=256, n_positions=64, n_embd=32, n_layer=1, n_head=2, use_cache=False,
        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg).to(device).eval()
    batch, length = (8, 128) if full() else (2, 16)
    ids = lambda n: torch.randint(0, cfg.vocab_size, (batch, n), device=device)  # noqa: E731
    return model, {"input_ids": ids(length)}, [{"input_ids": ids(2 * length)}, {"input_ids": ids(length + length // 2)}]

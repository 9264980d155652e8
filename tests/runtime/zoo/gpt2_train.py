"""GPT-2 (transformers, from a config) in training mode with labels: the loss is computed inside forward, in
transformers' own loss code; dropout is active (a mismatch by design)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from _size import full, seed


def example(device="cpu"):
    seed()
    cfg = GPT2Config(use_cache=False) if full() else GPT2Config(
        vocab_size=256, n_positions=64, n_embd=32, n_layer=1, n_head=2, use_cache=False,
        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg).to(device).train()
    batch, length = (8, 128) if full() else (2, 16)
    ids = torch.randint(0, cfg.vocab_size, (batch, length), device=device)
    return model, {"input_ids": ids, "labels": ids.clone()}

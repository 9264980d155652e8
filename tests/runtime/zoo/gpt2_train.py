"""GPT-2 (transformers, from a config) in training mode with labels: the loss is computed inside forward, in
transformers' own loss code; dropout is active (a mismatch by design)."""
import torch
from transformers import GPT2LMHeadModel

from _size import full, gpt2_config, seed


def example(device="cpu"):
    seed()
    cfg = gpt2_config()
    model = GPT2LMHeadModel(cfg).to(device).train()
    batch, length = (8, 128) if full() else (2, 16)
    ids = torch.randint(0, cfg.vocab_size, (batch, length), device=device)
    return model, {"input_ids": ids, "labels": ids.clone()}

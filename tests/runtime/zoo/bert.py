"""Hugging Face transformers' BERT (BertForSequenceClassification from a BertConfig, no weights
downloaded), inference in eval mode with an attention mask."""
import torch
from transformers import BertConfig, BertForSequenceClassification

from _size import full, seed


def example(device="cpu"):
    seed()
    cfg = BertConfig(num_labels=2) if full() else BertConfig(
        vocab_size=256, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=64, num_labels=2)
    model = BertForSequenceClassification(cfg).to(device).eval()
    batch, length = (8, 128) if full() else (2, 16)
    ids = torch.randint(0, cfg.vocab_size, (batch, length), device=device)
    return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

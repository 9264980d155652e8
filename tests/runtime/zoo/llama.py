"""Hugging Face transformers' Llama (LlamaForCausalLM from a LlamaConfig, no weights downloaded): RoPE,
RMSNorm, grouped-query attention, SwiGLU; inference in eval mode."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from _size import full, seed


def example(device="cpu"):
    seed()
    if full():  # a 4-layer Llama of Llama-2-7B's width would not fit the 4-minute budget: 4 layers of 1024
        cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                          num_attention_heads=16, num_key_value_heads=4, use_cache=False)
    else:
        cfg = LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False,
                          bos_token_id=0, eos_token_id=0)
    model = LlamaForCausalLM(cfg).to(device).eval()
    batch, length = (8, 128) if full() else (2, 16)
    return model, {"input_ids": torch.randint(0, cfg.vocab_size, (batch, length), device=device)}

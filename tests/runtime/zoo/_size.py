"""The zoo's two sizes: ``ci`` (default; tiny configs that a 2-core CPU triages in seconds) and ``full``
(set ``TRIAGE_ZOO_SIZE=full``: the libraries' own default sizes, for the GPU run of the book's appendix)."""
import os


def full() -> bool:
    return os.environ.get("TRIAGE_ZOO_SIZE", "ci") == "full"


def seed() -> None:
    import torch

    torch.manual_seed(0)


def gpt2_config():
    """GPT-2's config at the zoo's size (GPT-2 small when ``full``), without a KV cache; shared by the two
    GPT-2 models (``gpt2.py``, ``gpt2_train.py``)."""
    from transformers import GPT2Config

    return GPT2Config(use_cache=False) if full() else GPT2Config(
        vocab_size=256, n_positions=64, n_embd=32, n_layer=1, n_head=2, use_cache=False,
        bos_token_id=0, eos_token_id=0)

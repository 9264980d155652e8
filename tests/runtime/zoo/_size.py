"""The zoo's two sizes: ``ci`` (default; tiny configs that a 2-core CPU triages in seconds) and ``full``
(set ``TRIAGE_ZOO_SIZE=full``: the libraries' own default sizes, for the GPU run of the book's appendix)."""
import os


def full() -> bool:
    return os.environ.get("TRIAGE_ZOO_SIZE", "ci") == "full"


def seed() -> None:
    import torch

    torch.manual_seed(0)

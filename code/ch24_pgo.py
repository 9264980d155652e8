"""Chapter 24: does profile-guided dynamism (PGO) carry a dynamic size into the next process?

One process compiles ``f(x) = x * 2 + 1`` (backend "eager": PGO is Dynamo's, no Inductor needed) and
calls it with each size given, then prints one JSON line on stdout: the graphs Dynamo compiled
(``counters["stats"]["unique_graphs"]``), the job id torch saw (``torch.compiler.config.job_id``, set by
``TORCH_COMPILE_JOB_ID``) and the files under ``<TORCHINDUCTOR_CACHE_DIR>/dynamo``, where local PGO keeps
its code state (``code_state_path`` in ``torch/_dynamo/pgo.py``). Run it twice against one cache folder:
the second process compiles once only if the first one's code state was written and read back.
It imports the course's helpers (for the counters) from the folder above its own:

    python code/ch24_pgo.py 8 16
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from helpers.runtime.cache_layers import all_counters  # noqa: E402


def f(x):
    return x * 2 + 1


compiled = torch.compile(f, backend="eager")
for n in [int(a) for a in sys.argv[1:]]:
    compiled(torch.randn(n))
folder = os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "dynamo")
files = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
print(json.dumps({"graphs": all_counters(("stats",)).get("stats", {}).get("unique_graphs", 0),
                  "job_id": torch.compiler.config.job_id, "files": files}))

"""Unit tests of helpers/core/text.py."""
from helpers.core.text import columns


def test_columns_align_rows_cut_long_left_lines_and_pad_the_shorter_side():
    text = columns(["a", "a much longer line"], ["x"], ("L", "R"), 6).splitlines()
    assert text[0] == "L       R" and text[1] == "----    ----"
    assert text[2] == "a       x"
    assert text[3] == "a much  "  # cut at the width; nothing on the right


def test_machine_free_names_files_without_the_machines_paths(monkeypatch):
    import os

    import torch

    from helpers.core.env import REPO_ROOT
    from helpers.core.text import machine_free

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/runC/compile-cache")
    monkeypatch.setenv("TMPDIR", "/tmp/runC/compile-cache/tmp")
    text = (f'File "/tmp/runC/compile-cache/tmp/ipykernel_17763/3896126592.py", line 3, in f\n'
            f'File "/usr/lib/python3.12/runpy.py", line 198\n'
            f"{os.path.dirname(torch.__file__)}/_dynamo/eval_frame.py\n"
            f"/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/linear.py:134\n"
            f"/tmp/runC/compile-cache/triton /tmp/runC/compile-cache/tmp/x {REPO_ROOT}/helpers/core/text.py")
    assert machine_free(text).splitlines() == [
        'File "<cell>", line 3, in f', 'File "runpy.py", line 198', "torch/_dynamo/eval_frame.py",
        "torch/nn/modules/linear.py:134", "$TORCHINDUCTOR_CACHE_DIR/triton $TMPDIR/x helpers/core/text.py"]
    assert machine_free("a user's /home/ana/model.py stays") == "a user's /home/ana/model.py stays"


def test_machine_free_can_keep_local_files_for_the_triage(monkeypatch):
    from helpers.core.env import REPO_ROOT
    from helpers.core.text import machine_free

    monkeypatch.setenv("TMPDIR", "/tmp/x")
    text = f'File "/tmp/x/ipykernel_1/2.py", line 3\n{REPO_ROOT}/tests/model.py:4 /tmp/x/model.py'
    assert machine_free(text, keep_local=True) == f'File "<cell>", line 3\n{REPO_ROOT}/tests/model.py:4 /tmp/x/model.py'

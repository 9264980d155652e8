"""Unit tests of helpers/core/env.py."""
import pytest
import torch

from helpers.core.env import (
    VERIFIED_TORCH,
    CourseError,
    Env,
    _version_tuple,
    require_torch,
    resolve_device,
    resolve_scale,
)
from helpers.core.private import private


def test_private_api_missing_is_a_clear_error():
    with pytest.raises(CourseError, match=r"private torch API `torch._dynamo.no_such_thing`.*2\.11"):
        private("torch._dynamo.no_such_thing")


def test_version_gate_rejects_old_torch_with_clear_message():
    with pytest.raises(CourseError, match=r"needs torch >= 2.11; found 2.3.1"):
        require_torch("2.11", version="2.3.1")


def test_version_gate_accepts_supported_versions():
    assert require_torch("2.11", version="2.11.0+cu130") == "2.11.0+cu130"
    assert require_torch("2.11", version="2.13.0+cpu") == "2.13.0+cpu"
    assert _version_tuple("2.13.0a0+git123") == (2, 13, 0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_cuda_without_gpu_is_a_clear_error():
    with pytest.raises(CourseError, match="sees no CUDA GPU"):
        resolve_device("cuda")


def test_device_and_scale_resolution():
    assert resolve_device("cpu") == "cpu"
    assert resolve_scale("auto", "cpu") == "quick"
    assert resolve_scale("auto", "cuda") == "full"
    with pytest.raises(CourseError):
        resolve_scale("huge", "cpu")
    with pytest.raises(CourseError):
        resolve_device("tpu")


def test_device_classes_go_from_specific_to_general():
    gpu = Env("cuda", "sm90", "NVIDIA H200", "full", "2.11.0+cu130", "3.6.0", "3.12.3")
    assert gpu.classes == ["sm90", "cuda"] and gpu.torch_minor == "2.11"
    cpu = Env("cpu", "cpu", "x", "quick", "2.13.0+cpu", None, "3.11.7")
    assert cpu.classes == ["cpu"] and "CPU" in cpu.banner()


def test_banner_says_when_torch_is_not_a_verified_version():
    new = Env("cpu", "cpu", "x", "quick", "2.16.0+cpu", None, "3.11.7", threads=1)
    assert "torch 2.16 on a CPU is not a verified combination" in new.banner() and "1 thread" in new.banner()
    ok = Env("cpu", "cpu", "x", "quick", f"{VERIFIED_TORCH[-1]}.0", None, "3.11.7")
    assert "not a verified" not in ok.banner()


def test_a_gpu_is_verified_only_where_the_book_ran():
    h200 = Env("cuda", "sm90", "NVIDIA H200", "full", "2.11.0+cu130", "3.6.0", "3.12.3")
    assert h200.verified_torch and "not a verified" not in h200.banner()
    newer = Env("cuda", "sm90", "NVIDIA H200", "full", "2.13.0+cu130", "3.6.0", "3.12.3")
    assert not newer.verified_torch and "verified there: torch 2.11" in newer.banner()
    t4 = Env("cuda", "sm75", "Tesla T4", "full", "2.11.0+cu126", "3.6.0", "3.12.3")
    assert not t4.verified_torch and "no sm75 GPU has run the course" in t4.banner()


def test_configure_runs_cpu_torch_on_one_thread():
    import helpers

    before = torch.get_num_threads()
    try:
        env = helpers.configure(device="cpu")
        assert torch.get_num_threads() == 1 and env.threads == 1
    finally:
        torch.set_num_threads(before)

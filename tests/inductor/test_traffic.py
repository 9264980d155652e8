"""Unit tests of helpers/inductor/traffic.py."""
import torch

from helpers.inductor.traffic import (
    MiB,
    compare_traffic,
    pointwise_traffic,
    traffic_ratio_of,
)


def sin_cos_tanh(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


def test_series_example_is_768_vs_128_mib_exactly():
    t = pointwise_traffic(sin_cos_tanh, torch.empty(4096, 4096))
    assert t.eager == 768 * MiB and t.fused == 128 * MiB and t.ratio == 6.0
    assert [o.op for o in t.ops] == ["sin", "cos", "mul", "tanh", "add"]


def test_scalars_cost_nothing():
    assert pointwise_traffic(lambda x: torch.relu(x) * 2 + 1, torch.empty(1000)).ratio == 3.0


def test_two_inputs_and_dtype():
    t = pointwise_traffic(lambda a, b: a * b + a, torch.empty(100, dtype=torch.float16), torch.empty(100, dtype=torch.float16))
    # mul reads 2·200 B, writes 200 B; add reads 400 B, writes 200 B; fused reads a and b, writes once
    assert t.eager == 1200 and t.fused == 600


def test_compare_traffic_runs_the_readers_count():
    assert compare_traffic(lambda n: None, sin_cos_tanh) is None
    assert compare_traffic(lambda n: (48 * n, 8 * n), sin_cos_tanh, sizes=(10, 100)) == "ok"
    wrong = compare_traffic(lambda n: (12 * n, 2 * n), sin_cos_tanh, sizes=(10,))
    assert "n = 10" in wrong and "the model counts 480 and 80" in wrong
    assert "not a pair" in compare_traffic(lambda n: 6.0, sin_cos_tanh, sizes=(10,))


def test_traffic_ratio_of_a_readers_function():
    assert traffic_ratio_of(lambda t: None, torch.randn(16)) is None
    assert traffic_ratio_of(lambda t: torch.relu(t) * t + t, torch.randn(16)) == 4.0
    assert "not one graph" in traffic_ratio_of(lambda t: t, torch.randn(16))

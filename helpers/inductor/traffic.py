"""The bytes-moved model: global-memory traffic of a pointwise graph, eager vs fused (ch02).

Eager runs one kernel per operator: each reads all its tensor inputs from memory and writes its
output back. A fused kernel reads the graph's inputs once and writes its outputs once; the
intermediates live in registers. Scalars cost nothing. This is a model, not a measurement: it
ignores caches, which is right for tensors much larger than the GPU's L2.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MiB = 2**20


@dataclass
class OpTraffic:
    op: str
    read: int
    written: int


@dataclass
class Traffic:
    """Bytes moved by one call: per eager op, eager total and fused total."""

    ops: list[OpTraffic] = field(default_factory=list)
    fused_read: int = 0
    fused_written: int = 0

    @property
    def eager(self) -> int:
        return sum(o.read + o.written for o in self.ops)

    @property
    def fused(self) -> int:
        return self.fused_read + self.fused_written

    @property
    def ratio(self) -> float:
        return self.eager / self.fused

    def table(self, unit: int = MiB) -> str:
        rows = [f"{'op':<10}{'read':>10}{'written':>10}   (MiB)"]
        rows += [f"{o.op:<10}{o.read / unit:>10.0f}{o.written / unit:>10.0f}" for o in self.ops]
        rows.append(f"{'eager':<10}{sum(o.read for o in self.ops) / unit:>10.0f}"
                    f"{sum(o.written for o in self.ops) / unit:>10.0f}   total {self.eager / unit:.0f}")
        rows.append(f"{'fused':<10}{self.fused_read / unit:>10.0f}{self.fused_written / unit:>10.0f}"
                    f"   total {self.fused / unit:.0f}")
        return "\n".join(rows)


def _nbytes(meta) -> int:
    import math

    import torch

    return math.prod(meta.shape) * torch.empty((), dtype=meta.dtype).element_size()


def graph_traffic(gm, *example_inputs) -> Traffic:
    """Traffic of an FX GraphModule of pointwise ops, with shapes propagated from the inputs."""
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(gm).propagate(*example_inputs)

    def size(node) -> int:
        meta = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
        return _nbytes(meta) if meta is not None and hasattr(meta, "shape") else 0

    traffic = Traffic()
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            read = sum(size(a) for a in node.all_input_nodes)
            name = getattr(node.target, "__name__", str(node.target))
            traffic.ops.append(OpTraffic(name, read, size(node)))
        elif node.op == "placeholder" and node.users:
            traffic.fused_read += size(node)
        elif node.op == "output":
            traffic.fused_written += sum(size(a) for a in node.all_input_nodes)
    return traffic


def pointwise_traffic(fn, *args) -> Traffic:
    """Capture ``fn`` with Dynamo (one graph expected) and model its eager and fused traffic."""
    from ..dynamo.state import capture_graphs

    _, captured = capture_graphs(fn, *args)
    if captured.count != 1:
        raise ValueError(f"expected one graph, Dynamo produced {captured.count}")
    return graph_traffic(captured.graphs[0], *args)


def bandwidth(nbytes: float, seconds: float) -> float:
    """Achieved bandwidth in bytes per second."""
    return nbytes / seconds


def copy_bandwidth(numel: int, device: str, repeats: int = 20) -> float:
    """Measured bytes/s of a device-to-device copy of ``numel`` fp32 (read + write): the practical ceiling."""
    import torch

    from ..core.timing import gpu_time

    src = torch.randn(numel, device=device)
    dst = torch.empty_like(src)
    t = gpu_time(dst.copy_, src, repeats=repeats, device=device)
    return 2 * src.numel() * src.element_size() / t.median


def compare_traffic(my_traffic, fn, sizes=(1000, 2**20)):
    """Check a reader's byte count against the model: ``my_traffic(n) -> (eager_bytes, fused_bytes)`` (ch02).

    ``fn`` is the pointwise function of one float32 tensor it describes. Returns ``None`` while
    ``my_traffic`` returns None (unanswered), ``"ok"`` when it matches the model at every size in
    ``sizes``, else a sentence naming the first size where it does not.
    """
    import torch

    for n in sizes:
        got = my_traffic(n)
        if got is None:
            return None
        try:
            eager, fused = (int(v) for v in got)
        except (TypeError, ValueError):
            return f"my_traffic({n}) returned {got!r}, not a pair of byte counts"
        model = pointwise_traffic(fn, torch.empty(n))
        if (eager, fused) != (model.eager, model.fused):
            return (f"for n = {n} you count {eager:,} bytes eager and {fused:,} fused; "
                    f"the model counts {model.eager:,} and {model.fused:,}")
    return "ok"


def traffic_ratio_of(fn, *args):
    """The model's eager-to-fused ratio for a reader's function, ``None`` while it returns None (ch02 exercise 2.2).

    A function Dynamo does not capture as exactly one graph of tensor operations gives a sentence saying so.
    """
    if fn is None or fn(*args) is None:
        return None
    try:
        return pointwise_traffic(fn, *args).ratio
    except (ValueError, ZeroDivisionError) as exc:
        return f"not one graph of tensor operations ({exc})"

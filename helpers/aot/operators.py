"""The operator layers: which ATen ops an eager call dispatches, and how many ATen, Core ATen and prims
overloads torch registers (ch01; chapter 14 counts the layers).
"""
from __future__ import annotations

from ..core.private import private


def dispatched_ops(fn, *args, **kwargs) -> tuple[object, list[str]]:
    """Run ``fn`` eagerly and list the ATen operators it dispatched, in order (ch01)."""
    mode_cls = private("torch.utils._python_dispatch.TorchDispatchMode")
    seen: list[str] = []

    class Recorder(mode_cls):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func.overloadpacket.__name__))
            return func(*args, **(kwargs or {}))

    with Recorder():
        result = fn(*args, **kwargs)
    return result, seen


def operator_counts(fresh_process: bool = False) -> dict[str, int]:
    """The operators torch's dispatcher has registered: ATen names and overloads, core ATen, prims (ch01).

    Counted from the dispatcher's own table (``torch._C._dispatch_get_all_op_names``), which libtorch
    fills with every ATen schema when it loads. ``aten_overloads`` counts ``aten::name.overload``
    entries, ``aten_packets`` the distinct names (what ``torch.ops.aten.name`` calls an
    ``OpOverloadPacket``); ``core_aten_*`` the overloads tagged ``torch.Tag.core`` and their names;
    ``prims`` the operators in the ``prims`` namespace, to which Inductor adds its own when it loads.
    ``aten_listed`` is what ``dir(torch.ops.aten)`` shows (taken first): only the packets this process
    has already touched, because ``torch.ops.aten`` creates them on first attribute access.
    ``fresh_process=True`` counts in a new interpreter that has only imported torch.
    """
    if fresh_process:
        import json
        import subprocess
        import sys

        code = "import json, torch; from helpers.aot.operators import operator_counts; print(json.dumps(operator_counts()))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    import torch

    listed = sum(hasattr(getattr(torch.ops.aten, n, None), "overloads") for n in dir(torch.ops.aten))
    names = private("torch._C._dispatch_get_all_op_names")()
    aten = [n.split("::", 1)[1] for n in names if n.startswith("aten::")]
    core_names: list[str] = []
    for entry in aten:
        packet, _, overload = entry.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        if torch.Tag.core in op.tags:
            core_names.append(packet)
    return {"aten_packets": len({n.partition(".")[0] for n in aten}), "aten_overloads": len(aten),
            "core_aten_packets": len(set(core_names)), "core_aten_overloads": len(core_names),
            "prims": len({n.split("::", 1)[1].partition(".")[0] for n in names if n.startswith("prims::")}),
            "aten_listed": listed}

"""Unit tests of helpers/dynamo/shapes.py."""
import torch

from helpers.dynamo.config import dynamo_config
from helpers.dynamo.shapes import (
    backed_size_oblivious,
    compile_error,
    compiles,
    follow_calls,
    guard_log,
    guard_range,
    mark_dynamic,
    mark_unbacked,
    maybe_mark_dynamic,
    node_ops,
    node_types,
    readable_types,
    shape_policy,
    size_equalities,
    symbolic_inputs,
    unbacked_symbols,
)
from helpers.dynamo.state import capture_graphs


def mm(x, y):
    return x @ y


Y = torch.randn(4, 8)


def batch(b):
    return torch.randn(b, 4), Y


def k(x):
    if x.shape[0] > 10:
        return x * 2
    return x + 1


def test_shape_policy_defaults():
    p = shape_policy()
    assert p["assume_static_by_default"] is True and p["automatic_dynamic_shapes"] is True
    assert isinstance(p["recompile_limit"], int) and p["recompile_limit"] >= 1


def test_follow_calls_automatic_dynamic():
    calls = follow_calls(mm, [4, 8, 16], batch)
    assert [c.compiled for c in calls] == [True, True, False]
    assert compiles(calls) == 2
    assert calls[0].reasons == [] and "size mismatch at index 0" in calls[1].reasons[0]


def test_follow_calls_static_and_mark():
    static = follow_calls(mm, [4, 5, 6], batch, dynamic=False)
    assert compiles(static) == 3
    marked = follow_calls(mm, [4, 5, 6], batch, mark=lambda a: mark_dynamic(a[0], 0))
    assert compiles(marked) == 1


def test_guard_log_static_then_symbolic():
    first, second = guard_log(mm, batch(4), batch(8))
    assert "size=[4, 4]" in first.tensor_match("x")[0]
    assert "size=[None, 4]" in second.tensor_match("x")[0]
    assert second.shape_guards() == ["2 <= L['x'].size()[0]"] and first.shape_guards() == []
    assert len(first.latencies_us) == 1 and first.latencies_us[0] > 0
    assert first.mentions("NO_TENSOR_ALIASING") and not first.mentions("no such text")


def test_guard_range_parsing():
    assert guard_range("0/0: 2 <= x.size()[0] <= 10  # if x.shape[0] > 10") == (2, 10)
    assert guard_range("2 <= L['x'].size()[0]") == (2, None)
    assert guard_range("x.size()[1] == x.size()[0]") == (None, None)


def test_shape_branch_recompiles_with_a_range():
    calls = follow_calls(k, [4, 20, 7], lambda n: (torch.randn(n),), dynamic=True)
    assert [c.compiled for c in calls] == [True, True, False]
    assert guard_range(calls[1].reasons[0]) == (2, 10)


def test_compile_error_and_marks():
    assert compile_error(k, mark_dynamic(torch.randn(4), 0)) is None
    err = compile_error(k, mark_dynamic(torch.randn(4), 0, min=2, max=100))
    assert type(err).__name__ == "ConstraintViolationError"

    def bad(x):
        return x * 2 if x.shape[0] == 4 else x + 1

    assert type(compile_error(bad, mark_dynamic(torch.randn(4, 5), 0))).__name__ == "ConstraintViolationError"
    assert compile_error(bad, maybe_mark_dynamic(torch.randn(4, 5), 0)) is None


def test_symbols_in_graphs():
    def h(x):
        b = x.shape[0]
        return torch.reshape(x, (b * 2, -1)), b * 2

    _, g = capture_graphs(h, torch.randn(4, 6), dynamic=True)
    assert len(symbolic_inputs(g.graphs[0])) == 2
    types = dict(node_types(g.graphs[0]))
    assert any(t.startswith("Sym(2*") for t in types.values())
    assert unbacked_symbols(g.graphs[0]) == []


def test_unbacked_symbols_from_item():
    def ub(x):
        return torch.zeros(x.sum().item())

    with dynamo_config(capture_scalar_outputs=True):
        _, g = capture_graphs(ub, torch.tensor([3]))
    assert g.count == 1 and unbacked_symbols(g.graphs[0]) == ["u0"]


def test_marks_return_the_tensor_and_record_the_dim():
    t = torch.randn(3, 4)
    assert mark_dynamic(t, 1) is t and 1 in t._dynamo_dynamic_indices
    u = torch.randn(3, 4)
    assert maybe_mark_dynamic(u, 0) is u and 0 in u._dynamo_weak_dynamic_indices
    assert not hasattr(u, "_dynamo_dynamic_indices")


def test_follow_calls_records_errors_and_goes_on():
    def picky(x):
        if x.shape[0] == 3:
            raise RuntimeError("no threes")
        return x + 1

    calls = follow_calls(picky, [2, 3, 4], lambda n: (torch.randn(n),))
    assert [c.error for c in calls] == [None, "RuntimeError", None]


def test_mark_unbacked_and_backed_size_oblivious_skip_the_0_1_entries():
    sizes = [4, 8, 16, 1, 0]
    assert compiles(follow_calls(mm, sizes, batch)) == 4
    assert compiles(follow_calls(mm, sizes, batch, mark=lambda a: mark_unbacked(a[0], 0))) == 1
    with backed_size_oblivious():
        assert compiles(follow_calls(mm, sizes, batch)) == 2
    assert compiles(follow_calls(mm, sizes, batch)) == 4  # the setting is restored


def test_readable_types_rename_symbols_in_input_order():
    def h(x):
        b = x.shape[0]
        return torch.reshape(x, (b * 2, -1)), b * 2

    _, rec = capture_graphs(h, torch.randn(4, 6), dynamic=True)
    types = readable_types(rec.graphs[0])
    assert types["mul"] == "Sym(2*s0)" and types["reshape"] == "f32[2*s0, (s1//2)]"


def test_node_ops_tell_methods_from_functions():
    def ub(x):
        return x.sum() * 2

    _, rec = capture_graphs(ub, torch.randn(3))
    assert node_ops(rec.graphs[0]) == [("call_method", "sum"), ("call_function", "mul")]


def test_size_equalities_only_under_duck_sizing():
    def g(x, z):
        return x + z.sum()

    def pair(n):
        return torch.randn(n), torch.randn(n)

    follow_calls(g, [4, 8], pair)
    assert size_equalities(g) == [0, 0]
    follow_calls(g, [4, 8], pair, dynamic=True)
    assert size_equalities(g) == [1]

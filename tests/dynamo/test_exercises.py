"""Unit tests of helpers/dynamo/exercises.py."""
import torch

from helpers.dynamo.config import dynamo_config
from helpers.dynamo.exercises import (
    break_shape,
    compiled_runs_for,
    compiles_for,
    one_graph_rewrite,
)


def _f(x, n):
    return x * n


def _g(x):
    if x.sum() > 0:
        return x * 2
    return x + 1


def test_compiles_for_counts_graphs_and_catches_wrong_results():
    x = torch.randn(4)
    values = (3, 4, 5)
    want = lambda n: _f(x, n)  # noqa: E731
    plain = (lambda backend: torch.compile(_f, backend=backend), lambda cf, n: cf(x, n))
    dynamic = (lambda backend: torch.compile(_f, backend=backend, dynamic=True), lambda cf, n: cf(x, n))
    as_tensor = (lambda backend: torch.compile(_f, backend=backend), lambda cf, n: cf(x, torch.tensor(n)))
    cheat = (lambda backend: torch.compile(_f, backend=backend), lambda cf, n: cf(x, 3))
    assert compiles_for(None, values, want) is None
    assert compiles_for(plain, values, want) == 2  # the constant, then a SymInt
    assert compiles_for(dynamic, values, want) == 1
    assert compiles_for(as_tensor, values, want) == 1
    assert compiles_for(cheat, values, want) == "wrong result for 4"


def test_compiled_runs_for_counts_only_calls_that_ran_a_graph():
    x = torch.randn(4)
    make = lambda backend: torch.compile(_f, backend=backend, dynamic=False)  # noqa: E731
    want = lambda n: _f(x, n)  # noqa: E731
    with dynamo_config(recompile_limit=2):
        assert compiled_runs_for(None, range(6), want) is None
        assert compiled_runs_for((make, lambda cf, n: cf(x, n)), range(6), want) == 2  # then eager
        assert compiled_runs_for((make, lambda cf, n: cf(x, torch.tensor(n))), range(6), want) == 6
        assert compiled_runs_for((make, lambda cf, n: cf(x, 1)), range(6), want) == "wrong result for 0"


def test_break_shape_runs_the_readers_function():
    x = torch.randn(4)

    def one_break(t):
        t = t.cos()
        if t.mean() > 0.5:
            return t * 2
        return t - 2

    def prints(t):
        print("here")
        return t + 1

    assert break_shape(None, x) is None
    assert break_shape(3, x).startswith("not a function")
    assert break_shape(prints, x, forbid=("print",)) == "uses print"
    assert break_shape(_g, x, taken=(_g,)).startswith("that is the chapter's")
    assert break_shape(one_break, x, forbid=("print",), taken=(_g,)) == (2, 1)
    assert break_shape(lambda t: t * 2, x) == (1, 0)


def test_one_graph_rewrite_checks_results_then_the_graph():
    inputs = [torch.ones(4), -torch.ones(4)]

    def with_cond(t):
        return torch.cond(t.sum() > 0, lambda v: v * 2, lambda v: v + 1, (t,))

    def with_where(t):
        return torch.where(t.sum() > 0, t * 2, t + 1)

    assert one_graph_rewrite(None, _g, inputs, op="torch.cond") is None
    assert one_graph_rewrite(lambda t: t * 2, _g, inputs, op="torch.cond") == "wrong result for input 1"
    assert one_graph_rewrite(with_cond, _g, inputs, op="torch.cond") == (1, 0, True)
    assert one_graph_rewrite(with_where, _g, inputs, op="torch.cond") == (1, 0, False)
    assert one_graph_rewrite(_g, _g, inputs, op="torch.cond") == (2, 1, False)


def test_a_cached_graph_or_a_backend_called_by_hand_is_not_counted():
    """Issue 29 (session 3): ch06's 6.3 'dee' answer runs the graph cached for n = 0 and returns an eager
    x * n; a 5.2-style answer runs the n = 3 graph and returns eager results, or calls the backend by hand."""
    import types

    x = torch.randn(4)
    want = lambda n: _f(x, n)  # noqa: E731
    make = lambda backend: torch.compile(_f, backend=backend, dynamic=False)  # noqa: E731

    def dee(cf, n):
        cf(x, 0)
        return x * n

    def in_place(cf, n):
        return cf(x, 0).copy_(x * n)

    with dynamo_config(recompile_limit=2):
        assert compiled_runs_for((make, dee), range(6), want) == "the result for 1 is not what the graph run in that call returned"
        assert compiled_runs_for((make, in_place), range(6), want) == "the result for 1 is not what the graph run in that call returned"

    def cached(cf, n):
        cf(x, 3)
        return _f(x, n)

    def by_hand(backend):
        backend(torch.fx.symbolic_trace(lambda a: a * 1), [])
        return _f

    def fake(backend):
        backend(types.SimpleNamespace(forward=_f), [])
        return _f

    plain = lambda backend: torch.compile(_f, backend=backend)  # noqa: E731
    assert compiles_for((plain, cached), (3, 4, 5), want) == "the result for 4 is not what the graph run in that call returned"
    assert compiles_for((by_hand, lambda cf, n: cf(x, n)), (3, 4, 5), want) == "the call for 3 ran no compiled graph"
    assert compiles_for((fake, lambda cf, n: cf(x, n)), (3, 4, 5), want).startswith(
        "the backend was handed a SimpleNamespace, not an FX graph")


def test_entry_points_name_torch_compile_and_dynamos_optimize():
    from helpers.dynamo.exercises import entry_points

    points = entry_points()
    assert points["torch.compile"] is torch.compile and "torch._dynamo.optimize" in points
    assert "torch.compiler.reset" in points and "torch._dynamo.eval_frame.OptimizedModule" in points

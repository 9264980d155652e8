"""Unit tests of helpers/aot/functionalization.py (chapter 13)."""
import pytest
import torch

from helpers.aot.functionalization import (
    forgets_input_mutation,
    functionalize_graphs,
    graph_lines,
    in_place_calls,
    inductor_write,
    judge_agreement,
    ledger,
    mutation_site,
    mutation_sites,
    op_name,
    read_inductor_write,
    show_ledger_step,
    side_by_side,
    wrong_output,
)


def f(x):
    y = x.view(2, 8)
    y.add_(1)
    y.relu_()
    return x * 2


def pure(x):
    return x.sin() + 1


def grad_input(a):
    a.mul_(2)
    return a.sin()


def test_op_name_shortens_aten_overloads():
    assert op_name(torch.ops.aten.view.default) == "view"
    assert op_name(torch.ops.aten.copy_.default) == "copy_"
    assert op_name(len) == "len"


def test_aot_eager_replays_the_view_and_keeps_one_trailing_copy():
    run = functionalize_graphs(f, torch.randn(4, 4), backend="aot_eager")
    assert run.ops() == ["view", "add", "view", "view", "relu", "view", "mul", "copy_"]
    assert run.inputs_of("mul") == ["view_3", "2"]
    assert run.mutated_by == ["graph"]
    assert run.inputs[0].mutates_data and run.inputs[0].keep_input_mutations
    assert run.inputs[0].mutation_type == "MUTATED_IN_GRAPH"
    assert run.outputs_match and run.inputs_match
    assert in_place_calls(run.dynamo) == ["add_", "relu_"]


def test_plain_aot_autograd_leaves_the_write_to_the_runtime_wrapper():
    run = functionalize_graphs(f, torch.randn(4, 4), backend="aot_autograd")
    assert run.count("copy_") == 0 and run.count("view") == 4
    assert run.graph_outputs() == 2 and run.user_outputs == 1
    assert run.mutated_by == ["runtime wrapper"]
    assert run.inputs[0].mutation_type == "MUTATED_OUT_GRAPH"
    assert run.outputs_match and run.inputs_match


def test_inductor_graph_has_the_view_pair_removed():
    run = functionalize_graphs(f, torch.randn(4, 4), backend="inductor")
    assert run.count("view") == 2 and run.count("copy_") == 1
    assert run.view_pairs_removed == 1
    assert run.mutated_by == ["graph"]


def test_a_pure_function_mutates_nothing():
    run = functionalize_graphs(pure, torch.randn(4), backend="aot_eager")
    assert run.mutated_by == ["not mutated"] and run.count("copy_") == 0
    assert run.inputs[0].mutation_type == "NOT_MUTATED"


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError):
        functionalize_graphs(pure, torch.randn(4), backend="eager")


def test_graph_lines_and_side_by_side():
    run = functionalize_graphs(g := (lambda x: x.mul_(2) + 1), torch.randn(4), backend="aot_eager")
    lines = graph_lines(run.forward)
    assert lines[0] == "mul = mul(arg0_1, 2)" and lines[-1] == "return (add,)"
    text = side_by_side(["a", "b"], ["c"], titles=("L", "R"), width=5)
    assert text.splitlines()[2] == "a      c" and text.splitlines()[3].rstrip() == "b"
    assert g is not None


def test_ledger_tracks_which_node_each_name_holds():
    steps = ledger(["y = x.view(2, 8)", "y.add_(1)", "out = x * 2"], torch.randn(4, 4))
    assert [s.holds["x"] for s in steps] == ["x_1", "x_1", "view_1", "view_1"]
    assert steps[0].graph == [] and "y" not in steps[0].holds
    text = show_ledger_step(steps, 2)
    assert "y.add_(1)" in text and "view_1" in text and "out = x * 2" not in text.splitlines()[2]


def test_mutation_site_depends_on_requires_grad():
    assert mutation_site(grad_input, lambda: (torch.randn(4),)) == "graph"
    assert mutation_site(grad_input, lambda: (torch.randn(4, requires_grad=True) * 1,)) == "runtime wrapper"
    assert mutation_site(pure, lambda: (torch.randn(4),)) == "not mutated"


def test_broken_compilers_break_what_they_say():
    x = torch.randn(4, 4)
    a, b = x.clone(), x.clone()
    assert torch.equal(forgets_input_mutation(f)(a), f(b)) and torch.equal(a, x) and not torch.equal(b, x)
    a, b = x.clone(), x.clone()
    assert not torch.allclose(wrong_output(f)(a), f(b)) and torch.equal(a, b)


def _checker(compare_inputs):
    def agrees(fn, compiled, make_args):
        for _ in range(3):
            args = make_args()
            p, q = [t.clone() for t in args], [t.clone() for t in args]
            if not torch.allclose(fn(*p), compiled(*q)):
                return False
            if compare_inputs and not all(torch.allclose(s, t) for s, t in zip(p, q)):
                return False
        return True
    return agrees


def test_judge_agreement_tells_a_full_checker_from_an_outputs_only_one():
    make = lambda: (torch.randn(4, 4),)  # noqa: E731
    assert judge_agreement(_checker(True), f, make) == (True, False, False)
    assert judge_agreement(_checker(False), f, make) == (True, True, False)


CPP_SOURCE = '''
cpp_fused_add_0 = async_compile.cpp_pybinding(['const float*', 'float*', 'float*'], r\'\'\'
extern "C"  void  kernel(const float* in_ptr0,
                       float* out_ptr0,
                       float* out_ptr1)
{
}
\'\'\')

class Runner:
    def call(self, args):
        arg0_1, = args
        args.clear()
        buf0 = empty_strided_cpu((4, 4), (4, 1), torch.float32)
        cpp_fused_add_0(arg0_1, buf0, arg0_1)
        return (buf0, )
'''

TRITON_SOURCE = '''
triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', \'\'\'
@triton.jit
def triton_poi_fused_add_0(in_out_ptr0, in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    pass
\'\'\', device_str='cuda')

def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    buf0 = empty_strided_cuda((4, 4), (4, 1), torch.float32)
    triton_poi_fused_add_0.run(arg0_1, arg1_1, buf0, 16, stream=stream0)
    return (buf0, )
'''


@pytest.mark.parametrize("source, inputs, written", [(CPP_SOURCE, ["arg0_1"], ["arg0_1"]),
                                                     (TRITON_SOURCE, ["arg0_1", "arg1_1"], ["arg0_1"])])
def test_read_inductor_write_maps_call_arguments_to_pointer_roles(source, inputs, written):
    w = read_inductor_write([source])
    assert len(w.kernels) == 1 and len(w.call_lines) == 1
    assert w.input_names == inputs and w.written_inputs == written and w.writes_input


def test_read_inductor_write_sees_no_write_when_the_input_is_only_read():
    w = read_inductor_write([CPP_SOURCE.replace("cpp_fused_add_0(arg0_1, buf0, arg0_1)", "cpp_fused_add_0(arg0_1, buf0, buf1)")])
    assert w.written_inputs == [] and not w.writes_input


def test_inductor_write_compiles_a_kernel_that_writes_the_input():
    x = torch.randn(4, 4)
    expected_x = x.clone()
    out, w = inductor_write(f, x)
    assert torch.allclose(out, f(expected_x)) and torch.allclose(x, expected_x)
    assert w.writes_input and len(w.kernels) == 1
    assert w.post_grad_ops.count("reshape") == 2 and "copy_" in w.post_grad_ops


def test_alias_run_keeps_aliased_arguments_and_reads_output_aliases():
    from helpers.aot.functionalization import alias_run

    def two(a, b):
        a.add_(1)
        return b * 2

    def args():
        base = torch.randn(4, 4)
        return base, base[0]
    r = alias_run(two, args)
    assert len(r.placeholders) == 1 and "as_strided_scatter" in r.ops and r.matches_eager
    v = alias_run(lambda x: (x.view(2, 8), x.t()), lambda: (torch.randn(4, 4),))
    assert v.output_types == ["alias_of_input", "alias_of_input"] and all(v.outputs_view_input)


def test_mutation_sites_decides_input_by_input():
    def scale_both(a, b):
        a.mul_(2)
        b.add_(1)
        return (a * b).sin()

    both = lambda: (torch.randn(4, requires_grad=True) * 1, torch.randn(4))  # noqa: E731
    assert mutation_sites(scale_both, both) == ("runtime wrapper", "graph")
    assert mutation_sites(scale_both, lambda: (torch.randn(4), torch.randn(4))) == ("graph", "graph")

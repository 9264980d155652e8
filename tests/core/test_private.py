"""Unit tests of helpers/core/private.py."""
import torch

from helpers.core.private import private
from helpers.dynamo.output_graph import watch_output_graph, watch_pruning
from helpers.dynamo.state import clear_compile_state


def test_watch_pruning_sees_a_shape_only_input_removed_and_restores():
    cls = private("torch._dynamo.output_graph.OutputGraph")
    original = cls.remove_unused_graphargs

    def shape_only(x, other):
        return x * other.shape[0]
    clear_compile_state()
    with watch_pruning() as records:
        torch.compile(shape_only, backend="eager")(torch.randn(2), torch.randn(5))
    assert cls.remove_unused_graphargs is original
    (rec,) = records
    assert set(rec.before) == {"L_x_", "L_other_"} and rec.after == ["L_x_"] and rec.pruned == ["L_other_"]


def test_watch_output_graph_sees_ambient_guards_and_fakes():
    cls = private("torch._dynamo.output_graph.OutputGraph")
    originals = (cls.init_ambient_guards, cls.call_user_compiler)
    bias = torch.randn(2)

    def f(x, unused):
        return x * 2 + bias
    clear_compile_state()
    with watch_output_graph() as views:
        torch.compile(f, backend="eager")(torch.randn(2), torch.randn(3))
    assert (cls.init_ambient_guards, cls.call_user_compiler) == originals
    (view,) = views
    assert {"GRAD_MODE", "DEFAULT_DEVICE", "GLOBAL_STATE", "SHAPE_ENV"} <= set(view.ambient_guards)
    assert not any(k in view.ambient_guards for k in ("TENSOR_MATCH", "TYPE_MATCH"))
    assert view.tracked_fakes == ["L['x']", "L['bias']"]
    assert view.placeholders_fake and view.backend_fake_mode_is_new and view.shape_env_shared

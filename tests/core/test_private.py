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


# ---------------------------------------------------------------------------------------------------
# private_step: a private API that moved, on a verified torch and on another release


import pytest

from helpers.core import private as private_mod
from helpers.core.private import PrivateAPIMissing, Unverified, private_step


class _Moved:
    """A private class as a new release has it: one more question the course's code does not answer."""


@private_step("the test's private class")
def _reaches_in():
    return _Moved().strict_sum_rblock()  # AttributeError, as on torch 2.14.1's SIMDKernelFeatures


@private_step("the test's private name")
def _reaches_a_name():
    return private("torch._inductor.no_such_module.no_such_name")


@private_step("the test's outer step")
def _outer():
    return [_reaches_in(), "after"]


@pytest.fixture
def fresh_messages(monkeypatch):
    monkeypatch.setattr(private_mod, "_SAID", set())


def _torch_is(monkeypatch, version):
    monkeypatch.setattr(torch, "__version__", version)


@pytest.mark.parametrize("version", ["2.11.0+cu128", "2.13.0+cpu", "2.15.0"])
def test_a_verified_torch_raises_a_moved_api_as_the_bug_it_is(monkeypatch, version):
    _torch_is(monkeypatch, version)
    with pytest.raises(AttributeError, match="strict_sum_rblock"):
        _reaches_in()
    with pytest.raises(PrivateAPIMissing, match="no_such_name"):
        _reaches_a_name()


def test_an_unverified_torch_says_what_moved_and_gives_a_marker(monkeypatch, capsys, fresh_messages):
    _torch_is(monkeypatch, "2.14.1+cu130")
    out = _reaches_in()
    assert isinstance(out, Unverified) and out.step == "the test's private class"
    said = capsys.readouterr().out
    assert said.startswith("this step needs torch 2.11–2.15 (verified: 2.11, 2.13, 2.15); torch 2.14.1+cu130 moved "
                           "the test's private class (AttributeError: ")
    assert said.rstrip().endswith("its figures are unverified")
    assert out.reason == ("torch 2.14.1+cu130 moved the test's private class; this step needs torch 2.11–2.15 "
                          "(verified: 2.11, 2.13, 2.15)")
    assert "strict_sum_rblock" in out.detail and "test_private.py: _reaches_in" in out.detail
    _reaches_in()  # the same step again: the marker, without the line a second time
    assert capsys.readouterr().out == ""
    assert isinstance(_reaches_a_name(), Unverified)  # a name private() cannot import, likewise
    _torch_is(monkeypatch, "2.16.0")  # a newer release is not verified either
    assert isinstance(_reaches_in(), Unverified)


def test_other_errors_are_not_taken_for_a_moved_api(monkeypatch):
    _torch_is(monkeypatch, "2.14.1")

    @private_step("a step with a real bug")
    def divide():
        return 1 / 0
    with pytest.raises(ZeroDivisionError):
        divide()


def test_the_outermost_step_decides_and_a_marker_argument_short_cuts(monkeypatch, fresh_messages):
    _torch_is(monkeypatch, "2.14.1")
    out = _outer()  # the inner failure is not turned into a list holding a marker
    assert isinstance(out, Unverified) and out.step == "the test's outer step"
    calls = []

    @private_step("a step fed a marker")
    def fed(x):
        calls.append(x)
        return x + 1
    assert fed(out) is out and calls == []


def test_the_marker_lets_a_chapters_next_lines_run():
    u = Unverified("s", "torch 2.14.1 moved s")
    assert u[0].xblock is u and u.splits * 2 + 1 is u and -u is u and u() is u
    assert not (u == u) and not (u > 3) and not u and list(u) == [] and len(u) == 0
    assert f"{u}|{u:.1f}|{u:>3}" == "unverified|unverified|unverified"
    assert str(u) == "unverified" and repr(u) == "Unverified('s')"
    with pytest.raises(AttributeError):
        u._repr_html_  # IPython's display probes see an ordinary object
    with pytest.raises(AttributeError):
        u.step = "other"


def test_a_chapter_like_sequence_records_unverified_figures_and_goes_on(monkeypatch, capsys, fresh_messages):
    import helpers
    from helpers.core import figures
    from helpers.core.figures import MOVED_KEY, RECORDED, exact, words
    from helpers.pipeline.verify import NotebookResult, _recheck

    shown = []
    monkeypatch.setattr(figures, "_display", lambda data, meta: shown.append((data, meta)))
    _torch_is(monkeypatch, "2.14.1")
    helpers.figure("t_before", 3, "graphs", expect=exact(3))
    threshold = _reaches_in()                                       # the step torch moved
    helpers.figure("t_moved", threshold, "elements", expect=exact(1024))
    helpers.figure("t_moved_band", threshold * 2, "×", expect=helpers.band(cpu=(1, 2)))
    words("t_word", "persistent" if threshold == 1024 else "looped", from_figures=["t_moved"])
    words("t_word_marker", threshold, from_figures=["t_moved"])
    helpers.figure("t_after", 5, "kernels", expect=exact(5))        # the chapter goes on
    out = capsys.readouterr().out
    assert "this step needs torch 2.11–2.15" in out
    assert "t_moved = not measured  [? unverified: torch 2.14.1 moved the test's private class" in out
    assert RECORDED["t_before"].status == RECORDED["t_after"].status == "pass"
    for name in ("t_moved", "t_moved_band"):
        fig = RECORDED[name]
        assert fig.status == "unverified" and fig.value is None and "torch 2.11–2.15" in fig.rule
        assert "AttributeError" in fig.note and "strict_sum_rblock" in fig.note
    metas = {m["scrapbook"]["name"]: m[figures.META_KEY] for _, m in shown}
    assert metas["t_moved"][MOVED_KEY] == RECORDED["t_moved"].rule and MOVED_KEY not in metas["t_after"]
    assert metas["t_word"][MOVED_KEY] and metas["t_word_marker"]["value"] == "unverified"
    # the report, from the notebook's metadata alone: unverified (a band too), not failed, no problem
    result = NotebookResult("nb")
    for name in ("t_moved", "t_moved_band"):
        meta = {**metas[name], "torch_minor": "2.14"}
        assert _recheck(meta, 0, result)["status"] == "unverified"
    assert result.problems == []
    # the same metadata from a verified torch is a problem: there the step must have run
    _recheck({**metas["t_moved"], "torch_minor": "2.13"}, 0, result)
    assert result.problems and "a verified version" in result.problems[0]


MOVED_NB = '''from helpers.core.private import private_step

@private_step("the test's private class")
def threshold():
    return object().strict_sum_rblock()

helpers.figure("before", 2, "graphs", expect=helpers.exact(2))
t = threshold()
helpers.figure("threshold", t, "elements", expect=helpers.exact(1024))
helpers.figure("ratio", t / 2, "×", expect=helpers.band(cpu=(1, 2)))
helpers.words("kind", "persistent" if t == 1024 else "looped", from_figures=["threshold"])
print(f"threshold: {t}, per: {t > 64}")
helpers.figure("after", 3, "kernels", expect=helpers.exact(3))'''


def test_an_executed_chapter_on_an_unverified_torch_runs_to_the_end(tmp_path):
    """A notebook on a torch faked as 2.14.1: no cell error, the moved step's figures unverified, the rest pass."""
    from conftest import make_notebook

    from helpers.pipeline.run import execute

    nb = make_notebook(tmp_path / "ch99_moved.ipynb", ("md", "# Test\n{glue:text}`threshold` and {glue:text}`kind`"),
                       ("code", 'import torch\ntorch.__version__ = "2.14.1"\nimport helpers\nhelpers.setup("ch99")'),
                       ("code", 'device = "auto"\nscale = "auto"'),
                       ("code", "ENV = helpers.configure(device=device, scale=scale)"), ("code", MOVED_NB),
                       tags={1: ["hide-input"], 2: ["parameters"]})
    result = execute(nb, tmp_path / "out" / nb.name, device="cpu", scale="quick", timeout=120.0,
                     cache=tmp_path / "out" / "cache")
    assert result.ok and result.status == "ok", result.problems
    status = {f["name"]: f["status"] for f in result.figures}
    assert status == {"before": "pass", "threshold": "unverified", "ratio": "unverified", "kind": "words",
                      "after": "pass"}
    moved = next(f for f in result.figures if f["name"] == "threshold")
    assert moved["rule"].startswith("torch 2.14.1 moved the test's private class; this step needs torch 2.11–2.15")
    text = (tmp_path / "out" / nb.name).read_text()
    assert "this step needs torch 2.11–2.15 (verified: 2.11, 2.13, 2.15); torch 2.14.1 moved" in text
    assert "threshold: unverified, per: False" in text

"""Unit tests of helpers/core/figures.py."""
import pytest

from helpers.core.figures import RECORDED, band, check, exact, exact_by_python, record


def test_exact_checks_equality():
    assert check(5, exact(5), ["cpu"], "2.13")[0] == "pass"
    assert check(4, exact(5), ["cpu"], "2.13")[0] == "fail"
    assert check(6.0, exact(6.0), ["cpu"], "2.13")[0] == "pass"
    assert check(True, exact(True), ["cpu"], "2.13")[0] == "pass"


def test_exact_per_torch_version_and_device():
    by_torch = exact(by_torch={"2.11": 12, "2.13": 13})
    assert check(12, by_torch, ["sm90", "cuda"], "2.11")[0] == "pass"
    assert check(12, by_torch, ["cpu"], "2.13")[0] == "fail"
    assert check(12, by_torch, ["cpu"], "2.15") == ("unverified", "no value for torch 2.15")
    by_device = exact(by_device={"cpu": "c++", "cuda": "triton"})
    assert check("triton", by_device, ["sm90", "cuda"], "2.11")[0] == "pass"
    assert check("triton", by_device, ["cpu"], "2.13")[0] == "fail"


def test_a_gpu_value_is_verified_only_on_the_gpu_and_torch_the_book_ran():
    e = exact(by_torch={"2.11": "sm90_xmma_gemm"})  # a GPU-only fact, known from the H200 run
    assert check("sm90_xmma_gemm", e, ["sm90", "cuda"], "2.11")[0] == "pass"
    assert check("other", e, ["sm90", "cuda"], "2.11")[0] == "fail"
    # torch 2.13 is verified on CPUs only: on a GPU it is compared with 2.11's value, never failed
    assert check("sm90_xmma_gemm", e, ["sm90", "cuda"], "2.13")[0] == "pass"
    status, rule = check("other", e, ["sm90", "cuda"], "2.13")
    assert status == "unverified" and rule == "torch 2.11 gives 'sm90_xmma_gemm'; torch 2.13 on sm90 is not verified"
    # a T4 (sm75) has never run the course: a different kernel there is unverified, not a failure
    status, rule = check("turing_gemm", e, ["sm75", "cuda"], "2.11")
    assert status == "unverified" and "on sm75 is not verified" in rule
    assert check(3, exact(3), ["sm75", "cuda"], "2.11")[0] == "pass"


def test_band_picks_the_most_specific_class():
    b = band(cpu=(0.5, 2), sm90=(3, 4.3), cuda=(2, 8))
    assert check(3.6, b, ["sm90", "cuda"], "2.11") == ("pass", "sm90: 3..4.3")
    assert check(5.0, b, ["sm90", "cuda"], "2.11")[0] == "fail"
    assert check(5.0, b, ["sm75", "cuda"], "2.11") == ("pass", "cuda: 2..8")
    assert check(5.0, b, ["cpu"], "2.13")[0] == "fail"
    assert check(1.0, band(sm90=(1, 2)), ["cpu"], "2.13") == ("unverified", "no band for device class cpu")


def test_record_and_malformed():
    assert check(1.23, record(), ["cpu"], "2.13")[0] == "record"
    assert check(1, {"kind": "vibes"}, ["cpu"], "2.13")[0] == "fail"
    with pytest.raises(ValueError):
        band(cpu=(3, 1))


def test_figure_requires_an_expectation():
    import helpers

    with pytest.raises(ValueError, match="needs expect="):
        helpers.figure("x", 1, expect=None)
    with pytest.raises(TypeError):
        helpers.figure("x", [1, 2], expect=record())


def test_exact_by_python_resolves_for_this_interpreter():
    import platform

    import torch

    py = ".".join(platform.python_version().split(".")[:2])
    tv = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    assert exact_by_python({py: 7}) == exact(7)
    assert exact_by_python({py: 1, f"{py}/{tv}": 2}) == exact(2)  # the pair wins
    assert exact_by_python({f"{tv}/{py}": 3}) == exact(3)  # either order
    missing = exact_by_python({"3.99": 1})
    status, rule = check(1, missing, ["cpu"], "2.13")
    assert status == "unverified" and rule == f"no value for Python {py} with torch {tv}"


def test_a_default_with_per_version_overrides():
    e = exact(8, by_torch={"2.15": 1})
    assert check(8, e, ["cpu"], "2.13")[0] == "pass"
    assert check(8, e, ["cpu"], "2.11")[0] == "pass"
    assert check(1, e, ["cpu"], "2.15")[0] == "pass"
    assert check(8, e, ["cpu"], "2.15") == ("fail", "== 1")


def test_an_unverified_torch_is_compared_with_the_nearest_older_verified_one():
    e = exact(8, by_torch={"2.15": 1})
    assert check(8, e, ["cpu"], "2.14")[0] == "pass"  # as on 2.13
    status, rule = check(1, e, ["cpu"], "2.14")
    assert status == "unverified" and "torch 2.13 gives 8" in rule
    assert check(1, e, ["cpu"], "2.16")[0] == "pass"  # as on 2.15
    assert check(3, e, ["cpu"], "2.16")[0] == "unverified"  # never "fail" on an unverified torch


def test_record_within_a_sanity_range():
    assert check(3.0, record(within=(0.01, 100)), ["cpu"], "2.13") == ("record", "record, sane within 0.01..100")
    assert check(0.0, record(within=(0.01, 100)), ["cpu"], "2.13")[0] == "fail"
    with pytest.raises(ValueError):
        record(within=(2, 1))


def test_earlier_runs_expectation_format_is_still_read():
    old = {"kind": "exact", "by": "torch", "values": {"2.11": 12}}
    assert check(12, old, ["cpu"], "2.11")[0] == "pass"
    old_dev = {"kind": "exact", "by": "device", "values": {"cpu": "c++", "cuda": "triton"}}
    assert check("triton", old_dev, ["sm90", "cuda"], "2.11")[0] == "pass"


def test_a_missed_band_is_measured_once_more(capsys):
    import helpers
    helpers.figure("t_retry", 0.1, "×", expect=band(cpu=(0.5, 2), cuda=(0.5, 2)), retry=lambda: 1.0)
    fig = RECORDED["t_retry"]
    assert fig.status == "pass" and fig.value == 1.0 and "first measurement, 0.1×, missed" in fig.note
    helpers.figure("t_retry2", 0.1, "×", expect=band(cpu=(0.5, 2), cuda=(0.5, 2)), retry=lambda: 0.2)
    assert RECORDED["t_retry2"].status == "fail"
    assert "✗ FAILED" in capsys.readouterr().out


def test_an_open_band_survives_json_that_turned_infinity_into_a_string():
    expect = band(sm90=(1.0, float("inf")))
    expect["bands"]["sm90"] = [1, "inf"]  # what a notebook's metadata gave back on the H200
    assert check(3.5, expect, ["sm90", "cuda"], "2.11") == ("pass", "sm90: 1..inf")
    assert check(0.5, expect, ["sm90", "cuda"], "2.11")[0] == "fail"


def test_words_may_derive_from_a_replayed_canonical_figure():
    import pytest

    from helpers.core.figures import REPLAYED, words

    REPLAYED.clear()
    with pytest.raises(ValueError, match="not recorded"):
        words("direction", "fell", from_figures=["gpu_only"])
    REPLAYED["gpu_only"] = 0.5
    words("direction", "fell", from_figures=["gpu_only"])  # no error: the canonical value stands in
    REPLAYED.clear()


def test_an_open_band_is_json_compliant():
    import json

    expect = band(sm90=(1.0, float("inf")))
    json.dumps(expect, allow_nan=False)  # a kernel's messages must not carry float infinity
    assert check(1e9, expect, ["sm90"], "2.11")[0] == "pass"


def test_setup_silences_inductors_tf32_warning():
    import warnings

    import helpers

    helpers.setup("ch99")
    message = "TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled."
    assert any(action == "ignore" and regex is not None and regex.match(message)
               for action, regex, *_ in warnings.filters), "setup must ignore Inductor's TF32 warning"


def test_an_open_band_end_may_be_written_as_the_string_inf():
    assert band(cpu=(1.2, "inf")) == band(cpu=(1.2, float("inf")))


def test_a_private_step_that_torch_moved_gives_an_unverified_figure(capsys):
    import helpers
    from helpers.core.private import Unverified

    moved = Unverified("a heuristic", "torch 2.14.1 moved a heuristic (AttributeError: x); this step needs torch 2.11–2.15")
    helpers.figure("t_moved_fig", moved, "elements", expect=exact(1024))
    helpers.figure("t_moved_rec", moved, "s", expect=record(within=(0, 1)), retry=lambda: 0.5)  # no retry
    for name in ("t_moved_fig", "t_moved_rec"):
        fig = RECORDED[name]
        assert (fig.status, fig.value, fig.rule) == ("unverified", None, moved.reason)
        assert fig.as_meta()["status"] == "unverified"
    assert "t_moved_fig = not measured  [? unverified: torch 2.14.1 moved a heuristic" in capsys.readouterr().out


def test_a_name_replayed_twice_is_glued_once(monkeypatch):
    from helpers.core import numbers
    from helpers.core.figures import REPLAYED

    shown = []
    monkeypatch.setattr(numbers, "_display", lambda data, meta: shown.append(meta["scrapbook"]["name"]))
    monkeypatch.setattr(numbers, "canonical", lambda chapter: {"figures": {"gpu_x": {"value": 2.5, "unit": "×"}},
                                                               "env": {"device_name": "H200"}})
    monkeypatch.setitem(numbers.STATE, "chapter", "ch99")
    REPLAYED.clear()
    shown.clear()
    assert numbers.replay("gpu_x") == 2.5 and numbers.replay("gpu_x") == 2.5
    assert shown == ["gpu_x"]  # a second glue of one key is a problem of the run (pipeline.verify)
    REPLAYED.clear()

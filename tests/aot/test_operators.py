"""Unit tests of helpers/aot/operators.py."""

from helpers.aot.operators import operator_counts


def test_operator_counts_come_from_the_dispatcher_not_from_lazy_packets():
    first = operator_counts()
    assert first["aten_packets"] < first["aten_overloads"]
    assert 0 < first["core_aten_packets"] <= first["core_aten_overloads"] < first["aten_packets"]
    assert first["prims"] > 0
    # touching every packet changes what dir(torch.ops.aten) lists, not what the dispatcher has; in a
    # fresh process the listing starts below the dispatcher's count (earlier tests may have touched more)
    second = operator_counts()
    assert second["aten_listed"] >= second["aten_packets"] and second["aten_listed"] >= first["aten_listed"]
    assert {k: v for k, v in second.items() if k != "aten_listed"} == \
        {k: v for k, v in first.items() if k != "aten_listed"}
    fresh = operator_counts(fresh_process=True)
    assert fresh["aten_overloads"] == first["aten_overloads"] and fresh["prims"] <= first["prims"]
    assert fresh["aten_listed"] < fresh["aten_packets"]

"""``Gt``/``Lt`` tolerations as ``k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint`` decides them.

Cases after upstream's ``TestTolerationToleratesTaint`` and ``TestCompareNumericValues``:
the taint's value compared with the toleration's as canonical int64s; anything else, or
the feature gate off, tolerates nothing.
"""

from __future__ import annotations

import pytest

from kube.featuregates import FeatureGates, parse_feature_gates
from kube.model import Taint, Toleration


@pytest.mark.parametrize(("operator", "toleration", "taint", "tolerated"), [
    pytest.param("Gt", "950", "800", False, id="gt-taint-smaller"),
    pytest.param("Gt", "750", "950", True, id="gt-taint-greater"),
    pytest.param("Gt", "950", "950", False, id="gt-equal"),
    pytest.param("Lt", "800", "950", False, id="lt-taint-greater"),
    pytest.param("Lt", "950", "800", True, id="lt-taint-smaller"),
    pytest.param("Gt", "950", "high", False, id="gt-taint-not-a-number"),
    pytest.param("Gt", "-100", "-200", False, id="gt-negative-smaller"),
    pytest.param("Gt", "-100", "-50", True, id="gt-negative-greater"),
    pytest.param("Gt", "9223372036854775806", "9223372036854775807", True, id="gt-int64-max"),
    pytest.param("Lt", "0", "-9223372036854775808", True, id="lt-int64-min"),
    pytest.param("Gt", "0", "9223372036854775808", False, id="gt-beyond-int64"),
    pytest.param("Gt", "0100", "200", False, id="leading-zero"),
    pytest.param("Gt", "+100", "200", False, id="plus-sign"),
    pytest.param("Gt", "100.5", "200", False, id="float"),
    pytest.param("Gt", "-", "100", False, id="just-minus"),
    pytest.param("Gt", "-0", "1", False, id="minus-zero"),
    pytest.param("Lt", "100", " 50", False, id="spaces"),
    pytest.param("Gt", "", "100", False, id="empty"),
])
def test_comparison_operators(operator: str, toleration: str, taint: str, tolerated: bool) -> None:
    on = Toleration("sla", operator, toleration, "NoSchedule", compare=True)
    assert on.tolerates(Taint("sla", taint, "NoSchedule")) is tolerated
    off = Toleration("sla", operator, toleration, "NoSchedule", compare=False)
    assert off.tolerates(Taint("sla", taint, "NoSchedule")) is False, "gate off: tolerates nothing"


@pytest.mark.parametrize(("taint", "tolerated"), [
    pytest.param(Taint("other", "950", "NoSchedule"), False, id="other-key"),
    pytest.param(Taint("sla", "950", "NoExecute"), False, id="other-effect"),
])
def test_key_and_effect_are_checked_first(taint: Taint, tolerated: bool) -> None:
    assert Toleration("sla", "Gt", "1", "NoSchedule", compare=True).tolerates(taint) is tolerated


@pytest.mark.parametrize(("text", "gates", "ignored"), [
    pytest.param("", FeatureGates(), (), id="defaults-kubernetes-1.35"),
    pytest.param("TaintTolerationComparisonOperators=true", FeatureGates(True), (), id="on"),
    pytest.param(" TaintTolerationComparisonOperators=True , DRAExtendedResource=false", FeatureGates(True),
                 ("DRAExtendedResource",), id="unmodelled-ignored"),
    pytest.param("TaintTolerationComparisonOperators=1,TaintTolerationComparisonOperators=f", FeatureGates(False),
                 (), id="last-wins"),
])
def test_parse_feature_gates(text: str, gates: FeatureGates, ignored: tuple[str, ...]) -> None:
    assert parse_feature_gates(text) == (gates, ignored)

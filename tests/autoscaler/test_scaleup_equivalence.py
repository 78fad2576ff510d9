"""Scale-up's pod equivalence keys: which pending pods one check stands for.

Two pods are equivalent when namespace, controlling owner, requests, scheduling
constraints, volume demands and labels are equal; the keys replace requests and volume
plans by numbers per distinct value, so equal values from distinct objects must still
share a key, and a pod's key is built once.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.scaleup.equivalence import EquivalenceKey, EquivalenceKeys
from kube.model import Pod
from simulator.volumes import VolumePlan
from tests.factories import pod

PLAIN = VolumePlan()


def keys_for(*pairs: tuple[Pod, VolumePlan]) -> list[EquivalenceKey]:
    keys = EquivalenceKeys({p.ref: plan for p, plan in pairs})
    return [keys.of(p) for p, _ in pairs]


def _web(name: str, **kw: Any) -> Pod:
    return pod(name, **{"owner": ("ReplicaSet", "web"), "labels": {"app": "web"}, **kw})


@pytest.mark.parametrize(("other", "other_plan", "same"), [
    pytest.param(_web("b"), PLAIN, True, id="same-owner-requests-labels"),
    pytest.param(_web("b"), VolumePlan(), True, id="equal-plans-from-distinct-objects"),
    pytest.param(_web("b", cpu="1000m"), PLAIN, True, id="equal-requests-spelled-differently"),
    pytest.param(_web("b", cpu="2"), PLAIN, False, id="other-requests"),
    pytest.param(_web("b", labels={"app": "web", "v": "2"}), PLAIN, False, id="other-labels"),
    pytest.param(_web("b", owner=("ReplicaSet", "api")), PLAIN, False, id="other-owner"),
    pytest.param(_web("b", owner=None), PLAIN, False, id="bare-pod-is-its-own-group"),
    pytest.param(_web("b", namespace="other"), PLAIN, False, id="other-namespace"),
    pytest.param(_web("b"), VolumePlan(local_bytes=10), False, id="other-volume-demand"),
    pytest.param(_web("b", node_selector={"disk": "ssd"}), PLAIN, False, id="other-constraints"),
])
def test_equivalence(other: Pod, other_plan: VolumePlan, same: bool) -> None:
    first, second = keys_for((_web("a"), PLAIN), (other, other_plan))
    assert (first == second) is same


def test_bare_pods_are_never_equivalent() -> None:
    first, second = keys_for((_web("a", owner=None), PLAIN), (_web("b", owner=None), PLAIN))
    assert first != second


def test_a_pods_key_is_built_once() -> None:
    subject = _web("a")
    keys = EquivalenceKeys({subject.ref: VolumePlan(local_bytes=10)})
    assert keys.of(subject) is keys.of(subject)


def test_numbers_follow_values_not_objects() -> None:
    """Many plans and requests, equal in pairs: each pair shares a key, no two pairs do."""
    pairs = [(_web(f"p{i}", cpu=f"{1 + i // 2}"), VolumePlan(local_bytes=i // 2)) for i in range(8)]
    found = keys_for(*pairs)
    assert [found[i] == found[i + 1] for i in range(0, 8, 2)] == [True] * 4
    assert len(set(found)) == 4


def test_an_object_met_before_keeps_its_id_so_a_new_value_gets_a_new_number() -> None:
    """The numbers are kept by object id: the object is kept too, so its id is never reused."""
    keys = EquivalenceKeys({})
    seen = []
    for i in range(50):  # fresh plans, each dropped by the caller once numbered
        seen.append(keys._volumes.number(VolumePlan(local_bytes=i)))
    assert seen == list(range(50))


def test_keys_belong_to_one_decision() -> None:
    """A pod replaced by a changed copy (same name) in the next decision gets its own key there."""
    before, after = _web("a"), _web("a", labels={"app": "web", "v": "2"})
    first = EquivalenceKeys({before.ref: PLAIN}).of(before)
    second = EquivalenceKeys({after.ref: PLAIN}).of(after)
    assert first != second

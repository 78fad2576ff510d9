"""Pod equivalence for scale-up: which pending pods one check stands for.

Upstream groups pending pods by controller and spec before it tries them
(cluster-autoscaler core/scaleup/equivalence/groups.go); here two pods are equivalent
when they have the same namespace, controlling owner, requests, scheduling constraints
(the converter shares one ``PodScheduling`` between equal specs), volume demands
(``VolumePlan.key``) and labels. Filter-out-schedulable skips the equivalents of a pod
that fit nowhere, and the estimator packs each group with one exemplar's verdicts.

With 50,000 pending pods the key is built, hashed and compared 100,000 times a loop, so
``EquivalenceKeys`` builds each pod's key once and replaces the parts that are costly to
hash and compare (requests, the volume plan's key) by a small number per distinct value:
the same pods end up equivalent, in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from kube.model import Pod, Resources
from simulator.volumes import VolumePlan

__all__ = ["EquivalenceKey", "EquivalenceKeys"]

T = TypeVar("T")

#: (namespace, owner, requests class, id of the scheduling constraints, volume plan class, labels).
EquivalenceKey = tuple[str, str, int, int, int, frozenset[tuple[str, str]]]


class _Classes(Generic[T]):
    """A small number per distinct ``value(obj)``; an object met again costs one dict read."""

    def __init__(self, value: Callable[[T], Hashable]) -> None:
        self._value = value
        self._by_value: dict[Hashable, int] = {}
        #: id(object) -> (the object, kept so its id is not reused; its number).
        self._by_id: dict[int, tuple[object, int]] = {}

    def number(self, obj: T) -> int:
        found = self._by_id.get(id(obj))
        if found is not None:
            return found[1]
        number = self._by_value.setdefault(self._value(obj), len(self._by_value))
        self._by_id[id(obj)] = (obj, number)
        return number


class EquivalenceKeys:
    """Each pending pod's equivalence key, built once per decision (``plans``: the pods' volume plans by ref)."""

    def __init__(self, plans: Mapping[str, VolumePlan]) -> None:
        self._plans = plans
        self._requests: _Classes[Resources] = _Classes(lambda requests: requests)
        self._volumes: _Classes[VolumePlan] = _Classes(lambda plan: plan.key)
        self._keys: dict[str, EquivalenceKey] = {}

    def of(self, pod: Pod) -> EquivalenceKey:
        key = self._keys.get(pod.ref)
        if key is None:
            key = self._keys[pod.ref] = self._build(pod)
        return key

    def _build(self, pod: Pod) -> EquivalenceKey:
        plan = self._plans[pod.ref]
        owner = (pod.owner.uid or f"{pod.owner.kind}/{pod.owner.name}") if pod.owner else pod.ref
        return (pod.namespace, owner, self._requests.number(pod.requests), id(pod.scheduling),
                self._volumes.number(plan), frozenset(pod.labels.items()))

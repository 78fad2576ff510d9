"""Pods pinned to one node by hostname affinity: guard pods and the scheduler's shortcut for them.

The world builds a guard pod per node by copying the first one converted, and the
scheduler checks a pod whose required affinity allows one hostname on that node alone.
Both are differential: the copy equals converting the guard object, and the shortcut
binds exactly what the full pass binds (filter every node, score, check).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec.structs
import pytest

from emulator.world import World
from kube.convert import convert_pod
from kube.names import HOSTNAME_LABEL
from tests.emulator.worlds import guard_pods, later, make_world, nvme_group, rok_class
from tests.factories import node_json, pod_json

Json = dict[str, Any]


def _node(name: str, *, host: str | None = None, cpu: str = "4", taints: Sequence[Json] = (),
          free: str | None = None) -> Json:
    """An nvme node; ``free`` None: its driver starts a minute in, so its guard is scheduled then."""
    obj = node_json(name, cpu, "16Gi", labels={"ng": "nvme"}, taints=taints, storage_max="1000Gi",
                    storage_free=free)
    if host is not None:
        obj["metadata"]["labels"][HOSTNAME_LABEL] = host
    return obj


def _pinned(name: str, *hosts: str, cpu: str = "1", **kw: Any) -> Json:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": list(hosts)}]}]}}}
    return pod_json(name, cpu, "1Gi", owner=None, affinity=affinity, **kw)


NODES = [
    _node("n1"), _node("n2", cpu="2"), _node("n3", host="shared"), _node("n4", host="shared"),
    _node("n5", taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
    _node("n6", host="h-6"), _node("n7", free="500Gi"),
]

PINNED = [
    _pinned("fits", "n1"),
    _pinned("too-big", "n2", cpu="3"),
    _pinned("second-fills-n2", "n2", cpu="1500m"),
    _pinned("shared-host", "shared"),
    _pinned("no-such-host", "nowhere"),
    _pinned("untolerated-taint", "n5"),
    _pinned("by-hostname-not-name", "n6"),
    _pinned("hostname-label", "h-6"),
    _pinned("selector-too", "n1", node_selector={"ng": "other"}),
    _pinned("already-guarded", "n7", cpu="3800m"),
]
#: A running pod on n8 (no pending pod is pinned there) whose required anti-affinity keeps
#: ``app: web`` pods off every node of its group (``ng``).
ANTI_AFFINITY = pod_json("db", "100m", "1Gi", "n8", owner=None, labels={"app": "db"}, affinity={
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "ng"}]}})


def _bindings(world: World) -> dict[str, tuple[str, str, bool]]:
    return {p.ref: (p.node_name, p.phase, p.marked_unschedulable) for p in world.cluster.pods()}


def _world(pending: Sequence[Json], full_pass: bool) -> World:
    world = make_world(rok_class(), nvme_group(max_size=0), *NODES, _node("n8", free="100Gi"), duration="10m",
                       events=[{"at": "30s", "create": list(pending)}])
    if full_pass:
        # An extender's filter that passes every candidate: the scheduler then filters, scores
        # and checks over every node, as it does for any pod.
        world.scheduler.node_filter = lambda pod, names: list(names)
    later(world, 120)
    return world


@pytest.mark.parametrize("pending", [
    pytest.param(PINNED, id="every-pending-pod-pinned-the-pass-reads-their-nodes-only"),
    pytest.param([*PINNED, _pinned("two-hosts", "n1", "n2")], id="one-pod-may-go-to-two-hosts"),
    pytest.param([*PINNED, pod_json("free", "1", "1Gi", owner=None)], id="one-pod-not-pinned"),
    pytest.param([*PINNED, ANTI_AFFINITY, _pinned("web", "n1", labels={"app": "web"})],
                 id="a-running-pod-with-anti-affinity"),
])
def test_pinned_pods_bind_as_the_full_pass_binds(pending: Sequence[Json]) -> None:
    fast, full = _world(pending, False), _world(pending, True)
    assert _bindings(fast) == _bindings(full)
    bound = {ref.split("/")[1]: node for ref, (node, _, _) in _bindings(fast).items()}
    # The cases mean what they say: some bind, some cannot.
    assert bound["fits"] == "n1" and bound["hostname-label"] == "n6"
    assert bound["too-big"] == "" and bound["no-such-host"] == "" and bound["untolerated-taint"] == ""
    assert bound["shared-host"] in ("n3", "n4") and bound["by-hostname-not-name"] == ""
    if "web" in bound:
        # db's anti-affinity reaches from n8 to n1 (one group): the pass must see every node.
        assert bound["web"] == "" and bound["db"] == "n8"


def test_guard_pods_equal_their_converted_object() -> None:
    world = _world(PINNED, False)
    guards = guard_pods(world)
    assert set(guards) == {f"n{i}" for i in range(1, 9)}
    for node_name, guard in guards.items():
        node = world.cluster.node(node_name)
        assert node is not None
        host = node.labels[HOSTNAME_LABEL]
        converted = convert_pod(world.guard.guard_object(node_name, host, guard.name, guard.uid))
        expected = msgspec.structs.replace(converted, created=guard.created, node_name=guard.node_name,
                                           phase=guard.phase)
        assert guard == expected, node_name


@pytest.mark.parametrize("host", [
    pytest.param("n1", id="hostname-is-the-name"),
    pytest.param("rack-1.example", id="another-hostname"),
    pytest.param("-bad-", id="not-a-label-value-selects-nothing"),
])
def test_a_guard_copy_equals_conversion_for_any_hostname(host: str) -> None:
    world = make_world(rok_class(), nvme_group(max_size=0), _node("first", free="100Gi"), duration="10m")
    guard = world.guard
    assert guard_pods(world)  # the first guard (the one converted) exists
    copy = guard.guard_pod("other", host)  # a second guard: the copy path
    converted = convert_pod(guard.guard_object("other", host, copy.name, copy.uid))
    assert copy == msgspec.structs.replace(converted, created=copy.created)

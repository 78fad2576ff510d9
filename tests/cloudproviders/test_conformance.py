"""One contract, every provider: the cases of ``conformance.py`` over each harness.

Harnesses come from ``harnesses.HARNESSES`` (ids ``emulator``, ``aws``, ...); each test
gets a fresh fake cloud. Fault cases use ``Harness.fail_next``; a harness whose fake
cannot produce a fault skips that case with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloudproviders.interface import (
    CloudError,
    InstanceState,
    InsufficientCapacity,
    NotFound,
    Priced,
    QuotaExceeded,
)
from tests.cloudproviders.conformance import (
    GENERAL,
    GIB,
    NAMES,
    NVME,
    NVME_BYTES,
    FaultKind,
    Harness,
    Operation,
    group_named,
    live,
    short_name,
    unknown_node,
)
from tests.cloudproviders.harnesses import HARNESSES, load


@pytest.fixture(params=[pytest.param(ref, id=name) for name, ref in HARNESSES])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    factory = load(request.param)
    with factory() as made:
        yield made


def test_groups_are_discovered_with_their_bounds(harness: Harness) -> None:
    groups = {short_name(g): g for g in harness.provider().node_groups()}
    assert sorted(groups) == [GENERAL, NVME]
    bounds = {name: (g.min_size(), g.max_size(), g.target_size()) for name, g in groups.items()}
    assert bounds == {NVME: (0, 10, 0), GENERAL: (1, 5, 2)}


def test_instances_list_registered_members_as_running(harness: Harness) -> None:
    general = group_named(harness.provider(), GENERAL)
    instances = general.instances()
    assert [i.state for i in instances] == [InstanceState.RUNNING] * 2
    assert len({i.id for i in instances}) == 2
    assert all(i.error is None for i in instances)


def test_nodes_map_to_groups_by_provider_id(harness: Harness) -> None:
    provider = harness.provider()
    general = group_named(provider, GENERAL)
    nodes = [harness.node_for(i) for i in general.instances()]
    found = [provider.node_group_for(n) for n in nodes]
    assert [g.name if g is not None else None for g in found] == [general.name] * 2
    assert provider.node_group_for(unknown_node(nodes[0])) is None


def test_template_from_zero_carries_the_local_disk(harness: Harness) -> None:
    nvme = group_named(harness.provider(), NVME)
    template = nvme.template_node()
    assert template is not None
    # Capacity is the instance type's, less the kernel's share where upstream subtracts it (GCE: ~2%,
    # gce/reserved.go); allocatable may be lower still (kube-reserved, eviction thresholds).
    assert template.capacity.cpu == 8000 and 0.97 * 64 * GIB < template.capacity.memory <= 64 * GIB
    assert 0 < template.allocatable.cpu <= 8000 and 0 < template.allocatable.memory <= 64 * GIB
    assert template.labels[NAMES.max_capacity_label] == str(NVME_BYTES)
    assert template.max_local_bytes == NVME_BYTES
    assert template.labels["kubernetes.io/os"] == "linux"
    assert "kubernetes.io/arch" in template.labels
    assert "node.kubernetes.io/instance-type" in template.labels


def test_the_general_template_has_no_local_disk(harness: Harness) -> None:
    template = group_named(harness.provider(), GENERAL).template_node()
    assert template is not None
    assert template.capacity.cpu == 4000 and 0.97 * 16 * GIB < template.capacity.memory <= 16 * GIB
    assert template.max_local_bytes is None
    assert NAMES.max_capacity_label not in template.labels


def test_priced_groups_know_a_positive_price(harness: Harness) -> None:
    """``Priced`` is optional; a group that has it prices both conformance shapes."""
    priced = [g for g in harness.provider().node_groups() if isinstance(g, Priced)]
    if not priced:
        pytest.skip(f"{harness.name}: groups are not Priced")
    for group in priced:
        price = group.price_per_hour()
        assert price is not None and price > 0, group.name


def test_increase_raises_the_target_and_lists_requested_instances(harness: Harness) -> None:
    provider = harness.provider()
    nvme = group_named(provider, NVME)
    nvme.increase_size(2)
    assert nvme.target_size() == 2
    provider.refresh()
    nvme = group_named(provider, NVME)
    assert nvme.target_size() == 2
    instances = live(nvme.instances())
    assert len(instances) == 2
    assert {i.state for i in instances} <= {InstanceState.CREATING, InstanceState.RUNNING}


@pytest.mark.parametrize("delta", [pytest.param(11, id="above-max"), pytest.param(0, id="zero"),
                                   pytest.param(-1, id="negative")])
def test_increase_refuses_bad_deltas(harness: Harness, delta: int) -> None:
    nvme = group_named(harness.provider(), NVME)
    with pytest.raises(CloudError):
        nvme.increase_size(delta)
    assert nvme.target_size() == 0


def test_delete_removes_the_node_and_lowers_the_target(harness: Harness) -> None:
    provider = harness.provider()
    general = group_named(provider, GENERAL)
    doomed, kept = general.instances()
    general.delete_nodes([harness.node_for(doomed)])
    assert general.target_size() == 1
    provider.refresh()
    general = group_named(provider, GENERAL)
    assert general.target_size() == 1
    assert [i.id for i in live(general.instances())] == [kept.id]


def test_decrease_target_size_drops_a_never_registered_request(harness: Harness) -> None:
    provider = harness.provider()
    nvme = group_named(provider, NVME)
    nvme.increase_size(1)
    nvme.decrease_target_size(-1)
    assert nvme.target_size() == 0
    provider.refresh()
    assert group_named(provider, NVME).target_size() == 0


@pytest.mark.parametrize("delta", [pytest.param(-1, id="below-registered"), pytest.param(1, id="positive")])
def test_decrease_target_size_never_touches_registered_nodes(harness: Harness, delta: int) -> None:
    general = group_named(harness.provider(), GENERAL)
    with pytest.raises(CloudError):
        general.decrease_target_size(delta)
    assert general.target_size() == 2


@pytest.mark.parametrize(("operation", "kind", "raised"), [
    pytest.param("increase", "capacity", InsufficientCapacity, id="increase-capacity"),
    pytest.param("increase", "quota", QuotaExceeded, id="increase-quota"),
    pytest.param("increase", "notfound", NotFound, id="increase-notfound"),
    pytest.param("delete", "notfound", NotFound, id="delete-notfound"),
])
def test_errors_are_typed(harness: Harness, operation: Operation, kind: FaultKind, raised: type[CloudError]) -> None:
    provider = harness.provider()
    group = group_named(provider, NVME if operation == "increase" else GENERAL)
    instance = group.instances()[0] if operation == "delete" else None
    harness.fail_next(operation, kind)
    with pytest.raises(raised) as caught:
        if instance is None:
            group.increase_size(1)
        else:
            group.delete_nodes([harness.node_for(instance)])
    if raised is InsufficientCapacity:
        assert not isinstance(caught.value, QuotaExceeded)
    assert group.target_size() == (0 if operation == "increase" else 2)


@pytest.mark.parametrize(("operation", "kind"), [
    pytest.param("increase", "throttle", id="increase-throttle"),
    pytest.param("increase", "server", id="increase-server"),
    pytest.param("delete", "throttle", id="delete-throttle"),
    pytest.param("delete", "server", id="delete-server"),
])
def test_transient_errors_are_retried(harness: Harness, operation: Operation, kind: FaultKind) -> None:
    provider = harness.provider()
    if operation == "increase":
        nvme = group_named(provider, NVME)
        harness.fail_next(operation, kind)
        nvme.increase_size(1)
        assert nvme.target_size() == 1
    else:
        general = group_named(provider, GENERAL)
        harness.fail_next(operation, kind)
        general.delete_nodes([harness.node_for(general.instances()[0])])
        assert general.target_size() == 1


#: Pods each provider's template runs besides DaemonSet pods: upstream's AWS, GCE and Azure
#: templates carry a kube-proxy mirror pod (``cloudprovider.BuildKubeProxy``); the emulator's
#: ``NodeGroup`` objects say all a node runs in their template (plan contract).
TEMPLATE_PODS = {"emulator": [], "aws": [("kube-system", 100, True)], "gce": [("kube-system", 100, True)],
                 "azure": [("kube-system", 100, True)]}


def test_template_pods_are_upstreams(harness: Harness, request: pytest.FixtureRequest) -> None:
    pods = group_named(harness.provider(), NVME).template_pods()
    assert [(p.namespace, p.requests.cpu, p.is_mirror) for p in pods] == TEMPLATE_PODS[request.node.callspec.id]
    assert all(p.name.startswith("kube-proxy-") and p.labels["component"] == "kube-proxy" for p in pods)

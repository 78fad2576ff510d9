"""In-flight reservations: two pods racing for a node's last free bytes, over real HTTP."""

from __future__ import annotations

import msgspec.structs
import pytest

from kube.model import ClusterObjects
from simulator.volumes import REASON_NOT_ENOUGH_SPACE
from tests.factories import cluster, node, pod, pod_json, pv, pvc, storage_class
from tests.scheduling.wire import Client, FakeClock, extender_args, extender_at, server_at

GiB = 2**30


def race_cluster() -> ClusterObjects:
    """One node with 100Gi free, two pods each wanting 60Gi of it; a second node with 70Gi."""
    return cluster(node("last", storage_free="100Gi"), node("other", storage_free="70Gi"), storage_class(),
                   pvc("a-data", "60Gi"), pvc("b-data", "60Gi"),
                   pod("a", claims=["a-data"]), pod("b", claims=["b-data"]))


def filter_names(client: Client, name: str, claim: str, nodes: list[str]) -> dict[str, object]:
    result: dict[str, object] = client.post("/filter", extender_args(pod_json(name, claims=[claim]), names=nodes))
    return result


def test_second_pod_is_refused_the_last_bytes() -> None:
    with extender_at(race_cluster()) as (client, extender, _):
        first = filter_names(client, "a", "a-data", ["last"])
        second = filter_names(client, "b", "b-data", ["last"])
    assert first["NodeNames"] == ["last"]
    assert second["NodeNames"] == []
    assert second["FailedNodes"] == {"last": REASON_NOT_ENOUGH_SPACE}
    held = extender.book.get("uid-default-a")
    assert held is not None and held.local_bytes == 60 * GiB


def test_a_pod_filtered_again_does_not_compete_with_itself() -> None:
    with extender_at(race_cluster()) as (client, _, _):
        filter_names(client, "a", "a-data", ["last"])
        again = filter_names(client, "a", "a-data", ["last"])
    assert again["NodeNames"] == ["last"]


def test_reservation_narrows_to_the_node_the_pod_was_bound_to() -> None:
    objects = race_cluster()
    with extender_at(objects) as (client, extender, view):
        filter_names(client, "a", "a-data", ["last", "other"])
        # kube-scheduler bound a to "other": the view shows it, "last" is free again for b.
        objects.pods = [msgspec.structs.replace(p, node_name="other") if p.name == "a" else p for p in objects.pods]
        view.set(objects, nodes_changed=False)
        second = filter_names(client, "b", "b-data", ["last", "other"])
    assert second["NodeNames"] == ["last"]
    assert second["FailedNodes"] == {"other": REASON_NOT_ENOUGH_SPACE}
    held = extender.book.get("uid-default-a")
    assert held is not None and held.nodes == frozenset({"other"})


def test_released_when_claims_bound_to_pinned_volume() -> None:
    objects = race_cluster()
    with extender_at(objects) as (client, extender, view):
        filter_names(client, "a", "a-data", ["last"])
        # The provisioner bound a's claim; the driver lowered the annotation in the same breath.
        objects.claims[("default", "a-data")] = pvc("a-data", "60Gi", volume="pv-a")
        objects.volumes["pv-a"] = pv("pv-a", "60Gi", hosts=["last"], claim=("default", "a-data"))
        objects.nodes = [node("last", storage_free="40Gi"), node("other", storage_free="70Gi")]
        view.set(objects)
        second = filter_names(client, "b", "b-data", ["last", "other"])
        assert extender.book.get("uid-default-a") is None
    assert second["NodeNames"] == ["other"]


@pytest.mark.parametrize(("selected", "b_passes", "held_on"), [
    pytest.param("last", ["other"], frozenset({"last"}), id="selected-node-narrows-the-reservation"),
    pytest.param("elsewhere", ["last", "other"], None, id="selected-for-an-unreserved-node-drops-it"),
])
def test_selected_node_annotation(selected: str, b_passes: list[str], held_on: frozenset[str] | None) -> None:
    """kube-scheduler wrote ``volume.kubernetes.io/selected-node`` on a's claim before binding a."""
    objects = race_cluster()
    with extender_at(objects) as (client, extender, view):
        filter_names(client, "a", "a-data", ["last", "other"])
        objects.claims[("default", "a-data")] = pvc("a-data", "60Gi", selected_node=selected)
        view.set(objects, nodes_changed=False)
        second = filter_names(client, "b", "b-data", ["last", "other"])
        held = extender.book.get("uid-default-a")
    assert second["NodeNames"] == b_passes
    assert (held.nodes if held is not None else None) == held_on


def test_released_when_pod_gone_or_timed_out() -> None:
    clock = FakeClock()
    objects = race_cluster()
    with extender_at(objects, clock, timeout=60) as (client, extender, view):
        filter_names(client, "a", "a-data", ["last"])
        filter_names(client, "b", "b-data", ["last"])  # the view has shown a: it is "seen"
        objects.pods = [p for p in objects.pods if p.name != "a"]
        view.set(objects, nodes_changed=False, storage_changed=False)
        after_delete = filter_names(client, "b", "b-data", ["last"])
        assert extender.book.get("uid-default-a") is None
        # b now holds the bytes; only the timeout frees them when b never shows up bound.
        clock.now += 59
        still_held = filter_names(client, "c", "a-data", ["last"])
        clock.now += 2
        after_timeout = filter_names(client, "c", "a-data", ["last"])
    assert after_delete["NodeNames"] == ["last"]
    assert still_held["NodeNames"] == []
    assert after_timeout["NodeNames"] == ["last"]


def test_concurrent_filters_approve_the_last_bytes_once() -> None:
    """Many schedulers' worth of simultaneous requests: exactly one pod gets the node."""
    import threading

    objects = cluster(node("last", storage_free="100Gi"), storage_class(),
                      *[pvc(f"d{i}", "60Gi") for i in range(8)], *[pod(f"p{i}", claims=[f"d{i}"]) for i in range(8)])
    with extender_at(objects) as (_, extender, _):
        server = server_at(extender.routes())
        results: list[object] = []
        errors: list[BaseException] = []

        def one(i: int) -> None:
            client = Client(server)
            try:
                results.append(filter_names(client, f"p{i}", f"d{i}", ["last"])["NodeNames"])
            except Exception as exc:  # reported below, with the test's own message
                errors.append(exc)
            finally:
                client.close()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        server.close()
    assert not errors, errors
    assert sorted(map(str, results)) == sorted([str(["last"])] + [str([])] * 7)

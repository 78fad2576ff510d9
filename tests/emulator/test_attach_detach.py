"""The simulated attach-detach controller, and the actuator waiting on it before a node goes.

``nvme-1`` runs a 5-cpu web pod (needed); ``nvme-2`` joins at the start and runs a 2-cpu
``app`` pod whose claim ``data`` is an EBS-like network volume (``ebs.csi.aws.com``): it
fits on ``nvme-1``, so with ``--scale-down-unneeded-time=1m`` the loop drains ``nvme-2``
at 60 s. The evicted pod terminates for 30 s (90 s), then its VolumeAttachment on
``nvme-2`` goes ``volumeDetachDelay`` later.
"""

from __future__ import annotations

import pytest

from autoscaler.loop import Autoscaler
from emulator.attach_detach import FORCE_DETACH_SECONDS, attachment_name
from emulator.world import World
from kube.model import VolumeAttachment
from tests.emulator.worlds import Driven, Json, deployment, later, make_world, nvme_group, nvme_node, volume_of
from tests.factories import options, pvc_json, storage_class_json

SCAN = 10.0
EBS = "ebs.csi.aws.com"


def _csi_driver(name: str, attach_required: bool) -> Json:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
            "spec": {"attachRequired": attach_required}}


def _world(detach: str = "10s", *extra: Json, provisioner: str = EBS) -> World:
    app = deployment("app", 1, cpu="2", claims=["data"])
    world = make_world(nvme_group(), nvme_node("nvme-1"), deployment("web", 1, cpu="5"),
                       storage_class_json("ebs", provisioner), pvc_json("data", "10Gi", "ebs"),
                       *extra, events=[{"at": "0s", "create": [nvme_node("nvme-2"), app]}], detach=detach)
    world.advance(world.start)
    return world


def _attachments(world: World) -> dict[str, VolumeAttachment]:
    """Every VolumeAttachment, by name."""
    return dict(world.cluster.volume_attachments)


def _on(world: World, node: str) -> list[VolumeAttachment]:
    return [va for va in world.cluster.list_objects().volume_attachments if va.node == node]


def test_a_running_pods_network_volume_is_attached_and_detached_after_it_stops() -> None:
    world = _world("45s")
    pv = volume_of(world, "data")
    name = attachment_name(EBS, pv.name, "nvme-2")
    assert _attachments(world) == {name: VolumeAttachment(name, "nvme-2", EBS, pv.name, attached=True)}
    world.workloads.scale("Deployment", "default", "app", 0)
    world.settle()
    later(world, 44)
    assert name in _attachments(world), "the detach takes volumeDetachDelay"
    later(world, 1)
    assert _attachments(world) == {}


@pytest.mark.parametrize(("provisioner", "extra"), [
    pytest.param("rok.arrikto.com", (), id="local-provisioner"),
    pytest.param("nfs.csi.k8s.io", (_csi_driver("nfs.csi.k8s.io", attach_required=False),),
                 id="driver-without-attach"),
])
def test_volumes_that_need_no_attaching_get_no_attachment(provisioner: str, extra: tuple[Json, ...]) -> None:
    world = _world("10s", *extra, provisioner=provisioner)
    assert _attachments(world) == {}


def _drive(world: World, *flags: str, until: float) -> tuple[Driven, dict[float, list[VolumeAttachment]]]:
    """Loops every 10 s to ``until``; returns the loop and, per loop, nvme-2's attachments it saw."""
    loop = Driven(Autoscaler(world.cluster, world.cloud, options("--scale-down-unneeded-time=1m", *flags)))
    seen: dict[float, list[VolumeAttachment]] = {}
    at = 0.0
    while at <= until:
        world.advance(world.start + at)
        seen[at] = _on(world, "nvme-2")
        loop.run_once(world.start + at)
        at += SCAN
    return loop, seen


def _history(world: World, loop: Driven) -> list[tuple[float, str]]:
    return [(e.time - world.start, e.kind.value) for e in loop.actuation if e.node == "nvme-2"]


@pytest.mark.parametrize(("detach", "flags", "deleted_at", "gave_up"), [
    pytest.param("10s", (), 100.0, False, id="deleted-once-detached"),
    pytest.param("45s", (), 140.0, False, id="slow-detach-waited-for"),
    pytest.param("45s", ("--max-volume-detach-time=20s",), 110.0, True, id="bounded-by-the-flag"),
    pytest.param("45s", ("--max-volume-detach-time=0s",), 90.0, False, id="zero-does-not-wait"),
])
def test_the_actuator_waits_for_the_attach_detach_controller(detach: str, flags: tuple[str, ...],
                                                             deleted_at: float, gave_up: bool) -> None:
    world = _world(detach)
    loop, seen = _drive(world, *flags, until=deleted_at + 30)
    history = _history(world, loop)
    assert history[0] == (60.0, "Tainted") and (deleted_at, "Deleted") in history
    assert [at for at in seen if at < deleted_at and not seen[at]] == [], "attached until deleted, or waited for"
    waited = deleted_at > 90.0
    assert [e for e in history if e[1] == "WaitingForVolumeDetach"] == ([(90.0, "WaitingForVolumeDetach")]
                                                                       if waited else [])
    assert [e for e in history if e[1] == "VolumesNotDetached"] == ([(deleted_at, "VolumesNotDetached")]
                                                                   if gave_up else [])
    forced = bool(flags)
    assert world.metrics.force_detaches == int(forced), "a node deleted with its volumes attached"
    later(world, FORCE_DETACH_SECONDS)
    assert _on(world, "nvme-2") == [], "detached, or force-detached 6 minutes after the node went"

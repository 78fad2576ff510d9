"""Template nodes of MIGs against the compute fake, case by case as upstream CA's ``templates_test.go``.

The machine ``tiny`` has 8 vCPUs and 200 MiB (upstream's test machine), the boot disk is
300 GiB unless a case says otherwise. Expected numbers are upstream's arithmetic
(``gce/reserved.go``), written out:

- memory capacity: 200 MiB - (200 MiB / 64 + 16 MiB + 8 MiB + 0.00175 * 200 MiB) = 180,905,575;
- ephemeral capacity (COS, 300 GiB boot disk): 300 GiB - (0.015635 * disk + 4.148 GiB + 100 MiB)
  = 312,527,422,488; on 2 local SSDs: 2 * 375 GiB - 13,725,224 KiB = 791,251,738,624;
- allocatable: capacity - kube-reserved - 100 MiB (memory) / - 10 % of capacity (storage),
  or the capacity itself when kube-env states no kube-reserved.
"""

from __future__ import annotations

from typing import Any

import pytest

from cloudproviders.config import StaticGroup
from kube.model import Node
from kube.names import StorageNames
from tests.cloudproviders.fakes.gce import FakeGce
from tests.cloudproviders.gce_world import PROJECT, ZONE, gce_provider

MIB, GIB = 2**20, 2**30
MEMORY = 180_905_575
BOOT_EPH = 312_527_422_488
SSD2_EPH = 791_251_738_624
LABELS = "NODE_LABELS: a=b,c=d,cloud.google.com/gke-nodepool=pool-3\n"
TAINTS = "NODE_TAINTS: 'dedicated=ml:NoSchedule,test=dev:PreferNoSchedule,a=b:c'\n"
COS = "AUTOSCALER_ENV_VARS: os_distribution=cos;os=linux;"


def template_of(fake: FakeGce, sleeps: list[float], kube_env: str | None, machine: str = "tiny",
                **template: Any) -> Node | None:
    fake.add_machine_type("tiny", 8, 200, ZONE, PROJECT)
    fake.add_template("t-template", machine, kube_env=kube_env, boot_disk_gb=template.pop("boot_disk_gb", 300),
                      **template)
    fake.add_mig("t", "t-template", 0, ZONE, PROJECT, template_region=template.pop("region", None))
    provider = gce_provider(fake, sleeps, static=(StaticGroup(0, 3, f"{ZONE}/t"),))
    try:
        provider.refresh()
        (group,) = provider.node_groups()
        return group.template_node()
    finally:
        provider.close()


def resources(node: Node) -> tuple[tuple[int, ...], tuple[int, ...], dict[str, int]]:
    cap, alloc = node.capacity, node.allocatable
    return ((cap.cpu, cap.memory, cap.ephemeral_storage), (alloc.cpu, alloc.memory, alloc.ephemeral_storage),
            dict(cap.extended))


K80_P100 = [{"acceleratorType": "nvidia-tesla-k80", "acceleratorCount": 3},
            {"acceleratorType": "nvidia-tesla-p100", "acceleratorCount": 8}]


@pytest.mark.parametrize(("kube_env", "template", "expected"), [
    pytest.param(
        LABELS + "KUBELET_TEST_ARGS: --experimental-allocatable-ignore-eviction "
        "--kube-reserved=cpu=1000m,memory=1Mi,ephemeral-storage=30Gi\n" + TAINTS,
        {"guestAccelerators": K80_P100},
        ((8000, MEMORY, BOOT_EPH), (7000, MEMORY - MIB - 100 * MIB, BOOT_EPH - 30 * GIB - BOOT_EPH // 10),
         {"nvidia.com/gpu": 11}),
        id="kube-reserved-in-kubelet-test-args"),
    pytest.param(LABELS + TAINTS, {}, ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {}),
                 id="no-kube-reserved-allocatable-is-capacity"),
    pytest.param(None, {}, ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {}), id="no-kube-env-at-all"),
    pytest.param(LABELS + COS + "kube_reserved=cpu=0,memory=0,ephemeral-storage=0;BLOCK_EPH_STORAGE_BOOT_DISK=true\n",
                 {}, ((8000, MEMORY, 0), (8000, MEMORY - 100 * MIB, 0), {}), id="boot-disk-blocked"),
    pytest.param("AUTOSCALER_ENV_VARS: os_distribution=;os=linux;kube_reserved=cpu=0,memory=0,ephemeral-storage=0;"
                 "BLOCK_EPH_STORAGE_BOOT_DISK=true\n",
                 {}, ((8000, MEMORY, 0), (8000, MEMORY - 100 * MIB, 0), {}), id="empty-distribution-is-cos"),
    pytest.param(COS + "kube_reserved=cpu=0,memory=0,ephemeral-storage=0;BLOCK_EPH_STORAGE_BOOT_DISK=false\n", {},
                 ((8000, MEMORY, BOOT_EPH), (8000, MEMORY - 100 * MIB, BOOT_EPH - BOOT_EPH // 10), {}),
                 id="boot-disk-not-blocked"),
    pytest.param(COS + "ephemeral_storage_local_ssd_count=2\n", {"local_ssds": 2},
                 ((8000, MEMORY, SSD2_EPH), (8000, MEMORY, SSD2_EPH), {}), id="all-local-ssds-ephemeral"),
    pytest.param("AUTOSCALER_ENV_VARS: kube_reserved=cpu=0,memory=0,ephemeral-storage=10Gi;os_distribution=cos;"
                 "os=linux;ephemeral_storage_local_ssd_count=2\n", {"local_ssds": 4},
                 ((8000, MEMORY, SSD2_EPH), (8000, MEMORY - 100 * MIB, SSD2_EPH - 10 * GIB - SSD2_EPH // 10), {}),
                 id="two-of-four-local-ssds-ephemeral-with-kube-reserved"),
    pytest.param(COS + "extended_resources=someResource=2,anotherResource=1G\n", {},
                 ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {"anotherResource": 10**9, "someResource": 2}),
                 id="extended-resources"),
    pytest.param(COS + "extended_resources=someResource\n", {},
                 ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {}), id="malformed-extended-resources-dropped"),
    pytest.param(COS + "extended_resources=foo=bar,baz=10G\n", {},
                 ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {"baz": 10 * 10**9}),
                 id="one-bad-extended-resource-dropped"),
    pytest.param(COS + "node_labels=clusterautoscaler-nodetemplate-resources.test.co/r=3\n", {},
                 ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {"test.co/r": 3}),
                 id="extended-resource-from-node-label"),
    # Windows: no kernel reserve; the OS keeps ceil(0.1133 GiB) + ceil(0.010 GiB) = 132,392,368 bytes of disk.
    pytest.param("AUTOSCALER_ENV_VARS: os=windows;os_distribution=windows_ltsc\n", {"boot_disk_gb": 100},
                 ((8000, 200 * MIB, 100 * GIB - 132_392_368), (8000, 200 * MIB, 100 * GIB - 132_392_368), {}),
                 id="windows-no-kernel-reserve"),
    pytest.param(COS + "kube_reserved=cpu=0;evictionHard=memory.available=50Mi,nodefs.available=20%\n", {},
                 ((8000, MEMORY, BOOT_EPH), (8000, MEMORY - 50 * MIB, BOOT_EPH - int(0.2 * BOOT_EPH)), {}),
                 id="eviction-thresholds-from-kube-env"),
    pytest.param(COS + "kube_reserved=cpu=500m,memory=many,bogus=1\n", {},
                 ((8000, MEMORY, BOOT_EPH), (7500, MEMORY - 100 * MIB, BOOT_EPH - BOOT_EPH // 10), {}),
                 id="bad-kube-reserved-entries-dropped"),
    pytest.param(COS + "kube_reserved=junk\n", {}, ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {}),
                 id="malformed-kube-reserved-allocatable-is-capacity"),
    pytest.param(None, {"guestAccelerators": [{"acceleratorType": "ct5lp-hightpu-4t", "acceleratorCount": 4}]},
                 ((8000, MEMORY, BOOT_EPH), (8000, MEMORY, BOOT_EPH), {}), id="only-nvidia-accelerators-are-gpus"),
    pytest.param(None, {"boot_disk_gb": 0}, ((8000, MEMORY, 0), (8000, MEMORY, 0), {}),
                 id="boot-disk-size-unstated"),
])
def test_resources(fake: FakeGce, sleeps: list[float], kube_env: str | None, template: dict[str, Any],
                   expected: tuple[Any, ...]) -> None:
    node = template_of(fake, sleeps, kube_env, **template)
    assert node is not None
    assert resources(node) == expected


@pytest.mark.parametrize(("kube_env", "template"), [
    pytest.param("This kube-env is totally messed up", {}, id="kube-env-not-a-map"),
    pytest.param("KUBERNETES_MASTER: false\n", {}, id="kube-env-value-not-a-string"),
    pytest.param(COS + "ephemeral_storage_local_ssd_count=1\n", {}, id="more-ephemeral-ssds-than-attached"),
    pytest.param("AUTOSCALER_ENV_VARS: os=macos\n", {}, id="unknown-os"),
    pytest.param("AUTOSCALER_ENV_VARS: os=\n", {}, id="empty-os"),
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=a=b;junk;os=linux\n", {}, id="malformed-entry-before-os"),
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=ab,c=d\n", {}, id="malformed-label-list"),
    pytest.param("AUTOSCALER_ENV_VARS: node_taints='dedicatedml:NoSchedule'\n", {}, id="malformed-taint-list"),
    pytest.param("AUTOSCALER_ENV_VARS: node_taints=a=b\n", {}, id="taint-without-effect"),
    pytest.param(None, {"metadata": None}, id="template-without-metadata"),
    pytest.param(None, {"metadata": {"items": [{"key": "kube-env"}]}}, id="kube-env-without-value"),
])
def test_no_template(fake: FakeGce, sleeps: list[float], kube_env: str | None, template: dict[str, Any]) -> None:
    assert template_of(fake, sleeps, kube_env, **template) is None


def generic(arch: str = "amd64", os: str = "linux", instance_type: str = "tiny") -> dict[str, str]:
    return {"kubernetes.io/arch": arch, "kubernetes.io/os": os, "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/region": "europe-west4", "topology.kubernetes.io/zone": ZONE,
            "topology.gke.io/zone": ZONE, "kubernetes.io/hostname": "t-template"}


@pytest.mark.parametrize(("kube_env", "labels"), [
    pytest.param(None, generic(), id="generic-labels-with-the-pd-csi-zone"),
    pytest.param(LABELS, {"a": "b", "c": "d", "cloud.google.com/gke-nodepool": "pool-3", **generic()},
                 id="from-NODE_LABELS"),
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=a=b,kubernetes.io/os=plan9;os=linux\nNODE_LABELS: x=y\n",
                 {"a": "b", **generic()}, id="node_labels-first-generic-labels-win"),
    pytest.param("AUTOSCALER_ENV_VARS: os_distribution=cos;arch=arm64;os=linux\n", generic(arch="arm64"),
                 id="arch-from-kube-env"),
    pytest.param("AUTOSCALER_ENV_VARS: os_distribution=cos;arch=;os=linux\n", generic(), id="empty-arch-is-amd64"),
    pytest.param("AUTOSCALER_ENV_VARS: os=windows\n", generic(os="windows"), id="windows"),
    pytest.param("AUTOSCALER_ENV_VARS: os=linux;junk;node_labels=a=b\nNODE_LABELS: x=y\n", {"x": "y", **generic()},
                 id="malformed-entry-falls-back-to-NODE_LABELS"),
])
def test_labels(fake: FakeGce, sleeps: list[float], kube_env: str | None, labels: dict[str, str]) -> None:
    node = template_of(fake, sleeps, kube_env)
    assert node is not None
    assert dict(node.labels) == labels


@pytest.mark.parametrize(("kube_env", "taints"), [
    pytest.param(TAINTS, {("dedicated", "ml", "NoSchedule"), ("test", "dev", "PreferNoSchedule"), ("a", "b", "c")},
                 id="from-NODE_TAINTS-any-effect"),
    pytest.param("AUTOSCALER_ENV_VARS: node_taints='dedicated=ml:NoSchedule';os=linux\n",
                 {("dedicated", "ml", "NoSchedule")}, id="quoted-value-unquoted"),
    pytest.param("AUTOSCALER_ENV_VARS: node_taints=\n" + TAINTS, set(), id="empty-node_taints-wins"),
])
def test_taints(fake: FakeGce, sleeps: list[float], kube_env: str, taints: set[tuple[str, str, str]]) -> None:
    node = template_of(fake, sleeps, kube_env)
    assert node is not None
    assert {(t.key, t.value, t.effect) for t in node.taints} == taints


def test_custom_machine_type_needs_no_lookup(fake: FakeGce, sleeps: list[float]) -> None:
    node = template_of(fake, sleeps, None, machine="n2-custom-2-2816")
    assert node is not None
    # 2816 MiB less the kernel's reserve (44 MiB + 16 MiB + 8 MiB + 0.00175 * 2816 MiB).
    assert (node.capacity.cpu, node.capacity.memory) == (2000, 2_876_319_466)
    assert node.labels["node.kubernetes.io/instance-type"] == "n2-custom-2-2816"
    assert not any("/machineTypes/" in call for call in fake.calls)


def test_regional_instance_template(fake: FakeGce, sleeps: list[float]) -> None:
    node = template_of(fake, sleeps, None, region="europe-west4")
    assert node is not None
    assert any("/regions/europe-west4/instanceTemplates/t-template" in call for call in fake.calls)


def test_local_ssds_backing_ephemeral_storage_are_not_local_volumes(fake: FakeGce, sleeps: list[float]) -> None:
    label = StorageNames().max_capacity_label
    node = template_of(fake, sleeps, COS + "ephemeral_storage_local_ssd_count=2\n", local_ssds=4)
    assert node is not None
    assert (node.max_local_bytes, node.labels[label]) == (2 * 375 * GIB, str(2 * 375 * GIB))


BOOT = {"cluster-autoscaler/gce/boot-disk-size": "300", "cluster-autoscaler/gce/boot-disk-type": "pd-balanced"}


@pytest.mark.parametrize(("kube_env", "template", "expected"), [
    pytest.param(None, {}, BOOT, id="boot-disk"),
    pytest.param(COS + "BLOCK_EPH_STORAGE_BOOT_DISK=true\n", {"local_ssds": 2},
                 {**BOOT, "cluster-autoscaler/gce/ephemeral-storage-local-ssd": "true",
                  "cluster-autoscaler/gce/local-ssd-count": "2"}, id="local-ssds-back-ephemeral-storage"),
])
def test_annotations(fake: FakeGce, sleeps: list[float], kube_env: str | None, template: dict[str, Any],
                     expected: dict[str, str]) -> None:
    node = template_of(fake, sleeps, kube_env, **template)
    assert node is not None
    assert dict(node.annotations) == expected

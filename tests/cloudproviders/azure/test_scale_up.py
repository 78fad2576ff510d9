"""Scale-up from zero for a pod bound to a zonal Azure Disk: the real loop's decision over the Azure provider.

The volume's PV carries the Azure Disk CSI driver's node affinity
(``topology.disk.csi.azure.com/zone In [westeurope-2]``); no node exists, so the only
thing that can place the pod is a template carrying that key, in that zone.
"""

from __future__ import annotations

import pytest

from autoscaler.runonce import run_once
from cloudproviders.config import StaticGroup
from tests.cloudproviders.azure_world import azure_provider
from tests.cloudproviders.fakes.azure import FakeAzure
from tests.factories import NOW, ClusterObject, cluster, expr, options, pod, pv, pvc, storage_class

DISK_ZONE = "topology.disk.csi.azure.com/zone"
DRIVER = "disk.csi.azure.com"


def disk_pod(zone_value: str) -> list[ClusterObject]:
    affinity = {"nodeSelectorTerms": [{"matchExpressions": [expr(DISK_ZONE, "In", zone_value)]}]}
    return [storage_class("managed-csi", DRIVER),
            pv("pvc-disk", "100Gi", "managed-csi", driver=DRIVER, affinity=affinity, claim=("default", "data")),
            pvc("data", "100Gi", "managed-csi", volume="pvc-disk"),
            pod("db-0", "500m", "1Gi", owner=("StatefulSet", "db"), claims=["data"])]


@pytest.mark.parametrize(("zone_value", "expected"), [
    pytest.param("westeurope-2", {"zone-2": 1}, id="the-volumes-zone-only"),
    pytest.param("", {"regional": 1}, id="non-zonal-disk-on-the-non-zonal-scale-set"),
])
def test_a_zonal_disk_scales_up_the_scale_set_in_its_zone(fake: FakeAzure, sleeps: list[float], zone_value: str,
                                                          expected: dict[str, int]) -> None:
    fake.add_scale_set("zone-1", "Standard_D4s_v5", zones=["1"])
    fake.add_scale_set("zone-2", "Standard_D4s_v5", zones=["2"])
    fake.add_scale_set("regional", "Standard_D4s_v5")
    provider = azure_provider(fake, sleeps, static=tuple(StaticGroup(0, 5, n) for n in ("zone-1", "zone-2",
                                                                                        "regional")))
    provider.refresh()
    up = run_once(cluster(*disk_pod(zone_value)), provider, options(), NOW, steady_state=True).scale_up
    provider.close()
    assert up.result == "ScaledUp", up.still_unschedulable
    assert {i.group: i.delta for i in up.increases} == expected

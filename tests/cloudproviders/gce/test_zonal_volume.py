"""Scale-up from zero for a pod bound to a zonal Persistent Disk, through the GCE provider on the compute fake.

The PD CSI driver pins its volumes with ``topology.gke.io/zone``; a MIG's template only
fits such a pod if it carries that label (upstream ``BuildGenericLabels``) with the
volume's zone. Two empty MIGs, one per zone: only the one in the volume's zone grows.
"""

from __future__ import annotations

import pytest

from autoscaler.runonce import run_once
from cloudproviders.config import StaticGroup
from tests.cloudproviders.fakes.gce import FakeGce
from tests.cloudproviders.gce_world import PROJECT, gce_provider
from tests.factories import NOW, cluster, expr, options, pod, pv, pvc, storage_class

PD = "pd.csi.storage.gke.io"
ZONE_A, ZONE_B = "europe-west4-a", "europe-west4-b"


@pytest.mark.parametrize(("volume_zone", "grown"), [
    pytest.param(ZONE_A, "pd-a", id="volume-in-zone-a"),
    pytest.param(ZONE_B, "pd-b", id="volume-in-zone-b"),
])
def test_pod_on_a_zonal_pd_scales_up_the_mig_in_its_zone(sleeps: list[float], volume_zone: str, grown: str) -> None:
    with FakeGce() as fake:
        fake.add_machine_type("n2-standard-4", 4, 16384, ZONE_A, PROJECT)
        fake.add_template("pd-template", "n2-standard-4", kube_env="AUTOSCALER_ENV_VARS: os=linux\n")
        fake.add_mig("pd-a", "pd-template", 0, ZONE_A, PROJECT)
        fake.add_mig("pd-b", "pd-template", 0, ZONE_B, PROJECT)
        provider = gce_provider(fake, sleeps, static=(StaticGroup(0, 5, f"{ZONE_A}/pd-a"),
                                                      StaticGroup(0, 5, f"{ZONE_B}/pd-b")))
        affinity = {"nodeSelectorTerms": [{"matchExpressions": [expr("topology.gke.io/zone", "In", volume_zone)]}]}
        objects = cluster(
            storage_class("pd", PD),
            pv("pv-data", "100Gi", "pd", driver=PD, affinity=affinity, claim=("default", "data")),
            pvc("data", "100Gi", "pd", volume="pv-data"),
            pod("db-0", "500m", "1Gi", owner=("StatefulSet", "db"), claims=["data"]),
        )
        try:
            provider.refresh()
            up = run_once(objects, provider, options(), NOW, steady_state=True).scale_up
        finally:
            provider.close()
    assert up.result == "ScaledUp", up.still_unschedulable
    assert {i.group.rsplit("/", 1)[-1]: i.delta for i in up.increases} == {grown: 1}

"""``run --cloud-provider=aws`` scales up from zero where a pod's EBS volume lives, and nowhere else.

A pod bound to a zonal EBS volume (the EBS CSI driver writes the PV's node affinity on
``topology.ebs.csi.aws.com/zone``) fits only a template carrying that label with the
volume's zone: two empty ASGs of the same shape, one per zone, and only the volume's is
raised. Over moto's server and the fake API server, as ``test_run_aws.py``.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from app.cli import main
from tests.app.run_helpers import free_port
from tests.app.test_run_aws import AMI, REGION, moto_endpoint  # noqa: F401 (a fixture)
from tests.factories import expr, pod_json, pv_json, pvc_json, storage_class_json
from tests.fakeapi import FakeAPIServer

EBS = "ebs.csi.aws.com"
ZONE_KEY = "topology.ebs.csi.aws.com/zone"


@pytest.mark.parametrize("zone", ["b", "c"])
def test_a_pod_on_a_zonal_ebs_volume_raises_the_group_of_its_zone(moto_endpoint: str,  # noqa: F811
                                                                     tmp_path: Path, zone: str) -> None:
    import boto3  # type: ignore[import-untyped]

    # moto's backends live in this process: start from an empty AWS whatever ran before.
    urllib.request.urlopen(urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")).close()
    session = boto3.Session(region_name=REGION)
    autoscaling, ec2 = session.client("autoscaling"), session.client("ec2")
    ec2.create_launch_template(LaunchTemplateName="ebs-lt", LaunchTemplateData={"InstanceType": "m5.large",
                                                                                "ImageId": AMI})
    for az in ("b", "c"):
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=f"ebs-{az}", MinSize=0, MaxSize=3, DesiredCapacity=0,
            AvailabilityZones=[f"{REGION}{az}"], LaunchTemplate={"LaunchTemplateName": "ebs-lt"})
    affinity = {"nodeSelectorTerms": [{"matchExpressions": [expr(ZONE_KEY, "In", f"{REGION}{zone}")]}]}
    objects = [
        storage_class_json("gp3", EBS),
        pv_json("pvc-data", "100Gi", "gp3", affinity=affinity, claim=("default", "data"), driver=EBS),
        pvc_json("data", "100Gi", "gp3", volume="pvc-data"),
        pod_json("db-0", "1", "2Gi", owner=("StatefulSet", "db"), claims=["data"]),
    ]
    with FakeAPIServer(bookmark_seconds=0.1) as api:
        api.state.put_all(objects)
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        status = main(["run", f"--kubeconfig={kubeconfig}", "--cloud-provider=aws", "--nodes=0:3:ebs-b",
                       "--nodes=0:3:ebs-c", f"--address=127.0.0.1:{free_port()}", "--scan-interval=100ms",
                       "--max-loops=3", "--kube-client-qps=1000", "--kube-client-burst=1000",
                       "--leader-elect=false", "--scale-down-enabled=false"])
    assert status == 0
    desired = {g["AutoScalingGroupName"]: g["DesiredCapacity"]
               for g in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]}
    assert desired == {"ebs-b": int(zone == "b"), "ebs-c": int(zone == "c")}

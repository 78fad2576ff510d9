"""``autoscaler run --cloud-provider=aws`` against moto's server (``AWS_ENDPOINT_URL``) and the fake API server.

The path a real EKS deployment takes, end to end in one process: flags, the AWS provider
(``cloudproviders.aws``, loaded by name), the live adapter over HTTP, the loop, the
endpoints. Skipped in a build without the AWS provider.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import main
from tests.app.run_helpers import free_port
from tests.factories import node_json, pod_json, pv_json, pvc_json, storage_class_json
from tests.fakeapi import FakeAPIServer

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cloudproviders.aws") is None,
                                reason="this build has no AWS provider")

Json = dict[str, Any]
REGION = "us-east-1"
AMI = "ami-12c6146b"  # one of moto's built-in images


@pytest.fixture
def moto_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_SESSION_TOKEN": "testing", "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
                       "AWS_ENDPOINT_URL": endpoint, "AWS_CONFIG_FILE": "/dev/null",
                       "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    try:
        yield endpoint
    finally:
        server.stop()


def _asg(client: Any, ec2: Any, name: str, instance_type: str, *, desired: int, min_size: int) -> list[Json]:
    ec2.create_launch_template(LaunchTemplateName=name,
                               LaunchTemplateData={"InstanceType": instance_type, "ImageId": AMI})
    client.create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=min_size, MaxSize=10, DesiredCapacity=desired,
        AvailabilityZones=[f"{REGION}a"], LaunchTemplate={"LaunchTemplateName": name, "Version": "$Latest"})
    groups = client.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    instances: list[Json] = groups[0]["Instances"]
    return sorted(instances, key=lambda i: str(i["InstanceId"]))


def _node(name: str, instance: Json, group: str, free: str | None = None) -> Json:
    obj = node_json(name, "8", "32Gi", labels={"ng": group}, storage_max="1000Gi" if free is not None else None,
                    storage_free=free)
    obj["spec"]["providerID"] = f"aws:///{instance['AvailabilityZone']}/{instance['InstanceId']}"
    return obj


def test_run_on_aws_raises_the_right_asg_and_terminates_the_idle_node_with_decrement(
        moto_endpoint: str, tmp_path: Path) -> None:
    import boto3  # type: ignore[import-untyped]

    session = boto3.Session(region_name=REGION)
    autoscaling, ec2 = session.client("autoscaling"), session.client("ec2")
    nvme = _asg(autoscaling, ec2, "nvme", "i3.2xlarge", desired=1, min_size=1)
    general = _asg(autoscaling, ec2, "general", "m5.2xlarge", desired=2, min_size=0)
    objects = [
        storage_class_json("rok", "rok.arrikto.com"),
        storage_class_json("local-storage", "kubernetes.io/no-provisioner"),
        _node("nvme-1", nvme[0], "nvme", "300Gi"),
        _node("general-1", general[0], "general"), _node("general-2", general[1], "general"),
        pod_json("busy", "6", "8Gi", "nvme-1"),
        pv_json("logs-pv", "50Gi", "local-storage", hosts=["general-2"], claim=("default", "logs"), driver="local"),
        pvc_json("logs", "50Gi", "local-storage", volume="logs-pv"),
    ]
    for i in range(4):
        objects += [pvc_json(f"data-kafka-{i}", "400Gi", "rok"),
                    pod_json(f"kafka-{i}", "1", "1Gi", owner=("StatefulSet", "kafka"), claims=[f"data-kafka-{i}"])]
    with FakeAPIServer(bookmark_seconds=0.1) as api:
        api.state.put_all(objects)
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        status = main(["run", f"--kubeconfig={kubeconfig}", "--cloud-provider=aws", "--nodes=1:10:nvme",
                       "--nodes=0:10:general", f"--address=127.0.0.1:{free_port()}", "--scan-interval=100ms",
                       "--scale-down-unneeded-time=0s", "--scale-down-delay-after-add=0s", "--max-loops=6",
                       "--kube-client-qps=1000", "--kube-client-burst=1000", "--leader-elect=false"])
        assert status == 0
        sizes = {g["AutoScalingGroupName"]: g for g in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]}
        assert sizes["nvme"]["DesiredCapacity"] > 1, "the storage-bound brokers raised the NVMe group"
        assert sizes["general"]["DesiredCapacity"] == 1, "the idle node was terminated with decrement"
        remaining = {i["InstanceId"] for i in sizes["general"]["Instances"]}
        assert general[1]["InstanceId"] in remaining, "general-2 holds a pinned local volume"
        assert general[0]["InstanceId"] not in remaining
        text = api.state.get("ConfigMap", "cluster-autoscaler-status", "kube-system")["data"]["status"]
        assert yaml.safe_load(text)["autoscalerStatus"] == "Running"

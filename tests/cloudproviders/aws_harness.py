"""The conformance harness for the AWS provider, over moto (``aws_world``).

``nvme`` launches i4i.2xlarge (8 vCPU, 64 GiB; its 1,875 GB instance store is overridden
by a max-capacity template tag of 1.9 TB, the path operators use for formatted size);
``general`` launches m5.xlarge through a launch configuration. Both are auto-discovered
by CA's tags. Launches lag (``WireFaults.lag_launches``), as on real AWS right after
SetDesiredCapacity, so requested instances show as placeholders.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from moto import mock_aws

from cloudproviders.interface import CloudProvider, Instance
from kube.model import Node
from tests.cloudproviders.aws_world import CLUSTER_TAGS, DISCOVERY, AwsWorld, aws_env
from tests.cloudproviders.conformance import GENERAL, NAMES, NVME, NVME_BYTES, FaultKind, Operation
from tests.factories import node

__all__ = ["AwsHarness", "aws_harness"]

_SHAPES = {"i4i.2xlarge": ("8", "64Gi"), "m5.xlarge": ("4", "16Gi")}
_OPERATIONS = {"increase": "SetDesiredCapacity", "delete": "TerminateInstanceInAutoScalingGroup"}
_NOT_FOUND = {"increase": "AutoScalingGroup name not found - null",
              "delete": "Instance Id not found - No managed instance found for instance ID: i-0"}


class AwsHarness:
    name = "aws"

    def __init__(self) -> None:
        self.world = AwsWorld()
        max_capacity_tag = f"k8s.io/cluster-autoscaler/node-template/label/{NAMES.max_capacity_label}"
        self.world.group(NVME, min_size=0, max_size=10, desired=0, instance_type="i4i.2xlarge",
                         tags={**CLUSTER_TAGS, max_capacity_tag: str(NVME_BYTES)})
        self.world.group(GENERAL, min_size=1, max_size=5, desired=2, instance_type="m5.xlarge",
                         launch_configuration=GENERAL, tags=CLUSTER_TAGS)
        self.world.faults.lag_launches = True
        self._provider = self.world.provider(discovery=[DISCOVERY])

    def provider(self) -> CloudProvider:
        return self._provider

    def node_for(self, instance: Instance) -> Node:
        instance_id = instance.id.rsplit("/", 1)[-1]
        cpu, memory = _SHAPES[self.world.instance_type_of(instance_id)]
        return dataclasses.replace(node(f"ip-{instance_id}", cpu, memory), provider_id=instance.id)

    def fail_next(self, operation: Operation, kind: FaultKind) -> None:
        code, status, message = {
            "capacity": ("InsufficientInstanceCapacity", 400, "We currently do not have sufficient capacity"),
            "quota": ("VcpuLimitExceeded", 400, "You have requested more vCPU capacity than your limit allows"),
            "throttle": ("Throttling", 400, "Rate exceeded"),
            "server": ("InternalFailure", 500, "An internal error occurred"),
            "notfound": ("ValidationError", 400, _NOT_FOUND[operation]),
        }[kind]
        self.world.faults.fail(_OPERATIONS[operation], status, code, message)


@contextmanager
def aws_harness() -> Iterator[AwsHarness]:
    with aws_env(), mock_aws():
        yield AwsHarness()

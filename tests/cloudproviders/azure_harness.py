"""The conformance harness for the Azure provider, over the Microsoft.Compute fake (``azure_world``).

``nvme`` is a Standard_L8s_v3 scale set (8 vCPU, 64 GiB, one 1.92 TB NVMe disk); its tag
``k8s.io_cluster-autoscaler_node-template_label_rok.arrikto.com_max-instance-capacity``
= 1900000000000 overrides the size's NVMe total. ``general`` is Standard_D4s_v5. Both
are static ``--nodes`` groups; the client talks plain http to 127.0.0.1 with a static
token; retries are recorded, never slept; long-running operations finish at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from cloudproviders.azure import AzureProvider
from cloudproviders.interface import CloudProvider, Instance
from kube.model import Node
from tests.cloudproviders.azure_world import azure_provider, standard_world
from tests.cloudproviders.conformance import FaultKind, Operation
from tests.cloudproviders.fakes.azure import FakeAzure
from tests.factories import node

__all__ = ["AzureHarness", "azure_harness"]

_SHAPES = {"nvme": ("8", "64Gi"), "general": ("4", "16Gi")}


class AzureHarness:
    name = "azure"

    def __init__(self, fake: FakeAzure) -> None:
        self.fake = fake
        self.sleeps: list[float] = []
        self._provider: AzureProvider = azure_provider(fake, self.sleeps)
        self._provider.refresh()

    def provider(self) -> CloudProvider:
        return self._provider

    def node_for(self, instance: Instance) -> Node:
        scale_set, instance_id = instance.id.split("/virtualMachineScaleSets/", 1)[1].split("/virtualMachines/")
        cpu, memory = _SHAPES[scale_set]
        return dataclasses.replace(node(f"{scale_set}{int(instance_id):06d}", cpu, memory), provider_id=instance.id)

    def fail_next(self, operation: Operation, kind: FaultKind) -> None:
        self.fake.fail_next(operation, kind)

    def close(self) -> None:
        self._provider.close()


@contextmanager
def azure_harness() -> Iterator[AzureHarness]:
    with FakeAzure() as fake:
        standard_world(fake)
        harness = AzureHarness(fake)
        try:
            yield harness
        finally:
            harness.close()

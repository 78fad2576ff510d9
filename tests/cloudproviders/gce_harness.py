"""The conformance harness for the GCE provider, over the compute v1 fake (``gce_world``).

``nvme`` runs n2-highmem-8 (8 vCPU, 64 GiB) with 4 local NVMe SSDs of 375 GiB
(1,610,612,736,000 bytes, which is what the template would say by itself); 1.9e12 is
not a multiple of 375 GiB, so the instance template's kube-env ``node_labels`` carries
the max-capacity label 1,900,000,000,000 (the formatted size a local-volume driver
reports), and that label wins over the SSD arithmetic. ``general`` runs n2-standard-4.
Both are static ``--nodes`` groups (``zone/name``); retries and operation polls are
recorded, never slept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from cloudproviders.gce import GceProvider
from cloudproviders.interface import CloudProvider, Instance
from kube.model import Node
from tests.cloudproviders.conformance import FaultKind, Operation
from tests.cloudproviders.fakes.gce import FakeGce
from tests.cloudproviders.gce_world import gce_provider, standard_world
from tests.factories import node

__all__ = ["GceHarness", "gce_harness"]

_SHAPES = {"nvme": ("8", "64Gi"), "general": ("4", "16Gi")}


class GceHarness:
    name = "gce"

    def __init__(self, fake: FakeGce) -> None:
        self.fake = fake
        self.sleeps: list[float] = []
        self._provider: GceProvider = gce_provider(fake, self.sleeps)
        self._provider.refresh()

    def provider(self) -> CloudProvider:
        return self._provider

    def node_for(self, instance: Instance) -> Node:
        name = instance.id.rsplit("/", 1)[-1]
        cpu, memory = _SHAPES[name.rsplit("-", 1)[0]]  # instances are named <mig>-<suffix>
        return dataclasses.replace(node(name, cpu, memory), provider_id=instance.id)

    def fail_next(self, operation: Operation, kind: FaultKind) -> None:
        self.fake.fail_next(operation, kind)

    def close(self) -> None:
        self._provider.close()


@contextmanager
def gce_harness() -> Iterator[GceHarness]:
    with FakeGce() as fake:
        standard_world(fake)
        harness = GceHarness(fake)
        try:
            yield harness
        finally:
            harness.close()

"""The conformance harness over the simulated cloud (``emulator.cloud.SimCloud``).

The world holds the two conformance groups; ``general``'s two nodes are registered from
the start and nothing advances the simulated clock, so requested nodes stay provisioning.
The emulator's groups list members as ``snapshot:///<group>/<node>`` and map nodes by
name, so ``node_for`` names the node after the ID's last segment. The simulated cloud's
faults are scenario-driven (``cloudFaults`` time windows) and its transient errors are
retried by the loop, not inside the provider as real SDK-backed providers do, so the
wire-level fault cases skip here; ``tests/emulator/test_cloud_faults.py`` covers them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cloudproviders.interface import CloudProvider, Instance
from emulator.world import World
from kube.model import Node
from tests.cloudproviders.conformance import GENERAL, NVME, NVME_BYTES, FaultKind, Operation
from tests.emulator.worlds import make_world
from tests.factories import node, node_group_json, node_json, template

__all__ = ["EmulatorHarness", "emulator_harness"]

_STANDARD = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
_NVME_LABELS = {**_STANDARD, "ng": NVME, "node.kubernetes.io/instance-type": "nvme-8x64"}
_GENERAL_LABELS = {**_STANDARD, "ng": GENERAL, "node.kubernetes.io/instance-type": "general-4x16"}
_SHAPES = {NVME: ("8", "64Gi", _NVME_LABELS), GENERAL: ("4", "16Gi", _GENERAL_LABELS)}


class EmulatorHarness:
    name = "emulator"

    def __init__(self) -> None:
        self.world: World = make_world(
            node_group_json(NVME, 0, 10, node_selector={"ng": NVME}, price=0.8,
                            template=template(cpu="8", memory="64Gi", labels=_NVME_LABELS, storage_max=NVME_BYTES)),
            node_group_json(GENERAL, 1, 5, node_selector={"ng": GENERAL}, price=0.2,
                            template=template(cpu="4", memory="16Gi", labels=_GENERAL_LABELS)),
            node_json(f"{GENERAL}-1", "4", "16Gi", labels=_GENERAL_LABELS),
            node_json(f"{GENERAL}-2", "4", "16Gi", labels=_GENERAL_LABELS),
        )

    def provider(self) -> CloudProvider:
        return self.world.cloud

    def node_for(self, instance: Instance) -> Node:
        _, group, name = instance.id.rsplit("/", 2)
        cpu, memory, labels = _SHAPES.get(group, ("4", "16Gi", _GENERAL_LABELS))
        return dataclasses.replace(node(name, cpu, memory, labels=labels), provider_id=instance.id)

    def fail_next(self, operation: Operation, kind: FaultKind) -> None:
        pytest.skip(f"emulator: faults are scenario time windows and retries are the loop's ({operation}/{kind}); "
                    "see tests/emulator/test_cloud_faults.py")


@contextmanager
def emulator_harness() -> Iterator[EmulatorHarness]:
    yield EmulatorHarness()

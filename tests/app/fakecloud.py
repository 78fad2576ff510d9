"""A tiny cloud behind the provider seam for ``run``'s end-to-end tests, over the fake API's nodes.

Registered as ``--cloud-provider=fake`` (the test adds it to ``cloudproviders.config.PROVIDERS``)
and found by ``--cloud-config=<key>`` in ``CLOUDS``. A group's members are the nodes whose
``spec.providerID`` is ``fake:///<group>/<node>``; raising the target records it (no node
appears, as while a real instance boots); deleting a node removes it from the API, as
the cloud's node controller would once the instance is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cloudproviders.config import ProviderConfig
from cloudproviders.interface import CloudError, CloudProvider, Instance, InstanceState, NodeGroup
from kube.model import Node, Pod
from tests.factories import node_json
from tests.fakeapi import FakeState

__all__ = ["CLOUDS", "FakeCloud", "build_provider"]

#: --cloud-config value -> the cloud a test prepared.
CLOUDS: dict[str, FakeCloud] = {}


def provider_id(group: str, node: str) -> str:
    return f"fake:///{group}/{node}"


@dataclass(slots=True)
class FakeGroup:
    cloud: FakeCloud
    name: str
    low: int
    high: int
    target: int = -1
    deleted: list[str] = field(default_factory=list)
    #: Messages of the next ``delete_nodes`` calls to refuse (``CloudError``), one per call.
    refusals: list[str] = field(default_factory=list)

    def members(self) -> list[str]:
        prefix = provider_id(self.name, "")
        return [n for n in self.cloud.state.names("Node")
                if str(self.cloud.state.get("Node", n)["spec"].get("providerID", "")).startswith(prefix)]

    def min_size(self) -> int:
        return self.low

    def max_size(self) -> int:
        return self.high

    def target_size(self) -> int:
        if self.target < 0:
            self.target = len(self.members())
        return self.target

    def instances(self) -> Sequence[Instance]:
        running = [Instance(provider_id(self.name, n), InstanceState.RUNNING) for n in self.members()]
        booting = [Instance(provider_id(self.name, f"booting-{i}"), InstanceState.CREATING)
                   for i in range(self.target_size() - len(running))]
        return running + booting

    def template_node(self) -> Node | None:
        return None

    def template_pods(self) -> tuple[Pod, ...]:
        return ()

    def increase_size(self, delta: int) -> None:
        if self.target_size() + delta > self.high:
            raise CloudError(f"group {self.name}: {self.target_size()}+{delta} is above max {self.high}")
        self.target += delta

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        if self.refusals:
            raise CloudError(self.refusals.pop(0))
        for node in nodes:
            if not node.provider_id.startswith(provider_id(self.name, "")):
                raise CloudError(f"group {self.name}: {node.name} is not a member")
        for node in nodes:
            self.cloud.state.remove("Node", node.name)
            self.deleted.append(node.name)
            self.target = self.target_size() - 1

    def decrease_target_size(self, delta: int) -> None:
        self.target = max(len(self.members()), self.target_size() + delta)


@dataclass(slots=True)
class FakeCloud:
    state: FakeState
    groups: dict[str, FakeGroup] = field(default_factory=dict)
    refreshes: int = 0

    @property
    def name(self) -> str:
        return "fake"

    def node_groups(self) -> Sequence[NodeGroup]:
        return list(self.groups.values())

    def node_group_for(self, node: Node) -> NodeGroup | None:
        parts = node.provider_id.removeprefix("fake:///").split("/")
        return self.groups.get(parts[0]) if node.provider_id.startswith("fake:///") else None

    def refresh(self) -> None:
        self.refreshes += 1


def build_provider(config: ProviderConfig) -> CloudProvider:
    cloud = CLOUDS.get(config.cloud_config or "")
    if cloud is None:
        raise CloudError(f"--cloud-config: no fake cloud {config.cloud_config!r}")
    for group in config.static_groups:
        cloud.groups[group.name] = FakeGroup(cloud, group.name, group.min_size, group.max_size)
    return cloud


def group_node(name: str, group: str) -> dict[str, Any]:
    """A Node object of ``group`` (8 cpu, 32Gi), its ``spec.providerID`` this cloud's."""
    obj = node_json(name, "8", "32Gi", labels={"ng": group})
    obj["spec"]["providerID"] = provider_id(group, name)
    return obj

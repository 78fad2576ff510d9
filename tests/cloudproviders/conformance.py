"""The contract every cloud provider's node groups keep, written once for all of them.

A provider plugs in with a ``Harness``: a fresh cloud holding two groups (below), a way
to turn an instance into the Node its kubelet would register, and fault injection at the
wire. ``test_conformance.py`` runs the same cases against every harness listed in
``harnesses.py``. The two groups:

* ``nvme``: min 0, max 10, size 0; an instance type of 8 vCPU and 64 GiB whose local
  NVMe disks total ``NVME_BYTES`` (the template carries it as the max-capacity label);
* ``general``: min 1, max 5, size 2 (two registered nodes); 4 vCPU, 16 GiB, no local disk.

A group's ``name`` equals those names or ends with ``"/" + name`` (clouds that qualify
group names by project/zone/resource group).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal, Protocol

from cloudproviders.interface import CloudProvider, Instance, InstanceState, NodeGroup
from kube.model import Node
from kube.names import StorageNames

__all__ = [
    "GENERAL",
    "GIB",
    "NAMES",
    "NVME",
    "NVME_BYTES",
    "FaultKind",
    "Harness",
    "Operation",
    "group_named",
    "live",
    "short_name",
    "unknown_node",
]

NVME = "nvme"
GENERAL = "general"
GIB = 2**30
#: Total local NVMe bytes of one ``nvme`` instance (the max-capacity label, in bytes).
NVME_BYTES = 1_900_000_000_000
NAMES = StorageNames()

Operation = Literal["increase", "delete"]
#: capacity: a stock-out; quota: an account/project quota; throttle: rate limited (retry);
#: server: a 5xx (retry); notfound: the group or instance is gone.
FaultKind = Literal["capacity", "quota", "throttle", "server", "notfound"]


class Harness(Protocol):
    """One provider under test, over a fresh fake cloud holding the two groups above."""

    #: The pytest id (``emulator``, ``aws``, ``gce``, ``azure``).
    name: str

    def provider(self) -> CloudProvider:
        """The provider under test (the same object on every call), refreshed once."""
        ...

    def node_for(self, instance: Instance) -> Node:
        """The Node the kubelet would register for ``instance``.

        ``spec.providerID`` is ``instance.id``; allocatable is the instance type's.
        """
        ...

    def fail_next(self, operation: Operation, kind: FaultKind) -> None:
        """The next call of ``operation`` fails once, at the wire, with an error of ``kind``.

        A harness whose fake cannot produce that fault calls ``pytest.skip`` with the reason.
        """
        ...


def short_name(group: NodeGroup) -> str:
    """The harness-level name of a group (``nvme``/``general``), whatever the cloud prefixes."""
    return group.name.rsplit("/", 1)[-1]


def group_named(provider: CloudProvider, name: str) -> NodeGroup:
    """The provider's group called ``name`` (exactly or as the last ``/`` segment)."""
    found = [g for g in provider.node_groups() if g.name == name or g.name.endswith("/" + name)]
    assert len(found) == 1, f"expected one group named {name!r}, got {[g.name for g in provider.node_groups()]}"
    return found[0]


def unknown_node(known: Node) -> Node:
    """A copy of ``known`` for an instance the cloud never had (its last ID segment replaced)."""
    prefix = known.provider_id.rsplit("/", 1)[0]
    return dataclasses.replace(known, name=f"{known.name}-stranger", provider_id=f"{prefix}/i-0123456789abcdef0",
                               labels={**known.labels, "kubernetes.io/hostname": f"{known.name}-stranger"})


def live(instances: Sequence[Instance]) -> list[Instance]:
    """Instances that are (or will be) nodes: not being deleted."""
    return [i for i in instances if i.state is not InstanceState.DELETING]

"""EKS managed node groups: what ``eks:DescribeNodegroup`` adds to a group's template.

CA's AWS provider (``aws_manager.go``, ``buildNodeFromTemplate``; ``aws_wrapper.go``,
``getManagedNodegroupInfo``; ``managed_nodegroup_cache.go``) calls DescribeNodegroup when the
template's labels name a node group and its cluster (the ``eks:nodegroup-name`` and
``eks:cluster-name`` tags EKS puts on the ASG), and takes from the answer:

* labels, which win over the ASG's: ``diskSize``, ``amiType``,
  ``eks.amazonaws.com/capacityType``, ``k8sVersion``, ``eks.amazonaws.com/nodegroup`` and
  the node group's own labels;
* taints, added to the ASG's (EKS writes effects as ``NO_SCHEDULE``; an unknown effect
  makes the whole answer unusable, as in CA);
* ``.../resources/<name>`` tags of the node group, which win over the ASG's.

Answers, and failures (no ``eks:DescribeNodegroup`` permission, say), are kept for six
minutes per node group, so a failing call is not repeated every loop; on failure the
template is built from the ASG alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cloudproviders.interface import CloudError
from kube.model import Taint

__all__ = ["MNG_CACHE_SECONDS", "ManagedNodegroup", "ManagedNodegroups"]

log = logging.getLogger(__name__)

#: CA ``managedNodegroupCachedTTL``.
MNG_CACHE_SECONDS = 6 * 60.0
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass(frozen=True, slots=True)
class ManagedNodegroup:
    """The parts of a ``DescribeNodegroup`` answer a template takes."""

    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_api(cls, raw: Mapping[str, Any]) -> ManagedNodegroup:
        """From the ``nodegroup`` of a DescribeNodegroup answer; ``ValueError`` for an effect EKS does not define."""
        labels: dict[str, str] = {}
        if raw.get("diskSize") is not None:
            labels["diskSize"] = str(int(raw["diskSize"]))
        for key, label in (("amiType", "amiType"), ("capacityType", "eks.amazonaws.com/capacityType"),
                           ("version", "k8sVersion"), ("nodegroupName", "eks.amazonaws.com/nodegroup")):
            if raw.get(key):
                labels[label] = str(raw[key])
        labels.update({str(k): str(v) for k, v in (raw.get("labels") or {}).items()})
        taints = []
        for taint in raw.get("taints") or []:
            if taint.get("key") is None or taint.get("value") is None:
                continue
            effect = _EFFECTS.get(str(taint.get("effect")))
            if effect is None:
                raise ValueError(f"taint {taint.get('key')!r} has effect {taint.get('effect')!r}")
            taints.append(Taint(str(taint["key"]), str(taint["value"]), effect))
        tags = {str(k): str(v) for k, v in (raw.get("tags") or {}).items()}
        return cls(labels, tuple(taints), tags)


class _NodegroupApi(Protocol):
    def nodegroup(self, cluster: str, nodegroup: str) -> Mapping[str, Any]: ...


class ManagedNodegroups:
    """DescribeNodegroup answers per (cluster, node group), kept ``MNG_CACHE_SECONDS``; failures kept as None."""

    def __init__(self, api: _NodegroupApi, clock: Callable[[], float]) -> None:
        self._api = api
        self._clock = clock
        self._known: dict[tuple[str, str], tuple[float, ManagedNodegroup | None]] = {}

    def get(self, cluster: str, nodegroup: str, *, group: str) -> ManagedNodegroup | None:
        key = (cluster, nodegroup)
        now = self._clock()
        cached = self._known.get(key)
        if cached is not None and now - cached[0] < MNG_CACHE_SECONDS:
            return cached[1]
        found: ManagedNodegroup | None = None
        try:
            found = ManagedNodegroup.from_api(self._api.nodegroup(cluster, nodegroup))
        except (CloudError, ValueError) as error:
            log.warning("EKS DescribeNodegroup failed; template from the ASG's tags only",
                        extra={"node_group": group, "cluster": cluster, "nodegroup": nodegroup, "error": str(error)})
        self._known[key] = (now, found)
        return found

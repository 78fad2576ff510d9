"""``node_taints_count``'s ``type`` label: a taint key as CA reports it (``utils/taints/taints.go``).

CA's own taints and the node-condition taints are reported by key; the deprecated
``ignore-taint.cluster-autoscaler.kubernetes.io/`` prefix by the prefix; startup taints
(``--ignore-taint``/``--startup-taint``/``--status-taint`` here, and the startup prefix) as
``startup-taint``; anything else as ``other``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kube.model import Node
from kube.names import CA_DELETION_CANDIDATE_TAINT, CA_TO_BE_DELETED_TAINT

__all__ = ["taint_counts"]

IGNORE_TAINT_PREFIX = "ignore-taint.cluster-autoscaler.kubernetes.io/"
STARTUP_TAINT_PREFIX = "startup-taint.cluster-autoscaler.kubernetes.io/"
_REPORTED_BY_KEY = frozenset({
    CA_TO_BE_DELETED_TAINT, CA_DELETION_CANDIDATE_TAINT,
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable", "node.kubernetes.io/pid-pressure",
})


def taint_type(key: str, startup: frozenset[str]) -> str:
    if key.startswith(IGNORE_TAINT_PREFIX):
        return IGNORE_TAINT_PREFIX
    if key in _REPORTED_BY_KEY:
        return key
    if key in startup or key.startswith(STARTUP_TAINT_PREFIX):
        return "startup-taint"
    return "other"


def taint_counts(nodes: Iterable[Node], startup: Iterable[str]) -> Counter[str]:
    """How many taints of each reported type the nodes carry."""
    keys = frozenset(startup)
    return Counter(taint_type(t.key, keys) for n in nodes for t in n.taints)

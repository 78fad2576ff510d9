"""What a refused object still tells about where its data lives, read leniently from raw JSON.

``plan`` refuses bad input; the live view drops an object the converter refuses (one
log line) and keeps the rest. A dropped PersistentVolume or claim must not make the
node holding its data look free (storage-semantics 3.8), so before it is dropped this
module reads what it can: a pod's ``spec.nodeName``, a claim's key, and every string
a PV's node affinity names, whatever the shape around them. The decision code keeps
every node those strings could select (``autoscaler/scaledown/unreadable.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kube.model import Unreadable

__all__ = ["unreadable_of"]

#: Walk no deeper than this into a hostile affinity.
_MAX_DEPTH = 12


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _values(node: object, depth: int = 0) -> Iterator[str]:
    """Every string in a ``values`` list anywhere below ``node`` (match expressions and fields alike)."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, dict):
        for key, child in node.items():
            if key == "values" and isinstance(child, list):
                yield from (v for v in child if isinstance(v, str))
            else:
                yield from _values(child, depth + 1)
    elif isinstance(node, list):
        for child in node:
            yield from _values(child, depth + 1)


def _affinity_values(spec: dict[str, Any]) -> frozenset[str] | None:
    affinity = spec.get("nodeAffinity")
    if affinity is None:
        return frozenset()  # not pinned: a network volume, or a hostPath PV (upstream ignores those too)
    if not isinstance(affinity, dict):
        return None
    found = frozenset(_values(affinity))
    return found if found else None


def unreadable_of(kind: str, obj: dict[str, Any], message: str) -> Unreadable:
    """The refused ``obj`` of ``kind`` as far as it can be read; never raises."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, namespace = _text(meta.get("name")) or "?", _text(meta.get("namespace"))
    ref = f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if kind in ("Pod", "VolumeAttachment"):
        return Unreadable(kind, ref, message, node_name=_text(spec.get("nodeName")))
    if kind == "PersistentVolumeClaim":
        return Unreadable(kind, ref, message, claim=(namespace or "default", name))
    if kind == "PersistentVolume":
        readable = isinstance(obj.get("spec"), dict)
        return Unreadable(kind, ref, message, affinity_values=_affinity_values(spec) if readable else None)
    return Unreadable(kind, ref, message)

"""PersistentVolumes and claims decoded straight into the model, as ``kube.typedpods`` does pods.

A 5,000-node snapshot has some 40,000 of them; through dicts each costs the full
field-by-field reading of ``kube.convert.storage`` plus the identity checks. Here the
scalars are typed in the Structs (msgspec checks them in C) and a PV's node affinity
stays undecoded bytes, converted by the checked reader once per distinct value.

Whatever these Structs refuse, or the checks below find wrong, raises, and the caller
reads the input through the dict path, whose one-line error names the file, object and
field. The result equals ``convert_pv`` / ``convert_pvc`` of the same object, and the
identity the converter records is the one its ``_unique`` would (the differential tests
in ``tests/kube`` hold both).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from kube.convert.fields import as_map, parse_time, qty
from kube.convert.memo import Memo, Memos
from kube.convert.resources import resource_list
from kube.convert.selectors import node_selector
from kube.convert.storage import (
    ACCESS_MODES,
    RECLAIM_POLICIES,
    SELECTED_NODE_ANNOTATION,
    access_modes,
    zone_labels,
)
from kube.model import NodeSelector, PersistentVolume, PersistentVolumeClaim
from kube.rawfields import ABSENT, Declined, decode_any

__all__ = ["VolumeDecoder"]


# gc=False: short-lived decoding records holding strings and dicts of strings (no cycles).
class _Meta(Struct, frozen=True, gc=False):
    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    creationTimestamp: str | None = None  # noqa: N815 (the API's field names)
    ownerReferences: Raw = ABSENT  # noqa: N815


class _Status(Struct, frozen=True, gc=False):
    phase: str | None = None


class _ClaimResources(Struct, frozen=True, gc=False):
    requests: dict[str, Any] | None = None
    limits: Any = None


class _ClaimSpec(Struct, frozen=True, gc=False):
    storageClassName: str | None = None  # noqa: N815
    accessModes: tuple[str, ...] | None = None  # noqa: N815
    resources: _ClaimResources | None = None
    volumeName: str | None = None  # noqa: N815


class _Claim(Struct, frozen=True, gc=False):
    apiVersion: str | None = None  # noqa: N815
    metadata: _Meta | None = None
    spec: _ClaimSpec | None = None
    status: _Status | None = None


class _ClaimRef(Struct, frozen=True, gc=False):
    namespace: str | None = None
    name: str | None = None


class _CSISource(Struct, frozen=True, gc=False):
    driver: str | None = None
    volumeHandle: str | None = None  # noqa: N815


class _VolumeSpec(Struct, frozen=True, gc=False):
    storageClassName: str | None = None  # noqa: N815
    capacity: dict[str, Any] | None = None
    accessModes: tuple[str, ...] | None = None  # noqa: N815
    claimRef: _ClaimRef | None = None  # noqa: N815
    persistentVolumeReclaimPolicy: str | None = None  # noqa: N815
    # Presence decides the driver, even when null (the dict path tests ``"csi" in spec``).
    csi: _CSISource | UnsetType | None = UNSET
    local: Any = UNSET
    hostPath: Any = UNSET  # noqa: N815
    nodeAffinity: Raw = ABSENT  # noqa: N815


class _Volume(Struct, frozen=True, gc=False):
    apiVersion: str | None = None  # noqa: N815
    metadata: _Meta | None = None
    spec: _VolumeSpec | None = None
    status: _Status | None = None


_NO_CLAIM_SPEC, _NO_VOLUME_SPEC, _NO_STATUS = _ClaimSpec(), _VolumeSpec(), _Status()


class VolumeDecoder:
    """JSON PVs and PVCs into the model, with the identity checks ``Converter._unique`` makes."""

    def __init__(self, memos: Memos) -> None:
        self.memos = memos
        self._claim = msgspec.json.Decoder(_Claim).decode
        self._volume = msgspec.json.Decoder(_Volume).decode
        self._affinities: Memo[bytes, NodeSelector | None] = Memo()

    def _identity(self, meta: _Meta | None) -> tuple[_Meta, str]:
        """The metadata and its name, checked as every kind's (creation time included)."""
        if meta is None or not meta.name:
            raise Declined
        if meta.creationTimestamp is not None:
            parse_time(meta.creationTimestamp, "metadata.creationTimestamp", self.memos.times)
        return meta, meta.name

    def claim(self, raw: bytes | Raw) -> tuple[PersistentVolumeClaim, str]:
        """The claim and its namespace as written (``""`` when absent, where the model says ``default``)."""
        doc = self._claim(raw)
        meta, name = self._identity(doc.metadata)
        spec = doc.spec or _NO_CLAIM_SPEC
        resources = spec.resources
        storage = None
        if resources is not None:
            storage = (resources.requests or {}).get("storage")
            if resources.limits is not None:
                resource_list(resources.limits, "spec.resources.limits")
        controller_uid = None
        if len(meta.ownerReferences):
            refs = decode_any(meta.ownerReferences)
            # As loose as the dict path (``kube.convert.storage.convert_pvc``): a ref that
            # is not a map fails there as an unreadable object, and here it declines.
            controller_uid = next((str(ref.get("uid") or "") for ref in refs or () if ref.get("controller")), None)
        return PersistentVolumeClaim(
            meta.namespace or "default",
            name,
            spec.storageClassName,
            qty(storage, "spec.resources.requests.storage") if storage is not None else 0,
            spec.volumeName or "",
            (doc.status or _NO_STATUS).phase or "Pending",
            _known_modes(spec.accessModes),
            controller_uid,
            (meta.annotations or {}).get(SELECTED_NODE_ANNOTATION, ""),
        ), meta.namespace or ""

    def volume(self, raw: bytes | Raw) -> tuple[PersistentVolume, str]:
        """The PV and the namespace its identity is recorded under (as written, usually empty)."""
        doc = self._volume(raw)
        meta, name = self._identity(doc.metadata)
        spec = doc.spec or _NO_VOLUME_SPEC
        storage = (spec.capacity or {}).get("storage")
        policy = spec.persistentVolumeReclaimPolicy
        if policy is not None and policy not in RECLAIM_POLICIES:
            raise Declined
        if spec.csi is not UNSET:
            driver = (spec.csi.driver if spec.csi is not None else None) or ""
        elif spec.local is not UNSET:
            driver = "local"
        elif spec.hostPath is not UNSET:
            driver = "hostPath"
        else:
            driver = ""
        ref = spec.claimRef
        claim = None if ref is None else (ref.namespace or "default", ref.name or "")
        return PersistentVolume(
            name,
            spec.storageClassName,
            qty(storage, "spec.capacity.storage") if storage is not None else 0,
            self._affinity(spec.nodeAffinity),
            claim,
            (doc.status or _NO_STATUS).phase or "Available",
            _known_modes(spec.accessModes),
            driver,
            zone_labels(meta.labels or {}),
        ), meta.namespace or ""

    def _affinity(self, raw: Raw) -> NodeSelector | None:
        if not len(raw):
            return None
        key = bytes(raw)
        try:
            return self._affinities[key]
        except KeyError:
            required = as_map(decode_any(raw), "spec.nodeAffinity").get("required")
            notes: list[tuple[str, str]] = []
            selector = node_selector(required, "spec.nodeAffinity.required", notes)
            if notes:
                raise Declined from None  # read leniently: the dict path's converter warns about it
            return self._affinities.put(key, selector)


def _known_modes(modes: tuple[str, ...] | None) -> tuple[str, ...]:
    """Access modes as the dict path reads them; one it reads leniently (and warns about) declines."""
    out = access_modes(None if modes is None else list(modes))
    if any(mode not in ACCESS_MODES for mode in out):
        raise Declined
    return out

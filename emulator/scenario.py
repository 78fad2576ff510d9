"""Scenario files: a cluster snapshot plus a timeline of what happens to it.

A scenario is one YAML file of many documents in the plan snapshot format
(``docs/plan-contract.md``: Nodes, Pods, PVCs, PVs, StorageClasses, PDBs,
controllers, ``NodeGroup`` objects) plus exactly one ``Scenario`` object::

    apiVersion: autoscaler.storage.dev/v1alpha1
    kind: Scenario
    metadata: {name: storage-scale-up}
    spec:
      start: "2026-06-01T00:00:00Z"   # optional, RFC 3339
      duration: 1h                    # Go-style durations: 90s, 15m, 2h, 1h30m
      scanInterval: 10s               # how often the autoscaler loop runs
      provisioningDelay: 2m           # cloud: from increase_size to a Ready node
      storageDriverStartDelay: 1m     # node registered -> capacity annotation written
      unpinSecondsPerGiB: 0.5         # snapshotting a volume to remote storage, per GiB
      cloudFaults:                    # optional: what the cloud gets wrong, per group and window
      - {group: nvme, kind: OutOfCapacity, from: 5m, until: 20m}   # new instances fail (a stock-out)
      - {group: nvme, kind: Quota, from: 0s, until: 10m}           # increase_size raises QuotaExceeded
      - {group: general, kind: Transient, times: 2}                # the next 2 increase_size calls raise
      - {group: general, kind: SlowProvisioning, provisioningDelay: 20m}  # boots take this long
      storageDriverFaults:            # optional: what the storage driver gets wrong (group: "" = all)
      - {group: nvme, kind: SlowUnpin, unpinSecondsPerGiB: 5, from: 0s, until: 1h}  # snapshots crawl
      - {group: nvme, kind: StuckUnpin, from: 10m, until: 40m}     # nothing is unpinned in the window
      - {kind: NoGuard}                                            # no guard pods or budgets anywhere
      - {group: nvme, kind: NoDriver, from: 0s, until: 30m}        # no driver: no unpin, no guard
      events:
      - at: 10m
        create: [<objects>]
        delete: [{kind: Deployment, namespace: default, name: web}]
        scale: {kind: StatefulSet, namespace: default, name: kafka, replicas: 6}

``load_scenario`` validates the ``Scenario`` object with pydantic and returns the
other objects as raw dicts; ``emulator.world.World`` converts them once through
``kube.convert``. Bad input raises ``kube.convert.InputError`` naming the
file, ``Scenario/<name>`` and the field, as ``plan`` does for snapshots.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from emulator.scenario_documents import documents, flatten
from emulator.typed_scenario import ScenarioObjects, split_json_list
from kube.convert import InputError, object_ref
from kube.documents import read_bytes, read_text
from kube.duration import parse_duration

__all__ = [
    "DEFAULT_START",
    "SCENARIO_API",
    "CloudFault",
    "DriverFault",
    "DriverFaultKind",
    "FaultKind",
    "ObjectKey",
    "ScaleAction",
    "Scenario",
    "ScenarioEvent",
    "load_scenario",
    "parse_duration",
    "parse_scenario",
]

Json = dict[str, Any]

SCENARIO_API = "autoscaler.storage.dev/v1alpha1"
SCENARIO_KIND = "Scenario"
DEFAULT_START = "2026-06-01T00:00:00Z"
#: Workload kinds a ``scale`` event can resize.
SCALABLE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet")

def _duration(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"{value!r} is not a duration string (expected e.g. 90s, 15m, 2h, 1h30m)")
    # Scenario durations are plain Go durations: no sign, no bare numbers.
    return parse_duration(value.strip())


Duration = Annotated[float, BeforeValidator(_duration)]


def _rfc3339(value: object) -> float:
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not an RFC 3339 time (e.g. {DEFAULT_START})") from None
    else:
        raise ValueError(f"{value!r} is not an RFC 3339 time (e.g. {DEFAULT_START})")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


Time = Annotated[float, BeforeValidator(_rfc3339)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


class _ScaleModel(_Model):
    kind: str
    namespace: str = "default"
    name: str = Field(min_length=1)
    replicas: int = Field(ge=0, strict=True)

    @field_validator("kind")
    @classmethod
    def _scalable(cls, kind: str) -> str:
        if kind not in SCALABLE_KINDS:
            raise ValueError(f"{kind!r} cannot be scaled (one of {', '.join(SCALABLE_KINDS)})")
        return kind


class _DeleteModel(_Model):
    kind: str = Field(min_length=1)
    namespace: str = ""
    name: str = Field(min_length=1)


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, dict) else value


class _EventModel(_Model):
    at: Duration
    create: list[Json] = Field(default_factory=list)
    delete: list[_DeleteModel] = Field(default_factory=list)
    #: One ``{kind, namespace, name, replicas}`` or a list of them.
    scale: Annotated[list[_ScaleModel], BeforeValidator(_one_or_many)] = Field(default_factory=list)


class FaultKind(StrEnum):
    """What the simulated cloud gets wrong for a group during a fault's window."""

    #: Instances requested in the window are created failed (``OutOfCapacity``), as a
    #: stock-out shows on AWS, GCE and Azure: the resize is accepted, the VMs never come.
    OUT_OF_CAPACITY = "OutOfCapacity"
    #: ``increase_size`` raises ``QuotaExceeded`` and changes nothing.
    QUOTA = "Quota"
    #: ``increase_size`` raises ``Transient`` (throttled), ``times`` times in all.
    TRANSIENT = "Transient"
    #: Instances requested in the window take ``provisioningDelay`` to register.
    SLOW_PROVISIONING = "SlowProvisioning"


class DriverFaultKind(StrEnum):
    """What the simulated storage driver (or its operator) gets wrong on a group's nodes during a window."""

    #: Unpinning takes ``unpinSecondsPerGiB`` (of the fault) per GiB instead of the scenario's.
    SLOW_UNPIN = "SlowUnpin"
    #: The driver runs (capacity reported, guards kept) but unpins nothing in the window.
    STUCK_UNPIN = "StuckUnpin"
    #: The driver unpins as usual but its operator keeps no guard pod or budget there.
    NO_GUARD = "NoGuard"
    #: No driver and no guard: nothing is unpinned, nothing guards the node.
    NO_DRIVER = "NoDriver"


class _DriverFaultModel(_Model):
    #: Empty: every node.
    group: str = ""
    kind: DriverFaultKind
    start: Duration = Field(alias="from", default=0.0)
    until: Duration | None = None
    unpin_seconds_per_gib: float | None = Field(alias="unpinSecondsPerGiB", default=None, ge=0, allow_inf_nan=False)


class _FaultModel(_Model):
    group: str = Field(min_length=1)
    kind: FaultKind
    start: Duration = Field(alias="from", default=0.0)
    #: Default: the end of the scenario.
    until: Duration | None = None
    times: int = Field(default=1, ge=1, strict=True)
    provisioning_delay: Duration | None = Field(alias="provisioningDelay", default=None, ge=0)


class _SpecModel(_Model):
    start: Time = Field(default=DEFAULT_START, validate_default=True)
    duration: Duration = Field(gt=0)
    scan_interval: Duration = Field(alias="scanInterval", gt=0)
    provisioning_delay: Duration = Field(alias="provisioningDelay", ge=0)
    storage_driver_start_delay: Duration = Field(alias="storageDriverStartDelay", ge=0)
    unpin_seconds_per_gib: float = Field(alias="unpinSecondsPerGiB", ge=0, allow_inf_nan=False)
    volume_detach_delay: Duration = Field(alias="volumeDetachDelay", default=10.0, ge=0)
    cloud_faults: list[_FaultModel] = Field(alias="cloudFaults", default_factory=list)
    storage_driver_faults: list[_DriverFaultModel] = Field(alias="storageDriverFaults", default_factory=list)
    events: list[_EventModel] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ScaleAction:
    kind: str
    namespace: str
    name: str
    replicas: int


@dataclass(frozen=True, slots=True)
class ObjectKey:
    """An object to delete; ``namespace`` is ignored for cluster-scoped kinds."""

    kind: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class ScenarioEvent:
    #: Seconds after the scenario's start.
    at: float
    #: Raw Kubernetes objects to create (converted by the world).
    create: tuple[Json, ...] = ()
    delete: tuple[ObjectKey, ...] = ()
    scale: tuple[ScaleAction, ...] = ()
    #: Position in ``spec.events``, for error messages.
    index: int = 0


@dataclass(frozen=True, slots=True)
class CloudFault:
    """A fault of the simulated cloud (``FaultKind``) for ``group`` from ``start`` until ``end``."""

    group: str
    kind: FaultKind
    #: Seconds after the scenario's start; the window is [start, end).
    start: float
    end: float
    #: ``Transient``: how many calls fail.
    times: int = 1
    #: ``SlowProvisioning``: seconds from request to a registered node.
    provisioning_delay: float = 0.0
    #: Position in ``spec.cloudFaults``, for error messages.
    index: int = 0


@dataclass(frozen=True, slots=True)
class DriverFault:
    """A fault of the simulated storage driver on ``group``'s nodes ("" for all) in [start, end)."""

    group: str
    kind: DriverFaultKind
    #: Seconds after the scenario's start.
    start: float
    end: float
    #: ``SlowUnpin``: seconds per GiB.
    unpin_seconds_per_gib: float = 0.0
    #: Position in ``spec.storageDriverFaults``, for error messages.
    index: int = 0


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    #: The file it came from (error messages name it).
    source: str
    #: Every object but the Scenario, as raw dicts in file order.
    objects: tuple[Json, ...]
    #: Seconds since the epoch.
    start: float
    duration: float
    scan_interval: float
    provisioning_delay: float
    storage_driver_start_delay: float
    unpin_seconds_per_gib: float
    #: Sorted by time (stable: file order among equal times).
    events: tuple[ScenarioEvent, ...] = ()
    cloud_faults: tuple[CloudFault, ...] = ()
    storage_driver_faults: tuple[DriverFault, ...] = ()
    #: Seconds from the last running pod on a node using a network volume to its VolumeAttachment's
    #: removal (``emulator/attach_detach.py``).
    volume_detach_delay: float = 10.0
    #: A JSON ``List`` file's objects, undecoded (``emulator.typed_scenario``); then ``objects`` is
    #: empty. ``emulator.objects.prepare_scenario`` reads either.
    typed: ScenarioObjects | None = None

    @property
    def end(self) -> float:
        return self.start + self.duration

    @property
    def ref(self) -> str:
        return f"{SCENARIO_KIND}/{self.name}"


#: The C loader ``plan`` reads snapshots with (kube.documents), when PyYAML was built with libyaml.
def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _message(error: Any) -> str:
    msg = str(error.get("msg", "invalid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    if error.get("type") == "missing":
        return "required"
    if error.get("type") == "extra_forbidden":
        return "unknown field"
    return msg


def parse_scenario(docs: list[Json], source: str) -> Scenario:
    """Split objects from the one Scenario object and validate it."""
    found = [d for d in docs if d.get("kind") == SCENARIO_KIND]
    if not found:
        raise InputError(source, "", "", f"no {SCENARIO_KIND} object (apiVersion {SCENARIO_API}) in the file")
    if len(found) > 1:
        raise InputError(source, object_ref(found[1]), "",
                         f"a file holds exactly one {SCENARIO_KIND} object, found {len(found)}")
    raw = found[0]
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    raw_name = (meta or {}).get("name")
    if raw_name is not None and not isinstance(raw_name, str):
        raise InputError(source, f"{SCENARIO_KIND}/?", "metadata.name", f"expected a string, got {raw_name!r:.40}")
    name = raw_name or ""
    ref = f"{SCENARIO_KIND}/{name or '?'}"
    if raw.get("apiVersion") != SCENARIO_API:
        raise InputError(source, ref, "apiVersion", f"expected {SCENARIO_API}, got {raw.get('apiVersion')!r}")
    if not name:
        raise InputError(source, ref, "metadata.name", "required")
    spec_raw = raw.get("spec")
    if not isinstance(spec_raw, dict):
        raise InputError(source, ref, "spec", "required (a map)")
    try:
        spec = _SpecModel.model_validate(spec_raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(source, ref, _field_path(("spec", *first["loc"])), _message(first)) from None
    events = []
    for i, ev in enumerate(spec.events):
        if ev.at > spec.duration:
            raise InputError(source, ref, f"spec.events[{i}].at",
                             f"{ev.at:g}s is after the scenario's duration ({spec.duration:g}s)")
        for j, obj in enumerate(ev.create):
            if not obj.get("kind"):
                raise InputError(source, ref, f"spec.events[{i}].create[{j}].kind", "required")
        events.append(ScenarioEvent(
            at=ev.at,
            create=tuple(ev.create),
            delete=tuple(ObjectKey(d.kind, d.namespace, d.name) for d in ev.delete),
            scale=tuple(ScaleAction(s.kind, s.namespace, s.name, s.replicas) for s in ev.scale),
            index=i,
        ))
    events.sort(key=lambda e: e.at)
    return Scenario(
        name=name,
        source=source,
        objects=tuple(d for d in docs if d is not raw),
        start=spec.start,
        duration=spec.duration,
        scan_interval=spec.scan_interval,
        provisioning_delay=spec.provisioning_delay,
        storage_driver_start_delay=spec.storage_driver_start_delay,
        unpin_seconds_per_gib=spec.unpin_seconds_per_gib,
        events=tuple(events),
        cloud_faults=_faults(spec, source, ref),
        storage_driver_faults=_driver_faults(spec, source, ref),
        volume_detach_delay=spec.volume_detach_delay,
    )


def _fault_end(spec: _SpecModel, start: float, until: float | None, where: str, *, source: str, ref: str) -> float:
    """A fault's end (the run's, without ``until``), after its start."""
    end = spec.duration if until is None else until
    if end <= start:
        raise InputError(source, ref, f"{where}.until", f"{end:g}s is not after from ({start:g}s)")
    return end


def _only_for(kind: str, wanted: str, given: bool, field: str, *, source: str, ref: str) -> None:
    """``field`` is required for the ``wanted`` kind of fault, and refused for any other."""
    if (kind == wanted) != given:
        raise InputError(source, ref, field, f"required for {wanted}" if not given
                         else f"only {wanted} takes it, not {kind}")


def _faults(spec: _SpecModel, source: str, ref: str) -> tuple[CloudFault, ...]:
    faults = []
    for i, f in enumerate(spec.cloud_faults):
        where = f"spec.cloudFaults[{i}]"
        end = _fault_end(spec, f.start, f.until, where, source=source, ref=ref)
        _only_for(f.kind.value, FaultKind.SLOW_PROVISIONING.value, f.provisioning_delay is not None,
                  f"{where}.provisioningDelay", source=source, ref=ref)
        faults.append(CloudFault(f.group, f.kind, f.start, end, f.times, f.provisioning_delay or 0.0, i))
    return tuple(faults)


def _driver_faults(spec: _SpecModel, source: str, ref: str) -> tuple[DriverFault, ...]:
    faults = []
    for i, f in enumerate(spec.storage_driver_faults):
        where = f"spec.storageDriverFaults[{i}]"
        end = _fault_end(spec, f.start, f.until, where, source=source, ref=ref)
        _only_for(f.kind.value, DriverFaultKind.SLOW_UNPIN.value, f.unpin_seconds_per_gib is not None,
                  f"{where}.unpinSecondsPerGiB", source=source, ref=ref)
        faults.append(DriverFault(f.group, f.kind, f.start, end, f.unpin_seconds_per_gib or 0.0, i))
    return tuple(faults)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; raises ``InputError`` on bad input.

    A JSON ``List`` keeps its objects undecoded for the typed decoders (``emulator.typed_scenario``);
    anything else, or what that path declines, is read into dicts.
    """
    source = str(path)
    if source != "-":
        split = split_json_list(read_bytes(source))
        if split is not None:
            scenario_object, objects = split
            return dataclasses.replace(parse_scenario([scenario_object], source), typed=objects)
    text = read_text(source)
    docs: list[Json] = []
    for doc in documents(source, text):
        flatten(doc, source, docs)
    return parse_scenario(docs, source)

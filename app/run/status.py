"""The ``cluster-autoscaler-status`` ConfigMap's text, in upstream CA's current (YAML) format.

The structure is CA's ``clusterstate/api.ClusterAutoscalerStatus``: ``time``,
``autoscalerStatus``, ``clusterWide`` (health with node counts, scaleUp, scaleDown)
and ``nodeGroups`` (the same per group, with ``cloudProviderTarget``, ``minSize`` and
``maxSize``), each condition with ``lastProbeTime`` and ``lastTransitionTime``. Tools
that parse CA's ConfigMap read ours. Health follows CA's ``--ok-total-unready-count``
and ``--max-total-unready-percentage`` (``HealthRule``; 3 and 45 by default). ``StatusTracker`` keeps the
transition times between loops; the text is built from the loop's decision, the
cloud's groups and the listed nodes, with no I/O of its own.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from autoscaler.scaledown.types import Unremovable
from autoscaler.scaledown.unreadable import unreadable_protection
from cloudproviders.interface import CloudError, NodeGroup
from kube.model import ClusterObjects

__all__ = ["DrainView", "GroupView", "HealthRule", "NodeView", "StatusTracker", "UnpinThroughputView", "group_views",
           "health_ok", "unreadable_message"]

#: Unremovable nodes listed in the status (a ConfigMap holds at most 1 MiB).
MAX_UNREMOVABLE_LISTED = 100

#: CA's initial node group backoff after a failed scale-up.
INITIAL_BACKOFF_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class NodeView:
    """What the status needs of a node: its group and its readiness (``Readiness`` value)."""

    name: str
    group: str | None
    readiness: str


@dataclass(frozen=True, slots=True)
class DrainView:
    """A node being drained for removal (or, with ``--dry-run``, chosen): what it unpins and until when."""

    name: str
    unpin_bytes: int
    #: The predicted unpin time (s): the bytes over the throughput the plan assumed.
    unpin_seconds: float
    #: When the drain is given up (seconds since the epoch): its start plus its drain deadline.
    deadline: float


@dataclass(frozen=True, slots=True)
class UnpinThroughputView:
    """The unpin throughput the drain deadlines assume, and whether drains were observed."""

    bytes_per_second: float
    #: Drains the estimate counted (``autoscaler/scaledown/throughput.py``); 0: the flag.
    observed_drains: int = 0


@dataclass(frozen=True, slots=True)
class GroupView:
    name: str
    min_size: int
    max_size: int
    target: int

    @classmethod
    def of(cls, group: NodeGroup) -> GroupView:
        return cls(group.name, group.min_size(), group.max_size(), group.target_size())


def _counts(nodes: Sequence[NodeView], target: int | None) -> dict[str, Any]:
    ready = sum(1 for n in nodes if n.readiness == "Ready")
    not_started = sum(1 for n in nodes if n.readiness == "NotStarted")
    unready = sum(1 for n in nodes if n.readiness == "Unready")
    deleting = sum(1 for n in nodes if n.readiness == "Deleting")
    registered: dict[str, Any] = {"total": len(nodes), "ready": ready, "notStarted": not_started}
    if deleting:
        registered["beingDeleted"] = deleting
    registered["unready"] = {"total": unready, "resourceUnready": 0}
    unregistered = max(0, target - (len(nodes) - deleting)) if target is not None else 0
    return {"registered": registered, "longUnregistered": 0, "unregistered": unregistered}


@dataclass(frozen=True, slots=True)
class HealthRule:
    """CA's health rule (``clusterstate``): unready nodes within max(count, percentage of registered)."""

    #: ``--ok-total-unready-count``.
    ok_total_unready_count: int = 3
    #: ``--max-total-unready-percentage``.
    max_total_unready_percentage: float = 45.0


def health_ok(nodes: Sequence[NodeView], rule: HealthRule = HealthRule()) -> bool:
    """Whether ``nodes`` are healthy under ``rule`` (CA's defaults: max(3, 45% of registered))."""
    unready = sum(1 for n in nodes if n.readiness == "Unready")
    return unready <= max(rule.ok_total_unready_count, rule.max_total_unready_percentage / 100 * len(nodes))


def _rfc3339(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _go_time(now: float) -> str:
    """Go's ``time.Time.String()`` in UTC, as CA writes the top-level ``time``."""
    stamp = dt.datetime.fromtimestamp(now, dt.UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d} +0000 UTC"


@dataclass(slots=True)
class StatusTracker:
    """Builds the status text each loop and remembers when each condition last changed."""

    health: HealthRule = field(default_factory=HealthRule)
    #: (group or "" for cluster-wide, condition) -> (status, since).
    _since: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)
    #: group -> (until, errorCode, errorMessage) of the backoff after a failed scale-up.
    _backoff: dict[str, tuple[float, str, str]] = field(default_factory=dict)

    def scale_up_failed(self, group: str, now: float, code: str, message: str) -> None:
        self._backoff[group] = (now + INITIAL_BACKOFF_SECONDS, code, message[:500])

    def backed_off(self, group: str, now: float) -> bool:
        entry = self._backoff.get(group)
        return entry is not None and now < entry[0]

    def _condition(self, key: tuple[str, str], status: str, now: float, **extra: Any) -> dict[str, Any]:
        previous = self._since.get(key)
        since = previous[1] if previous is not None and previous[0] == status else now
        self._since[key] = (status, since)
        return {"status": status, **extra, "lastProbeTime": _rfc3339(now), "lastTransitionTime": _rfc3339(since)}

    def text(self, now: float, nodes: Sequence[NodeView], groups: Iterable[GroupView],
             unneeded: Sequence[str], message: str = "", *, unremovable: Sequence[Unremovable] = (),
             drains: Sequence[DrainView] = (), throughput: UnpinThroughputView | None = None) -> str:
        """The ConfigMap's ``status`` value for this loop.

        Beyond CA's format, ``clusterWide.scaleDown.unremovableNodes`` lists each node scale-down
        keeps, with its reason and what blocks it (the first ``MAX_UNREMOVABLE_LISTED`` by name);
        ``drainingNodes`` each node being drained, with its bytes to unpin, their predicted unpin
        time and its drain deadline; ``unpinThroughput`` the throughput those deadlines assume.
        """
        unneeded_set = set(unneeded)
        group_list = sorted(groups, key=lambda g: g.name)
        by_group: dict[str, list[NodeView]] = {}
        for node in nodes:
            if node.group is not None:
                by_group.setdefault(node.group, []).append(node)
        group_entries: list[dict[str, Any]] = []
        any_in_progress = False
        for group in group_list:
            members = by_group.get(group.name, [])
            live = [n for n in members if n.readiness != "Deleting"]
            in_progress = group.target > len(live)
            any_in_progress = any_in_progress or in_progress
            healthy = health_ok(members, self.health)
            health = self._condition((group.name, "health"), "Healthy" if healthy else "Unhealthy", now,
                                     nodeCounts=_counts(members, group.target),
                                     cloudProviderTarget=group.target, minSize=group.min_size,
                                     maxSize=group.max_size)
            if in_progress:
                up = self._condition((group.name, "scaleUp"), "InProgress", now)
            elif self.backed_off(group.name, now):
                _, code, text = self._backoff[group.name]
                up = self._condition((group.name, "scaleUp"), "Backoff", now,
                                     backoffInfo={"errorCode": code, "errorMessage": text})
            else:
                up = self._condition((group.name, "scaleUp"), "NoActivity", now)
            candidates = sum(1 for n in members if n.name in unneeded_set)
            down = self._down((group.name, "scaleDown"), candidates, now)
            group_entries.append({"name": group.name, "health": health, "scaleUp": up, "scaleDown": down})
        healthy = health_ok(nodes, self.health)
        cluster_health = self._condition(("", "health"), "Healthy" if healthy else "Unhealthy", now,
                                         nodeCounts=_counts(nodes, None))
        cluster_health["nodeCounts"]["unregistered"] = sum(
            e["health"]["nodeCounts"]["unregistered"] for e in group_entries)
        status: dict[str, Any] = {"time": _go_time(now), "autoscalerStatus": "Running"}
        if message:
            status["message"] = message
        status["clusterWide"] = {
            "health": cluster_health,
            "scaleUp": self._condition(("", "scaleUp"), "InProgress" if any_in_progress else "NoActivity", now),
            "scaleDown": self._down(("", "scaleDown"), len(unneeded_set), now),
        }
        if unremovable:
            kept = sorted(unremovable, key=lambda u: u.node)
            status["clusterWide"]["scaleDown"]["unremovableNodeCount"] = len(kept)
            status["clusterWide"]["scaleDown"]["unremovableNodes"] = [
                {"name": u.node, "reason": str(u.reason), "blocker": u.detail}
                for u in kept[:MAX_UNREMOVABLE_LISTED]]
        status["clusterWide"]["scaleDown"].update(_drains(drains, throughput))
        if group_entries:
            status["nodeGroups"] = group_entries
        return yaml.safe_dump(status, sort_keys=False, default_flow_style=False)

    def _down(self, key: tuple[str, str], candidates: int, now: float) -> dict[str, Any]:
        if candidates:
            return self._condition(key, "CandidatesPresent", now, candidates=candidates)
        return self._condition(key, "NoCandidates", now)

    @staticmethod
    def initializing(now: float) -> str:
        """What CA writes before its first loop: ``autoscalerStatus: Initializing``."""
        return yaml.safe_dump({"time": _go_time(now), "autoscalerStatus": "Initializing"}, sort_keys=False)


def _drains(drains: Sequence[DrainView], throughput: UnpinThroughputView | None) -> dict[str, Any]:
    """The scale-down condition's drain fields (ours): times as CA writes its own, RFC 3339."""
    out: dict[str, Any] = {}
    if throughput is not None:
        out["unpinThroughput"] = {"bytesPerSecond": round(throughput.bytes_per_second),
                                  "source": "observed" if throughput.observed_drains else "--storage-unpin-throughput",
                                  "observedDrains": throughput.observed_drains}
    if drains:
        out["drainingNodes"] = [{"name": d.name, "bytesToUnpin": d.unpin_bytes,
                                 "predictedUnpinSeconds": round(d.unpin_seconds, 1),
                                 "drainDeadline": _rfc3339(d.deadline)}
                                for d in sorted(drains, key=lambda d: d.name)[:MAX_UNREMOVABLE_LISTED]]
    return out


def group_views(groups: Iterable[NodeGroup]) -> list[GroupView]:
    """Read each group's bounds and target once; a group the cloud cannot describe is left out."""
    views = []
    for group in groups:
        try:
            views.append(GroupView.of(group))
        except CloudError:
            continue
    return views


def unreadable_message(objects: ClusterObjects) -> str:
    """The status ``message`` naming each object the view could not convert and the nodes it keeps.

    Such objects never make a node removable (storage-semantics 3.8); the message says
    which object holds which node, or that one holds scale-down back entirely.
    """
    if not objects.unreadable:
        return ""
    shield = unreadable_protection(objects)
    kept: dict[str, list[str]] = {}
    for node, refs in shield.nodes.items():
        for ref in refs:
            kept.setdefault(ref.removesuffix(" (could not be read)"), []).append(node)
    parts = []
    for item in sorted(objects.unreadable, key=lambda u: u.ref)[:20]:
        where = ("holds scale-down back (could pin any node)" if item.ref in shield.hold
                 else "keeps " + ", ".join(sorted(kept[item.ref])) if item.ref in kept else "pins no node")
        parts.append(f"{item.ref} {where}: {item.message[:300]}")
    more = len(objects.unreadable) - len(parts)
    tail = f"; and {more} more" if more > 0 else ""
    return "objects that could not be read: " + "; ".join(parts) + tail

"""The two seams as ``run`` hands them to the loop: counted, guarded by leadership and ``--dry-run``.

``GuardedCluster`` and ``GuardedProvider`` wrap the live ``ClusterAPI`` and the cloud
provider without changing what they mean:

* Every call that changes the world (taint, untaint, evict, resize a
  group, delete nodes) first asks ``may_act()``. A replica that lost its lease (or
  runs ``--dry-run``) is refused at once, mid-loop included, with ``NotActing``
  (a ``ClusterAPIError``/``CloudError`` the loop and actuator already handle) instead
  of acting: "a lost lease stops acting at once".
* Outcomes are counted where they happen, so the metrics mean what CA's do no matter
  how the loop is arranged: ``scaled_up_nodes_total`` when a resize is accepted,
  ``evicted_pods_total`` per accepted eviction, ``errors_total`` by type for failed
  calls. Accepted resizes, taints and deletions go to an ``ActLog`` the loop reads
  for events, the status and ``scaled_down_nodes_total`` (whose reason it knows).
* ``write_status`` is dropped: ``run`` writes CA's full status format itself
  (``app.run.status``), after the loop, from the same decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.run.metrics import Metrics
from cloudproviders.interface import (
    CloudError,
    CloudProvider,
    GroupOptions,
    Instance,
    InsufficientCapacity,
    NodeGroup,
    WithGroupOptions,
    price_of,
)
from kube.clusterapi import ClusterAPI, ClusterAPIError, Eviction, EvictionResult, NodeAnnotator
from kube.model import ClusterObjects, Node, Pod, Taint
from kube.names import CA_TO_BE_DELETED_TAINT

__all__ = ["ActLog", "GuardedCluster", "GuardedGroup", "GuardedProvider", "NotActing"]


class NotActing(ClusterAPIError, CloudError):
    """This replica may not change anything now (not the leader, or ``--dry-run``)."""


@dataclass(slots=True)
class ActLog:
    """What the seams saw accepted since the loop last drained it (for events and the status)."""

    #: (group, size before, size after, max size) per accepted resize.
    scaled_up: list[tuple[str, int, int, int]] = field(default_factory=list)
    #: (group, error code, message) per resize the cloud refused.
    scale_up_failed: list[tuple[str, str, str]] = field(default_factory=list)
    #: Nodes that got the ToBeDeleted taint (a scale-down started).
    tainted: list[str] = field(default_factory=list)
    #: Nodes whose deletion the cloud accepted.
    deleted: list[str] = field(default_factory=list)

    def drain(self) -> ActLog:
        taken = ActLog(list(self.scaled_up), list(self.scale_up_failed), list(self.tainted), list(self.deleted))
        for entries in (self.scaled_up, self.scale_up_failed, self.tainted, self.deleted):
            entries.clear()
        return taken


def _refuse(why: Callable[[], str | None], what: str) -> None:
    reason = why()
    if reason is not None:
        raise NotActing(f"{what}: not done, {reason}")


@dataclass(slots=True)
class GuardedCluster:
    """``ClusterAPI`` with mutations guarded and counted; see the module docstring."""

    inner: ClusterAPI
    metrics: Metrics
    #: None when this replica may act now, else why not ("not the leader", "--dry-run").
    refusal: Callable[[], str | None]
    acts: ActLog

    def _failed(self, exc: ClusterAPIError) -> None:
        if not isinstance(exc, NotActing):
            self.metrics.errors_total.labels("apiCallError").inc()

    def list_objects(self) -> ClusterObjects:
        return self.inner.list_objects()

    def pods_on_node(self, node: str) -> Sequence[Pod]:
        return self.inner.pods_on_node(node)

    def taint_node(self, node: str, taint: Taint) -> None:
        _refuse(self.refusal, f"taint node {node}")
        try:
            self.inner.taint_node(node, taint)
        except ClusterAPIError as exc:
            self._failed(exc)
            raise
        if taint.key == CA_TO_BE_DELETED_TAINT:
            self.acts.tainted.append(node)

    def annotate_node(self, node: str, key: str, value: str | None) -> None:
        """Write one node annotation when this replica acts and the cluster can; otherwise nothing."""
        _refuse(self.refusal, f"annotate node {node}")
        if not isinstance(self.inner, NodeAnnotator):
            return
        try:
            self.inner.annotate_node(node, key, value)
        except ClusterAPIError as exc:
            self._failed(exc)
            raise

    def untaint_node(self, node: str, key: str) -> None:
        _refuse(self.refusal, f"untaint node {node}")
        try:
            self.inner.untaint_node(node, key)
        except ClusterAPIError as exc:
            self._failed(exc)
            raise

    def evict_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        _refuse(self.refusal, f"evict pod {namespace}/{name}")
        try:
            result = self.inner.evict_pod(namespace, name, grace_period_seconds)
        except ClusterAPIError as exc:
            self._failed(exc)
            if not isinstance(exc, NotActing):
                self.metrics.eviction(succeeded=False)
            raise
        # As CA (core/scaledown/actuation/drain.go): a pod already gone counts as evicted; a
        # budget's refusal is retried by the actuator and is not a result yet.
        if result.outcome in (Eviction.EVICTED, Eviction.GONE):
            self.metrics.eviction(succeeded=True)
        return result

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        try:
            self.inner.record_event(kind, namespace, name, reason, message, warning=warning)
        except ClusterAPIError as exc:
            self._failed(exc)
            raise

    def write_status(self, text: str) -> None:
        """Dropped: ``run`` writes CA's status format itself after each loop."""


@dataclass(slots=True)
class GuardedGroup:
    """``NodeGroup`` (and its optional capabilities) with resizes guarded and counted."""

    inner: NodeGroup
    metrics: Metrics
    refusal: Callable[[], str | None]
    acts: ActLog

    @property
    def name(self) -> str:
        return self.inner.name

    def min_size(self) -> int:
        return self.inner.min_size()

    def max_size(self) -> int:
        return self.inner.max_size()

    def target_size(self) -> int:
        return self.inner.target_size()

    def instances(self) -> Sequence[Instance]:
        return self.inner.instances()

    def template_node(self) -> Node | None:
        return self.inner.template_node()

    def template_pods(self) -> tuple[Pod, ...]:
        return self.inner.template_pods()

    def increase_size(self, delta: int) -> None:
        _refuse(self.refusal, f"raise node group {self.name} by {delta}")
        before = self.inner.target_size()
        try:
            self.inner.increase_size(delta)
        except CloudError as exc:
            self.metrics.errors_total.labels("cloudProviderError").inc()
            self.metrics.scale_up_failed("cloudProviderError", delta)
            code = "OutOfResource" if isinstance(exc, InsufficientCapacity) else "CloudProviderError"
            self.acts.scale_up_failed.append((self.name, code, str(exc)))
            raise
        self.metrics.scaled_up(delta)
        self.acts.scaled_up.append((self.name, before, before + delta, self.inner.max_size()))

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        _refuse(self.refusal, f"delete {', '.join(n.name for n in nodes)} from node group {self.name}")
        try:
            self.inner.delete_nodes(nodes)
        except CloudError:
            self.metrics.errors_total.labels("cloudProviderError").inc()
            raise
        self.acts.deleted.extend(n.name for n in nodes)

    def decrease_target_size(self, delta: int) -> None:
        _refuse(self.refusal, f"lower node group {self.name}'s target by {-delta}")
        try:
            self.inner.decrease_target_size(delta)
        except CloudError:
            self.metrics.errors_total.labels("cloudProviderError").inc()
            raise

    # Optional capabilities: answer as a provider without them would (no price, the flags' options).
    def price_per_hour(self) -> float | None:
        return price_of(self.inner)

    def group_options(self) -> GroupOptions:
        return self.inner.group_options() if isinstance(self.inner, WithGroupOptions) else GroupOptions()


@dataclass(slots=True)
class GuardedProvider:
    """``CloudProvider`` whose groups are ``GuardedGroup``s (one wrapper per group, kept)."""

    inner: CloudProvider
    metrics: Metrics
    refusal: Callable[[], str | None]
    acts: ActLog
    _groups: dict[str, GuardedGroup] = field(default_factory=dict)
    _refreshed: bool = False

    @property
    def name(self) -> str:
        return self.inner.name

    def _wrap(self, group: NodeGroup) -> GuardedGroup:
        wrapped = self._groups.get(group.name)
        if wrapped is None or wrapped.inner is not group:
            wrapped = GuardedGroup(group, self.metrics, self.refusal, self.acts)
            self._groups[group.name] = wrapped
        return wrapped

    def node_groups(self) -> Sequence[NodeGroup]:
        return [self._wrap(g) for g in self.inner.node_groups()]

    def node_group_for(self, node: Node) -> NodeGroup | None:
        group = self.inner.node_group_for(node)
        return None if group is None else self._wrap(group)

    def new_loop(self) -> None:
        """The next ``refresh`` reaches the cloud again (one real refresh per loop)."""
        self._refreshed = False

    def refresh(self) -> None:
        """Refresh the cloud once per loop, however many layers ask (``run`` and the library loop)."""
        if self._refreshed:
            return
        try:
            self.inner.refresh()
        except CloudError:
            self.metrics.errors_total.labels("cloudProviderError").inc()
            raise
        self._refreshed = True

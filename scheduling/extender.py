"""kube-scheduler's extender protocol over the storage filter: ``filter`` and ``prioritize``.

Wire shapes are those of ``k8s.io/kube-scheduler/extender/v1/types.go``: Go structs
without JSON tags, so keys are the field names. ``ExtenderArgs`` is
``{"Pod": v1.Pod, "Nodes": v1.NodeList | null, "NodeNames": [string] | null}``:
with ``nodeCacheCapable: true`` the scheduler sends node names and the extender reads
the nodes from its own view (the adapter's watch caches); with ``false`` it sends
whole nodes, which are converted here and judged against the view's storage objects.
``ExtenderFilterResult`` is ``{"Nodes", "NodeNames", "FailedNodes",
"FailedAndUnresolvableNodes", "Error"}``; ``HostPriorityList`` is ``[{"Host", "Score"}]``.

Every node that fails goes into ``FailedNodes`` with the autoscaler's predicate reason.
It also goes into ``FailedAndUnresolvableNodes``: evicting pods does not free a local
disk or move a pinned volume, so preemption must not evict anyone for these nodes
(kube-scheduler's VolumeBinding plugin marks the same reasons
UnschedulableAndUnresolvable; ``pkg/scheduler/framework/plugins/volumebinding``).
kube-scheduler lets the unresolvable map take precedence over the other.

A malformed request gets an answer with ``Error`` set (never a crash): the scheduler
then fails this pod's cycle and retries it, as for any extender error.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kube.clusterapi import ViewUnavailable
from kube.convert import FieldError, InputError, convert_node, convert_pod
from kube.model import Node, Pod
from kube.names import StorageNames
from scheduling.metrics import SchedulingMetrics
from scheduling.reservations import Reservation, ReservationBook
from scheduling.server import BadRequest, Route
from scheduling.storage_filter import FilterOutcome, StorageFilter
from scheduling.view import ClusterView, ViewState
from simulator.snapshot import IntArray

__all__ = ["Extender", "ExtenderError"]

log = logging.getLogger(__name__)

Json = dict[str, Any]


class ExtenderError(Exception):
    """A request the extender cannot answer (bad shape); reported in the result's ``Error``."""


class Extender:
    """Answers filter and prioritize calls; remembers in-flight approvals (``ReservationBook``).

    Calls are serialized: a filter's check and the reservation it makes are one step, so
    two pods racing for the last bytes of a node are decided one after the other.
    """

    def __init__(self, view: ClusterView, names: StorageNames, *, reservation_timeout: float,
                 clock: Callable[[], float], metrics: SchedulingMetrics | None = None) -> None:
        self.view = view
        self.metrics = metrics or SchedulingMetrics()
        self.names = names
        self.book = ReservationBook(reservation_timeout, clock)
        self._lock = threading.Lock()
        self._filter: StorageFilter | None = None
        self._versions = (-1, -1)
        #: Each reservation counted in ``_total`` with its node indices, for ``_indexed_for``'s nodes.
        self._indexed: dict[str, tuple[Reservation, IntArray]] = {}
        self._indexed_for: StorageFilter | None = None
        self._total: IntArray = np.zeros(0, np.int64)

    # --- state ----------------------------------------------------------------------------
    def _current(self) -> tuple[StorageFilter, ViewState]:
        state = self.view.read()
        nodes_version, storage_version = self._versions
        current = self._filter
        if current is None or (nodes_version != state.nodes_version and not current.same_nodes(state.nodes)):
            current = StorageFilter(state.nodes, state.objects, self.names)
        else:
            if nodes_version != state.nodes_version:
                current.refresh_capacity(state.nodes)
            if storage_version != state.storage_version:
                current = current.with_storage(state.objects)
        self._filter = current
        self._versions = (state.nodes_version, state.storage_version)
        return current, state

    def _reserved(self, storage: StorageFilter, uid: str) -> tuple[IntArray, dict[str, IntArray]]:
        """Bytes held per node by every other pod's reservation, as arrays over ``storage``'s nodes:
        the local pool's, and each other pool's.

        The local pool's sum over all reservations is kept up to date by difference (a
        reservation added, narrowed or released changes only its own nodes), then the pod's
        own is taken out. Other pools (few reservations hold any) are summed afresh.
        """
        if storage is not self._indexed_for:
            self._indexed = {}
            self._indexed_for = storage
            self._total = np.zeros(storage.snapshot.count, np.int64)
        index = storage.snapshot.index
        current = {res.uid: res for res in self.book.others("")}
        for held_uid, (res, idxs) in list(self._indexed.items()):
            if current.get(held_uid) is not res:
                self._total[idxs] -= res.local_bytes
                del self._indexed[held_uid]
        for held_uid, res in current.items():
            if held_uid not in self._indexed:
                idxs = np.fromiter((index[n] for n in res.nodes if n in index), np.int64)
                self._total[idxs] += res.local_bytes
                self._indexed[held_uid] = (res, idxs)
        reserved = self._total.copy()
        own = self._indexed.get(uid)
        if own is not None:
            reserved[own[1]] -= own[0].local_bytes
        pools: dict[str, IntArray] = {}
        for held_uid, (res, idxs) in self._indexed.items():
            if held_uid != uid:
                for pool, size in res.pools:
                    pools.setdefault(pool, np.zeros(storage.snapshot.count, np.int64))[idxs] += size
        return reserved, pools

    # --- verbs ----------------------------------------------------------------------------
    def filter(self, args: object) -> Json:
        """``POST /filter``: ExtenderArgs -> ExtenderFilterResult."""
        with self.metrics.filter_seconds.time():
            return self._answer_filter(args)

    def _answer_filter(self, args: object) -> Json:
        try:
            pod, names, nodes = self._args(args)
        except ExtenderError as exc:
            self.metrics.errors.labels("filter").inc()
            log.warning("filter: bad request: %s", exc)
            return _error_result(str(exc))
        try:
            outcome = self.filter_pod(pod, names, nodes)
        except ViewUnavailable as exc:
            # Deciding on a partial view could approve a node whose capacity we have not seen.
            self.metrics.errors.labels("filter").inc()
            log.warning("filter: %s: no complete view of the cluster: %s", pod.ref, exc)
            return _error_result(f"storage-aware extender: no complete view of the cluster: {exc}")
        if outcome.failed:
            for reason, count in Counter(outcome.failed.values()).items():
                self.metrics.failed_nodes.labels(reason).inc(count)
            log.debug("filter: %s fits %d of %d node(s)", pod.ref, len(outcome.passed), len(names))
        result: Json = {"FailedNodes": outcome.failed, "FailedAndUnresolvableNodes": dict(outcome.failed),
                        "Error": ""}
        if nodes is None:
            result["NodeNames"] = list(outcome.passed)
            result["Nodes"] = None
        else:
            raw = args["Nodes"]["items"]  # type: ignore[index]
            keep = set(outcome.passed)
            result["Nodes"] = {"apiVersion": "v1", "kind": "NodeList", "metadata": {},
                               "items": [obj for obj, node in zip(raw, nodes, strict=True) if node.name in keep]}
            result["NodeNames"] = None
        return result

    def filter_pod(self, pod: Pod, names: Sequence[str], nodes: Sequence[Node] | None = None) -> FilterOutcome:
        """The filter on model objects: the wire's ``filter`` after decoding, and the simulated
        world's scheduler (which has no JSON). ``nodes`` None: read them from the view.
        Raises ``ViewUnavailable`` when the view is not complete."""
        if not pod.claims:
            # Nothing of the pod's depends on the view or the reservations (its volume plan is
            # trivial): every candidate passes, while the view is unavailable too (the extender
            # cannot be ignored, so an error would block the pod), and no reservation is touched
            # (a pod's volumes are immutable; a claimless call naming some uid drops nothing).
            return FilterOutcome(tuple(names), {}, 0, ())
        with self._lock:
            cached, state = self._current()
            self.book.expire(state.objects, state.pod)
            storage = cached if nodes is None else StorageFilter(nodes, state.objects, self.names)
            outcome = storage.filter(pod, names, *self._reserved(storage, pod.uid))
            refused = _not_in_view(pod, state) if outcome.local_bytes or outcome.pools else None
            if refused is None:
                self.book.approve(pod, outcome.local_claims, outcome.local_bytes, frozenset(outcome.passed),
                                  outcome.pools)
            else:
                self.metrics.reservations_refused.inc()
                log.info("filter: no reservation for %s (uid %s): %s", pod.ref, pod.uid, refused)
            self.metrics.reservations.set(len(self.book))
        return outcome

    def prioritize(self, args: object) -> list[Json]:
        """``POST /prioritize``: ExtenderArgs -> HostPriorityList (scores 0..10)."""
        try:
            pod, names, nodes = self._args(args)
        except ExtenderError as exc:
            # HostPriorityList has no error field: a non-2xx status is how the scheduler learns of it.
            raise ExtenderError(f"prioritize: {exc}") from None
        if not pod.claims:  # as in filter: nothing to weigh, nothing to block
            return [{"Host": name, "Score": 0} for name in names]
        with self._lock:
            try:
                cached, state = self._current()
            except ViewUnavailable as exc:
                raise ExtenderError(f"prioritize: no complete view of the cluster: {exc}") from None
            storage = cached if nodes is None else StorageFilter(nodes, state.objects, self.names)
            scores = storage.prioritize(pod, names, *self._reserved(storage, pod.uid))
        return [{"Host": name, "Score": score} for name, score in scores]

    def routes(self) -> dict[str, Route]:
        """The HTTP routes kube-scheduler's extender configuration names (``filterVerb``, ``prioritizeVerb``)."""
        def prioritize(body: object) -> object:
            try:
                return self.prioritize(body)
            except ExtenderError as exc:
                self.metrics.errors.labels("prioritize").inc()
                raise BadRequest(str(exc)) from None

        return {"/filter": self.filter, "/prioritize": prioritize}

    # --- decoding ---------------------------------------------------------------------------
    def _args(self, args: object) -> tuple[Pod, list[str], Sequence[Node] | None]:
        if not isinstance(args, dict):
            raise ExtenderError("ExtenderArgs: expected a JSON object")
        raw_pod = args.get("Pod")
        if not isinstance(raw_pod, dict):
            raise ExtenderError("ExtenderArgs.Pod: expected a Pod object")
        try:
            pod = convert_pod(_storage_fields(raw_pod))
        except (FieldError, InputError) as exc:
            raise ExtenderError(f"ExtenderArgs.Pod: {_field_message(exc)}") from None
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            raise ExtenderError(f"ExtenderArgs.Pod: malformed ({exc})") from None
        node_names = args.get("NodeNames")
        if node_names is not None:
            # map(type, ...) walks the list in C: 5,000 names cost microseconds, not a millisecond.
            if not isinstance(node_names, list) or not set(map(type, node_names)) <= {str}:
                raise ExtenderError("ExtenderArgs.NodeNames: expected a list of node names")
            return pod, node_names, None
        node_list = args.get("Nodes")
        if not isinstance(node_list, dict) or not isinstance(node_list.get("items"), list):
            raise ExtenderError("ExtenderArgs: neither NodeNames nor Nodes.items is set")
        nodes = []
        warnings: list[str] = []
        for i, obj in enumerate(node_list["items"]):
            if not isinstance(obj, dict):
                raise ExtenderError(f"ExtenderArgs.Nodes.items[{i}]: expected a Node object")
            try:
                nodes.append(convert_node(obj, self.names, warnings))
            except (FieldError, InputError) as exc:
                raise ExtenderError(f"ExtenderArgs.Nodes.items[{i}]: {_field_message(exc)}") from None
            except (TypeError, AttributeError, ValueError, KeyError) as exc:
                raise ExtenderError(f"ExtenderArgs.Nodes.items[{i}]: malformed ({exc})") from None
        for warning in warnings:
            log.warning("filter: %s", warning)
        return pod, [n.name for n in nodes], nodes


def _storage_fields(raw_pod: dict[str, Any]) -> dict[str, Any]:
    """The part of an ExtenderArgs pod the storage filter reads: its metadata and volumes
    (``storage_pod`` drops requests and scheduling: kube-scheduler judged them). Converting
    affinity, tolerations and containers it never reads was a tenth of a small call's cost."""
    spec = raw_pod.get("spec")
    if isinstance(spec, dict):
        spec = {"volumes": spec["volumes"]} if spec.get("volumes") is not None else {}
    return {"metadata": raw_pod.get("metadata"), "spec": spec, "status": {}}


def _not_in_view(pod: Pod, state: ViewState) -> str | None:
    """Why ``pod`` may not hold a reservation, or None: only a pod the cluster shows, with
    this uid and every claim it names, may hold bytes (anyone can POST a pod to /filter)."""
    if state.pod is None:
        return "the view does not watch pods"
    current = state.pod(pod.namespace, pod.name)
    if current is None:
        return "no such pod in the cluster (yet)"
    if current.uid != pod.uid:
        return f"the cluster's pod {pod.ref} has uid {current.uid}"
    foreign = sorted(set(pod.claims) - set(current.claims))
    if foreign:
        return f"claims {', '.join(foreign)} are not the cluster's pod's"
    return None


def _error_result(message: str) -> Json:
    """An ExtenderFilterResult that fails this pod's scheduling cycle with ``message``."""
    return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": message}


def _field_message(exc: FieldError | InputError) -> str:
    if isinstance(exc, FieldError):
        return f"{exc.field}: {exc.message}"
    return str(exc)

"""Drain rules one outcome at a time, then whole nodes and the PDB budget of a pass."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kube.convert import parse_label_selector_string
from kube.model import (
    EMPTY_SCHEDULING,
    Controller,
    LabelSelector,
    OwnerRef,
    Pod,
    PodDisruptionBudget,
    Resources,
    VolumeSource,
)
from simulator.drainability import (
    BlockingReason,
    DrainContext,
    OutcomeKind,
    PdbTracker,
    classify_pod,
    drain_node,
)

NOW = 1_700_000_000.0
GUARD = parse_label_selector_string("app=rok-csi-guard")
GUARD_LABELS = {"app": "rok-csi-guard"}

CONTROLLERS = {
    (kind, ns, name): Controller(kind, ns, name, f"uid-{name}", replicas)
    for kind, ns, name, replicas in [
        ("ReplicaSet", "default", "rs", 3),
        ("ReplicationController", "default", "rc", 3),
        ("StatefulSet", "default", "ss", 1),
        ("Job", "default", "job", None),
        ("DaemonSet", "default", "ds", None),
        ("ReplicaSet", "kube-system", "rs", 2),
    ]
}


def pod(
    name: str = "p",
    namespace: str = "default",
    owner: str | None = "ReplicaSet/rs",
    labels: Mapping[str, str] | None = None,
    **kw: Any,
) -> Pod:
    """A running pod; ``owner`` is ``"Kind/name"`` or None for a bare pod."""
    ref = None
    if owner is not None:
        kind, owner_name = owner.split("/")
        ref = OwnerRef(kind, owner_name, f"uid-{owner_name}", "apps/v1")
    fields: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "uid": f"uid-{namespace}-{name}",
        "labels": labels if labels is not None else {"app": "web"},
        "owner": ref,
        "node_name": "node-a",
        "phase": "Running",
        "requests": Resources(cpu=100),
        "scheduling": EMPTY_SCHEDULING,
    }
    fields.update(kw)
    return Pod(**fields)


def pdb(budget: int, selector: str = "app=web", namespace: str = "default", name: str = "web",
        ) -> PodDisruptionBudget:
    """A PDB allowing ``budget`` more disruptions of the pods ``selector`` picks."""
    return PodDisruptionBudget(namespace, name, parse_label_selector_string(selector), budget)


def context(
    pdbs: Sequence[PodDisruptionBudget] = (),
    *,
    guard: LabelSelector | None = GUARD,
    storage_aware: bool = True,
    **options: Any,
) -> DrainContext:
    tracker = PdbTracker(pdbs, guard if storage_aware else None)
    return DrainContext(NOW, CONTROLLERS, tracker, guard=guard, storage_aware=storage_aware, **options)


DRAIN, BLOCK = OutcomeKind.DRAIN, OutcomeKind.BLOCK
R = BlockingReason
HOST_PATH = (("logs", VolumeSource.HOST_PATH),)
SCRATCH = (("scratch", VolumeSource.EMPTY_DIR), ("cache", VolumeSource.EMPTY_DIR))
NO_CUSTOM = {"skip_custom_controller_pods": False}
UPSTREAM = {"storage_aware": False}
STORAGE_PDB = pdb(0, "tier=storage", name="storage")


@pytest.mark.parametrize(
    ("subject", "ctx_kw", "kind", "reason"),
    [
        pytest.param(pod(), {}, DRAIN, None, id="replicaset-pod-drains"),
        # Skipped before anything could block: neither pod has a controller.
        pytest.param(pod(owner=None, is_mirror=True), {}, OutcomeKind.SKIP, None, id="mirror"),
        pytest.param(pod(owner=None, deleted=NOW - 61, grace_seconds=30), {}, OutcomeKind.SKIP, None,
                     id="long-terminating"),
        pytest.param(pod(owner=None, deleted=NOW - 59, grace_seconds=30), {}, BLOCK, R.NOT_REPLICATED,
                     id="recently-deleted-still-checked"),
        pytest.param(pod(owner="ReplicaSet/gone"), {}, BLOCK, R.CONTROLLER_NOT_FOUND,
                     id="controller-not-found"),
        pytest.param(pod(owner="Job/gone"), {}, BLOCK, R.CONTROLLER_NOT_FOUND, id="job-not-found"),
        pytest.param(pod(owner="ReplicaSet/gone"), NO_CUSTOM, DRAIN, None,
                     id="controller-not-found-off-without-custom-controller-flag"),
        pytest.param(pod(owner="ReplicationController/rc"), {"min_replica_count": 4}, BLOCK,
                     R.MIN_REPLICAS_REACHED, id="min-replicas-reached-rc"),
        pytest.param(pod(), {"min_replica_count": 4}, BLOCK, R.MIN_REPLICAS_REACHED,
                     id="min-replicas-reached-rs"),
        pytest.param(pod(), {"min_replica_count": 3}, DRAIN, None, id="min-replicas-met"),
        pytest.param(pod(), {"min_replica_count": 4, **NO_CUSTOM}, DRAIN, None,
                     id="min-replicas-off-without-custom-controller-flag"),
        # Upstream checks only that a StatefulSet exists, not its replica count.
        pytest.param(pod(owner="StatefulSet/ss"), {"min_replica_count": 4}, DRAIN, None,
                     id="statefulset-replicas-not-checked"),
        pytest.param(pod(owner=None), {}, BLOCK, R.NOT_REPLICATED, id="not-replicated"),
        pytest.param(pod(owner="CronTab/x"), {}, BLOCK, R.NOT_REPLICATED,
                     id="custom-controller-not-replicated"),
        pytest.param(pod(owner="CronTab/x"), NO_CUSTOM, DRAIN, None, id="custom-controller-allowed-by-flag"),
        pytest.param(pod(owner="DaemonSet/ds", local_volumes=HOST_PATH), {}, OutcomeKind.DAEMON, None,
                     id="daemonset"),
        pytest.param(pod(owner=None, safe_to_evict=True, local_volumes=HOST_PATH, namespace="kube-system"),
                     {}, DRAIN, None, id="safe-to-evict-overrides-local-storage-and-system"),
        pytest.param(pod(owner=None, phase="Succeeded", restart_policy="Never"), {}, DRAIN, None,
                     id="terminal-succeeded"),
        pytest.param(pod(owner=None, phase="Succeeded", restart_policy="OnFailure"), {}, DRAIN, None,
                     id="terminal-succeeded-on-failure"),
        pytest.param(pod(owner=None, phase="Succeeded"), {}, BLOCK, R.NOT_REPLICATED,
                     id="succeeded-but-restarted-always-is-not-terminal"),
        pytest.param(pod(owner=None, phase="Failed", local_volumes=HOST_PATH), {}, DRAIN, None,
                     id="terminal-failed"),
        pytest.param(pod(local_volumes=HOST_PATH), {}, BLOCK, R.LOCAL_STORAGE_REQUESTED, id="local-hostpath"),
        pytest.param(pod(local_volumes=SCRATCH, safe_to_evict_local_volumes=frozenset({"scratch"})), {},
                     BLOCK, R.LOCAL_STORAGE_REQUESTED, id="local-emptydir-partly-declared-safe"),
        pytest.param(pod(local_volumes=SCRATCH, safe_to_evict_local_volumes=frozenset({"scratch", "cache"})),
                     {}, DRAIN, None, id="local-emptydir-declared-safe"),
        pytest.param(pod(local_volumes=HOST_PATH), {"skip_local_storage": False}, DRAIN, None,
                     id="local-storage-flag-off"),
        pytest.param(pod(safe_to_evict=False), {}, BLOCK, R.NOT_SAFE_TO_EVICT_ANNOTATION,
                     id="not-safe-to-evict"),
        pytest.param(pod(namespace="kube-system"), {}, BLOCK, R.UNMOVABLE_KUBE_SYSTEM_POD,
                     id="kube-system-without-pdb"),
        pytest.param(pod(namespace="kube-system"), {"pdbs": [pdb(1, namespace="kube-system")]}, DRAIN, None,
                     id="kube-system-with-pdb"),
        pytest.param(pod(namespace="kube-system"), {"skip_system_pods": False}, DRAIN, None,
                     id="system-flag-off"),
        pytest.param(pod(), {"pdbs": [pdb(0)]}, BLOCK, R.NOT_ENOUGH_PDB, id="not-enough-pdb"),
        pytest.param(pod(), {"pdbs": [pdb(1)]}, DRAIN, None, id="pdb-with-budget"),
        pytest.param(pod(), {"pdbs": [pdb(0, namespace="other")]}, DRAIN, None, id="pdb-other-namespace"),
        pytest.param(pod(), {"pdbs": [pdb(0, selector="app=db")]}, DRAIN, None, id="pdb-other-labels"),
        # Guards: one zero-disruption PDB over both pods blocks only the ordinary one.
        pytest.param(pod(labels={**GUARD_LABELS, "tier": "storage"}), {"pdbs": [STORAGE_PDB]},
                     OutcomeKind.GUARD, None, id="guard-ignores-its-pdb"),
        pytest.param(pod(labels={"app": "web", "tier": "storage"}), {"pdbs": [STORAGE_PDB]}, BLOCK,
                     R.NOT_ENOUGH_PDB, id="same-pdb-blocks-ordinary-pod"),
        pytest.param(pod(labels={"app": "rok-csi-guard", "tier": "x"}, owner=None, namespace="kube-system"),
                     {"pdbs": [pdb(0, "app=rok-csi-guard", namespace="kube-system")]}, OutcomeKind.GUARD,
                     None, id="guard-before-system-and-replicated"),
        pytest.param(pod(labels={**GUARD_LABELS, "tier": "storage"}), {"pdbs": [STORAGE_PDB], **UPSTREAM},
                     BLOCK, R.NOT_ENOUGH_PDB, id="guard-is-ordinary-when-not-storage-aware"),
        pytest.param(pod(), {"pdbs": [pdb(0)], "guard": LabelSelector()}, BLOCK, R.NOT_ENOUGH_PDB,
                     id="empty-guard-selector-guards-nothing"),
    ],
)
def test_classify_pod(
    subject: Pod, ctx_kw: dict[str, Any], kind: OutcomeKind, reason: BlockingReason | None
) -> None:
    outcome = classify_pod(context(**ctx_kw), subject)
    assert (outcome.kind, outcome.reason) == (kind, reason)
    assert bool(outcome.detail) == (reason is not None)


def test_drain_node_sorts_pods_by_outcome() -> None:
    web, ds = pod("web"), pod("ds", owner="DaemonSet/ds")
    mirror, guard = pod("static", owner=None, is_mirror=True), pod("guard", labels=GUARD_LABELS)
    drain = drain_node(context([pdb(0, "app=rok-csi-guard")]), [web, ds, mirror, guard])
    assert drain.removable
    assert (drain.to_move, drain.daemon, drain.skipped, drain.guards) == ((web,), (ds,), (mirror,), (guard,))


def test_drain_node_reports_first_blocking_pod_in_node_order() -> None:
    bare, local = pod("bare", owner=None), pod("local", local_volumes=HOST_PATH)
    drain = drain_node(context(), [pod("web"), local, bare])
    assert drain.blocked is not None
    blocker, outcome = drain.blocked
    assert (blocker, outcome.reason) == (local, R.LOCAL_STORAGE_REQUESTED)
    assert "logs (hostPath)" in outcome.detail
    assert drain.to_move == () and not drain.removable


def test_pdb_budget_is_consumed_across_nodes_and_rolled_back() -> None:
    budget = pdb(1)
    ctx = context([budget])
    node_a, node_b = [pod("a")], [pod("b")]

    first = drain_node(ctx, node_a)
    assert first.removable and ctx.pdbs.can_remove(first.to_move) == (True, None)
    ctx.pdbs.fork()
    ctx.pdbs.remove(first.to_move)
    assert ctx.pdbs.remaining(budget) == 0

    second = drain_node(ctx, node_b)
    assert second.blocked is not None and second.blocked[1].reason is R.NOT_ENOUGH_PDB
    assert ctx.pdbs.can_remove(node_b) == (False, budget)

    # Node a turned out unremovable after all: its spending is taken back.
    ctx.pdbs.revert()
    assert ctx.pdbs.remaining(budget) == 1
    assert drain_node(ctx, node_b).removable


def test_fork_commit_keeps_spending_and_forks_nest() -> None:
    budget = pdb(3)
    tracker = PdbTracker([budget])
    tracker.fork()
    tracker.remove([pod("a")])
    tracker.fork()
    tracker.remove([pod("b")])
    tracker.revert()
    tracker.commit()
    assert tracker.remaining(budget) == 2
    with pytest.raises(RuntimeError):
        tracker.revert()


def test_copy_is_independent() -> None:
    budget = pdb(1)
    tracker = PdbTracker([budget])
    clone = tracker.copy()
    clone.remove([pod("a")])
    assert (tracker.remaining(budget), clone.remaining(budget)) == (1, 0)


def test_more_pods_than_budget_are_removable_but_not_in_parallel() -> None:
    # Upstream: actuation evicts them one by one as the first ones come back up.
    tracker = PdbTracker([pdb(1)])
    pods = [pod("a"), pod("b")]
    assert tracker.can_remove(pods) == (True, None)
    assert not tracker.in_parallel(pods)
    assert tracker.in_parallel(pods[:1])


def test_tracker_ignores_guard_pods() -> None:
    budget = pdb(0, "app=rok-csi-guard")
    tracker = PdbTracker([budget], GUARD)
    guard = pod("guard", labels=GUARD_LABELS)
    assert tracker.blocking_pdb(guard) is None and tracker.matching(guard) == []
    assert tracker.can_remove([guard]) == (True, None)
    tracker.remove([guard])
    assert tracker.remaining(budget) == 0


def test_pdb_without_selector_selects_nothing() -> None:
    tracker = PdbTracker([PodDisruptionBudget("default", "none", None, 0)])
    assert tracker.blocking_pdb(pod()) is None


def test_context_rejects_tracker_with_another_guard() -> None:
    with pytest.raises(ValueError, match="guard"):
        DrainContext(NOW, CONTROLLERS, PdbTracker([]), guard=GUARD)
    with pytest.raises(ValueError, match="guard"):
        DrainContext(NOW, CONTROLLERS, PdbTracker([], GUARD), guard=GUARD, storage_aware=False)

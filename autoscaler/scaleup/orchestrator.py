"""Scale-up: which pending pods need new nodes, which group gets them, and how many.

1. Filter out schedulable: pending pods that fit existing or upcoming nodes are
   placed there (capacity, local storage included, is consumed as they go) and do
   not trigger a scale-up. Pods are taken by priority; once a pod fails, its
   equivalents are not tried again.
2. Expansion options: for every group below its max, pods whose exemplar fits a
   bare template copy are bin-packed onto template copies (``estimator``).
   A group in backoff after a failed scale-up offers no option (upstream's
   ``IsNodeGroupSafeToScaleUp``), so the next-best group is chosen meanwhile.
3. An expander chain picks one option; the group max, ``--max-nodes-total`` and the
   cores/memory totals cap the delta; ``--balance-similar-node-groups`` spreads it
   over similar groups.

It reads the simulation and returns a ``ScaleUpPlan``; the caller acts. The one change
it leaves in the loop's snapshot is filter-out-schedulable's placements (``placed``),
as upstream does.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from autoscaler.clusterstate import Readiness
from autoscaler.context import LoopContext, is_expendable
from autoscaler.expander import ExpanderContext, ExpansionOption, build_chain
from autoscaler.scaleup.balancing import similar_groups, split_between
from autoscaler.scaleup.types import Increase, ScaleUpDraft, ScaleUpPlan, ScaleUpResult
from autoscaler.templates import TemplateNode, instantiate
from cloudproviders.interface import price_of
from estimator.binpacking import BinpackingEstimator, Estimator, PodGroup
from kube.model import Pod
from simulator.volumes import VolumePlan

__all__ = ["Increase", "ScaleUpPlan", "ScaleUpResult", "pending_pods", "plan_scale_up"]


def pending_pods(sim: LoopContext) -> tuple[list[Pod], list[Pod]]:
    """Pods the scheduler marked unschedulable, and pending pods it has not judged yet."""
    pending, unprocessed = [], []
    delay = sim.options.scale_up.new_pod_scale_up_delay
    for pod in sim.objects.pods:
        if pod.node_name or pod.is_terminal or pod.deleted is not None or pod.is_daemonset:
            continue
        if is_expendable(pod, sim.options):
            continue
        if not pod.marked_unschedulable:
            unprocessed.append(pod)
            continue
        if delay and pod.created is not None and sim.now - pod.created < delay:
            continue
        pending.append(pod)
    return pending, unprocessed


def _equivalence_key(pod: Pod, plan: VolumePlan) -> tuple[object, ...]:
    owner = pod.owner.uid or f"{pod.owner.kind}/{pod.owner.name}" if pod.owner else pod.ref
    return (pod.namespace, owner, pod.requests, id(pod.scheduling), plan.key, frozenset(pod.labels.items()))


def _group(pods: Sequence[Pod], plans: dict[str, VolumePlan]) -> list[PodGroup]:
    groups: dict[tuple[object, ...], list[Pod]] = {}
    for pod in pods:
        groups.setdefault(_equivalence_key(pod, plans[pod.ref]), []).append(pod)
    return [PodGroup(tuple(g), tuple(plans[p.ref] for p in g)) for g in groups.values()]


def filter_out_schedulable(sim: LoopContext, pods: list[Pod], plans: dict[str, VolumePlan],
                           placed: list[tuple[Pod, str]] | None = None) -> tuple[list[Pod], list[Pod], list[Pod]]:
    """Place what fits on existing/upcoming nodes (committed); return (existing, upcoming, left).

    ``placed`` collects (pod, node name) for every placement made.
    """
    checker, snap = sim.checker, sim.snapshot
    order = sorted(range(len(pods)), key=lambda i: (-pods[i].priority, i))
    failed: set[tuple[object, ...]] = set()
    on_existing: list[Pod] = []
    on_upcoming: list[Pod] = []
    left: list[Pod] = []
    for i in order:
        pod = pods[i]
        plan = plans[pod.ref]
        key = _equivalence_key(pod, plan)
        if key in failed:
            left.append(pod)
            continue
        idx = checker.find_node(pod, plan)
        if idx is None:
            failed.add(key)
            left.append(pod)
            continue
        checker.place(pod, plan, idx)
        (on_upcoming if snap.roles[idx] == "upcoming" else on_existing).append(pod)
        if placed is not None:
            placed.append((pod, snap.nodes[idx].name))
    return on_existing, on_upcoming, left


def _node_cap(sim: LoopContext) -> tuple[int | None, str | None]:
    """How many nodes ``--max-nodes-total`` still allows (None: no cap)."""
    limit = sim.options.scale_up.max_nodes_total
    if not limit:
        return None, None
    ready = sum(1 for s in sim.state.nodes if s.readiness is Readiness.READY)
    if ready >= limit:
        return 0, f"max total nodes in cluster reached: {limit}"
    return max(0, limit - sim.snapshot.count), None


def _resource_cap(sim: LoopContext, template: TemplateNode) -> tuple[int, str | None]:
    """How many nodes of this template the ``--cores-total``/``--memory-total`` maxima allow."""
    snap = sim.snapshot
    cores = sum(math.ceil(snap.nodes[i].capacity.cpu / 1000) for i in range(snap.count))
    memory = sum(snap.nodes[i].capacity.memory for i in range(snap.count))
    opts = sim.options.scale_up
    per_cores = math.ceil(template.node.capacity.cpu / 1000)
    per_mem = template.node.capacity.memory
    cap = 10**9
    reason = None
    if per_cores:
        allowed = max(0, (opts.cores_total[1] - cores) // per_cores)
        if allowed < cap:
            cap, reason = allowed, f"max cluster cpu limit reached ({opts.cores_total[1]} cores)"
    if per_mem:
        allowed = max(0, (opts.memory_total_gib[1] * 2**30 - memory) // per_mem)
        if allowed < cap:
            cap, reason = allowed, f"max cluster memory limit reached ({opts.memory_total_gib[1]} GiB)"
    return cap, reason


def _fits_template(sim: LoopContext, template: TemplateNode, group: PodGroup) -> str | None:
    """Does the exemplar fit a bare template copy? None, or the reason it does not."""
    snap, checker = sim.snapshot, sim.checker
    snap.fork()
    try:
        node, pods = instantiate(template, "check")
        idx = snap.add_node(node, pods)
        reason = checker.check(group.exemplar, group.plans[0], idx)
        return None if reason is None else str(reason)
    finally:
        snap.revert()


def _similar_for(sim: LoopContext, name: str, fits_by_group: dict[str, set[int]]) -> list[str]:
    """Groups to balance ``name``'s scale-up with: similar templates that fit the same pods.

    Upstream ``ComputeSimilarNodeGroups``: every pod group the chosen group can help,
    the similar group must help too.
    """
    fits = fits_by_group.get(name, set())
    return [g for g in similar_groups(sim, name, sim.options.scale_up.balancing_ignore_labels)
            if fits <= fits_by_group.get(g, set())]


def plan_scale_up(sim: LoopContext) -> ScaleUpPlan:
    pending, unprocessed = pending_pods(sim)
    out = ScaleUpDraft(ScaleUpResult.NOT_NEEDED, not_processed=unprocessed)
    if not pending:
        return out.freeze()
    plans = {p.ref: sim.volumes.plan(p) for p in pending}
    # Filter-out-schedulable's placements stay in the snapshot for the rest of the loop:
    # upstream's PodListProcessor packs them into the cluster snapshot that scale-down
    # then plans on, so a node a pending pod was just fitted onto is not found empty.
    out.fits_existing, out.fits_upcoming, left = filter_out_schedulable(sim, pending, plans, out.placed)
    if not left:
        return out.freeze()
    sim.snapshot.fork()  # the estimator's template nodes and placements are scale-up's alone
    try:
        return _expand(sim, left, plans, out).freeze()
    finally:
        sim.snapshot.revert()


def _expand(sim: LoopContext, left: list[Pod], plans: dict[str, VolumePlan], out: ScaleUpDraft) -> ScaleUpDraft:
    opts = sim.options
    pod_groups = _group(left, plans)
    reasons: dict[str, dict[str, str]] = {p.ref: {} for p in left}
    node_cap, node_cap_reason = _node_cap(sim)
    estimator: Estimator = BinpackingEstimator(sim.checker, storage_aware=opts.storage_aware,
                                               time_budget=opts.scale_up.max_binpacking_seconds)
    options: list[ExpansionOption] = []
    fits_by_group: dict[str, set[int]] = {}
    helpable_by_group: dict[str, tuple[TemplateNode, list[PodGroup], int]] = {}
    for name in sorted(sim.state.groups):
        group = sim.state.groups[name]
        template = sim.templates.get(name)

        def refuse(why: str, pods: Sequence[Pod] = left) -> None:
            for p in pods:
                reasons[p.ref][name] = why  # noqa: B023 - used at once, inside this iteration

        backoff = sim.backed_off.get(name)
        if backoff is not None:
            # Upstream skips a backed-off group; the next-best group gets the pods meanwhile.
            refuse(f"in backoff after failed scale-up ({backoff})")
            continue
        if template is None:
            refuse("no template node: the group has no nodes and the cloud gave no template")
            continue
        headroom = group.max_size() - group.target_size()
        if headroom <= 0:
            refuse(f"max node group size reached ({group.max_size()})")
            continue
        helpable = []
        fits_by_group[name] = set()
        for gi, pg in enumerate(pod_groups):
            why = _fits_template(sim, template, pg)
            if why is None:
                helpable.append(pg)
                fits_by_group[name].add(gi)
            else:
                refuse(why, pg.pods)
        if helpable:
            helpable_by_group[name] = (template, helpable, headroom)
    similar_by_group: dict[str, list[str]] = {}
    for name, (template, helpable, headroom) in helpable_by_group.items():
        similar = _similar_for(sim, name, fits_by_group) if opts.scale_up.balance_similar else []
        similar_by_group[name] = similar
        # Upstream's estimation limiter (sng_capacity_threshold): the room left in the
        # group and in every similar group it will be balanced with.
        room = headroom + sum(max(0, sim.state.groups[g].max_size() - sim.state.groups[g].target_size())
                              for g in similar)
        cap = min(room, opts.scale_up.max_nodes_per_scaleup)
        if node_cap is not None:
            cap = min(cap, node_cap)
        if cap <= 0:
            for p in (p for pg in helpable for p in pg.pods):
                reasons[p.ref][name] = node_cap_reason or "no node allowed by limits"
            continue

        def new_node(i: int, t: TemplateNode = template) -> tuple:  # type: ignore[type-arg]
            return instantiate(t, f"new-{i}")

        estimate = estimator.estimate(helpable, template.node, new_node, cap)
        if estimate.node_count == 0:
            continue
        helped = {p.ref for p in estimate.scheduled}
        for p in (p for pg in helpable for p in pg.pods if p.ref not in helped):
            reasons[p.ref][name] = "the estimator's node limit was reached before this pod was placed"
        price = price_of(sim.state.groups[name])
        options.append(ExpansionOption(name, estimate.node_count, estimate.scheduled, template.node, price,
                                       template.storage_known, estimate.local_bytes))
    out.options = options
    if not options:
        out.result = ScaleUpResult.NO_SCALE_UP
        out.still_unschedulable = reasons
        return out
    ctx = ExpanderContext(
        storage_aware=opts.storage_aware,
        cluster_node_count=len(sim.state.nodes),
        priority_config=sim.objects.priority_config,
        rng=random.Random(opts.random_seed if opts.random_seed is not None else 0),
    )
    best = build_chain(opts.scale_up.expanders).choose(options, ctx)
    out.notes.extend(ctx.warnings)
    if best is None:  # pragma: no cover - a chain over a non-empty list always chooses
        out.result = ScaleUpResult.NO_SCALE_UP
        return out
    out.chosen = best.group
    template = sim.templates[best.group]
    assert template is not None
    delta = best.node_count
    cap, why = _resource_cap(sim, template)
    if delta > cap:
        out.notes.append(f"{best.group}: {why}; {delta} nodes capped to {cap}")
        delta = cap
    if delta <= 0:
        out.result = ScaleUpResult.NO_SCALE_UP
        for p in best.pods:
            reasons[p.ref][best.group] = why or "limits reached"
        out.still_unschedulable = reasons
        return out
    targets = [best.group, *similar_by_group.get(best.group, [])]
    groups = sim.state.groups
    split = split_between({g: (groups[g].target_size(), groups[g].max_size()) for g in targets}, delta)
    out.increases = [Increase(g, d, groups[g].target_size() + d) for g, d in sorted(split.items()) if d > 0]
    out.result = ScaleUpResult.SCALED_UP if out.increases else ScaleUpResult.NO_SCALE_UP
    helped = {p.ref for p in best.pods}
    out.triggered_by = sorted(best.pods, key=lambda p: p.ref)
    out.still_unschedulable = {ref: r for ref, r in reasons.items() if ref not in helped}
    for r in out.still_unschedulable.values():
        if not r:
            r[best.group] = "another option was chosen; this pod waits for the next loop"
    return out

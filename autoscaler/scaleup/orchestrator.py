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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from autoscaler.clusterstate import Readiness
from autoscaler.context import LoopContext, is_expendable
from autoscaler.expander import ExpanderContext, ExpansionOption, build_chain
from autoscaler.scaleup.balancing import similar_groups, split_between
from autoscaler.scaleup.equivalence import EquivalenceKey, EquivalenceKeys
from autoscaler.scaleup.types import Cause, Increase, Refusal, ScaleUpDraft, ScaleUpPlan, ScaleUpResult
from autoscaler.templates import TemplateNode, instantiate
from cloudproviders.interface import price_of
from estimator.binpacking import Estimator, PodGroup
from kube.model import Pod
from simulator.predicates import Unschedulable
from simulator.volumes import VolumePlan

__all__ = ["Eligible", "Increase", "ScaleUpPlan", "ScaleUpResult", "cap_and_balance", "eligible_groups",
           "estimate_options", "pending_pods", "pick_option", "plan_scale_up"]


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


def _group(pods: Sequence[Pod], plans: dict[str, VolumePlan], keys: EquivalenceKeys) -> list[PodGroup]:
    groups: dict[EquivalenceKey, list[Pod]] = {}
    for pod in pods:
        groups.setdefault(keys.of(pod), []).append(pod)
    return [PodGroup(tuple(g), tuple(plans[p.ref] for p in g)) for g in groups.values()]


def filter_out_schedulable(sim: LoopContext, pods: list[Pod], plans: dict[str, VolumePlan],
                           placed: list[tuple[Pod, str]] | None = None, *,
                           keys: EquivalenceKeys | None = None) -> tuple[list[Pod], list[Pod], list[Pod]]:
    """Place what fits on existing/upcoming nodes (committed); return (existing, upcoming, left).

    ``placed`` collects (pod, node name) for every placement made; ``keys``: the pods'
    equivalence keys (built here from ``plans`` when not given).
    """
    checker, snap = sim.checker, sim.snapshot
    keys = keys if keys is not None else EquivalenceKeys(plans)
    order = sorted(range(len(pods)), key=lambda i: (-pods[i].priority, i))
    failed: set[EquivalenceKey] = set()
    on_existing: list[Pod] = []
    on_upcoming: list[Pod] = []
    left: list[Pod] = []
    for i in order:
        pod = pods[i]
        plan = plans[pod.ref]
        key = keys.of(pod)
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


def _fits_template(sim: LoopContext, template: TemplateNode, group: PodGroup) -> Unschedulable | None:
    """Does the exemplar fit a bare template copy? None, or the filter that refuses it."""
    snap, checker = sim.snapshot, sim.checker
    snap.fork()
    try:
        node, pods = instantiate(template, "check")
        idx = snap.add_node(node, pods)
        return checker.check(group.exemplar, group.plans[0], idx)
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


def plan_scale_up(sim: LoopContext, estimator: Estimator) -> ScaleUpPlan:
    """One scale-up decision; ``estimator`` packs pods onto template copies (upstream's ``Estimator``)."""
    pending, unprocessed = pending_pods(sim)
    out = ScaleUpDraft(ScaleUpResult.NOT_NEEDED, not_processed=unprocessed)
    if not pending:
        return out.freeze()
    plans = {p.ref: sim.volumes.plan(p) for p in pending}
    # Filter-out-schedulable's placements stay in the snapshot for the rest of the loop:
    # upstream's PodListProcessor packs them into the cluster snapshot that scale-down
    # then plans on, so a node a pending pod was just fitted onto is not found empty.
    keys = EquivalenceKeys(plans)
    out.fits_existing, out.fits_upcoming, left = filter_out_schedulable(sim, pending, plans, out.placed, keys=keys)
    if not left:
        return out.freeze()
    sim.snapshot.fork()  # the estimator's template nodes and placements are scale-up's alone
    try:
        return _expand(sim, _group(left, plans, keys), left, estimator, out).freeze()
    finally:
        sim.snapshot.revert()


Refusals = dict[str, dict[str, Refusal]]


@dataclass(frozen=True, slots=True)
class Eligible:
    """A group that can help some of the pods: its template, the pod groups that fit it, its room."""

    name: str
    template: TemplateNode
    helpable: tuple[PodGroup, ...]
    #: Indexes (into the pod groups) of those that fit a bare template copy.
    fits: frozenset[int]
    headroom: int


def _refuse(refusals: Refusals, pods: Iterable[Pod], group: str, refusal: Refusal) -> None:
    for pod in pods:
        refusals[pod.ref][group] = refusal


def _group_refusal(sim: LoopContext, name: str) -> Refusal | None:
    """Why a group helps no pod at all (backoff, no template, no room), or None."""
    backoff = sim.backed_off.get(name)
    if backoff is not None:
        # Upstream skips a backed-off group; the next-best group gets the pods meanwhile.
        return Refusal(f"in backoff after failed scale-up ({backoff})", Cause.BACKOFF)
    if sim.templates.get(name) is None:
        return Refusal("no template node: the group has no nodes and the cloud gave no template", Cause.NO_TEMPLATE)
    group = sim.state.groups[name]
    if group.max_size() - group.target_size() <= 0:
        return Refusal(f"max node group size reached ({group.max_size()})", Cause.MAX_SIZE_REACHED)
    return None


def eligible_groups(sim: LoopContext, pod_groups: Sequence[PodGroup], refusals: Refusals) -> list[Eligible]:
    """Step 1: groups not backed off, with a template and room, and the pod groups each template fits."""
    out = []
    for name in sorted(sim.state.groups):
        refusal = _group_refusal(sim, name)
        if refusal is not None:
            _refuse(refusals, (p for pg in pod_groups for p in pg.pods), name, refusal)
            continue
        template = sim.templates[name]
        assert template is not None
        fits = []
        for gi, pg in enumerate(pod_groups):
            why = _fits_template(sim, template, pg)
            if why is None:
                fits.append(gi)
            else:
                _refuse(refusals, pg.pods, name, Refusal(str(why), why.predicate))
        group = sim.state.groups[name]
        if fits:
            out.append(Eligible(name, template, tuple(pod_groups[i] for i in fits), frozenset(fits),
                                group.max_size() - group.target_size()))
    return out


def _estimate_cap(sim: LoopContext, group: Eligible, similar: Sequence[str],
                  node_cap: tuple[int | None, str | None]) -> tuple[int, Refusal | None]:
    """How many nodes the estimator may add for ``group``, and why none when it is 0."""
    # Upstream's estimation limiter (sng_capacity_threshold): the room left in the group
    # and in every similar group it will be balanced with.
    groups = sim.state.groups
    room = group.headroom + sum(max(0, groups[g].max_size() - groups[g].target_size()) for g in similar)
    cap = min(room, sim.options.scale_up.max_nodes_per_scaleup)
    limit, node_cap_reason = node_cap
    if limit is not None:
        cap = min(cap, limit)
    if cap > 0:
        return cap, None
    if node_cap_reason:
        return 0, Refusal(node_cap_reason, Cause.MAX_NODES_TOTAL)
    return 0, Refusal("no node allowed by limits", Cause.ESTIMATOR_LIMIT)


def estimate_options(sim: LoopContext, eligible: Sequence[Eligible], estimator: Estimator,
                     refusals: Refusals) -> tuple[list[ExpansionOption], dict[str, list[str]]]:
    """Step 2: bin-pack each eligible group's pods onto template copies; the options and each group's similar groups."""
    fits_by_group = {e.name: set(e.fits) for e in eligible}
    options: list[ExpansionOption] = []
    similar_by_group: dict[str, list[str]] = {}
    node_cap = _node_cap(sim)
    for group in eligible:
        similar = _similar_for(sim, group.name, fits_by_group) if sim.options.scale_up.balance_similar else []
        similar_by_group[group.name] = similar
        helpable_pods = [p for pg in group.helpable for p in pg.pods]
        cap, why = _estimate_cap(sim, group, similar, node_cap)
        if why is not None:
            _refuse(refusals, helpable_pods, group.name, why)
            continue

        def new_node(i: int, t: TemplateNode = group.template) -> tuple:  # type: ignore[type-arg]
            return instantiate(t, f"new-{i}")

        estimate = estimator.estimate(group.helpable, group.template.node, new_node, cap)
        if estimate.node_count == 0:
            continue
        if len(estimate.scheduled) < len(helpable_pods):  # it places helpable pods only, each once
            helped = {p.ref for p in estimate.scheduled}
            _refuse(refusals, (p for p in helpable_pods if p.ref not in helped), group.name,
                    Refusal("the estimator's node limit was reached before this pod was placed",
                            Cause.ESTIMATOR_LIMIT))
        options.append(ExpansionOption(group.name, estimate.node_count, estimate.scheduled, group.template.node,
                                       price_of(sim.state.groups[group.name]), group.template.storage_known,
                                       estimate.local_bytes))
    return options, similar_by_group


def pick_option(sim: LoopContext, options: Sequence[ExpansionOption], out: ScaleUpDraft) -> ExpansionOption | None:
    """Step 3: the expander chain chooses one option (its warnings go to the plan's notes)."""
    opts = sim.options
    ctx = ExpanderContext(
        storage_aware=opts.storage_aware,
        cluster_node_count=len(sim.state.nodes),
        priority_config=sim.objects.priority_config,
        rng=random.Random(opts.random_seed if opts.random_seed is not None else 0),
    )
    best = build_chain(opts.scale_up.expanders).choose(list(options), ctx)
    out.notes.extend(ctx.warnings)
    return best


def cap_and_balance(sim: LoopContext, best: ExpansionOption, similar: Sequence[str], out: ScaleUpDraft,
                    refusals: Refusals) -> None:
    """Step 4: cap the chosen delta by the cores/memory totals, then split it over the similar groups."""
    template = sim.templates[best.group]
    assert template is not None
    delta = best.node_count
    cap, why = _resource_cap(sim, template)
    if delta > cap:
        out.notes.append(f"{best.group}: {why}; {delta} nodes capped to {cap}")
        delta = cap
    if delta <= 0:
        out.result = ScaleUpResult.NO_SCALE_UP
        _refuse(refusals, best.pods, best.group, Refusal(why or "limits reached", Cause.RESOURCE_LIMIT))
        out.refusals = refusals
        return
    groups = sim.state.groups
    split = split_between({g: (groups[g].target_size(), groups[g].max_size()) for g in [best.group, *similar]},
                          delta)
    out.increases = [Increase(g, d, groups[g].target_size() + d) for g, d in sorted(split.items()) if d > 0]
    out.result = ScaleUpResult.SCALED_UP if out.increases else ScaleUpResult.NO_SCALE_UP
    helped = {p.ref for p in best.pods}
    out.triggered_by = sorted(best.pods, key=lambda p: p.ref)
    out.refusals = {ref: r for ref, r in refusals.items() if ref not in helped}
    waiting = Refusal("another option was chosen; this pod waits for the next loop", Cause.NOT_CHOSEN)
    for by_group in out.refusals.values():
        if not by_group:
            by_group[best.group] = waiting


def _expand(sim: LoopContext, pod_groups: list[PodGroup], left: list[Pod], estimator: Estimator,
            out: ScaleUpDraft) -> ScaleUpDraft:
    refusals: Refusals = {p.ref: {} for p in left}
    eligible = eligible_groups(sim, pod_groups, refusals)
    out.options, similar_by_group = estimate_options(sim, eligible, estimator, refusals)
    best = pick_option(sim, out.options, out) if out.options else None
    if best is None:
        out.result = ScaleUpResult.NO_SCALE_UP
        out.refusals = refusals
        return out
    out.chosen = best.group
    cap_and_balance(sim, best, similar_by_group.get(best.group, []), out, refusals)
    return out

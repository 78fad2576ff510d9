"""First-fit-decreasing bin-packing onto template copies, local storage as one more dimension."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec.structs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.binpacking import BinpackingEstimator, Estimate, PodGroup
from kube.model import UNBOUNDED_BYTES, Node, Pod
from kube.names import HOSTNAME_LABEL
from simulator.predicates import PredicateChecker
from simulator.volumes import VolumePlan
from tests.factories import GiB, World, cluster, node, pod, pvc, storage_class, world


@dataclass(frozen=True, slots=True)
class Want:
    """``count`` equivalent pods (one owner) with these requests and local claims."""

    owner: str
    count: int
    cpu: str = "100m"
    memory: str = "100Mi"
    local: str | None = None


class RecordingChecker(PredicateChecker):
    """The estimator's checker, noting every placement (the snapshot is reverted afterwards)."""

    placed: list[tuple[str, Pod, int]]
    #: How many pods each ``place_copies`` placed together.
    runs: list[int]

    def place(self, pod: Pod, plan: VolumePlan, idx: int) -> int:
        self.placed.append((self.snapshot.nodes[idx].name, pod, self.local_bytes_on(pod, plan, idx)))
        return super().place(pod, plan, idx)

    def place_copies(self, pods: Sequence[Pod], plan: VolumePlan, idx: int) -> int:
        self.runs.append(len(pods))
        for each in pods:
            self.placed.append((self.snapshot.nodes[idx].name, each, self.local_bytes_on(each, plan, idx)))
        return super().place_copies(pods, plan, idx)


def setup(wants: Sequence[Want], *, storage_aware: bool = True, live: Sequence[Node] = ()
          ) -> tuple[World, RecordingChecker, list[PodGroup]]:
    claims = [pvc(f"{w.owner}-{i}", w.local) for w in wants if w.local for i in range(w.count)]
    w = world(cluster(storage_class(), *claims, *live), storage_aware=storage_aware)
    checker = RecordingChecker(w.snapshot, w.volumes)
    checker.placed, checker.runs = [], []
    groups = []
    for want in wants:
        pods = tuple(
            pod(f"{want.owner}-{i}", want.cpu, want.memory, owner=("StatefulSet", want.owner),
                claims=[f"{want.owner}-{i}"] if want.local else ())
            for i in range(want.count)
        )
        groups.append(PodGroup(pods, tuple(w.plan(p) for p in pods)))
    return w, checker, groups


def copies(template: Node, daemon_cpu: str | None = None) -> Iterator[tuple[Node, list[Pod]]]:
    for i in itertools.count():
        name = f"new-{i}"
        copy = dataclasses.replace(template, name=name, labels={**template.labels, HOSTNAME_LABEL: name})
        daemons = [pod(f"ds-{i}", daemon_cpu, "0", node=name, owner=("DaemonSet", "ds"))] if daemon_cpu else []
        yield copy, daemons


def estimate(wants: Sequence[Want], template: Node, *, max_nodes: int = 1000, storage_aware: bool = True,
             daemon_cpu: str | None = None, live: Sequence[Node] = ()) -> tuple[Estimate, RecordingChecker]:
    _, checker, groups = setup(wants, storage_aware=storage_aware, live=live)
    made = copies(template, daemon_cpu)
    estimator = BinpackingEstimator(checker, storage_aware=storage_aware)
    result = estimator.estimate(groups, template, lambda i: next(made), max_nodes)
    return result, checker


def per_node(checker: RecordingChecker) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, placed, _ in checker.placed:
        out.setdefault(name, []).append(placed.name)
    return out


DISK_250 = node("template", cpu="4", memory="8Gi", storage_free="250Gi")


@pytest.mark.parametrize(("wants", "template", "kw", "nodes", "scheduled"), [
    pytest.param([Want("db", 5, local="100Gi")], DISK_250, {}, 3, 5,
                 id="five-pods-each-needing-100Gi-on-a-250Gi-template-give-three-new-nodes"),
    pytest.param([Want("db", 5, local="100Gi")], DISK_250, {"storage_aware": False}, 1, 5,
                 id="storage-aware-false-ignores-storage"),
    pytest.param([Want("db", 5, local="100Gi")], node("t", storage_free=UNBOUNDED_BYTES), {}, 1, 5,
                 id="unbounded-template-holds-any-storage"),
    pytest.param([Want("db", 2, local="1Gi")], node("t", storage_free="0"), {}, 0, 0,
                 id="template-without-local-capacity-drops-storage-pods"),
    pytest.param([Want("web", 10, cpu="1")], node("t", cpu="4"), {}, 3, 10, id="cpu-only"),
    pytest.param([Want("web", 6, memory="3Gi")], node("t", memory="8Gi"), {}, 3, 6, id="memory-only"),
    pytest.param([Want("web", 7)], node("t", pods=3), {}, 3, 7, id="pod-slots"),
    pytest.param([Want("web", 6, cpu="1")], node("t", cpu="4"), {"daemon_cpu": "1"}, 2, 6,
                 id="daemonset-pods-take-their-share"),
    pytest.param([Want("small", 2, cpu="1"), Want("big", 2, cpu="3")], node("t", cpu="4"), {}, 2, 4,
                 id="decreasing-order-fills-gaps-with-small-pods"),
    pytest.param([Want("huge", 2, cpu="8"), Want("web", 2, cpu="1")], node("t", cpu="4"), {}, 1, 2,
                 id="pod-that-does-not-fit-an-empty-template-drops-its-group"),
    pytest.param([Want("web", 10, cpu="1")], node("t", cpu="4"), {"max_nodes": 2}, 2, 8, id="max-nodes-limit"),
    pytest.param([Want("web", 3, cpu="1")], node("t", cpu="4"), {"max_nodes": 0}, 0, 0, id="max-nodes-zero"),
    pytest.param([Want("web", 4, cpu="1")], node("t", cpu="4"), {"live": [node("idle", cpu="64")]}, 1, 4,
                 id="live-nodes-are-not-new-nodes"),
    pytest.param([Want("db", 4, cpu="1", local="200Gi"), Want("web", 4, cpu="1")], DISK_250, {}, 4, 8,
                 id="storage-bound-pods-packed-first"),
])
def test_estimate(wants: list[Want], template: Node, kw: dict[str, Any], nodes: int, scheduled: int) -> None:
    result, checker = estimate(wants, template, **kw)
    assert (result.node_count, len(result.scheduled)) == (nodes, scheduled), per_node(checker)
    assert not result.timed_out
    assert sorted(p.ref for p in result.scheduled) == sorted(p.ref for _, p, _ in checker.placed)


def test_storage_placed_is_reported_for_least_waste() -> None:
    result, _ = estimate([Want("db", 5, local="100Gi")], DISK_250)
    assert result.local_bytes == 500 * GiB


def test_storage_groups_first_then_first_fit() -> None:
    """Two 200Gi pods each fill a 250Gi node; the small pods then share those nodes."""
    _, checker = estimate([Want("web", 2, cpu="1"), Want("db", 2, cpu="1", local="200Gi")], DISK_250)
    assert per_node(checker) == {"new-0": ["db-0", "web-0", "web-1"], "new-1": ["db-1"]}


def test_snapshot_is_reverted() -> None:
    w, checker, groups = setup([Want("web", 5, cpu="1")], live=[node("n1")])
    before = (w.snapshot.count, w.snapshot.view(w.snapshot.free_cpu).tolist())
    made = copies(node("t"))
    BinpackingEstimator(checker).estimate(groups, node("t"), lambda i: next(made), 10)
    assert (w.snapshot.count, w.snapshot.view(w.snapshot.free_cpu).tolist()) == before


def test_time_budget() -> None:
    ticks = itertools.count()
    _, checker, groups = setup([Want("web", 5)])
    made = copies(node("t"))
    estimator = BinpackingEstimator(checker, time_budget=2.5, clock=lambda: float(next(ticks)))
    result = estimator.estimate(groups, node("t"), lambda i: next(made), 10)
    assert result.timed_out
    assert 0 < len(result.scheduled) < 5


# --- properties ----------------------------------------------------------------------------------

_wants = st.lists(
    st.builds(lambda n, count, cpu, mem, local: Want(f"g{n}", count, f"{cpu}m", f"{mem}Mi",
                                                    f"{local}Gi" if local else None),
              st.integers(0, 10**6), st.integers(1, 6), st.integers(0, 5000), st.integers(0, 9000),
              st.one_of(st.just(0), st.integers(1, 600))),
    min_size=1, max_size=5, unique_by=lambda w: w.owner,
)
_templates = st.builds(
    lambda cpu, mem, pods, free: node("template", f"{cpu}", f"{mem}Gi", pods,
                                      storage_free=None if free is None else f"{free}Gi"),
    st.integers(1, 8), st.integers(1, 16), st.integers(1, 12), st.one_of(st.none(), st.integers(0, 1200)),
)


@settings(max_examples=120, deadline=None, database=None)
@given(_wants, _templates, st.integers(1, 40))
def test_no_new_node_is_over_capacity(wants: list[Want], template: Node, max_nodes: int) -> None:
    result, checker = estimate(wants, template, max_nodes=max_nodes)
    alloc = template.allocatable
    local_cap = template.free_local_bytes or 0
    used: dict[str, list[tuple[Pod, int]]] = {}
    for name, placed, local in checker.placed:
        used.setdefault(name, []).append((placed, local))
    assert result.node_count == len(used) <= min(max_nodes, len(result.scheduled))
    for name, entries in used.items():
        assert name.startswith("new-"), "pods are packed onto new nodes only"
        assert sum(p.requests.cpu for p, _ in entries) <= alloc.cpu, name
        assert sum(p.requests.memory for p, _ in entries) <= alloc.memory, name
        assert len(entries) <= alloc.pods, name
        assert sum(local for _, local in entries) <= local_cap, name


@settings(max_examples=80, deadline=None, database=None)
@given(_wants, _templates)
def test_every_pod_that_fits_an_empty_template_is_scheduled(wants: list[Want], template: Node) -> None:
    result, _ = estimate(wants, template)
    alloc = template.allocatable
    local_cap = template.free_local_bytes or 0
    fits = {
        f"default/{w.owner}-{i}" for w in wants for i in range(w.count)
        if (pod("x", w.cpu, w.memory).requests.cpu <= alloc.cpu
            and pod("x", w.cpu, w.memory).requests.memory <= alloc.memory and alloc.pods >= 1
            and (w.local is None or pvc("x", w.local).request <= local_cap))
    }
    assert {p.ref for p in result.scheduled} == fits


# --- the linear first-fit position against plain first-fit ---------------------------------------


def _placements(wants: Sequence[Want], template: Node, max_nodes: int, *, linear: bool,
                constrained: Pod | None = None) -> list[tuple[str, str, int]]:
    _, checker, groups = setup(wants)
    if constrained is not None:  # every pod takes the constraints and labels of ``constrained``
        groups = [PodGroup(tuple(msgspec.structs.replace(p, scheduling=constrained.scheduling,
                                                     labels=constrained.labels) for p in g.pods), g.plans)
                  for g in groups]
    made = copies(template)
    BinpackingEstimator(checker, first_fit_position=linear).estimate(groups, template, lambda i: next(made),
                                                                    max_nodes)
    return [(name, p.ref, local) for name, p, local in checker.placed]


@settings(max_examples=100, deadline=None, database=None)
@given(_wants, _templates, st.integers(1, 40))
def test_first_fit_position_places_exactly_as_plain_first_fit(wants: list[Want], template: Node,
                                                             max_nodes: int) -> None:
    """Differential: resuming each group where its last pod landed changes no placement."""
    assert _placements(wants, template, max_nodes, linear=True) == \
        _placements(wants, template, max_nodes, linear=False)


@pytest.mark.parametrize("term", [
    pytest.param("antiAffinity", id="anti-affinity-keeps-the-position"),
    pytest.param("spread", id="hard-spread-searches-from-the-first-new-node"),
])
def test_first_fit_position_with_pod_constraints(term: str) -> None:
    labels = {"app": "web"}
    if term == "antiAffinity":
        raw = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME_LABEL}]}}
        model = pod("x", labels=labels, affinity=raw)
    else:
        model = pod("x", labels=labels, spread_constraints=[{
            "maxSkew": 1, "topologyKey": HOSTNAME_LABEL, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels}}])
    wants = [Want("web", 6, cpu="1")]
    linear = _placements(wants, node("t", cpu="4"), 10, linear=True, constrained=model)
    plain = _placements(wants, node("t", cpu="4"), 10, linear=False, constrained=model)
    assert linear == plain
    if term == "antiAffinity":
        assert len({name for name, _, _ in linear}) == 6, "one pod per node under hostname anti-affinity"


@pytest.mark.parametrize("budget", [pytest.param(b, id=f"budget-{b}-ticks") for b in (0.5, 3.5, 7.5, 13.5, 40.5)])
def test_time_budget_ends_where_pods_placed_one_by_one_would(budget: float) -> None:
    """Pods placed together on a node still read the clock once each: the budget runs out at the same pod."""

    def run(linear: bool) -> tuple[bool, list[tuple[str, str, int]]]:
        ticks = itertools.count()
        _, checker, groups = setup([Want("web", 12, cpu="500m"), Want("db", 3, cpu="1", local="100Gi")])
        made = copies(DISK_250)
        estimator = BinpackingEstimator(checker, time_budget=budget, clock=lambda: float(next(ticks)),
                                        first_fit_position=linear)
        result = estimator.estimate(groups, DISK_250, lambda i: next(made), 10)
        return result.timed_out, [(name, p.ref, local) for name, p, local in checker.placed]

    assert run(True) == run(False)


def test_pods_of_a_group_go_to_one_node_in_one_step() -> None:
    """A group that fills whole nodes is placed a node at a time (one ``place_copies`` per node)."""
    result, checker = estimate([Want("web", 10, cpu="1")], node("t", cpu="4"))
    assert (result.node_count, checker.runs) == (3, [4, 4, 2])
    assert len(checker.placed) == 10

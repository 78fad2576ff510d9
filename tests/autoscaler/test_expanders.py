"""Expanders one by one, then chained: which option each keeps, and why."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from autoscaler.config import EXPANDERS
from autoscaler.expander import Chain, ExpanderContext, ExpansionOption, build_chain
from autoscaler.expander.chain import FILTERS
from autoscaler.expander.least_nodes import LeastNodesFilter
from autoscaler.expander.least_waste import LeastWasteFilter
from autoscaler.expander.most_pods import MostPodsFilter
from autoscaler.expander.price import PriceFilter, preferred_node_cpu
from autoscaler.expander.priority import PriorityFilter
from autoscaler.expander.random_choice import RandomFilter
from kube.model import UNBOUNDED_BYTES, Node, Pod, PodScheduling, Resources

GiB = 2**30


def node(
    cpu: float = 4,
    memory_gib: int = 16,
    *,
    allocatable_cpu: float | None = None,
    disk_gib: int | None = None,
    free_local_bytes: int | None = None,
) -> Node:
    """A template node: ``cpu`` in cores, ``disk_gib`` is the max-capacity label."""
    capacity = Resources(cpu=int(cpu * 1000), memory=memory_gib * GiB)
    allocatable = capacity
    if allocatable_cpu is not None:
        allocatable = Resources(cpu=int(allocatable_cpu * 1000), memory=memory_gib * GiB)
    disk = None if disk_gib is None else disk_gib * GiB
    return Node(
        name="template", labels={}, allocatable=allocatable, capacity=capacity,
        max_local_bytes=disk, free_local_bytes=disk if free_local_bytes is None else free_local_bytes,
    )


def pods(count: int, cpu_m: int = 1000, memory_gib: int = 4) -> tuple[Pod, ...]:
    return tuple(
        Pod(namespace="default", name=f"p{i}", uid="", labels={}, owner=None, node_name="",
            phase="Pending", requests=Resources(cpu=cpu_m, memory=memory_gib * GiB),
            scheduling=PodScheduling())
        for i in range(count)
    )


def option(
    group: str,
    template: Node | None = None,
    pending: tuple[Pod, ...] = (),
    node_count: int = 1,
    *,
    price: float | None = None,
    local_gib: int = 0,
    storage_known: bool = True,
) -> ExpansionOption:
    return ExpansionOption(
        group=group, node_count=node_count, pods=pending or pods(1), template=template or node(),
        price_per_hour=price, storage_known=storage_known, local_bytes=local_gib * GiB,
    )


def groups(options: Sequence[ExpansionOption]) -> list[str]:
    return [o.group for o in options]


# --- most-pods and least-nodes ---------------------------------------------------------


@pytest.mark.parametrize(("options", "expected"), [
    pytest.param([option("a", pending=pods(3)), option("b", pending=pods(2))], ["a"], id="most-pods-wins"),
    pytest.param([option("a", pending=pods(2)), option("b", pending=pods(2))], ["a", "b"], id="ties-kept"),
    pytest.param([], [], id="no-options"),
])
def test_most_pods(options: list[ExpansionOption], expected: list[str]) -> None:
    assert groups(MostPodsFilter().best_options(options, ExpanderContext())) == expected


@pytest.mark.parametrize(("counts", "expected"), [
    pytest.param({"a": 3, "b": 2}, ["b"], id="fewest-wins"),
    pytest.param({"a": 2, "b": 2}, ["a", "b"], id="ties-kept"),
    pytest.param({"a": 0, "b": 2}, ["b"], id="zero-nodes-skipped"),
    pytest.param({"a": 0, "b": 0}, ["a", "b"], id="all-zero-kept"),
])
def test_least_nodes(counts: dict[str, int], expected: list[str]) -> None:
    options = [option(g, node_count=n) for g, n in counts.items()]
    assert groups(LeastNodesFilter().best_options(options, ExpanderContext())) == expected


# --- least-waste ------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "expected"), [
    pytest.param([option("big", node(8, 32), pods(2)), option("fit", node(2, 8), pods(2))], ["fit"],
                 id="tighter-template-wins"),
    pytest.param([option("a", node(4, 16), pods(2)), option("b", node(4, 16), pods(2))], ["a", "b"],
                 id="exact-tie-keeps-both"),
    # Upstream measures against capacity: "alloc" fits on allocatable, but its capacity idles more.
    pytest.param([option("alloc", node(4, 16, allocatable_cpu=2), pods(2, memory_gib=4)),
                  option("cap", node(3, 12), pods(2, memory_gib=4))], ["cap"], id="capacity-not-allocatable"),
    pytest.param([option("two", node(2, 8), pods(3), node_count=2), option("one", node(4, 16), pods(3))],
                 ["two", "one"], id="node-count-multiplies-capacity"),
    pytest.param([option("no-mem", node(2, 0), pods(2, memory_gib=0)), option("mem", node(2, 8), pods(2))],
                 ["no-mem", "mem"], id="zero-capacity-term-is-zero"),
])
def test_least_waste_cpu_memory(options: list[ExpansionOption], expected: list[str]) -> None:
    assert groups(LeastWasteFilter().best_options(options, ExpanderContext())) == expected


@pytest.mark.parametrize(("small", "large", "storage_aware", "expected"), [
    pytest.param(node(disk_gib=100), node(disk_gib=400), True, ["small"], id="less-idle-disk-wins"),
    pytest.param(node(disk_gib=100), node(disk_gib=400), False, ["small", "large"],
                 id="not-storage-aware-ties"),
    pytest.param(node(free_local_bytes=100 * GiB), node(free_local_bytes=400 * GiB), True, ["small"],
                 id="free-bytes-stand-in-for-label"),
    pytest.param(node(disk_gib=80), node(free_local_bytes=UNBOUNDED_BYTES), True, ["small", "large"],
                 id="unbounded-disk-has-no-term"),
])
def test_least_waste_storage(small: Node, large: Node, storage_aware: bool, expected: list[str]) -> None:
    # Same CPU and memory, same pods: only local storage can separate the groups.
    options = [option("small", small, pods(2), local_gib=80), option("large", large, pods(2), local_gib=80)]
    ctx = ExpanderContext(storage_aware=storage_aware)
    assert groups(LeastWasteFilter().best_options(options, ctx)) == expected


def test_least_waste_ignores_storage_of_unknown_groups() -> None:
    options = [option("a", node(disk_gib=100), local_gib=80, storage_known=False),
               option("b", node(disk_gib=400), local_gib=80, storage_known=False)]
    assert groups(LeastWasteFilter().best_options(options, ExpanderContext())) == ["a", "b"]


# --- price --------------------------------------------------------------------------------


@pytest.mark.parametrize(("cluster_nodes", "cores"), [
    pytest.param(0, 1, id="empty"), pytest.param(2, 1, id="2"), pytest.param(3, 2, id="3"),
    pytest.param(6, 2, id="6"), pytest.param(20, 4, id="20"), pytest.param(60, 8, id="60"),
    pytest.param(200, 16, id="200"), pytest.param(201, 32, id="201"),
])
def test_preferred_node_cpu(cluster_nodes: int, cores: int) -> None:
    assert preferred_node_cpu(cluster_nodes) == cores * 1000


# Sixteen 2-CPU pods fill either one 32-CPU node or sixteen 2-CPU nodes; the big node is
# a little cheaper per unit, so the cluster's preferred node size decides.
_SIXTEEN = pods(16, cpu_m=2000, memory_gib=8)
_ONE_BIG = option("big", node(32, 128), _SIXTEEN, price=15.5)
_MANY_SMALL = option("small", node(2, 8), _SIXTEEN, node_count=16, price=1.0)


@pytest.mark.parametrize(("options", "cluster_nodes", "expected"), [
    pytest.param([option("cheap", node(2, 8), price=1.0), option("dear", node(2, 8), price=2.0)], 3,
                 ["cheap"], id="cheaper-wins"),
    pytest.param([option("a", node(2, 8), price=1.0), option("b", node(2, 8), price=1.0)], 3,
                 ["a", "b"], id="equal-price-ties-kept"),
    pytest.param([_ONE_BIG, _MANY_SMALL], 3, ["small"], id="small-cluster-penalizes-big-node"),
    pytest.param([_ONE_BIG, _MANY_SMALL], 500, ["big"], id="large-cluster-prefers-big-node"),
    pytest.param([option("unpriced", node(2, 8)), option("priced", node(2, 8), price=5.0)], 3,
                 ["priced"], id="unpriced-dropped"),
    pytest.param([option("a", node(2, 8)), option("b", node(4, 16))], 3, ["a", "b"],
                 id="none-priced-unchanged"),
])
def test_price(options: list[ExpansionOption], cluster_nodes: int, expected: list[str]) -> None:
    ctx = ExpanderContext(cluster_node_count=cluster_nodes)
    assert groups(PriceFilter().best_options(options, ctx)) == expected


# --- priority -------------------------------------------------------------------------------

_PRIORITIES = """
10:
  - .*-spot
50:
  - ^gpu-
  - large
"""


@pytest.mark.parametrize(("names", "expected"), [
    pytest.param(["small-spot", "gpu-a"], ["gpu-a"], id="highest-priority-wins"),
    pytest.param(["pool-large-1", "small-spot"], ["pool-large-1"], id="regex-search-is-unanchored"),
    pytest.param(["gpu-a", "gpu-b"], ["gpu-a", "gpu-b"], id="ties-kept"),
    pytest.param(["other", "small-spot"], ["small-spot"], id="unmatched-dropped-when-others-match"),
    pytest.param(["a-gpu-x", "b"], ["a-gpu-x", "b"], id="nothing-matches-unchanged"),
])
def test_priority(names: list[str], expected: list[str]) -> None:
    ctx = ExpanderContext(priority_config=_PRIORITIES)
    assert groups(PriorityFilter().best_options([option(n) for n in names], ctx)) == expected
    assert ctx.warnings == []


@pytest.mark.parametrize("config", [
    pytest.param(None, id="missing"),
    pytest.param("", id="empty"),
    pytest.param("10: [unclosed", id="not-yaml"),
    pytest.param("- gpu-.*", id="not-a-mapping"),
    pytest.param("high: [gpu-.*]", id="priority-not-integer"),
    pytest.param("true: [gpu-.*]", id="priority-boolean"),
    pytest.param("10: gpu-.*", id="regexes-not-a-list"),
    pytest.param("10: ['(']", id="bad-regex"),
])
def test_priority_without_usable_config_filters_nothing(config: str | None) -> None:
    ctx = ExpanderContext(priority_config=config)
    options = [option("gpu-a"), option("b")]
    assert groups(PriorityFilter().best_options(options, ctx)) == ["gpu-a", "b"]
    assert len(ctx.warnings) == 1
    assert ctx.warnings[0].startswith("priority expander:")


# --- random -------------------------------------------------------------------------------


def test_random_is_deterministic_for_a_seed() -> None:
    options = [option(g) for g in "abcdefgh"]

    def picks(seed: int) -> list[str]:
        ctx = ExpanderContext(rng=random.Random(seed))
        return [g for _ in range(20) for g in groups(RandomFilter().best_options(options, ctx))]

    assert picks(42) == picks(42)
    assert len(set(picks(42))) > 1  # it does draw, not always the first
    assert RandomFilter().best_options([], ExpanderContext()) == []


# --- chain ----------------------------------------------------------------------------------


class _Spy:
    """A filter that records being called and keeps everything."""

    name: str = "spy"

    def __init__(self) -> None:
        self.calls = 0

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
        self.calls += 1
        return list(options)


def test_every_configurable_expander_builds() -> None:
    assert set(FILTERS) == set(EXPANDERS)
    assert [f.name for f in build_chain(EXPANDERS).filters] == list(EXPANDERS)


def test_chain_rejects_unknown_expander() -> None:
    with pytest.raises(ValueError, match="'cheapest'"):
        build_chain(["least-waste", "cheapest"])


def test_chain_of_no_options_chooses_nothing() -> None:
    assert build_chain(["least-waste"]).choose([], ExpanderContext()) is None


@pytest.mark.parametrize(("options", "spy_calls"), [
    pytest.param([option("a", pending=pods(3)), option("b", pending=pods(2))], 0, id="stops-once-one-left"),
    pytest.param([option("a", pending=pods(2)), option("b", pending=pods(2))], 1, id="tie-goes-on"),
    pytest.param([option("a")], 0, id="single-option-needs-no-filter"),
])
def test_chain_stops_early(options: list[ExpansionOption], spy_calls: int) -> None:
    spy = _Spy()
    chosen = Chain(filters=(MostPodsFilter(), spy)).choose(options, ExpanderContext())
    assert chosen in options
    assert spy.calls == spy_calls


@pytest.mark.parametrize(("names", "expected"), [
    pytest.param(["least-nodes", "most-pods"], "few", id="least-nodes-first"),
    pytest.param(["most-pods", "least-nodes"], "many", id="most-pods-first"),
])
def test_chain_applies_filters_in_order(names: list[str], expected: str) -> None:
    options = [option("few", pending=pods(2), node_count=1), option("many", pending=pods(5), node_count=3),
               option("other", pending=pods(1), node_count=2)]
    chosen = build_chain(names).choose(options, ExpanderContext())
    assert chosen is not None
    assert chosen.group == expected


def test_chain_breaks_final_tie_with_seeded_rng() -> None:
    options = [option(g, pending=pods(2)) for g in "abcdef"]
    chain = build_chain(["most-pods"])
    chosen = [chain.choose(options, ExpanderContext(rng=random.Random(seed))) for seed in range(10)]
    again = [chain.choose(options, ExpanderContext(rng=random.Random(seed))) for seed in range(10)]
    assert chosen == again
    assert {o.group for o in chosen if o is not None} != {"a"}  # not just the first option

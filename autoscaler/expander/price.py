"""The ``price`` expander: prefer the options that cost least per unit of useful work.

Upstream ``expander/price``, simplified to what a snapshot carries (a price per
hour for each group). Each option scores

    price_sub  = (node_price * N + stab) / (pods_price + stab)
    unfit      = max(preferred_cpu / node_cpu, node_cpu / preferred_cpu)
    suppressed = (unfit - 1) * (1 - tanh((N - 1) / 15)) + 1
    score      = suppressed * price_sub

and the lowest score wins (ties kept). ``pods_price`` is what the option's pods
would cost perfectly packed; ``stab`` is the price of a 500m CPU / 500MiB pod, which
keeps a few tiny pods from making any node look infinitely expensive. ``unfit``
steers toward the node size upstream prefers for the cluster's size, and the
``tanh`` term forgives a poor size when many nodes are added at once.

Pods are priced at one rate for the whole decision, as upstream's cloud pricing
model does: per millicore-hour and per byte-hour, each the cheapest among the
priced options, where a group's rates split its hourly price equally between its
CPU and its memory capacity. Pricing each option's pods at its own group's rate
would cancel the node price out of ``price_sub`` and make the expander blind to
price.

Options without ``price_per_hour`` are dropped: there is nothing to compare them
on. When no option has a price, all options are returned unchanged, so the rest of
the chain still decides. Upstream's penalty for groups that do not exist yet
(node auto-provisioning) does not apply: every option here is an existing group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from autoscaler.expander.base import ExpanderContext, ExpansionOption
from kube.model import Resources

__all__ = ["PriceFilter", "preferred_node_cpu"]

#: The stabilization pod: 500m CPU and 500MiB memory.
_STABILIZATION_POD = Resources(cpu=500, memory=500 * 2**20)

#: (max cluster nodes, preferred node CPU in cores), upstream's ladder.
_PREFERRED_CPU_LADDER = ((2, 1), (6, 2), (20, 4), (60, 8), (200, 16))
_LARGEST_PREFERRED_CORES = 32

#: Upstream damps unfitness with tanh((N - 1) / 15): about 15 nodes forgive much of it.
_UNFITNESS_DAMPING_NODES = 15.0


def preferred_node_cpu(cluster_node_count: int) -> int:
    """The node CPU (millicores) upstream prefers for a cluster of this many nodes."""
    for max_nodes, cores in _PREFERRED_CPU_LADDER:
        if cluster_node_count <= max_nodes:
            return cores * 1000
    return _LARGEST_PREFERRED_CORES * 1000


@dataclass(frozen=True, slots=True)
class _Rates:
    """Price per millicore-hour and per byte-hour."""

    cpu: float
    memory: float

    def price(self, requests: Resources) -> float:
        return requests.cpu * self.cpu + requests.memory * self.memory


def _group_rates(option: ExpansionOption) -> _Rates | None:
    capacity = option.template.capacity
    if option.price_per_hour is None or capacity.cpu <= 0 or capacity.memory <= 0:
        return None
    half = option.price_per_hour / 2
    return _Rates(cpu=half / capacity.cpu, memory=half / capacity.memory)


def _reference_rates(options: Sequence[ExpansionOption]) -> _Rates:
    rates = [r for r in map(_group_rates, options) if r is not None]
    if not rates:
        return _Rates(cpu=0.0, memory=0.0)
    return _Rates(cpu=min(r.cpu for r in rates), memory=min(r.memory for r in rates))


def _score(option: ExpansionOption, price: float, rates: _Rates, preferred_cpu: int) -> float:
    node_cpu = option.template.capacity.cpu
    if node_cpu <= 0:
        return math.inf  # a node without CPU fits no preferred size
    stabilization = rates.price(_STABILIZATION_POD)
    nodes_price = price * option.node_count + stabilization
    pods_price = sum(rates.price(pod.requests) for pod in option.pods) + stabilization
    if pods_price <= 0:
        # Nothing to price the pods with: a free option is best, any other the worst.
        price_sub = 0.0 if nodes_price <= 0 else math.inf
    else:
        price_sub = nodes_price / pods_price
    unfitness = max(preferred_cpu / node_cpu, node_cpu / preferred_cpu)
    damping = 1 - math.tanh((option.node_count - 1) / _UNFITNESS_DAMPING_NODES)
    return ((unfitness - 1) * damping + 1) * price_sub


class PriceFilter:
    """Keeps the priced options with the lowest score (all options if none is priced)."""

    name: str = "price"

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
        priced = [(option, option.price_per_hour) for option in options if option.price_per_hour is not None]
        if not priced:
            return list(options)
        rates = _reference_rates(options)
        preferred_cpu = preferred_node_cpu(ctx.cluster_node_count)
        scores = [_score(option, price, rates, preferred_cpu) for option, price in priced]
        lowest = min(scores)
        return [option for (option, _), score in zip(priced, scores, strict=True) if score == lowest]

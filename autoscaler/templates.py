"""Template nodes: what a new node of each group would look like (thesis Algorithms 5 and 6).

Source order: a ready, schedulable live node of the group; else the cached template
(live loop only); else the cloud's template; else an unready or unschedulable live
node. The result is sanitized as upstream does (fresh name and hostname, CA and
condition taints and ``--ignore-taint`` taints removed) plus the storage rule: the
capacity annotation becomes the max-capacity label's value (a new node starts with
its whole disk free), unbounded when the label is unknown, and zero for a group whose
nodes never ran the storage driver. DaemonSet pods that would run on the node are
part of the template.

Other capacity pools (TopoLVM device classes, ``simulator/capacity.py``) are kept as their
node annotations ``capacity.topolvm.io/<device-class>``, one per pool the cluster's classes
use: from live nodes, the largest value among the group's ready nodes, a *lower bound* of
what a fresh node offers (it has at least what the freest node has left; TopoLVM publishes
no total to do better), and zero when no ready node of the group published the pool (the
driver never ran there: same spirit as the zero-capacity rule above, never a guess). A
template without a ready live node (cloud template, unready node) knows nothing of them,
and follows the rule for a Rok capacity without its label: unbounded, learnt from the
group's first live node.
"""

from __future__ import annotations

import dataclasses
import operator
import zlib
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass

import msgspec.structs

from autoscaler.clusterstate import ClusterState, Readiness
from autoscaler.config import Options
from kube.model import UNBOUNDED_BYTES, Controller, Node, Pod
from kube.names import CA_DELETION_CANDIDATE_TAINT, CA_TO_BE_DELETED_TAINT, HOSTNAME_LABEL
from simulator.capacity import annotation_bytes
from simulator.predicates import untolerated_taint

__all__ = ["TemplateNode", "build_templates", "instantiate"]

_CONDITION_TAINTS = frozenset({
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/out-of-service",
    "node.cloudprovider.kubernetes.io/uninitialized",
})
_IGNORED_TAINT_PREFIXES = (
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
    "startup-taint.cluster-autoscaler.kubernetes.io/",
)


@dataclass(frozen=True, slots=True)
class TemplateNode:
    group: str
    node: Node
    #: DaemonSet (and mirror) pods a new node runs from the start.
    pods: tuple[Pod, ...]
    #: live-node, cache, cloud-template or unready-node.
    source: str
    #: Whether free local bytes are known (label or no-driver rule), not assumed unbounded.
    storage_known: bool


def _suffix(group: str) -> str:
    return f"{zlib.crc32(group.encode()) & 0xFFFFF:05x}"


def sanitize(node: Node, group: str, options: Options, no_storage_driver: bool,
             pools: Mapping[str, int] | None = None) -> tuple[Node, bool]:
    """A fresh node of ``group`` from ``node``; ``pools``: free bytes of each non-local pool
    (its annotation), the only annotations kept. Returns the node and whether its local
    pool's free bytes are known."""
    name = f"template-node-for-{group}-{_suffix(group)}"
    labels = dict(node.labels)
    labels[HOSTNAME_LABEL] = name
    ignored = set(options.scale_up.ignore_taints)
    taints = tuple(
        t for t in node.taints
        if t.key not in (CA_TO_BE_DELETED_TAINT, CA_DELETION_CANDIDATE_TAINT)
        and t.key not in _CONDITION_TAINTS and t.key not in ignored
        and not t.key.startswith(_IGNORED_TAINT_PREFIXES)
    )
    free_local = node.free_local_bytes
    known = True
    if options.storage_aware:
        if no_storage_driver:
            free_local = 0
        elif node.max_local_bytes is not None:
            free_local = node.max_local_bytes
        else:
            free_local, known = UNBOUNDED_BYTES, False
    sanitized = dataclasses.replace(
        node, name=name, labels=labels, taints=taints, unschedulable=False, ready=True, deleting=False,
        provider_id="", free_local_bytes=free_local, scale_down_disabled=False,
        annotations={pool: str(value) for pool, value in (pools or {}).items()},
    )
    return sanitized, known


def _daemonset_pods(node: Node, controllers: Iterable[Controller]) -> tuple[Pod, ...]:
    """DaemonSet pods that would run on ``node`` (selector, affinity and taints allow)."""
    pods = []
    for ctrl in controllers:
        tmpl = ctrl.pod_template
        if ctrl.kind != "DaemonSet" or tmpl is None:
            continue
        sched = tmpl.scheduling
        if any(node.labels.get(k) != v for k, v in sched.node_selector):
            continue
        if sched.required_affinity is not None and not sched.required_affinity.matches(node.labels, node.name):
            continue
        if untolerated_taint(node.taints, sched.tolerations) is not None:
            continue
        pods.append(msgspec.structs.replace(tmpl, name=f"{ctrl.name}-{node.name}", node_name=node.name))
    return tuple(pods)


def _pool_capacity(ready: Iterable[Node], pools: Iterable[str]) -> dict[str, int]:
    """Each pool's largest published free bytes among ``ready`` nodes (0 when none published it)."""
    nodes = list(ready)
    out = {}
    for pool in pools:
        values = [value for node in nodes if (value := annotation_bytes(node.annotations.get(pool))) is not None]
        out[pool] = max(values, default=0)
    return out


def build_templates(state: ClusterState, pods_by_node: Mapping[str, list[Pod]], controllers: Iterable[Controller],
                    options: Options, cache: MutableMapping[str, TemplateNode] | None = None,
                    *, pools: Iterable[str] = ()) -> dict[str, TemplateNode | None]:
    """One template per group (None when no source exists: the group cannot scale up).

    ``pools``: the non-local capacity pools the cluster's classes use (``VolumeIndex.pools``).
    """
    controller_list = list(controllers)
    pool_list = sorted(pools) if options.storage_aware else []
    out: dict[str, TemplateNode | None] = {}
    for name, group in state.groups.items():
        no_driver = name in state.no_storage_driver
        members = sorted(state.members(name), key=lambda s: s.name)
        live = next((s for s in members if s.readiness is Readiness.READY and not s.node.unschedulable), None)
        result: TemplateNode | None = None
        if live is not None:
            ready = (s.node for s in members if s.readiness is Readiness.READY)
            node, known = sanitize(live.node, name, options, no_driver, _pool_capacity(ready, pool_list))
            own = tuple(
                msgspec.structs.replace(p, name=f"{p.name}-{node.name}", node_name=node.name)
                for p in pods_by_node.get(live.name, ()) if p.is_daemonset or p.is_mirror
            )
            result = TemplateNode(name, node, own, "live-node", known)
            if cache is not None:
                cache[name] = result
        elif cache is not None and name in cache:
            result = cache[name]
        else:
            cloud = group.template_node()
            source = "cloud-template"
            if cloud is None:
                fallback = next((s for s in members if s.readiness is not Readiness.DELETING), None)
                cloud = fallback.node if fallback is not None else None
                source = "unready-node"
            if cloud is not None:
                # Nothing is known of the other pools here: unbounded, as a Rok capacity
                # without its label (storage-semantics 2.2), learnt from the first live node.
                unknown = dict.fromkeys(pool_list, UNBOUNDED_BYTES)
                node, known = sanitize(cloud, name, options, no_driver, unknown)
                own = tuple(msgspec.structs.replace(p, name=f"{p.name}-{node.name}", node_name=node.name)
                            for p in group.template_pods()) if source == "cloud-template" else ()
                result = TemplateNode(name, node, own + _daemonset_pods(node, controller_list), source, known)
        out[name] = result
    return out


#: ``Node``'s fields in ``__init__`` order (all are init fields), read in one C call: a
#: large scale-up copies the template thousands of times (``dataclasses.replace`` costs
#: twice as much).
_NODE_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(Node)))
_NAME_AT = [f.name for f in dataclasses.fields(Node)].index("name")
_LABELS_AT = [f.name for f in dataclasses.fields(Node)].index("labels")


def instantiate(template: TemplateNode, suffix: str) -> tuple[Node, list[Pod]]:
    """A distinct copy of the template for one simulated new node (own name and hostname)."""
    name = f"{template.node.name}-{suffix}"
    labels = dict(template.node.labels)
    labels[HOSTNAME_LABEL] = name
    values = list(_NODE_FIELDS(template.node))
    values[_NAME_AT], values[_LABELS_AT] = name, labels
    node = Node(*values)
    pods = [msgspec.structs.replace(p, name=f"{p.name}-{suffix}", node_name=name) for p in template.pods]
    return node, pods

"""kube-scheduler parity of the filters (issue 8, items 4-7 and 9, and what the audit found).

Each case builds Kubernetes JSON, sends it through the converters, and asks both ways
into the predicate checker: ``check`` (one node, first failure with its reason, in
kube-scheduler's plugin order) and ``find_node`` (the vectorized path). Both must agree.
Cases follow the tables of kube-scheduler's filter plugins (interpodaffinity,
podtopologyspread, nodeports, nodeaffinity, noderesources) and apimachinery's labels.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kube.convert import convert_node, convert_pod
from kube.model import Node, Pod
from kube.names import HOSTNAME_LABEL
from tests.factories import (
    NAMES,
    ZONE,
    Json,
    cluster,
    expr,
    node_json,
    pod_json,
    world,
)

# --- builders ----------------------------------------------------------------------------


def mknode(name: str, zone: str | None = "a", labels: Mapping[str, str] | None = None, **kw: Any) -> Node:
    all_labels = {**({ZONE: zone} if zone else {}), **(labels or {})}
    return convert_node(node_json(name, labels=all_labels, **kw), NAMES, [])


def mkpod(name: str, node: str = "", *, labels: Mapping[str, str] | None = None,
          edit: Mapping[str, Any] | None = None, cpu: str = "100m", **kw: Any) -> Pod:
    """A pod from ``pod_json``; ``edit`` sets raw ``spec``/``metadata`` keys (dotted: ``spec.x``)."""
    raw = pod_json(name, cpu, "100Mi", node, labels=labels, **kw)
    for path, value in (edit or {}).items():
        part, key = path.split(".", 1)
        raw[part][key] = copy.deepcopy(value)
    return convert_pod(raw)


def affinity_term(match: Json, key: str = HOSTNAME_LABEL, **extra: Any) -> Json:
    return {"labelSelector": match, "topologyKey": key, **extra}


def pod_affinity(*terms: Json, anti: bool = False) -> dict[str, Any]:
    kind = "podAntiAffinity" if anti else "podAffinity"
    return {"spec.affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


def required_nodes(*terms: Json) -> dict[str, Any]:
    return {"spec.affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def fits(nodes: Sequence[Node], pods: Sequence[Pod], subject: Pod,
         namespaces: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, str | None]:
    """node name -> None (fits) or the first failing filter's reason; checks the fast path agrees."""
    w = world(cluster(*nodes, *pods, namespaces=namespaces))
    plan = w.plan(subject)
    out: dict[str, str | None] = {}
    for node in nodes:
        reason = w.checker.check(subject, plan, w.idx(node.name))
        out[node.name] = None if reason is None else reason.reason
        allowed = w.snapshot.enabled_view().copy()
        allowed[:] = False
        allowed[w.idx(node.name)] = True
        found = w.checker.find_node(subject, plan, allowed)
        assert (found is not None) == (reason is None), (node.name, reason)
    return out


AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
PORTS = "node(s) didn't have free ports for the requested pod ports"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

# --- item 4: inter-pod affinity ---------------------------------------------------------------------

TWO_TERMS = pod_affinity(affinity_term({"matchLabels": {"app": "a"}}),
                         affinity_term({"matchLabels": {"tier": "b"}}, ZONE))
NODES_AB = [mknode("n1", "z1"), mknode("n2", "z1"), mknode("n3", None)]

AFFINITY_CASES = [
    pytest.param(
        [mkpod("only-app", "n1", labels={"app": "a"}), mkpod("only-tier", "n2", labels={"tier": "b"})],
        mkpod("p", edit=TWO_TERMS),
        {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY},
        id="pods-matching-one-term-each-do-not-count"),
    pytest.param(
        [mkpod("both", "n1", labels={"app": "a", "tier": "b"})],
        mkpod("p", edit=TWO_TERMS),
        {"n1": None, "n2": AFFINITY, "n3": AFFINITY},
        id="a-pod-matching-all-terms-counts"),
    pytest.param(
        [mkpod("only-app", "n1", labels={"app": "a"})],
        mkpod("p", labels={"app": "a", "tier": "b"}, edit=TWO_TERMS),
        {"n1": None, "n2": None, "n3": AFFINITY},
        id="first-pod-exception-when-no-pod-matches-all-terms"),
    pytest.param(
        [mkpod("both", "n1", labels={"app": "a", "tier": "b"})],
        mkpod("p", labels={"app": "a", "tier": "b"}, edit=TWO_TERMS),
        {"n1": None, "n2": AFFINITY, "n3": AFFINITY},
        id="no-exception-once-a-pod-matches-all-terms"),
    pytest.param(
        [mkpod("other-ns", "n1", labels={"app": "a"}, namespace="other")],
        mkpod("p", edit=pod_affinity(affinity_term({"matchLabels": {"app": "a"}},
                                                   namespaceSelector={"matchLabels": {"team": "x"}}))),
        {"n1": None, "n2": AFFINITY, "n3": AFFINITY},
        id="namespace-selector-selects-labelled-namespace"),
    pytest.param(
        [mkpod("ghost-ns", "n1", labels={"app": "a"}, namespace="ghost")],
        mkpod("p", edit=pod_affinity(affinity_term({"matchLabels": {"app": "a"}},
                                                   namespaceSelector={"matchExpressions": [
                                                       expr("team", "DoesNotExist")]}))),
        {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY},
        id="namespace-selector-never-selects-a-namespace-that-does-not-exist"),
    pytest.param(
        [mkpod("ghost-ns", "n1", labels={"app": "a"}, namespace="ghost")],
        mkpod("p", edit=pod_affinity(affinity_term({"matchLabels": {"app": "a"}}, namespaceSelector={}))),
        {"n1": None, "n2": AFFINITY, "n3": AFFINITY},
        id="empty-namespace-selector-is-every-namespace"),
    pytest.param(
        [mkpod("web", "n1", labels={"app": "web"})],
        mkpod("p", labels={"app": "web"}, edit=pod_affinity(affinity_term({"matchLabels": {"app": "db"}}, ZONE))),
        {"n1": AFFINITY, "n2": AFFINITY, "n3": AFFINITY},
        id="affinity-to-pods-that-do-not-exist"),
    pytest.param(
        [mkpod("web", "n1", labels={"app": "web"}, edit=pod_affinity(
            affinity_term({"matchLabels": {"app": "web"}}, ZONE), anti=True))],
        mkpod("p", labels={"app": "web"}, edit=pod_affinity(affinity_term({"matchLabels": {"app": "web"}}),
                                                            anti=True)),
        {"n1": ANTI, "n2": EXISTING_ANTI, "n3": None},
        id="own-anti-affinity-reported-before-existing-pods-anti-affinity"),
]


@pytest.mark.parametrize(("existing", "subject", "expected"), AFFINITY_CASES)
def test_inter_pod_affinity(existing: list[Pod], subject: Pod, expected: dict[str, str | None]) -> None:
    assert fits(NODES_AB, existing, subject, namespaces={"other": {"team": "x"}, "default": {}}) == expected


# --- item 7 (and the audit): topology spread ---------------------------------------------------------

SPREAD_WEB = {"spec.topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                  "whenUnsatisfiable": "DoNotSchedule",
                                                  "labelSelector": {"matchLabels": {"app": "web"}}}]}
TERMINATING = {"metadata.deletionTimestamp": "2026-06-01T11:59:50Z"}

SPREAD_CASES = [
    pytest.param([mkpod("w1", "a1", labels={"app": "web"})], mkpod("p", labels={"app": "web"}, edit=SPREAD_WEB),
                 {"a1": SPREAD, "b1": None}, id="skew-counts-running-pods"),
    pytest.param([mkpod("w1", "a1", labels={"app": "web"}, edit=TERMINATING)],
                 mkpod("p", labels={"app": "web"}, edit=SPREAD_WEB),
                 {"a1": None, "b1": None}, id="terminating-pods-are-not-counted"),
    pytest.param([mkpod("w1", "a1", labels={"app": "web"}, namespace="other")],
                 mkpod("p", labels={"app": "web"}, edit=SPREAD_WEB),
                 {"a1": None, "b1": None}, id="other-namespaces-are-not-counted"),
    pytest.param([mkpod("w1", "a1", labels={"app": "web", "version": "v1"})],
                 mkpod("p", labels={"app": "web", "version": "v2"}, edit={"spec.topologySpreadConstraints": [
                     {**SPREAD_WEB["spec.topologySpreadConstraints"][0], "matchLabelKeys": ["version"]}]}),
                 {"a1": None, "b1": None}, id="match-label-keys-narrow-the-selector"),
]


@pytest.mark.parametrize(("existing", "subject", "expected"), SPREAD_CASES)
def test_topology_spread(existing: list[Pod], subject: Pod, expected: dict[str, str | None]) -> None:
    assert fits([mknode("a1", "a"), mknode("b1", "b")], existing, subject) == expected


def test_spread_ignores_nodes_missing_another_constraints_key() -> None:
    """A node without every constraint's key is not a domain of any of them (nodeLabelsMatchSpreadConstraints)."""
    two = {"spec.topologySpreadConstraints": [
        *SPREAD_WEB["spec.topologySpreadConstraints"],
        {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}
    nodes = [mknode("a1", "a", {"rack": "r1"}), mknode("b1", "b", {"rack": "r1"}), mknode("c1", "c")]
    # c1 has no rack: zone c is no domain, so zone a (1 pod) vs zone b (0) decides, not c (0).
    existing = [mkpod("w1", "a1", labels={"app": "web"}), mkpod("w2", "b1", labels={"app": "web"}),
                mkpod("w3", "b1", labels={"app": "web"})]
    result = fits(nodes, existing, mkpod("p", labels={"app": "web"}, edit=two))
    assert result == {"a1": None, "b1": SPREAD, "c1": SPREAD + " (missing required label)"}


# --- item 6 (and the audit): host ports ---------------------------------------------------------------


def _with_init(port: int, restart: str | None) -> dict[str, Any]:
    init: Json = {"name": "init", "image": "busybox", "ports": [{"containerPort": port, "hostPort": port}]}
    if restart:
        init["restartPolicy"] = restart
    return {"spec.initContainers": [init]}


PORT_CASES = [
    pytest.param(mkpod("e", "n1", host_ports=[8080]), mkpod("p", host_ports=[8080]), PORTS, id="same-port"),
    pytest.param(mkpod("e", "n1", edit=_with_init(8080, "Always")), mkpod("p", host_ports=[8080]), PORTS,
                 id="sidecar-host-port-counts"),
    pytest.param(mkpod("e", "n1", edit=_with_init(8080, None)), mkpod("p", host_ports=[8080]), None,
                 id="plain-init-container-port-is-released"),
    pytest.param(mkpod("e", "n1"), mkpod("p", edit=_with_init(8080, "Always")), None, id="sidecar-port-free"),
    pytest.param(mkpod("e", "n1", host_ports=[(8080, "UDP")]), mkpod("p", host_ports=[8080]), None,
                 id="other-protocol"),
]


@pytest.mark.parametrize(("existing", "subject", "expected"), PORT_CASES)
def test_host_ports(existing: Pod, subject: Pod, expected: str | None) -> None:
    assert fits([mknode("n1")], [existing], subject) == {"n1": expected}


@pytest.mark.parametrize(("mine", "theirs", "conflict"), [
    pytest.param("", "10.0.0.1", True, id="any-ip-vs-one-ip"),
    pytest.param("10.0.0.1", "10.0.0.2", False, id="two-ips"),
    pytest.param("::", "10.0.0.1", False, id="ipv6-any-is-one-address-upstream"),
    pytest.param("0.0.0.0", "::", True, id="0.0.0.0-is-every-address"),
])
def test_host_port_ips(mine: str, theirs: str, conflict: bool) -> None:
    def ported(name: str, node: str, ip: str) -> Pod:
        raw = pod_json(name, "1", "1Gi", node)
        raw["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80, "hostIP": ip}]
        return convert_pod(raw)

    result = fits([mknode("n1")], [ported("e", "n1", theirs)], ported("p", "", mine))
    assert result == {"n1": PORTS if conflict else None}


# --- item 9: label selector syntax, as the API machinery parses it ------------------------------------

NODE_SELECTOR_CASES = [
    pytest.param([expr("disk", "NotIn", "ssd")], None, id="not-in-absent-label"),
    pytest.param([expr("disk", "NotIn", "not a label value!")], NODE_AFFINITY,
                 id="not-in-invalid-value-parses-to-no-node"),
    pytest.param([{"key": "disk", "operator": "DoesNotExist", "values": ["x"]}], NODE_AFFINITY,
                 id="does-not-exist-with-values"),
    pytest.param([expr("disk", "DoesNotExist")], None, id="does-not-exist"),
    pytest.param([{"key": "zone", "operator": "Exists", "values": ["a"]}], NODE_AFFINITY, id="exists-with-values"),
    pytest.param([{"key": "disk", "operator": "In", "values": []}], NODE_AFFINITY, id="in-without-values"),
    pytest.param([expr("cores", "Gt", "4")], None, id="gt"),
    pytest.param([expr("cores", "Gt", "8")], NODE_AFFINITY, id="gt-not-greater"),
    pytest.param([expr("cores", "Gt", "4", "5")], NODE_AFFINITY, id="gt-two-values"),
    pytest.param([expr("cores", "Gt", "1_0")], NODE_AFFINITY, id="gt-not-a-go-integer"),
    pytest.param([expr("cores", "Lt", "9")], None, id="lt"),
    pytest.param([expr("cores", "Lt", "+9")], NODE_AFFINITY, id="lt-signed-value-is-not-a-label-value"),
    pytest.param([expr("bad/key/x", "Exists")], NODE_AFFINITY, id="invalid-key"),
    pytest.param([expr("weight", "Gt", "1")], NODE_AFFINITY, id="gt-on-non-integer-label"),
]


@pytest.mark.parametrize(("expressions", "expected"), NODE_SELECTOR_CASES)
def test_node_selector_requirements(expressions: list[Json], expected: str | None) -> None:
    node = mknode("n1", labels={"cores": "8", "weight": " 3"})
    subject = mkpod("p", edit=required_nodes({"matchExpressions": expressions}))
    assert fits([node], [], subject) == {"n1": expected}


@pytest.mark.parametrize(("term", "expected"), [
    pytest.param({"matchFields": [expr("metadata.name", "In", "n1")]}, {"n1": None, "n2": NODE_AFFINITY},
                 id="match-fields-name"),
    pytest.param({"matchFields": [expr("metadata.name", "In", "n1", "n2")]},
                 {"n1": NODE_AFFINITY, "n2": NODE_AFFINITY}, id="match-fields-needs-one-value"),
    pytest.param({"matchFields": [expr("metadata.name", "NotIn", "n1")]}, {"n1": NODE_AFFINITY, "n2": None},
                 id="match-fields-not-in"),
    pytest.param({}, {"n1": NODE_AFFINITY, "n2": NODE_AFFINITY}, id="empty-term-selects-nothing"),
])
def test_node_selector_fields(term: Json, expected: dict[str, str | None]) -> None:
    assert fits([mknode("n1"), mknode("n2")], [], mkpod("p", edit=required_nodes(term))) == expected


def test_terms_are_ored_past_an_invalid_one() -> None:
    subject = mkpod("p", edit=required_nodes({"matchExpressions": [expr("zone", "Exists", "x")]},
                                             {"matchExpressions": [expr(ZONE, "In", "b")]}))
    assert fits([mknode("n1", "a"), mknode("n2", "b")], [], subject) == {"n1": NODE_AFFINITY, "n2": None}


@pytest.mark.parametrize("selector", [
    pytest.param({"matchExpressions": [expr("app", "NotIn", "no spaces allowed")]}, id="not-in-invalid-value"),
    pytest.param({"matchExpressions": [{"key": "app", "operator": "DoesNotExist", "values": ["a"]}]},
                 id="does-not-exist-with-values"),
    pytest.param({"matchExpressions": [expr("app", "Gt", "1")]}, id="gt-is-no-label-selector-operator"),
    pytest.param({"matchLabels": {"app": "x" * 64}}, id="value-too-long"),
])
@pytest.mark.parametrize("anti", [pytest.param(False, id="affinity"), pytest.param(True, id="anti-affinity")])
def test_unparsable_pod_affinity_fits_nowhere(selector: Json, anti: bool) -> None:
    subject = mkpod("p", labels={"app": "a"}, edit=pod_affinity(affinity_term(selector), anti=anti))
    result = fits([mknode("n1")], [], subject)
    assert result["n1"] is not None and result["n1"].startswith("parsing pod: ")


def test_unparsable_anti_affinity_of_an_existing_pod_is_ignored() -> None:
    bad = pod_affinity(affinity_term({"matchExpressions": [expr("app", "NotIn", "bad value")]}), anti=True)
    assert fits([mknode("n1")], [mkpod("e", "n1", edit=bad)], mkpod("p")) == {"n1": None}


# --- the plugin order of kube-scheduler's default profile -----------------------------------------------


@pytest.mark.parametrize(("node_kw", "subject", "expected"), [
    pytest.param({"unschedulable": True}, mkpod("p", edit={"spec.nodeName": "other"}),
                 "node(s) were unschedulable", id="node-unschedulable-before-node-name"),
    pytest.param({"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
                 mkpod("p", edit={"spec.nodeSelector": {"x": "y"}}),
                 "node(s) had untolerated taint {k: v}", id="taint-before-node-affinity"),
    pytest.param({"cpu": "100m"}, mkpod("p", cpu="1", host_ports=[80]), None, id="ports-free-then-resources"),
])
def test_filter_order(node_kw: dict[str, Any], subject: Pod, expected: str | None) -> None:
    node = mknode("n1", **node_kw)
    result = fits([node], [], subject)["n1"]
    if expected is None:
        assert result == "Insufficient cpu"
    else:
        assert result == expected


# An operator other than Equal/Exists, or Exists with a value, is refused by the API
# server's validation; the converter rejects it as bad input (tests/app/test_plan_bad_input.py).
@pytest.mark.parametrize(("operator", "value", "tolerated"), [
    pytest.param("Equal", "v", True, id="equal"),
    pytest.param("Equal", "w", False, id="equal-other-value"),
    pytest.param("Exists", "", True, id="exists"),
])
def test_toleration_operators(operator: str, value: str, tolerated: bool) -> None:
    node = mknode("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    subject = mkpod("p", edit={"spec.tolerations": [{"key": "k", "operator": operator, "value": value}]})
    assert (fits([node], [], subject)["n1"] is None) is tolerated

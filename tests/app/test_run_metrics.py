"""``run``'s metrics against upstream CA's documented list: names, types, labels, buckets."""

from __future__ import annotations

import re

import pytest

from app.run.metrics import CA_FUNCTIONS, Metrics
from app.run.taints import taint_type
from tests.app.ca_metrics import CA_METRICS

_TYPE = re.compile(r"^# TYPE (\S+) (\S+)$", re.M)


def exposed_types(text: str) -> dict[str, str]:
    """metric name -> type, from the ``# TYPE`` lines of a text exposition."""
    return dict(_TYPE.findall(text))


def test_every_ca_metric_is_exposed_with_its_type() -> None:
    types = exposed_types(Metrics().render().decode())
    assert len(CA_METRICS) == 41
    missing = {name: kind for name, (kind, _) in CA_METRICS.items()
               if types.get(f"cluster_autoscaler_{name}") != kind}
    assert missing == {}


def test_every_cluster_autoscaler_metric_is_one_of_cas() -> None:
    ours = {n.removeprefix("cluster_autoscaler_") for n in exposed_types(Metrics().render().decode())
            if n.startswith("cluster_autoscaler_")}
    assert ours - set(CA_METRICS) == {"skipped_pods_count"}  # registered by metrics.go, not in the document


@pytest.mark.parametrize("name", sorted(n for n, (_, labels) in CA_METRICS.items() if labels))
def test_labels_are_cas(name: str) -> None:
    metric = getattr(Metrics(), name)
    metric.labels(**dict.fromkeys(CA_METRICS[name][1], "x"))  # raises on any other label set


def _buckets(text: str, name: str) -> list[str]:
    return re.findall(rf'^cluster_autoscaler_{name}_bucket{{[^}}]*le="([^"]+)"', text, re.M)


def test_function_duration_buckets_are_cas() -> None:
    metrics = Metrics()
    metrics.phases({"main": 0.5, "runOnce": 0.4})
    text = metrics.render().decode()
    buckets = _buckets(text, "function_duration_seconds")
    # client_golang's ExponentialBucketsRange(0.1, 1800, 150), and +Inf.
    assert len(buckets) == 151
    assert (float(buckets[0]), round(float(buckets[-2]), 6), buckets[-1]) == (0.1, 1800.0, "+Inf")
    assert 'function="runOnce"' not in text, "only CA's function labels"
    assert set(CA_FUNCTIONS) >= {"main", "scaleUp", "findUnneeded", "scaleDown", "updateClusterState"}


def test_counters_start_at_zero_as_cas_init() -> None:
    text = Metrics().render().decode()
    for sample in ('cluster_autoscaler_evicted_pods_total{eviction_result="failed"} 0.0',
                   'cluster_autoscaler_evicted_pods_total{eviction_result="succeeded"} 0.0',
                   'cluster_autoscaler_errors_total{type="apiCallError"} 0.0',
                   'cluster_autoscaler_failed_scale_ups_total{dra_drivers="",gpu_name="",gpu_resource_name="",'
                   'reason="timeout"} 0.0',
                   'cluster_autoscaler_skipped_scale_events_count{direction="up",reason="CpuResourceLimit"} 0.0'):
        assert sample in text
    assert not re.search(r"_created[ {]", text), "no OpenMetrics _created series"


def test_backoff_status_clears_the_old_reason() -> None:
    metrics = Metrics()
    metrics.set_backoff(["ng"], {"ng": "OutOfCapacity"})
    metrics.set_backoff(["ng"], {})
    value = metrics.registry.get_sample_value
    assert value("cluster_autoscaler_node_group_backoff_status", {"node_group": "ng", "reason": "OutOfCapacity"}) == 0
    assert value("cluster_autoscaler_node_group_backoff_status", {"node_group": "ng", "reason": ""}) == 0


@pytest.mark.parametrize(("key", "reported"), [
    pytest.param("ToBeDeletedByClusterAutoscaler", "ToBeDeletedByClusterAutoscaler", id="ca-own"),
    pytest.param("node.kubernetes.io/not-ready", "node.kubernetes.io/not-ready", id="node-condition"),
    pytest.param("ignore-taint.cluster-autoscaler.kubernetes.io/gpu", "ignore-taint.cluster-autoscaler.kubernetes.io/",
                 id="deprecated-prefix"),
    pytest.param("startup-taint.cluster-autoscaler.kubernetes.io/x", "startup-taint", id="startup-prefix"),
    pytest.param("example.com/booting", "startup-taint", id="given-startup-taint"),
    pytest.param("dedicated", "other", id="other"),
])
def test_taint_types_as_ca_reports_them(key: str, reported: str) -> None:
    assert taint_type(key, frozenset({"example.com/booting"})) == reported

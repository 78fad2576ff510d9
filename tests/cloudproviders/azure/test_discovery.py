"""``label:`` auto-discovery as upstream (``azure_autodiscovery_test.go``, ``azure_manager_test.go``).

Specs are parsed at start-up (a refused one stops the provider being built); the bounds of
a discovered scale set come from its ``min``/``max`` tags, else from the specs.
"""

from __future__ import annotations

import pytest

from cloudproviders.azure.discovery import LabelDiscovery, parse_auto_discovery
from cloudproviders.config import CloudConfigError, StaticGroup
from tests.cloudproviders.azure_world import azure_provider
from tests.cloudproviders.fakes.azure import FakeAzure


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param("label:cluster-autoscaler-enabled=true,cluster-autoscaler-name=fake-cluster",
                 LabelDiscovery((("cluster-autoscaler-enabled", "true"), ("cluster-autoscaler-name", "fake-cluster"))),
                 id="valid"),
    pytest.param("label:test-tag=test-value,another-test-tag=another-test-value,min=1,max=2",
                 LabelDiscovery((("test-tag", "test-value"), ("another-test-tag", "another-test-value")), 1, 2),
                 id="with-sizes"),
    pytest.param("label:cluster-autoscaler-enabled=true,max=2",
                 LabelDiscovery((("cluster-autoscaler-enabled", "true"),), None, 2), id="only-max"),
    pytest.param("label:cluster-autoscaler-enabled=true,min=1",
                 LabelDiscovery((("cluster-autoscaler-enabled", "true"),), 1, None), id="only-min"),
])
def test_specs_parse(spec: str, expected: LabelDiscovery) -> None:
    assert parse_auto_discovery(spec) == expected


@pytest.mark.parametrize("spec", [
    pytest.param("test-tag=test-value,another-test-tag", id="missing-discoverer"),
    pytest.param("invalid:test-tag=test-value,another-test-tag", id="other-discoverer"),
    pytest.param("label:test-tag=", id="missing-value"),
    pytest.param("label:=test-val", id="missing-key"),
    pytest.param("label:cluster-autoscaler-enabled=true,min=random,max=2", id="non-integer-min"),
    pytest.param("label:cluster-autoscaler-enabled=true,min=-5,max=2", id="negative-min"),
    pytest.param("label:cluster-autoscaler-enabled=true,min=1,max=random", id="non-integer-max"),
    pytest.param("label:cluster-autoscaler-enabled=true,min=1,max=-5", id="negative-max"),
    pytest.param("label:cluster-autoscaler-enabled=true,min=5,max=1", id="max-below-min"),
    pytest.param("label:a=b=c", id="two-equals"),
    pytest.param("label:a=b:c", id="two-colons"),
])
def test_specs_refused_as_upstream(fake: FakeAzure, sleeps: list[float], spec: str) -> None:
    with pytest.raises(CloudConfigError, match="auto-discovery"):
        azure_provider(fake, sleeps, static=(), auto=(spec,))


def discovered(fake: FakeAzure, sleeps: list[float], *specs: str) -> dict[str, tuple[int, int]]:
    provider = azure_provider(fake, sleeps, static=(), auto=specs)
    provider.refresh()
    provider.close()
    return {g.name: (g.min_size(), g.max_size()) for g in provider.node_groups()}


@pytest.mark.parametrize(("tags", "specs", "expected"), [
    pytest.param({"fake-tag": "fake-value", "min": "1", "max": "5"}, ("label:fake-tag=fake-value",), (1, 5),
                 id="bounds-from-tags"),
    pytest.param({"fake-tag": "fake-value", "fake-tag2": "fake-value2"},
                 ("label:fake-tag=fake-value,min=2,max=5", "label:fake-tag2=fake-value2,min=1,max=4"), (2, 4),
                 id="highest-min-lowest-max-of-the-specs"),
    pytest.param({"fake-tag": "fake-value", "min": "3"}, ("label:fake-tag=fake-value,min=0,max=7",), (3, 7),
                 id="tag-over-spec"),
    pytest.param({"fake-tag": "fake-value"}, ("label:fake-tag=fake-value",), None, id="no-bounds-skipped"),
    pytest.param({"fake-tag": "fake-value", "min": "x", "max": "3"}, ("label:fake-tag=fake-value,min=1,max=3",), None,
                 id="bad-tag-skipped-even-with-spec-bounds"),
    pytest.param({"fake-tag": "fake-value", "min": "4", "max": "2"}, ("label:fake-tag=fake-value",), None,
                 id="max-below-min-skipped"),
    pytest.param({"fake-tag": "fake-value", "min": "1", "max": "5"},
                 ("label:fake-tag=fake-value", "label:other=yes"), None, id="every-spec-must-match"),
])
def test_discovered_bounds(fake: FakeAzure, sleeps: list[float], tags: dict[str, str], specs: tuple[str, ...],
                           expected: tuple[int, int] | None) -> None:
    fake.add_scale_set("test-vmss", "Standard_D4s_v5", 1, tags=tags)
    groups = discovered(fake, sleeps, *specs)
    assert groups.get("test-vmss") == expected


def test_a_static_group_wins_over_discovery(fake: FakeAzure, sleeps: list[float]) -> None:
    fake.add_scale_set("pool", "Standard_D4s_v5", 1, tags={"auto": "yes", "min": "1", "max": "9"})
    provider = azure_provider(fake, sleeps, static=(StaticGroup(0, 3, "pool"),), auto=("label:auto=yes,max=4",))
    provider.refresh()
    provider.close()
    assert {g.name: (g.min_size(), g.max_size()) for g in provider.node_groups()} == {"pool": (0, 3)}

"""``label:`` auto-discovery as upstream (``azure_autodiscovery_test.go``, ``azure_manager_test.go``).

Specs are parsed at start-up (a refused one stops the provider being built); the bounds of
a discovered scale set come from its ``min``/``max`` tags, else from the specs.
"""

from __future__ import annotations

import pytest

from cloudproviders.config import CloudConfigError
from tests.cloudproviders.azure_world import azure_provider
from tests.cloudproviders.fakes.azure import FakeAzure


def discovered(fake: FakeAzure, sleeps: list[float], *specs: str) -> dict[str, tuple[int, int]]:
    provider = azure_provider(fake, sleeps, static=(), auto=specs)
    provider.refresh()
    provider.close()
    return {g.name: (g.min_size(), g.max_size()) for g in provider.node_groups()}


@pytest.mark.parametrize(("spec", "tags", "expected"), [
    pytest.param("label:test-tag=test-value,another-test-tag=another-test-value,min=1,max=2",
                 {"test-tag": "test-value", "another-test-tag": "another-test-value"}, (1, 2), id="with-sizes"),
    pytest.param("label:cluster-autoscaler-enabled=true,max=2", {"cluster-autoscaler-enabled": "true", "min": "0"},
                 (0, 2), id="only-max"),
    pytest.param("label:cluster-autoscaler-enabled=true,min=1", {"cluster-autoscaler-enabled": "true", "max": "7"},
                 (1, 7), id="only-min"),
    pytest.param("label:min=1,max=3", {"min": "1", "max": "3"}, None, id="bounds-alone-select-nothing"),
])
def test_min_and_max_in_a_spec_are_bounds_not_tags(fake: FakeAzure, sleeps: list[float], spec: str,
                                                   tags: dict[str, str], expected: tuple[int, int] | None) -> None:
    fake.add_scale_set("test-vmss", "Standard_D4s_v5", 1, tags=tags)
    assert discovered(fake, sleeps, spec).get("test-vmss") == expected


@pytest.mark.parametrize("spec", [
    pytest.param("label:test-tag=", id="missing-value"),
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


@pytest.mark.parametrize(("tags", "specs", "expected"), [
    pytest.param({"fake-tag": "fake-value", "fake-tag2": "fake-value2"},
                 ("label:fake-tag=fake-value,min=2,max=5", "label:fake-tag2=fake-value2,min=1,max=4"), (2, 4),
                 id="highest-min-lowest-max-of-the-specs"),
    pytest.param({"fake-tag": "fake-value", "min": "3"}, ("label:fake-tag=fake-value,min=0,max=7",), (3, 7),
                 id="tag-over-spec"),
    pytest.param({"fake-tag": "fake-value", "min": "1", "max": "5"},
                 ("label:fake-tag=fake-value", "label:other=yes"), None, id="every-spec-must-match"),
])
def test_discovered_bounds(fake: FakeAzure, sleeps: list[float], tags: dict[str, str], specs: tuple[str, ...],
                           expected: tuple[int, int] | None) -> None:
    fake.add_scale_set("test-vmss", "Standard_D4s_v5", 1, tags=tags)
    groups = discovered(fake, sleeps, *specs)
    assert groups.get("test-vmss") == expected

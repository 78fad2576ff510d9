"""Discovery specs and per-group options, as upstream CA's ``gce_manager_test.go`` states them."""

from __future__ import annotations

import pytest

from cloudproviders.config import CloudConfigError, StaticGroup
from cloudproviders.gce.provider import parse_auto_discovery
from cloudproviders.interface import GroupOptions, WithGroupOptions
from tests.cloudproviders.fakes.gce import FakeGce
from tests.cloudproviders.gce_world import PROJECT, ZONE, gce_provider


@pytest.mark.parametrize(("spec", "pattern", "bounds"), [
    pytest.param("mig:namePrefix=pfx,min=0,max=10", "^pfx.+", (0, 10), id="good"),
    pytest.param("mig:namePrefix=anotherpfx,min=1,max=2", "^anotherpfx.+", (1, 2), id="good-min-1"),
    pytest.param("mig:namePrefix=pfx,max=3", "^pfx.+", (0, 3), id="min-defaults-to-0"),
    pytest.param("mig:namePrefix=a,namePrefix=pfx,min=0,max=3", "^pfx.+", (0, 3), id="repeated-key-last-wins"),
])
def test_auto_discovery_spec(spec: str, pattern: str, bounds: tuple[int, int]) -> None:
    parsed = parse_auto_discovery(spec)
    assert (parsed.name_pattern.pattern, parsed.min_size, parsed.max_size) == (pattern, *bounds)


@pytest.mark.parametrize("spec", [
    pytest.param("namePrefix=pfx,min=0,max=10", id="missing-mig-type"),
    pytest.param("asg:namePrefix=pfx,min=0,max=10", id="wrong-type"),
    pytest.param("mig:namePrefix=pfx,min=0,max=10,unknown=hi", id="unknown-key"),
    pytest.param("mig:namePrefix=pfx,min=a,max=10", id="non-integer-min"),
    pytest.param("mig:namePrefix=pfx,min=1,max=donkey", id="non-integer-max"),
    pytest.param("mig:namePrefix=a),min=1,max=10", id="prefix-not-a-regexp"),
    pytest.param("mig:namePrefix=prefix,min=,max=10", id="key-missing-value"),
    pytest.param("mig:namePrefix=prefix,=0,max=10", id="value-missing-key"),
    pytest.param("mig:namePrefix=prefix,min,max=10", id="key-missing-separator"),
    pytest.param("mig:namePrefix=prefix,min=0,max=10=20", id="too-many-separators"),
    pytest.param("mig:namePrefix=,min=0,max=10", id="prefix-empty"),
    pytest.param("mig:min=0,max=10", id="prefix-missing"),
    pytest.param("mig:namePrefix=prefix,min=10,max=1", id="max-below-min"),
    pytest.param("mig:namePrefix=prefix,min=0,max=0", id="max-zero"),
    pytest.param("mig:namePrefix=prefix,min=0", id="max-missing"),
    pytest.param("mig:namePrefix=a:b,min=0,max=3", id="colon-in-prefix"),
])
def test_auto_discovery_spec_refused(spec: str) -> None:
    with pytest.raises(CloudConfigError, match="--node-group-auto-discovery"):
        parse_auto_discovery(spec)


def options_of(fake: FakeGce, sleeps: list[float], env_vars: str) -> GroupOptions:
    fake.add_template("o-template", "n2-standard-4", kube_env=f"AUTOSCALER_ENV_VARS: {env_vars}\n")
    fake.add_mig("o", "o-template", 0, ZONE, PROJECT)
    provider = gce_provider(fake, sleeps, static=(StaticGroup(0, 3, f"{ZONE}/o"),))
    provider.refresh()
    (group,) = provider.node_groups()
    assert isinstance(group, WithGroupOptions)
    options = group.group_options()
    provider.close()
    return options


@pytest.mark.parametrize(("env_vars", "expected"), [
    pytest.param("os=linux", GroupOptions(), id="none"),
    pytest.param("autoscaling_options=scaledowngpuutilizationthreshold=0.6,scaledownutilizationthreshold=0.7,"
                 "scaledownunneededtime=1h,scaledownunreadytime=30m,maxnodeprovisiontime=60m",
                 GroupOptions(scale_down_utilization_threshold=0.7, scale_down_gpu_utilization_threshold=0.6,
                              scale_down_unneeded_seconds=3600.0, scale_down_unready_seconds=1800.0,
                              max_node_provision_seconds=3600.0), id="all"),
    pytest.param("autoscaling_options=scaledowngpuutilizationthreshold=0.1,scaledownunneededtime=1m",
                 GroupOptions(scale_down_gpu_utilization_threshold=0.1, scale_down_unneeded_seconds=60.0),
                 id="partial"),
    pytest.param("autoscaling_options=scaledowngpuutilizationthreshold=foo,scaledownunneededtime=bar",
                 GroupOptions(), id="unparsable-values-keep-defaults"),
    pytest.param("autoscaling_options=scaledownspeed=3,scaledownunneededtime=2m",
                 GroupOptions(scale_down_unneeded_seconds=120.0), id="unknown-option-ignored"),
    pytest.param("os=macos;autoscaling_options=scaledownunneededtime=2m",
                 GroupOptions(scale_down_unneeded_seconds=120.0), id="read-even-without-a-template-node"),
])
def test_group_options(fake: FakeGce, sleeps: list[float], env_vars: str, expected: GroupOptions) -> None:
    assert options_of(fake, sleeps, env_vars) == expected


def test_a_mig_named_twice_takes_its_last_bounds(fake: FakeGce, sleeps: list[float]) -> None:
    url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/instanceGroups/general"
    provider = gce_provider(fake, sleeps, static=(StaticGroup(1, 5, f"{ZONE}/general"), StaticGroup(0, 3, url)))
    provider.refresh()
    assert [(g.name, g.min_size(), g.max_size()) for g in provider.node_groups()] == [(url, 0, 3)]
    provider.close()

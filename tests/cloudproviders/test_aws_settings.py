"""What the AWS provider is told: auto-discovery specs, --cloud-config, the region, price files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudproviders.aws import build_provider
from cloudproviders.aws.pricing import load_prices
from cloudproviders.aws.settings import (
    AsgDiscovery,
    CloudConfig,
    combine_discovery,
    parse_auto_discovery,
    read_cloud_config,
    resolve_region,
)
from cloudproviders.config import CloudConfigError, ProviderConfig, StaticGroup
from tests.cloudproviders.aws_world import aws_env


@pytest.mark.parametrize(("spec", "tags", "filters"), [
    pytest.param("asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod",
                 (("k8s.io/cluster-autoscaler/enabled", None), ("k8s.io/cluster-autoscaler/prod", None)),
                 [{"Name": "tag-key", "Values": ["k8s.io/cluster-autoscaler/enabled"]},
                  {"Name": "tag-key", "Values": ["k8s.io/cluster-autoscaler/prod"]}], id="keys"),
    pytest.param("asg:tag=team=storage", (("team", "storage"),),
                 [{"Name": "tag:team", "Values": ["storage"]}], id="key-value"),
    pytest.param("asg:tag=a,b=c=d", (("a", None), ("b", "c=d")),
                 [{"Name": "tag-key", "Values": ["a"]}, {"Name": "tag:b", "Values": ["c=d"]}], id="value-with-equals"),
    # CA (parseASGAutoDiscoverySpec): ``key=`` is the key alone, not an error.
    pytest.param("asg:tag=a=", (("a", None),), [{"Name": "tag-key", "Values": ["a"]}], id="empty-value-is-a-bare-key"),
])
def test_auto_discovery(spec: str, tags: tuple[tuple[str, str | None], ...], filters: list[object]) -> None:
    parsed = parse_auto_discovery(spec)
    assert parsed == AsgDiscovery(tags)
    assert parsed.filters() == filters


@pytest.mark.parametrize(("specs", "tags"), [
    pytest.param([], None, id="none"),
    pytest.param(["asg:tag=a,b"], (("a", None), ("b", None)), id="one"),
    pytest.param(["asg:tag=a", "asg:tag=b=x"], (("a", None), ("b", "x")), id="two-specs-all-required"),
    pytest.param(["asg:tag=a=1,b", "asg:tag=a=2"], (("b", None), ("a", "2")), id="later-value-wins"),
])
def test_several_specs_combine_as_ca_combines_them(specs: list[str],
                                                   tags: tuple[tuple[str, str | None], ...] | None) -> None:
    """CA ``buildAsgTags``: every spec's tags in one filter set (one DescribeAutoScalingGroups)."""
    combined = combine_discovery([parse_auto_discovery(s) for s in specs])
    assert combined == (AsgDiscovery(tags) if tags is not None else None)


@pytest.mark.parametrize(("spec", "complaint"), [
    pytest.param("mig:namePrefix=x", "asg:tag=", id="other-cloud"),
    pytest.param("asg:name=x", "expected tag=", id="not-tag"),
    pytest.param("asg:tag=", "empty tag key", id="empty"),
    pytest.param("asg:tag=a,,b", "empty tag key", id="empty-item"),
    pytest.param("k8s.io/cluster-autoscaler/enabled", "asg:tag=", id="bare-key"),
])
def test_bad_auto_discovery(spec: str, complaint: str) -> None:
    with pytest.raises(CloudConfigError, match="--node-group-auto-discovery") as caught:
        parse_auto_discovery(spec)
    assert complaint in str(caught.value)


@pytest.mark.parametrize(("name", "text", "region"), [
    pytest.param("aws.conf", "[Global]\nregion = eu-west-1\n", "eu-west-1", id="ini"),
    pytest.param("aws.conf", "[global]\nRegion=eu-west-2\n", "eu-west-2", id="ini-any-case"),
    pytest.param("aws.conf", "[Other]\nx = 1\n", None, id="ini-without-global"),
    pytest.param("aws.yaml", "region: ap-south-1\n", "ap-south-1", id="yaml"),
    pytest.param("aws.yml", "", None, id="empty-yaml"),
])
def test_cloud_config(tmp_path: Path, name: str, text: str, region: str | None) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert read_cloud_config(str(path)) == CloudConfig(region=region)


@pytest.mark.parametrize(("name", "text", "complaint"), [
    pytest.param("aws.conf", "region = x\n", "not INI", id="ini-without-section"),
    pytest.param("aws.yaml", "region: [a\n", "not YAML", id="bad-yaml"),
    pytest.param("aws.yaml", "- a\n", "expected a mapping", id="yaml-list"),
    pytest.param("aws.yaml", "region: 3\n", "region must be a non-empty string", id="region-not-string"),
])
def test_bad_cloud_config(tmp_path: Path, name: str, text: str, complaint: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CloudConfigError, match="--cloud-config") as caught:
        read_cloud_config(str(path))
    assert complaint in str(caught.value) and str(path) in str(caught.value)


def test_missing_cloud_config(tmp_path: Path) -> None:
    with pytest.raises(CloudConfigError, match="cannot read"):
        read_cloud_config(str(tmp_path / "absent.conf"))


@pytest.mark.parametrize(("config", "env", "profile", "region"), [
    pytest.param("eu-west-1", {"AWS_REGION": "us-west-2"}, "us-east-2", "eu-west-1", id="config-first"),
    pytest.param(None, {"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "us-west-1"}, None, "us-west-2",
                 id="aws-region"),
    pytest.param(None, {"AWS_DEFAULT_REGION": "us-west-1"}, "us-east-2", "us-west-1", id="default-region"),
    pytest.param(None, {}, "us-east-2", "us-east-2", id="profile"),
])
def test_region(config: str | None, env: dict[str, str], profile: str | None, region: str) -> None:
    assert resolve_region(CloudConfig(region=config), profile, env) == region


def test_no_region() -> None:
    with pytest.raises(CloudConfigError, match="no region"):
        resolve_region(CloudConfig(), None, {})


def test_shipped_prices_cover_nvme_types() -> None:
    prices = load_prices(None)
    for instance_type in ("i3.2xlarge", "i4i.2xlarge", "i3en.2xlarge", "m5d.xlarge", "c5d.xlarge", "r5d.xlarge",
                          "m5.xlarge"):
        assert prices[instance_type] > 0
    # Local NVMe costs extra over the same shape without it.
    assert prices["m5d.xlarge"] > prices["m5.xlarge"]


@pytest.mark.parametrize(("name", "text"), [
    pytest.param("prices.json", '{"i3.2xlarge": 0.5, "x9.huge": 12}', id="json"),
    pytest.param("prices.yaml", "i3.2xlarge: 0.5\nx9.huge: 12\n", id="yaml"),
])
def test_price_file_overrides_and_extends(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    prices = load_prices(str(path))
    assert (prices["i3.2xlarge"], prices["x9.huge"], prices["m5.xlarge"]) == (0.5, 12.0, load_prices(None)["m5.xlarge"])


@pytest.mark.parametrize(("text", "complaint"), [
    pytest.param("[1, 2]", "expected a mapping", id="list"),
    pytest.param('{"i3.2xlarge": "cheap"}', "i3.2xlarge: price must be a non-negative number", id="string"),
    pytest.param('{"i3.2xlarge": -1}', "i3.2xlarge: price must be a non-negative number", id="negative"),
    pytest.param("{", "not JSON/YAML", id="broken"),
])
def test_bad_price_file(tmp_path: Path, text: str, complaint: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(CloudConfigError, match="price file") as caught:
        load_prices(str(path))
    assert complaint in str(caught.value)


@pytest.mark.parametrize(("config", "complaint"), [
    pytest.param(ProviderConfig(), "give --nodes", id="no-groups"),
    pytest.param(ProviderConfig(auto_discovery=("mig:namePrefix=x",)), "asg:tag=", id="wrong-syntax"),
])
def test_build_provider_refuses_bad_flags(config: ProviderConfig, complaint: str) -> None:
    with aws_env(), pytest.raises(CloudConfigError) as caught:
        build_provider(config)
    assert complaint in str(caught.value)


def test_build_provider_makes_no_call() -> None:
    """Building needs no network (the loop's first refresh lists the groups)."""
    with aws_env(AWS_ENDPOINT_URL="http://127.0.0.1:9"):
        provider = build_provider(ProviderConfig(static_groups=(StaticGroup(0, 3, "nvme"),)))
    assert provider.name == "aws" and list(provider.node_groups()) == []


def test_run_takes_a_group_named_twice_on_aws() -> None:
    """``run --cloud-provider=aws`` leaves a group named twice to the provider (CA: first bounds, no failure)."""
    from app.cli import build_parser
    from app.run.flags import settings_from_args
    from autoscaler.config import options_from_args

    args = build_parser().parse_args(["run", "--cloud-provider=aws", "--nodes=1:10:coolasg", "--nodes=1:9:coolasg"])
    settings = settings_from_args(args, options_from_args(args).storage)
    with aws_env(AWS_ENDPOINT_URL="http://127.0.0.1:9"):
        provider = build_provider(settings.provider)
    assert provider.name == "aws"

"""kube-env read field by field, as upstream CA's ``templates_test.go`` and ``kube_env_test.go`` state it."""

from __future__ import annotations

import pytest

from cloudproviders.gce import kube_env as ke
from cloudproviders.gce.reserved import Arch, Distribution
from cloudproviders.interface import CloudError

ENV_VARS = ("AUTOSCALER_ENV_VARS: node_labels=a=b,c=d;node_taints='dedicated=ml:NoSchedule,a=b:c';"
            "kube_reserved=cpu=1000m,memory=300000Mi;")


def env(text: str) -> ke.KubeEnv:
    return ke.parse_kube_env("t", text)


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("", {}, id="empty-is-an-empty-map"),
    pytest.param("VAR1: VALUE1\nVAR2: VALUE2", {"VAR1": "VALUE1", "VAR2": "VALUE2"}, id="map"),
    pytest.param("A: 'false'\nB:\n", {"A": "false", "B": ""}, id="quoted-and-null"),
])
def test_parse_kube_env(text: str, expected: dict[str, str]) -> None:
    assert ke.parse_kube_env("t", text).env == expected


@pytest.mark.parametrize("text", [
    pytest.param("Lorem ipsum dolor sit amet", id="not-a-map"),
    pytest.param("A: false\n", id="a-boolean"),
    pytest.param("A: [1]\n", id="a-list"),
    pytest.param(": [\n", id="not-yaml"),
])
def test_parse_kube_env_refuses(text: str) -> None:
    with pytest.raises(CloudError, match="kube-env"):
        ke.parse_kube_env("t", text)


@pytest.mark.parametrize(("text", "name", "expected"), [
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=a=b,c=d;node_taints=a=b:c\n", "node_labels", "a=b,c=d",
                 id="found"),
    pytest.param("AUTOSCALER_ENV_VARS: node_taints=a=b:c\n", "node_labels", None, id="not-found"),
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=;node_taints=a=b:c\n", "node_labels", "", id="empty"),
    pytest.param("AUTOSCALER_ENV_VARS: os=\"linux\"\n", "os", "linux", id="double-quotes-trimmed"),
    pytest.param("AUTOSCALER_ENV_VARS: ' '\n", "os", None, id="blank"),
    pytest.param("NODE_LABELS: a=b\n", "node_labels", None, id="no-AUTOSCALER_ENV_VARS"),
    pytest.param("AUTOSCALER_ENV_VARS: os=linux;junk\n", "os", "linux", id="bad-entry-after-the-name"),
])
def test_autoscaler_var(text: str, name: str, expected: str | None) -> None:
    assert ke.autoscaler_var(env(text), name) == expected


def test_autoscaler_var_stops_at_a_malformed_entry() -> None:
    with pytest.raises(CloudError, match="malformed entry 'node_labels'"):
        ke.autoscaler_var(env("AUTOSCALER_ENV_VARS: node_labels;node_taints=a=b:c\n"), "node_taints")


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("KUBELET_TEST_ARGS: --experimental-allocatable-ignore-eviction --kube-reserved=cpu=1000m,"
                 "memory=300000Mi\n", (1000, 300000 * 2**20, 0), id="from-KUBELET_TEST_ARGS"),
    pytest.param(ENV_VARS + "os=linux\nKUBELET_TEST_ARGS: --kube-reserved=cpu=2\n", (1000, 300000 * 2**20, 0),
                 id="AUTOSCALER_ENV_VARS-first"),
    pytest.param("KUBELET_TEST_ARGS: --experimental-allocatable-ignore-eviction\n", None, id="not-in-args"),
    pytest.param("NODE_LABELS: a=b\n", None, id="nowhere"),
    pytest.param("AUTOSCALER_ENV_VARS: kube_reserved=cpu=1000m,ignored=300Mi,memory=0,ephemeral-storage=10Gi\n",
                 (1000, 0, 10 * 2**30), id="unknown-resource-ignored"),
    pytest.param("AUTOSCALER_ENV_VARS: kube_reserved=This is a wrong reserved\n", None, id="malformed"),
])
def test_kube_reserved(text: str, expected: tuple[int, int, int] | None) -> None:
    assert ke.kube_reserved(env(text)) == expected


@pytest.mark.parametrize(("extended", "expected"), [
    pytest.param("extended_resources=foo=10", {"foo": 10}, id="numeric"),
    pytest.param("extended_resources=foo=10G,bar=230", {"foo": 10**10, "bar": 230}, id="suffix-and-two"),
    pytest.param("extended_resources=foo=bar", {}, id="invalid-value"),
    pytest.param("extended_resources=foo=10Wi", {}, id="invalid-suffix"),
    pytest.param("extended_resources=foo", {}, id="malformed-map"),
    pytest.param("extended_resources/", {}, id="malformed-entry"),
])
def test_extended_resources(extended: str, expected: dict[str, int]) -> None:
    assert ke.extended_resources(env(ENV_VARS + extended)) == expected


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(ENV_VARS + "os=linux\n", "linux", id="linux"),
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=a=b,c=dnode_taints='x=y:z';os=windows\n", "windows",
                 id="windows"),
    pytest.param("NODE_LABELS: a=b\n", "linux", id="no-AUTOSCALER_ENV_VARS"),
    pytest.param(ENV_VARS + "arch=amd64\n", "linux", id="no-os"),
    pytest.param(ENV_VARS + "os=\n", None, id="empty"),
    pytest.param(ENV_VARS + "os=macos\n", None, id="unknown"),
])
def test_operating_system(text: str, expected: str | None) -> None:
    assert ke.operating_system(env(text)) == expected


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param("os_distribution=cos", Distribution.COS, id="cos"),
    pytest.param("os_distribution=cos_containerd", Distribution.COS, id="cos-containerd"),
    pytest.param("os_distribution=ubuntu_containerd", Distribution.UBUNTU, id="ubuntu-containerd"),
    pytest.param("os_distribution=ubuntu", Distribution.UBUNTU, id="ubuntu"),
    pytest.param("os_distribution=windows_ltsc", Distribution.WINDOWS_LTSC, id="windows-ltsc"),
    pytest.param("os_distribution=windows_sac", Distribution.WINDOWS_SAC, id="windows-sac"),
    pytest.param("os=linux", Distribution.COS, id="absent"),
    pytest.param("os_distribution=macos", Distribution.COS, id="unknown-falls-back"),
])
def test_distribution(value: str, expected: Distribution) -> None:
    assert ke.distribution(env(ENV_VARS + value + "\n")) is expected


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param("arch=arm64", Arch.ARM64, id="arm64"),
    pytest.param("arch=amd64", Arch.AMD64, id="amd64"),
    pytest.param("arch=blah", Arch.AMD64, id="unknown"),
    pytest.param("arch=", Arch.AMD64, id="empty"),
    pytest.param("os=linux", Arch.AMD64, id="absent"),
])
def test_arch(value: str, expected: Arch) -> None:
    assert ke.arch(env(f"AUTOSCALER_ENV_VARS: os_distribution=cos;{value}\n")) is expected


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=a=b;autoscaling_options=scaledownunreadytime=1h",
                 {"scaledownunreadytime": "1h"}, id="partial"),
    pytest.param("AUTOSCALER_ENV_VARS: node_labels=a=b,c=d;node_taints=a=b:c\n", {}, id="not-specified"),
    pytest.param("", {}, id="empty-kube-env"),
    pytest.param("AUTOSCALER_ENV_VARS: junk;autoscaling_options=scaledownunreadytime=1h", None, id="unreadable"),
])
def test_autoscaling_options(text: str, expected: dict[str, str] | None) -> None:
    assert ke.autoscaling_options(env(text)) == expected

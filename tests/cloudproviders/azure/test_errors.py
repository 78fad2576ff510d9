"""Azure errors at the wire -> the CloudError family; transient ones retried; settings validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudproviders.azure import AzureProvider
from cloudproviders.azure.discovery import parse_auto_discovery
from cloudproviders.azure.settings import load_settings
from cloudproviders.config import CloudConfigError, StaticGroup
from cloudproviders.interface import CloudError, InsufficientCapacity, NotFound, QuotaExceeded, Transient
from tests.cloudproviders.azure_world import azure_node, azure_provider
from tests.cloudproviders.fakes.azure import FakeAzure


def act(provider: AzureProvider, fake: FakeAzure, operation: str) -> None:
    general = next(g for g in provider.node_groups() if g.name == "general")
    if operation == "increase":
        general.increase_size(1)
    else:
        general.delete_nodes([azure_node("n", fake, "general", "0")])


@pytest.mark.parametrize("operation", ["increase", "delete"])
@pytest.mark.parametrize(("kind", "error"), [
    pytest.param("capacity", InsufficientCapacity, id="capacity"),
    pytest.param("quota", QuotaExceeded, id="quota"),
    pytest.param("notfound", NotFound, id="notfound"),
])
def test_permanent_errors_are_raised_typed(provider: AzureProvider, fake: FakeAzure, operation: str, kind: str,
                                           error: type[CloudError]) -> None:
    fake.fail_next(operation, kind)
    with pytest.raises(error, match="general"):
        act(provider, fake, operation)


def test_a_capacity_error_is_not_a_quota_error(provider: AzureProvider, fake: FakeAzure) -> None:
    fake.fail_next("increase", "capacity")
    with pytest.raises(InsufficientCapacity) as caught:
        act(provider, fake, "increase")
    assert not isinstance(caught.value, QuotaExceeded)


@pytest.mark.parametrize("operation", ["increase", "delete"])
@pytest.mark.parametrize("kind", ["throttle", "server"])
def test_transient_errors_are_retried(provider: AzureProvider, fake: FakeAzure, sleeps: list[float], operation: str,
                                      kind: str) -> None:
    fake.retry_after = "3"
    fake.fail_next(operation, kind)
    act(provider, fake, operation)
    assert sleeps == [3.0 if kind == "throttle" else 1.0]


def test_retries_are_bounded(provider: AzureProvider, fake: FakeAzure, sleeps: list[float]) -> None:
    for _ in range(4):
        fake.fail_next("increase", "server")
    with pytest.raises(Transient, match="InternalServerError"):
        act(provider, fake, "increase")
    assert sleeps == [1.0, 2.0, 4.0]


def test_a_static_scale_set_gone_is_left_out_and_the_rest_keep_working(
        provider: AzureProvider, fake: FakeAzure, caplog: pytest.LogCaptureFixture) -> None:
    """Upstream's TestVMSSNotFound: a missing --nodes scale set does not stop the autoscaler."""
    del fake.scale_sets["nvme"]
    provider.refresh()
    assert [g.name for g in provider.node_groups()] == ["general"]
    assert any("not found" in r.getMessage() and r.__dict__.get("node_group") == "nvme" for r in caplog.records)
    act(provider, fake, "increase")
    assert fake.scale_sets["general"].capacity == 3


def test_refresh_fails_whole_when_vms_cannot_be_listed(fake: FakeAzure, sleeps: list[float]) -> None:
    built = azure_provider(fake, sleeps, static=(StaticGroup(1, 5, "general"),))
    fake.fail_next("vms", "quota")
    with pytest.raises(CloudError, match="general"):
        built.refresh()
    built.close()


def test_a_refused_endpoint_is_transient(fake: FakeAzure, sleeps: list[float]) -> None:
    built = azure_provider(fake, sleeps)
    fake.stop()
    with pytest.raises(Transient, match="ServiceRequestError"):
        built.refresh()
    built.close()


@pytest.mark.parametrize(("document", "message"), [
    pytest.param({"resourceGroup": "rg"}, "subscriptionId", id="no-subscription"),
    pytest.param({"subscriptionId": "s"}, "resourceGroup", id="no-group"),
    pytest.param({"subscriptionId": "s", "resourceGroup": "rg", "resourceManagerEndpoint": "http://arm.example.com"},
                 "https", id="plain-http-remote"),
    pytest.param({"subscriptionId": "s", "resourceGroup": "rg", "operationTimeout": "soon"}, "operationTimeout",
                 id="bad-timeout"),
    pytest.param([1, 2], "JSON object", id="not-an-object"),
    pytest.param({"subscriptionId": "s", "resourceGroup": "rg", "enableLabelPredictionsOnTemplate": "yes"},
                 "enableLabelPredictionsOnTemplate", id="predictions-not-a-bool"),
])
def test_bad_cloud_config(tmp_path: Path, document: object, message: str) -> None:
    path = tmp_path / "azure.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CloudConfigError, match=message):
        load_settings(str(path), {})


def test_cloud_config_not_json(tmp_path: Path) -> None:
    path = tmp_path / "azure.json"
    path.write_text("{")
    with pytest.raises(CloudConfigError, match=r"azure\.json"):
        load_settings(str(path), {})


def test_settings_from_environment() -> None:
    settings = load_settings(None, {"ARM_SUBSCRIPTION_ID": "s", "ARM_RESOURCE_GROUP": "rg"})
    assert (settings.subscription_id, settings.resource_group, settings.endpoint) == (
        "s", "rg", "https://management.azure.com")


@pytest.mark.parametrize(("document", "env", "expected"), [
    pytest.param({}, {}, True, id="default-on"),
    pytest.param({"enableLabelPredictionsOnTemplate": False}, {}, False, id="file-off"),
    pytest.param({"enableLabelPredictionsOnTemplate": True}, {"AZURE_ENABLE_LABEL_PREDICTIONS_ON_TEMPLATE": "f"},
                 False, id="environment-overrides-file"),
])
def test_label_predictions_setting(tmp_path: Path, document: dict[str, object], env: dict[str, str],
                                   expected: bool) -> None:
    path = tmp_path / "azure.json"
    path.write_text(json.dumps({"subscriptionId": "s", "resourceGroup": "rg", **document}))
    assert load_settings(str(path), env).label_predictions is expected


def test_label_predictions_environment_not_a_bool() -> None:
    with pytest.raises(CloudConfigError, match="AZURE_ENABLE_LABEL_PREDICTIONS_ON_TEMPLATE"):
        load_settings(None, {"ARM_SUBSCRIPTION_ID": "s", "ARM_RESOURCE_GROUP": "rg",
                             "AZURE_ENABLE_LABEL_PREDICTIONS_ON_TEMPLATE": "maybe"})


@pytest.mark.parametrize("spec", [
    pytest.param("asg:tag=x", id="other-cloud"),
    pytest.param("label:", id="empty"),
    pytest.param("label:novalue", id="not-key-value"),
])
def test_bad_auto_discovery(spec: str) -> None:
    with pytest.raises(CloudConfigError, match="auto-discovery"):
        parse_auto_discovery(spec)


def test_bad_static_name(fake: FakeAzure, sleeps: list[float]) -> None:
    with pytest.raises(CloudConfigError, match="resource ID"):
        azure_provider(fake, sleeps, static=(StaticGroup(0, 1, "rg/general"),))


def test_azure_core_refuses_bearer_tokens_over_plain_http(fake: FakeAzure) -> None:
    """Why the loopback policy exists: the stock ARM pipeline will not send a token to http://."""
    from azure.core.exceptions import ServiceRequestError
    from azure.mgmt.compute import ComputeManagementClient

    from cloudproviders.azure import StaticTokenCredential

    client = ComputeManagementClient(StaticTokenCredential(), fake.subscription, base_url=fake.url, retry_total=0)
    with pytest.raises(ServiceRequestError, match="non-TLS"):
        client.virtual_machine_scale_sets.get(fake.resource_group, "general")
    client.close()
    assert fake.calls == []


@pytest.mark.parametrize(("answer", "error"), [
    pytest.param((409, "OperationNotAllowed", "Operation results in exceeding approved Total Regional Cores quota."),
                 QuotaExceeded, id="409-quota"),
    pytest.param((409, "OperationNotAllowed", "The operation is not allowed while the scale set is deallocating."),
                 CloudError, id="409-not-allowed"),
    pytest.param((400, "SkuNotAvailable", "The requested size is currently not available in location westeurope."),
                 InsufficientCapacity, id="sku-not-available"),
    pytest.param((409, "ZonalAllocationFailed", "Allocation failed in zone 1."), InsufficientCapacity, id="zonal"),
    pytest.param((429, "TooManyRequests", "Throttled."), Transient, id="429"),
    pytest.param((503, "ServiceUnavailable", "Try again."), Transient, id="503"),
    pytest.param((400, "InvalidParameter", "Capacity must be an integer."), CloudError, id="400-invalid"),
    pytest.param((404, "ParentResourceNotFound", "Resource group not found."), NotFound, id="404-parent"),
    pytest.param((401, "InvalidAuthenticationToken", "The access token is invalid."), CloudError, id="401"),
])
def test_http_errors_map(provider: AzureProvider, fake: FakeAzure, answer: tuple[int, str, str],
                         error: type[CloudError]) -> None:
    for _ in range(4):  # enough to outlast the retries of a transient one
        fake.fail_next_http("increase", *answer)
    with pytest.raises(CloudError) as caught:
        act(provider, fake, "increase")
    assert type(caught.value) is error
    assert "set capacity" in str(caught.value)


@pytest.mark.parametrize(("code", "error"), [
    pytest.param("OverconstrainedAllocationRequest", InsufficientCapacity, id="overconstrained"),
    pytest.param("QuotaExceeded", QuotaExceeded, id="quota"),
    pytest.param("VMExtensionProvisioningError", CloudError, id="other"),
])
def test_async_operation_errors_map(provider: AzureProvider, fake: FakeAzure, code: str,
                                    error: type[CloudError]) -> None:
    fake.fail_next_operation("delete", code, f"{code}: details")
    with pytest.raises(CloudError) as caught:
        act(provider, fake, "delete")
    assert type(caught.value) is error
    assert code in str(caught.value)

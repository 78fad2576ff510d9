"""botocore errors -> the CloudError family (one table), and the tenacity retry around every call."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import (  # type: ignore[import-untyped]
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from cloudproviders.aws.errors import RetryPolicy, call, translate
from cloudproviders.interface import CloudError, InsufficientCapacity, NotFound, QuotaExceeded, Transient


def client_error(code: str, message: str = "boom", status: int = 400, headers: dict[str, str] | None = None,
                 operation: str = "SetDesiredCapacity") -> ClientError:
    """The exception botocore raises for an AWS error response of this shape."""
    response: dict[str, Any] = {"Error": {"Code": code, "Message": message},
                                "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers or {}}}
    return ClientError(response, operation)


@pytest.mark.parametrize(("error", "kind"), [
    pytest.param(client_error("InsufficientInstanceCapacity"), InsufficientCapacity, id="insufficient-capacity"),
    pytest.param(client_error("InsufficientFreeAddressesInSubnet"), InsufficientCapacity, id="subnet-full"),
    pytest.param(client_error("VcpuLimitExceeded"), QuotaExceeded, id="vcpu-quota"),
    pytest.param(client_error("InstanceLimitExceeded"), QuotaExceeded, id="instance-quota"),
    pytest.param(client_error("LimitExceeded"), QuotaExceeded, id="asg-limit"),
    pytest.param(client_error("Throttling", "Rate exceeded"), Transient, id="throttling"),
    pytest.param(client_error("RequestLimitExceeded"), Transient, id="ec2-request-limit"),
    pytest.param(client_error("ResourceContention", status=500), Transient, id="resource-contention"),
    pytest.param(client_error("InternalFailure", status=500), Transient, id="internal-failure"),
    pytest.param(client_error("ServiceUnavailable", status=503), Transient, id="unavailable"),
    pytest.param(client_error("SomethingNew", status=502), Transient, id="any-5xx"),
    pytest.param(client_error("ValidationError", "AutoScalingGroup name not found - null"), NotFound,
                 id="asg-not-found"),
    pytest.param(client_error("ValidationError", "Instance Id not found - No managed instance found"), NotFound,
                 id="instance-not-found"),
    pytest.param(client_error("InvalidInstanceID.NotFound"), NotFound, id="ec2-instance-not-found"),
    pytest.param(client_error("InvalidLaunchTemplateName.NotFoundException"), NotFound, id="template-not-found"),
    pytest.param(client_error("ValidationError", "New SetDesiredCapacity value 11 is above max value 10"),
                 CloudError, id="validation"),
    pytest.param(client_error("AccessDenied", "not authorized to perform: autoscaling:SetDesiredCapacity", 403),
                 CloudError, id="access-denied"),
    pytest.param(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), Transient, id="no-connection"),
    pytest.param(ReadTimeoutError(endpoint_url="http://127.0.0.1:1"), Transient, id="read-timeout"),
    pytest.param(NoCredentialsError(), CloudError, id="no-credentials"),
])
def test_translation(error: Exception, kind: type[CloudError]) -> None:
    translated = translate(error, "SetDesiredCapacity nvme to 3")
    assert type(translated) is kind
    assert str(translated).startswith("SetDesiredCapacity nvme to 3: ")
    assert "\n" not in str(translated)


@pytest.mark.parametrize(("headers", "retry_after"), [
    pytest.param({}, 1.0, id="default"),
    pytest.param({"retry-after": "7"}, 7.0, id="retry-after-header"),
    pytest.param({"retry-after": "soon"}, 1.0, id="unusable-header"),
])
def test_retry_after(headers: dict[str, str], retry_after: float) -> None:
    translated = translate(client_error("Throttling", headers=headers), "x")
    assert isinstance(translated, Transient) and translated.retry_after == retry_after


class Flaky:
    """An SDK call that raises the given errors, then returns "ok"."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_transient_errors_are_retried_with_growing_capped_waits() -> None:
    sleeps: list[float] = []
    flaky = Flaky(client_error("Throttling"), client_error("InternalFailure", status=500),
                  client_error("Throttling", headers={"retry-after": "30"}))
    assert call(RetryPolicy(attempts=4, max_wait_seconds=20.0, sleep=sleeps.append), "x", flaky) == "ok"
    assert flaky.calls == 4
    assert sleeps == [1.0, 2.0, 20.0]


def test_retries_are_bounded() -> None:
    sleeps: list[float] = []
    flaky = Flaky(*[client_error("Throttling")] * 5)
    with pytest.raises(Transient, match="Throttling"):
        call(RetryPolicy(attempts=3, sleep=sleeps.append), "DescribeAutoScalingGroups", flaky)
    assert flaky.calls == 3 and len(sleeps) == 2


@pytest.mark.parametrize("error", [
    pytest.param(client_error("InsufficientInstanceCapacity"), id="capacity"),
    pytest.param(client_error("ValidationError", "AutoScalingGroup name not found"), id="not-found"),
    pytest.param(client_error("AccessDenied", status=403), id="denied"),
])
def test_other_errors_are_not_retried(error: Exception) -> None:
    sleeps: list[float] = []
    flaky = Flaky(error)
    with pytest.raises(CloudError):
        call(RetryPolicy(sleep=sleeps.append), "x", flaky)
    assert flaky.calls == 1 and sleeps == []


def test_only_retries_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    flaky = Flaky(*[client_error("Throttling")] * 3)
    with pytest.raises(Transient):
        call(RetryPolicy(attempts=3, sleep=lambda _: None), "DescribeAutoScalingGroups", flaky)
    assert [r.getMessage() for r in caplog.records] == ["retrying transient cloud error"] * 2

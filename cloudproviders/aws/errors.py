"""botocore's errors as the ``CloudError`` family, in one place, retried by the shared policy.

Every AWS call of the provider goes through ``call``: a botocore ``ClientError`` or
``BotoCoreError`` is translated once by ``translate``; a ``Transient`` result is retried
by ``cloudproviders.retry.RetryPolicy`` (bounded attempts, waits from the error's
``retry_after``, doubled per attempt and capped; 20 s for AWS, whose throttling asks
for longer waits). botocore's own retries are switched off where the clients are made
(``api.py``), so this is the only retry layer and tests can make its sleep instant.

Codes follow the AWS API references: EC2 launch errors (InsufficientInstanceCapacity,
VcpuLimitExceeded, ...) can surface directly or inside an Auto Scaling activity message;
Auto Scaling reports a missing group or instance as ``ValidationError`` "... not found".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from cloudproviders.interface import CloudError, InsufficientCapacity, NotFound, QuotaExceeded, Transient
from cloudproviders.retry import RetryPolicy

__all__ = ["CAPACITY_CODES", "QUOTA_CODES", "RetryPolicy", "call", "translate"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The cloud has no capacity of this kind now (back the group off).
CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity", "InsufficientCapacityOnHost", "SpotMaxPriceTooLow",
    "InsufficientFreeAddressesInSubnet",
})
#: An account quota forbids more (back the group off).
QUOTA_CODES = frozenset({
    "VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotInstanceCountExceeded", "LimitExceeded",
})
#: Rate limiting: retry later.
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded", "RequestThrottled",
    "RequestThrottledException", "TooManyRequestsException", "SlowDown", "ResourceContention",
    "PriorRequestNotComplete",
})
#: Server-side failures that AWS reports with a 4xx-looking code or that may lack a status.
SERVER_CODES = frozenset({"InternalFailure", "InternalError", "ServiceUnavailable", "Unavailable"})
_CONNECTION_ERRORS = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)

#: Seconds to wait before retrying when the response does not say.
DEFAULT_RETRY_AFTER = 1.0


def translate(error: Exception, what: str) -> CloudError:
    """The ``CloudError`` for a botocore error; ``what`` names the call and object (``SetDesiredCapacity nvme``)."""
    if isinstance(error, CloudError):
        return error
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = str(details.get("Code", ""))
        message = str(details.get("Message", "")) or str(error)
        meta = error.response.get("ResponseMetadata", {})
        status = int(meta.get("HTTPStatusCode", 0) or 0)
        text = f"{what}: {code}: {message}"
        if code in CAPACITY_CODES:
            return InsufficientCapacity(text)
        if code in QUOTA_CODES:
            return QuotaExceeded(text)
        if code in THROTTLING_CODES or code in SERVER_CODES or status >= 500:
            return Transient(text, _retry_after(meta.get("HTTPHeaders", {})))
        if code.endswith(".NotFound") or code.endswith("NotFoundException") or code == "ResourceNotFound" or (
                code == "ValidationError" and "not found" in message.lower()):
            return NotFound(text)
        return CloudError(text)
    if isinstance(error, _CONNECTION_ERRORS):
        return Transient(f"{what}: {error}", DEFAULT_RETRY_AFTER)
    if isinstance(error, BotoCoreError):
        return CloudError(f"{what}: {error}")
    return CloudError(f"{what}: {type(error).__name__}: {error}")


def _retry_after(headers: object) -> float:
    """The response's ``Retry-After`` seconds, if it has a usable one."""
    if isinstance(headers, dict):
        value = headers.get("retry-after") or headers.get("Retry-After")
        try:
            if value is not None and float(value) >= 0:
                return float(value)
        except (TypeError, ValueError):
            pass
    return DEFAULT_RETRY_AFTER


def call(policy: RetryPolicy, what: str, operation: Callable[[], T]) -> T:
    """Run one AWS call: errors translated, ``Transient`` ones retried per ``policy``; raises ``CloudError``."""
    return policy.call_translated(what, operation, translate, catch=(ClientError, BotoCoreError))

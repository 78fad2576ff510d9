"""botocore's errors as the ``CloudError`` family, in one place, and the one retry policy.

Every AWS call of the provider goes through ``call``: a botocore ``ClientError`` or
``BotoCoreError`` is translated once by ``translate``; a ``Transient`` result is retried
with ``tenacity`` (bounded attempts, waits from the error's ``retry_after``, doubled per
attempt and capped). botocore's own retries are switched off where the clients are made
(``api.py``), so this is the only retry layer and tests can make its sleep instant.

Codes follow the AWS API references: EC2 launch errors (InsufficientInstanceCapacity,
VcpuLimitExceeded, ...) can surface directly or inside an Auto Scaling activity message;
Auto Scaling reports a missing group or instance as ``ValidationError`` "... not found".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import tenacity
from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from cloudproviders.interface import CloudError, InsufficientCapacity, NotFound, QuotaExceeded, Transient

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


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How ``Transient`` errors are retried: ``attempts`` calls in all, waits capped at ``max_wait`` seconds."""

    attempts: int = 4
    max_wait: float = 20.0
    #: Injected so tests never really sleep.
    sleep: Callable[[float], None] = field(default=time.sleep)

    def wait_seconds(self, state: tenacity.RetryCallState) -> float:
        """The failed attempt's ``retry_after``, doubled per earlier retry, capped."""
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        base = error.retry_after if isinstance(error, Transient) else DEFAULT_RETRY_AFTER
        return float(min(self.max_wait, base * 2 ** max(0, state.attempt_number - 1)))


def call(policy: RetryPolicy, what: str, operation: Callable[[], T]) -> T:
    """Run one AWS call: errors translated, ``Transient`` ones retried per ``policy``; raises ``CloudError``."""

    def once() -> T:
        try:
            return operation()
        except (ClientError, BotoCoreError) as error:
            raise translate(error, what) from error

    def before_sleep(state: tenacity.RetryCallState) -> None:
        # Logged only when a retry follows; the final failure is the caller's to report.
        error = state.outcome.exception() if state.outcome is not None else None
        log.warning("aws call failed, retrying", extra={"call": what, "error": str(error),
                                                         "attempt": state.attempt_number})

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max(1, policy.attempts)),
        retry=tenacity.retry_if_exception_type(Transient),
        wait=policy.wait_seconds,
        sleep=policy.sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(once)

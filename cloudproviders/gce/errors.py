"""Every GCE error becomes a ``CloudError`` here, and nowhere else.

Three sources: HTTP errors raised by the SDK (``google.api_core.exceptions``), errors a
finished zone operation carries (``Operation.error.errors[].code``), and the
``lastAttempt`` errors of instances a MIG failed to create (upstream CA:
``cloudprovider/gce/autoscaling_gce_client.go``, ``FetchMigInstances``).
"""

from __future__ import annotations

from collections.abc import Sequence

import requests
from google.api_core import exceptions as gexc

from cloudproviders.interface import (
    CloudError,
    InstanceError,
    InstanceErrorClass,
    InsufficientCapacity,
    NotFound,
    QuotaExceeded,
    Transient,
)
from cloudproviders.retry import retry_after_header

__all__ = ["instance_error", "operation_error", "translate"]

#: HTTP error reasons (``error.errors[].reason``) that mean "slow down".
_THROTTLE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"})
_QUOTA_REASONS = frozenset({"quotaExceeded", "QUOTA_EXCEEDED"})
_CAPACITY_REASONS = frozenset({"insufficientCapacity", "requestExceedsCapacity"})


def is_pool_exhausted(code: str) -> bool:
    """CA's ``isResourcePoolExhaustedErrorCode``."""
    return code in ("RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED",
                    "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS")


def _retry_after(exc: gexc.GoogleAPICallError) -> float:
    response = exc.response
    return retry_after_header(response.headers.get("Retry-After") if isinstance(response, requests.Response)
                              else None)


def _reasons(exc: gexc.GoogleAPICallError) -> set[str]:
    reasons = {str(e.get("reason", "")) for e in exc.errors if isinstance(e, dict)}
    if exc.reason:
        reasons.add(exc.reason)
    return reasons


def translate(exc: Exception, what: str) -> CloudError:
    """The ``CloudError`` for an exception raised by a compute_v1 call; ``what`` names the object and call."""
    if isinstance(exc, CloudError):
        return exc
    if isinstance(exc, gexc.GoogleAPICallError):
        status = exc.code if isinstance(exc.code, int) else 0
        reasons = _reasons(exc)
        message = f"{what}: HTTP {status} {exc.message}"
        if status == 404:
            return NotFound(message)
        if status == 429 or reasons & _THROTTLE_REASONS:
            return Transient(message, _retry_after(exc))
        if reasons & _QUOTA_REASONS or "QUOTA_EXCEEDED" in exc.message:
            return QuotaExceeded(message)
        if reasons & _CAPACITY_REASONS or "RESOURCE_POOL_EXHAUSTED" in exc.message:
            return InsufficientCapacity(message)
        if status >= 500:
            return Transient(message, _retry_after(exc))
        return CloudError(message)
    if isinstance(exc, requests.exceptions.RequestException):
        # Connection refused/reset, read timeouts: the API may be back in a moment.
        return Transient(f"{what}: {type(exc).__name__}: {exc}")
    return CloudError(f"{what}: {type(exc).__name__}: {exc}")


def operation_error(codes: Sequence[tuple[str, str]], what: str) -> CloudError:
    """The ``CloudError`` for a finished operation whose ``error.errors`` are these (code, message)."""
    text = "; ".join(f"{code}: {message}" for code, message in codes) or "operation failed without details"
    message = f"{what}: {text}"
    names = [code for code, _ in codes]
    if any(is_pool_exhausted(code) for code in names):
        return InsufficientCapacity(message)
    if any("QUOTA" in code for code in names):
        return QuotaExceeded(message)
    if any(code in ("RESOURCE_NOT_FOUND", "NOT_FOUND") for code in names):
        return NotFound(message)
    if any(code in ("RATE_LIMIT_EXCEEDED", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE") for code in names):
        return Transient(message)
    return CloudError(message)


def instance_error(errors: Sequence[tuple[str, str]]) -> InstanceError | None:
    """Why a MIG could not create an instance, from its ``lastAttempt.errors`` (CA's classes).

    Pool exhaustion wins over quota, quota over the rest, as in CA where the last
    matching error decides but exhaustion and quota are the codes that back a group off.
    """
    if not errors:
        return None
    messages = "; ".join(message for _, message in errors if message)
    for code, _ in errors:
        if is_pool_exhausted(code):
            return InstanceError(InstanceErrorClass.OUT_OF_CAPACITY, code, messages)
    for code, _ in errors:
        if "QUOTA" in code:
            return InstanceError(InstanceErrorClass.QUOTA, code, messages)
    return InstanceError(InstanceErrorClass.OTHER, errors[0][0], messages)

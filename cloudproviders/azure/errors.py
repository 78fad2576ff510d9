"""Every Azure error becomes a ``CloudError`` here, and nowhere else.

Sources: ``azure.core.exceptions`` raised by the SDK (an ARM error body's ``error.code``,
or a failed long-running operation), and the instance view statuses of scale set VMs
that failed to provision (``ProvisioningState/failed/<code>``).
"""

from __future__ import annotations

from azure.core import exceptions as azexc

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

__all__ = ["classify_code", "instance_error", "translate"]

#: ARM error codes of a stock-out (``SkuNotAvailable``: the size is not offered there now).
CAPACITY_CODES = frozenset({"AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest",
                            "OverconstrainedZonalAllocationRequest", "SkuNotAvailable", "AllocationFailure"})
QUOTA_CODES = frozenset({"QuotaExceeded", "OperationNotAllowed"})
NOT_FOUND_CODES = frozenset({"ResourceNotFound", "NotFound", "ParentResourceNotFound"})
TRANSIENT_CODES = frozenset({"TooManyRequests", "RetryableError", "InternalServerError", "ServiceUnavailable",
                             "InternalExecutionError"})


def classify_code(code: str, message: str) -> InstanceErrorClass | None:
    """OUT_OF_CAPACITY / QUOTA for the codes that back a group off; None for the rest."""
    if code in CAPACITY_CODES:
        return InstanceErrorClass.OUT_OF_CAPACITY
    # OperationNotAllowed is also used for other refusals; quota ones say so.
    if code == "QuotaExceeded" or (code == "OperationNotAllowed" and "quota" in message.lower()):
        return InstanceErrorClass.QUOTA
    return None


def _retry_after(exc: azexc.HttpResponseError) -> float:
    headers = getattr(exc.response, "headers", None) or {}
    return retry_after_header(headers.get("Retry-After"))


def translate(exc: Exception, what: str) -> CloudError:
    """The ``CloudError`` for an exception raised by an azure-mgmt-compute call."""
    if isinstance(exc, CloudError):
        return exc
    if isinstance(exc, azexc.ClientAuthenticationError):
        # 401/403, or no credential available at all (azure-identity's CredentialUnavailableError).
        return CloudError(f"{what}: authentication failed: {exc.message}")
    if isinstance(exc, azexc.HttpResponseError):
        status = exc.status_code or 0
        code = (exc.error.code if exc.error is not None else None) or ""
        detail = (exc.error.message if exc.error is not None else None) or exc.message
        message = f"{what}: {code or f'HTTP {status}'}: {detail}"
        kind = classify_code(code, detail)
        if kind is InstanceErrorClass.OUT_OF_CAPACITY:
            return InsufficientCapacity(message)
        if kind is InstanceErrorClass.QUOTA:
            return QuotaExceeded(message)
        if status == 404 or code in NOT_FOUND_CODES:
            return NotFound(message)
        if status == 429 or status >= 500 or code in TRANSIENT_CODES:
            return Transient(message, _retry_after(exc))
        return CloudError(message)
    if isinstance(exc, azexc.ServiceRequestError | azexc.ServiceResponseError):
        return Transient(f"{what}: {type(exc).__name__}: {exc}")
    return CloudError(f"{what}: {type(exc).__name__}: {exc}")


def instance_error(statuses: list[tuple[str, str]]) -> InstanceError:
    """Why a VM failed to provision, from its instance view (code, message) statuses."""
    failed = [(code.rsplit("/", 1)[-1], message) for code, message in statuses
              if code.startswith("ProvisioningState/failed")]
    for code, message in failed:
        kind = classify_code(code, message)
        if kind is not None:
            return InstanceError(kind, code, message)
    if failed:
        return InstanceError(InstanceErrorClass.OTHER, failed[0][0], failed[0][1])
    return InstanceError(InstanceErrorClass.OTHER, "provisioning-state-failed", "VM provisioning failed")

"""Bounded retries of ``Transient`` cloud errors with tenacity, shared by the providers.

Each provider translates its SDK's errors into the ``CloudError`` family first; this
retries the ``Transient`` ones, honouring ``retry_after`` and doubling from it, each wait
capped. The sleep is injectable so tests never wait.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from cloudproviders.interface import Transient

__all__ = ["RetryPolicy", "retry_after_header"]

_log = logging.getLogger(__name__)
T = TypeVar("T")


def retry_after_header(header: str | None) -> float:
    """Seconds from an HTTP ``Retry-After`` header given in seconds; 1 when absent or not a number."""
    try:
        return max(0.0, float(header)) if header is not None else 1.0
    except ValueError:
        return 1.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    #: Calls in all (the first one included); 1 disables retries.
    attempts: int = 4
    #: Cap on one wait, whatever ``Retry-After`` says (seconds).
    max_wait_seconds: float = 10.0
    #: How to wait; tests pass a recorder that returns at once.
    sleep: Callable[[float], None] = field(default=time.sleep)

    def _wait(self, state: RetryCallState) -> float:
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None else None
        # Honour the server's Retry-After, doubling from it on each further attempt.
        base = exc.retry_after if isinstance(exc, Transient) else 1.0
        return float(min(self.max_wait_seconds, base * 2 ** (state.attempt_number - 1)))

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()``, retried while it raises ``Transient``; the last error is re-raised."""

        def log_retry(state: RetryCallState) -> None:
            outcome = state.outcome
            _log.warning("retrying transient cloud error", extra={
                "call": what, "attempt": state.attempt_number,
                "error": str(outcome.exception()) if outcome is not None else ""})

        retrying = Retrying(stop=stop_after_attempt(max(1, self.attempts)), wait=self._wait,
                            retry=retry_if_exception_type(Transient), sleep=self.sleep,
                            before_sleep=log_retry, reraise=True)
        return retrying(fn)

    def call_translated(self, what: str, fn: Callable[[], T], translate: Callable[[Exception, str], Exception], *,
                        catch: tuple[type[Exception], ...] = (Exception,)) -> T:
        """``call`` of ``fn``; an exception of ``catch`` it raises is first turned by ``translate`` (the SDK's
        one translator) into the ``CloudError`` family, so only ``Transient`` ones are retried."""

        def once() -> T:
            try:
                return fn()
            except catch as exc:
                raise translate(exc, what) from exc

        return self.call(what, once)

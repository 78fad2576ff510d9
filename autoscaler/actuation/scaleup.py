"""Executing a scale-up: raise a group's target, retrying what the cloud calls transient.

``Transient`` (throttling, a 5xx, a timeout) is retried with ``tenacity``, waiting
what the error's ``retry_after`` says (capped), at most ``ATTEMPTS`` calls in all.
Anything else, and a ``Transient`` that outlasts the attempts, goes back to the loop,
which backs the group off (upstream registers every failed scale-up with its
``clusterstate``, which backs the group off).

The wait goes through an injected ``sleep``: the live loop sleeps for real, a
simulated run passes one that returns at once (simulated time does not pass inside
a loop iteration), and tests record the waits.
"""

from __future__ import annotations

from collections.abc import Callable

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from cloudproviders.interface import NodeGroup, Transient

__all__ = ["ATTEMPTS", "MAX_WAIT", "increase_size"]

#: Calls of ``increase_size`` per scale-up, the first included.
ATTEMPTS = 3
#: A cloud asking for a longer pause is not waited for inside one loop (s).
MAX_WAIT = 10.0


def _retry_after(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome is not None else None
    wait = exc.retry_after if isinstance(exc, Transient) else 1.0
    return max(0.0, min(wait, MAX_WAIT))


def increase_size(group: NodeGroup, delta: int, sleep: Callable[[float], None]) -> int:
    """``group.increase_size(delta)``, retrying ``Transient``; returns the calls made.

    Raises the last ``CloudError`` when it does not succeed.
    """
    retrying = Retrying(retry=retry_if_exception_type(Transient), stop=stop_after_attempt(ATTEMPTS),
                        wait=_retry_after, sleep=sleep, reraise=True)
    for attempt in retrying:
        with attempt:
            group.increase_size(delta)
    return int(retrying.statistics.get("attempt_number", 1))

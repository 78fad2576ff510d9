"""Per-group exponential backoff (upstream ``utils/backoff/exponential_backoff.go``).

Each case is a sequence of failures (and successes) of one group at given times; the
expected backoff lengths follow upstream: 5 min first, doubled by a failure after the
backoff ran out, kept by one while still backed off (its end included), capped at
30 min, forgotten 3 h after the last failure.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from autoscaler.backoff import GroupBackoff
from cloudproviders.interface import InstanceErrorClass

OOC = InstanceErrorClass.OUT_OF_CAPACITY
MIN = 60.0


@pytest.mark.parametrize(("failures", "durations"), [
    pytest.param([0.0], [5 * MIN], id="first-failure-5m"),
    pytest.param([0.0, 6 * MIN, 17 * MIN], [5 * MIN, 10 * MIN, 20 * MIN], id="doubles-after-each-backoff"),
    pytest.param([0.0, 1 * MIN], [5 * MIN, 5 * MIN], id="failure-while-backed-off-keeps-length"),
    pytest.param([0.0, 5 * MIN], [5 * MIN, 5 * MIN], id="failure-at-the-end-keeps-length"),
    pytest.param([0.0, 6 * MIN, 17 * MIN, 38 * MIN, 70 * MIN, 101 * MIN],
                 [5 * MIN, 10 * MIN, 20 * MIN, 30 * MIN, 30 * MIN, 30 * MIN], id="capped-at-30m"),
])
def test_backoff_lengths(failures: list[float], durations: list[float]) -> None:
    backoff = GroupBackoff()
    got = [backoff.fail("ng", OOC, "stock-out", at).duration for at in failures]
    assert got == durations


def test_backed_off_until_the_end_then_free() -> None:
    backoff = GroupBackoff()
    entry = backoff.fail("ng", InstanceErrorClass.QUOTA, "vCPU quota", 100.0)
    assert entry.until == 400.0 and entry.reason == "Quota: vCPU quota"
    assert backoff.backed_off(400.0) == {"ng": "Quota: vCPU quota"}, "up to and including its end"
    assert backoff.status("ng", 400.5) is None and backoff.backed_off(400.5) == {}
    assert backoff.status("other", 100.0) is None


@pytest.mark.parametrize(("forget", "next_duration"), [
    pytest.param(lambda b: b.forget_stale(3 * 3600 + 1.0), 5 * MIN, id="reset-3h-after-last-failure"),
    pytest.param(lambda b: b.forget_stale(3 * 3600.0), 10 * MIN, id="kept-until-3h"),
])
def test_reset(forget: Callable[[GroupBackoff], None], next_duration: float) -> None:
    backoff = GroupBackoff()
    backoff.fail("ng", OOC, "", 0.0)
    forget(backoff)
    assert backoff.fail("ng", OOC, "", 3 * 3600 + 2.0).duration == next_duration


def test_bad_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="initial"):
        GroupBackoff(initial=600.0, maximum=300.0)

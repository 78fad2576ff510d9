"""What the live loop remembers between iterations: unneeded time, cooldowns, drains in flight.

Each test calls ``run_once(..., memory=..., steady_state=False)`` at successive times,
as the live loop does, keeping the ``ScaleDownMemory`` each plan hands back
(``Remembered``). Upstream: a node goes only after
being unneeded for ``--scale-down-unneeded-time`` (unready: ``--scale-down-unready-time``),
and nothing goes within ``--scale-down-delay-after-add|delete|failure`` of those events.
"""

from __future__ import annotations

import dataclasses

import pytest

from autoscaler.scaledown.types import ScaleDownMemory
from kube.model import ClusterObjects, Node
from tests.autoscaler.scaledown_helpers import Remembered, group, loop, reasons, scaled_cluster
from tests.factories import NOW, ClusterObject, node, pod

MINUTE = 60.0
BIG: tuple[ClusterObject, ...] = (node("big", "16", "64Gi"), pod("busy", "9", "1Gi", "big"))


def spare(w1: Node | None = None, *objects: ClusterObject) -> ClusterObjects:
    """``big`` (needed) and the candidate ``w1`` (empty and Ready unless given)."""
    return scaled_cluster(*BIG, w1 or node("w1"), *objects, group("ng", "big", "w1"))


@pytest.mark.parametrize(
    ("w1", "flags", "elapsed", "removed"),
    [
        pytest.param(None, (), 9 * MINUTE, False, id="ready-before-default-10m"),
        pytest.param(None, (), 10 * MINUTE, True, id="ready-at-default-10m"),
        pytest.param(None, ("--scale-down-unneeded-time=2m",), 1 * MINUTE, False, id="ready-before-2m"),
        pytest.param(None, ("--scale-down-unneeded-time=2m",), 2 * MINUTE + 1, True, id="ready-after-2m"),
        pytest.param(None, ("--scale-down-unneeded-time=0s",), 0.0, True, id="zero-unneeded-time-same-loop"),
        pytest.param(node("w1", ready=False), (), 15 * MINUTE, False, id="unready-before-default-20m"),
        pytest.param(node("w1", ready=False), (), 20 * MINUTE, True, id="unready-at-default-20m"),
        pytest.param(node("w1", ready=False), ("--scale-down-unready-time=5m",), 6 * MINUTE, True,
                     id="unready-after-5m"),
        pytest.param(node("w1", ready=False), ("--scale-down-unneeded-time=1m",), 2 * MINUTE, False,
                     id="unready-ignores-unneeded-time"),
    ],
)
def test_unneeded_time(w1: Node | None, flags: tuple[str, ...], elapsed: float, removed: bool) -> None:
    objects = spare(w1)
    memory = Remembered()
    first = loop(objects, *flags, now=NOW, memory=memory).scale_down
    assert first.unneeded == ["w1"]
    assert memory.unneeded_since == {"w1": NOW}
    if elapsed:
        assert first.removed == []
        assert first.waiting.startswith("NotUnneededLongEnough")
    later = loop(objects, *flags, now=NOW + elapsed, memory=memory).scale_down
    assert later.unneeded == ["w1"]
    assert later.removed == (["w1"] if removed else [])
    assert memory.unneeded_since == {"w1": NOW}, "the first sighting is kept while the node stays unneeded"


def test_negative_unready_time_never_removes() -> None:
    objects = spare(node("w1", ready=False))
    memory = Remembered()
    for elapsed in (0.0, 60 * MINUTE, 7 * 24 * 60 * MINUTE):
        decision = loop(objects, "--scale-down-unready-time=-1s", now=NOW + elapsed, memory=memory).scale_down
        assert decision.removed == []
        assert reasons(decision)["w1"] == "NotUnreadyLongEnough"
    assert memory.unneeded_since == {}


def test_timer_restarts_when_the_node_is_needed_in_between() -> None:
    idle = spare()
    busy = spare(None, pod("web", "3", "1Gi", "w1"))
    memory = Remembered()
    loop(idle, now=NOW, memory=memory)
    assert loop(busy, now=NOW + 5 * MINUTE, memory=memory).scale_down.unneeded == []
    assert memory.unneeded_since == {}
    again = loop(idle, now=NOW + 11 * MINUTE, memory=memory).scale_down
    assert again.removed == []
    assert memory.unneeded_since == {"w1": NOW + 11 * MINUTE}
    assert loop(idle, now=NOW + 21 * MINUTE, memory=memory).scale_down.removed == ["w1"]


def _long_unneeded(last_scale_up: float | None = None, last_scale_down: float | None = None,
                   last_failure: float | None = None) -> Remembered:
    """w1 unneeded for an hour already, plus the given event times."""
    return Remembered(ScaleDownMemory(unneeded_since={"w1": NOW - 60 * MINUTE}, last_scale_up=last_scale_up,
                                      last_scale_down=last_scale_down, last_failure=last_failure))


@pytest.mark.parametrize(
    ("memory", "flags", "cooldown"),
    [
        pytest.param(_long_unneeded(), (), False, id="no-events"),
        pytest.param(_long_unneeded(last_scale_up=NOW - 1 * MINUTE), (), True, id="scale-up-1m-ago"),
        pytest.param(_long_unneeded(last_scale_up=NOW - 9 * MINUTE), (), True, id="scale-up-9m-ago"),
        pytest.param(_long_unneeded(last_scale_up=NOW - 10 * MINUTE), (), False, id="scale-up-10m-ago"),
        pytest.param(_long_unneeded(last_scale_up=NOW - 1 * MINUTE), ("--scale-down-delay-after-add=30s",), False,
                     id="short-delay-after-add"),
        pytest.param(_long_unneeded(last_scale_up=NOW - 1 * MINUTE), ("--scale-down-delay-after-add=0s",), False,
                     id="no-delay-after-add"),
        pytest.param(_long_unneeded(last_scale_down=NOW - 1), (), False, id="delete-default-no-delay"),
        pytest.param(_long_unneeded(last_scale_down=NOW - 1 * MINUTE), ("--scale-down-delay-after-delete=5m",), True,
                     id="delay-after-delete"),
        pytest.param(_long_unneeded(last_failure=NOW - 1 * MINUTE), (), True, id="failure-default-3m"),
        pytest.param(_long_unneeded(last_failure=NOW - 4 * MINUTE), (), False, id="failure-4m-ago"),
    ],
)
def test_cooldown(memory: Remembered, flags: tuple[str, ...], cooldown: bool) -> None:
    decision = loop(spare(), *flags, now=NOW, memory=memory).scale_down
    assert decision.unneeded == ["w1"], "a cooldown stops deletion, not the search for unneeded nodes"
    if cooldown:
        assert decision.removed == []
        assert decision.waiting.startswith("ScaleDownInCooldown")
    else:
        assert decision.removed == ["w1"]
        assert decision.waiting == ""


def test_steady_state_ignores_cooldown_and_unneeded_time() -> None:
    memory = Remembered(ScaleDownMemory(last_scale_up=NOW))
    decision = loop(spare(), now=NOW, memory=memory, steady_state=True).scale_down
    assert decision.removed == ["w1"]


def test_drains_in_progress_use_the_drain_budget() -> None:
    objects = spare(None, pod("web", "1", "1Gi", "w1"))
    memory = _long_unneeded()
    memory.memory = dataclasses.replace(memory.memory, deletions_in_progress=frozenset({"gone"}))
    blocked = loop(objects, now=NOW, memory=memory).scale_down
    assert blocked.unneeded == ["w1"]
    assert blocked.removed == []
    memory.memory = dataclasses.replace(memory.memory, deletions_in_progress=frozenset())
    assert loop(objects, now=NOW, memory=memory).scale_down.removed == ["w1"]


def test_node_being_deleted_by_us_is_unremovable() -> None:
    memory = _long_unneeded()
    memory.memory = dataclasses.replace(memory.memory, deletions_in_progress=frozenset({"w1"}))
    decision = loop(spare(), now=NOW, memory=memory).scale_down
    assert reasons(decision) == {"big": "NotUnderutilized", "w1": "CurrentlyBeingDeleted"}
    assert memory.unneeded_since == {}

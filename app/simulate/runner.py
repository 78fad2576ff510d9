"""``simulate``: the real autoscaler loop over a simulated cluster and cloud, in simulated time.

Every ``scanInterval`` of the scenario the world is advanced (pods scheduled, nodes
provisioned, volumes unpinned, events applied), then the same ``Autoscaler`` the
live deployment runs does one iteration against the world's cluster API and cloud.
The run records a timeline per loop and ends with a summary (``report.py``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.gc import collector_paused
from autoscaler.actuation.types import ActuationEvent
from autoscaler.config import Options
from autoscaler.loop import Autoscaler, History, ScaleEvent
from emulator.scenario import Scenario
from emulator.world import World

__all__ = ["RunResult", "TimelinePoint", "run_scenario"]


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    time: float
    nodes: dict[str, int]
    pending: int
    storage_utilization: float | None
    loop_seconds: float
    #: Bytes of local volumes the drains in progress after the loop unpin (the unpin budget's count).
    unpin_bytes_in_flight: int = 0


@dataclass(slots=True)
class RunResult:
    scenario: Scenario
    options: Options
    timeline: list[TimelinePoint] = field(default_factory=list)
    events: list[ScaleEvent] = field(default_factory=list)
    world: World | None = None
    wall_seconds: float = 0.0
    actuation: list[ActuationEvent] = field(default_factory=list)


def run_scenario(scenario: Scenario, options: Options, *, progress: Callable[[str], None] | None = None,
                 seed: int = 0) -> RunResult:
    # Building a large world allocates millions of long-lived objects and frees few: a full
    # collection in the middle walks them all again for nothing (app/gc.py).
    with collector_paused():
        world = World(scenario, options.storage, seed=seed, gates=options.feature_gates)
        # Simulated time does not pass inside a loop: retries of transient cloud errors do not wait.
        autoscaler = Autoscaler(world.cluster, world.cloud, options, sleep=_no_wait)
    result = RunResult(scenario, options, world=world)
    history = History(result.events, result.actuation)
    start = world.clock.now
    end = start + scenario.duration
    step = scenario.scan_interval
    loops = int(scenario.duration // step) + 1
    began = time.perf_counter()
    shown = -1
    for i in range(loops):
        now = start + i * step
        world.advance(now)
        with collector_paused():  # no full collection in the middle of a loop (app/gc.py)
            record = history.add(autoscaler.run_once(now))
        sample = world.sample()
        result.timeline.append(TimelinePoint(now - start, dict(sample.nodes), sample.pending,
                                             sample.storage_utilization, record.wall_seconds,
                                             record.actuation.unpin_bytes_in_flight))
        if progress is not None:
            pct = int(100 * (i + 1) / loops)
            if pct // 10 != shown:
                shown = pct // 10
                progress(f"  {pct:3d}%  t={_clock(now - start)}  nodes={sum(sample.nodes.values())}  "
                         f"pending={sample.pending}  loop={record.wall_seconds * 1000:.0f}ms")
    world.advance(end)
    result.wall_seconds = time.perf_counter() - began
    return result


def _no_wait(seconds: float) -> None:
    """The retry wait of a simulated run: none."""


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def stderr_progress(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()

"""What a simulated run amounts to: the summary, the machine-readable report, the text.

``summary`` keys are part of the ``--report`` contract (issue 4): ``nodeHours``,
``cost``, ``scaleUps``, ``scaleDowns``, ``evictions``, ``dataLossEvents``,
``podsPendingAtEnd``, ``maxPendingSeconds``, ``p95PendingSeconds``, ``finalNodes``,
plus the loop's own wall time per iteration. ``timeline`` has one entry per loop, with the
bytes the drains in progress unpin (``unpinBytesInFlight``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from app.simulate.runner import RunResult

__all__ = ["report", "summary", "summary_table"]


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[k]


def summary(run: RunResult) -> dict[str, Any]:
    world = run.world
    assert world is not None
    metrics = world.metrics
    end = world.clock.now
    pending = [(bound if bound is not None else end) - created for created, bound in metrics.pending_intervals()]
    loops = [p.loop_seconds for p in run.timeline]
    last = run.timeline[-1] if run.timeline else None
    scale_ups = [e for e in run.events if e.kind == "ScaleUp"]
    deleted = [a for a in run.actuation if a.kind == "Deleted"]
    failed = [a for a in run.actuation if a.kind == "Failed"]
    drains = _drain_seconds(run)
    return {
        "nodeHours": round(metrics.node_hours(), 3),
        "cost": round(metrics.cost(), 3),
        "scaleUps": len(scale_ups),
        "nodesAdded": sum(e.nodes for e in scale_ups),
        "scaleDowns": len(deleted),
        "scaleDownFailures": len(failed),
        "evictions": metrics.evictions,
        "dataLossEvents": len(metrics.data_loss_events),
        "bytesUnpinned": metrics.bytes_unpinned,
        "gibUnpinned": round(metrics.bytes_unpinned / 2**30, 1),
        "drainSecondsMean": round(sum(drains) / len(drains), 1) if drains else 0.0,
        "drainSecondsMax": round(max(drains, default=0.0), 1),
        "podsPendingAtEnd": last.pending if last else 0,
        "maxPendingSeconds": round(max(pending, default=0.0), 1),
        "p95PendingSeconds": round(_percentile(pending, 0.95), 1),
        "finalNodes": sum(last.nodes.values()) if last else 0,
        "loops": len(run.timeline),
        "loopSecondsMean": round(sum(loops) / len(loops), 4) if loops else 0.0,
        "loopSecondsP95": round(_percentile(loops, 0.95), 4),
        "loopSecondsMax": round(max(loops, default=0.0), 4),
        "loopMillisMean": round(1000 * sum(loops) / len(loops), 2) if loops else 0.0,
        "loopMillisMax": round(1000 * max(loops, default=0.0), 2),
        "wallSeconds": round(run.wall_seconds, 2),
    }


def _drain_seconds(run: RunResult) -> list[float]:
    """Seconds from each removed node's last taint to its deletion."""
    tainted: dict[str, float] = {}
    out = []
    for a in run.actuation:
        if a.kind == "Tainted":
            tainted[a.node] = a.time
        elif a.kind == "Deleted" and a.node in tainted:
            out.append(a.time - tainted.pop(a.node))
    return out


def report(run: RunResult) -> dict[str, Any]:
    world = run.world
    assert world is not None
    return {
        "scenario": run.scenario.name,
        "storageAware": run.options.storage_aware,
        "summary": summary(run),
        "scaleUps": [{"time": e.time - world.start, "nodeGroup": e.group, "delta": e.nodes, "reason": e.detail}
                     for e in run.events if e.kind in ("ScaleUp", "ScaleUpFailed", "ScaleUpTimedOut")],
        "scaleDowns": [{"time": a.time - world.start, "node": a.node, "result": a.kind, "reason": a.message}
                       for a in run.actuation if a.kind in ("Deleted", "Failed")],
        "dataLoss": [{"time": t - world.start, "node": node, "volume": pv}
                     for t, node, pv in world.metrics.data_loss_events],
        "timeline": [{"time": p.time, "nodes": p.nodes, "pending": p.pending,
                      "storageUtilization": p.storage_utilization, "loopSeconds": round(p.loop_seconds, 4),
                      "unpinBytesInFlight": p.unpin_bytes_in_flight}
                     for p in run.timeline],
    }


_ROWS = [
    ("nodeHours", "node-hours"),
    ("cost", "cost ($)"),
    ("scaleUps", "scale-ups"),
    ("nodesAdded", "nodes added"),
    ("scaleDowns", "nodes removed"),
    ("scaleDownFailures", "scale-down failures"),
    ("evictions", "evictions"),
    ("dataLossEvents", "data-loss events"),
    ("gibUnpinned", "GiB unpinned"),
    ("drainSecondsMean", "drain time mean (s)"),
    ("drainSecondsMax", "drain time max (s)"),
    ("podsPendingAtEnd", "pods pending at end"),
    ("maxPendingSeconds", "max pending (s)"),
    ("p95PendingSeconds", "p95 pending (s)"),
    ("finalNodes", "final nodes"),
    ("loopMillisMean", "loop wall time mean (ms)"),
    ("loopMillisMax", "loop wall time max (ms)"),
]


def summary_table(columns: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """The summaries side by side, one column per run."""
    width = max(len(label) for _, label in _ROWS) + 2
    col = max(14, *(len(name) + 2 for name, _ in columns))
    lines = [" " * width + "".join(f"{name:>{col}}" for name, _ in columns)]
    for key, label in _ROWS:
        lines.append(f"{label:<{width}}" + "".join(f"{_fmt(s.get(key)):>{col}}" for _, s in columns))
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    return str(value)


def events_text(run: RunResult, limit: int = 12) -> list[str]:
    """Scale-ups and scale-downs in time order, at most ``limit`` lines."""
    world = run.world
    assert world is not None
    timed: list[tuple[float, str]] = []
    for e in run.events:
        timed.append((e.time, f"{e.kind:<17} {e.group} x{e.nodes}: {e.detail}"))
    for a in run.actuation:
        if a.kind in ("Deleted", "Failed"):
            timed.append((a.time, f"ScaleDown{a.kind:<8} {a.node}: {a.message}"))
    timed.sort(key=lambda t: t[0])
    lines = [f"  {_hms(t - world.start)}  {text}" for t, text in timed[:limit]]
    if len(timed) > limit:
        lines.append(f"  ... {len(timed) - limit} more (see --report)")
    return lines


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"

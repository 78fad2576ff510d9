"""``plan``'s output: json (the contract, version 1) and text (for people).

See ``docs/plan-contract.md``. Lists are sorted; pod references are
``namespace/name``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from typing import Any

import msgspec

from autoscaler.runonce import LoopDecision
from autoscaler.scaleup.types import Refusal

__all__ = ["dumps", "to_json", "to_text"]

#: Floats below this size (zero aside) ``json`` writes in exponent form (``1e-05``) and msgspec
#: as ``0.00001`` down to 1e-6, then as ``1e-6``: the spellings part.
_PLAIN_FLOAT_MIN = 1e-4
#: Floats at least this large are where the two encoders' spellings may part.
_PLAIN_FLOAT_LIMIT = 1e15


def _round(value: float) -> float:
    return round(value, 4)


def _refusals(by_group: Mapping[str, Refusal]) -> list[dict[str, str]]:
    """Each group's refusal as fields: the line, and the scheduler plugin or autoscaler cause behind it."""
    return [{"nodeGroup": group, "reason": r.reason, "plugin": r.plugin} for group, r in sorted(by_group.items())]


def to_json(decision: LoopDecision) -> dict[str, Any]:
    up, down = decision.scale_up, decision.scale_down
    scale_up: dict[str, Any] = {
        "result": up.result,
        "increases": [{"nodeGroup": i.group, "delta": i.delta, "newSize": i.new_size} for i in up.increases],
        "triggeredBy": sorted(p.ref for p in up.triggered_by),
        "stillUnschedulable": [
            {"pod": ref, "reasons": dict(sorted(reasons.items())), "refusals": _refusals(up.refusals.get(ref, {}))}
            for ref, reasons in sorted(up.still_unschedulable.items())
        ],
        "options": [
            {"nodeGroup": o.group, "nodeCount": o.node_count, "pods": sorted(p.ref for p in o.pods)}
            for o in sorted(up.options, key=lambda o: o.group)
        ],
        "fitsExistingNodes": len(up.fits_existing),
        "fitsUpcomingNodes": len(up.fits_upcoming),
    }
    if up.chosen:
        scale_up["chosen"] = up.chosen
    scale_down: dict[str, Any] = {
        "result": down.result,
        "removed": sorted(down.removed),
        "unneeded": sorted(down.unneeded),
        "unremovable": [
            {"node": u.node, "reason": u.reason, "detail": u.detail}
            for u in sorted(down.unremovable, key=lambda u: u.node)
        ],
    }
    if down.skipped_because:
        scale_down["skippedBecause"] = down.skipped_because
    nodes = []
    for n in sorted(decision.nodes, key=lambda n: n.name):
        util: dict[str, float] = {"cpu": _round(n.utilization.cpu), "memory": _round(n.utilization.memory)}
        if n.utilization.storage is not None:
            util["storage"] = _round(n.utilization.storage)
        nodes.append({"name": n.name, "nodeGroup": n.group, "ready": n.ready, "utilization": util})
    return {"version": 1, "scaleUp": scale_up, "scaleDown": scale_down, "nodes": nodes,
            "warnings": list(decision.warnings)}


def _plain(value: Any) -> bool:
    """Whether every float in ``value`` is finite and spelled alike by ``json`` and msgspec."""
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if type(value) is float:
        return value == 0 or (math.isfinite(value) and _PLAIN_FLOAT_MIN <= abs(value) < _PLAIN_FLOAT_LIMIT)
    return True


def dumps(document: dict[str, Any]) -> str:
    """``json.dumps(document, indent=1)`` plus a newline, the contract's exact bytes.

    ``json``'s indenting encoder is pure Python (a tenth of a second on a 5,000-node
    plan); msgspec writes the same bytes in C whenever the text is ASCII and every float
    is spelled alike by both (``_plain``, checked on the document), and ``json`` writes
    everything else.
    """
    try:
        encoded = msgspec.json.encode(document)
    except (TypeError, OverflowError, msgspec.EncodeError):
        encoded = b""
    # ``json`` escapes DEL and everything past ASCII; msgspec writes them as they are.
    if encoded and encoded.isascii() and b"\x7f" not in encoded and _plain(document):
        return msgspec.json.format(encoded, indent=1).decode("ascii") + "\n"
    return json.dumps(document, indent=1) + "\n"


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{value * 100:3.0f}%"


def to_text(decision: LoopDecision, max_nodes: int = 40) -> str:
    up, down = decision.scale_up, decision.scale_down
    when = dt.datetime.fromtimestamp(decision.now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"Plan at {when}", ""]
    lines.append(f"Scale-up: {up.result}")
    if up.fits_existing or up.fits_upcoming:
        lines.append(f"  {len(up.fits_existing)} pending pod(s) fit existing nodes, "
                     f"{len(up.fits_upcoming)} fit nodes already on their way")
    for inc in up.increases:
        lines.append(f"  + {inc.delta} node(s) in {inc.group} (new size {inc.new_size})")
    if up.triggered_by:
        refs = [p.ref for p in up.triggered_by]
        shown = ", ".join(refs[:8]) + (f" and {len(refs) - 8} more" if len(refs) > 8 else "")
        lines.append(f"  for: {shown}")
    if up.options and len(up.options) > 1:
        lines.append("  options considered: " + ", ".join(
            f"{o.group} x{o.node_count} ({len(o.pods)} pods)" for o in sorted(up.options, key=lambda o: o.group)))
    if up.still_unschedulable:
        lines.append(f"  still unschedulable: {len(up.still_unschedulable)} pod(s)")
        for ref, reasons in sorted(up.still_unschedulable.items())[:10]:
            why = "; ".join(f"{g}: {r}" for g, r in sorted(reasons.items())) or "no node group"
            lines.append(f"    {ref}: {why}")
    lines.append("")
    lines.append(f"Scale-down: {down.result}" + (f" ({down.skipped_because})" if down.skipped_because else ""))
    if down.removed:
        lines.append("  remove now: " + ", ".join(sorted(down.removed)))
    if down.unneeded:
        lines.append("  unneeded: " + ", ".join(sorted(down.unneeded)))
    for u in sorted(down.unremovable, key=lambda u: u.node)[:max_nodes]:
        lines.append(f"  keep {u.node}: {u.reason}" + (f" ({u.detail})" if u.detail else ""))
    lines.append("")
    lines.append(f"Nodes ({len(decision.nodes)}):   cpu  mem  storage")
    for n in sorted(decision.nodes, key=lambda n: n.name)[:max_nodes]:
        nu = n.utilization
        state = "" if n.readiness == "Ready" else f"  [{n.readiness}]"
        lines.append(f"  {n.name:<28} {_pct(nu.cpu)} {_pct(nu.memory)} {_pct(nu.storage)}  {n.group or '-'}{state}")
    if len(decision.nodes) > max_nodes:
        lines.append(f"  ... {len(decision.nodes) - max_nodes} more")
    if decision.warnings:
        lines.append("")
        lines.extend(f"warning: {w}" for w in decision.warnings)
    return "\n".join(lines) + "\n"

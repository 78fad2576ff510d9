"""Both scale-down orders over seeded scenarios: ``python -m bench.order [SEEDS] [options]``.

For every seed, ``bench/order_scenarios.py`` draws a scenario; ``simulate``'s own runner
runs it twice, storage-aware both times: the default ``--scale-down-order=disruption-cost``
and ``--scale-down-order=upstream``. The table sums every seed and prints each ratio of
issue 21's bar (default over upstream): bytes unpinned <= 0.5, nodes removed >= 0.95,
node-hours <= 1.05, no data loss, no more scale-down failures, failures per removal <= 0.05.

    python -m bench.order                      # seeds 1-30, variant base
    python -m bench.order 1-40 --variant slow-driver --jobs 2
    python -m bench.order 7 --per-seed --flags --scan-interval=30s

Exit status 1 when a bar fails, so a script can loop over variants.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.order_scenarios import VARIANTS, generate, variant, write_scenario

__all__ = ["BARS", "aggregate", "bars", "run_seed"]

ORDERS = ("disruption-cost", "upstream")
KEYS = ("bytesUnpinned", "scaleDowns", "nodeHours", "dataLossEvents", "scaleDownFailures", "evictions",
        "drainSecondsMax", "podsPendingAtEnd")


def run_seed(seed: int, variant_name: str, flags: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Each order's ``simulate`` summary for one seed."""
    from app.cli import build_parser
    from app.simulate.report import summary
    from app.simulate.runner import run_scenario
    from autoscaler.config import options_from_args
    from emulator.scenario import load_scenario

    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = write_scenario(generate(seed, variant(variant_name)), Path(tmp) / f"order-{seed}.json")
        scenario = load_scenario(str(path))
        for order in ORDERS:
            args = build_parser().parse_args(["simulate", str(path), f"--scale-down-order={order}", *flags])
            out[order] = summary(run_scenario(scenario, options_from_args(args), seed=seed))
    return out


def aggregate(runs: Sequence[dict[str, dict[str, Any]]]) -> dict[str, dict[str, float]]:
    return {order: {k: sum(float(r[order][k]) for r in runs) for k in KEYS} for order in ORDERS}


def _ratio(a: float, b: float) -> float:
    return a / b if b else (0.0 if not a else float("inf"))


#: Each bar: what is measured over the totals of all seeds (default: disruption-cost), and the bound.
BARS: tuple[tuple[str, str], ...] = (
    ("bytesUnpinned default/upstream", "<= 0.5"),
    ("scaleDowns default/upstream", ">= 0.95"),
    ("nodeHours default/upstream", "<= 1.05"),
    ("dataLossEvents default", "== 0"),
    ("scaleDownFailures default - upstream", "<= 0"),
    ("scaleDownFailures/scaleDowns default", "<= 0.05"),
)


def bars(total: dict[str, dict[str, float]]) -> list[tuple[str, float, str, bool]]:
    d, u = total["disruption-cost"], total["upstream"]
    values = (
        _ratio(d["bytesUnpinned"], u["bytesUnpinned"]),
        _ratio(d["scaleDowns"], u["scaleDowns"]),
        _ratio(d["nodeHours"], u["nodeHours"]),
        d["dataLossEvents"],
        d["scaleDownFailures"] - u["scaleDownFailures"],
        _ratio(d["scaleDownFailures"], d["scaleDowns"]),
    )
    checks = (values[0] <= 0.5, values[1] >= 0.95, values[2] <= 1.05, values[3] == 0, values[4] <= 0,
              values[5] <= 0.05)
    return [(name, value, bar, ok) for (name, bar), value, ok in zip(BARS, values, checks, strict=True)]


def table(total: dict[str, dict[str, float]], seeds: int, variant_name: str) -> str:
    lines = [f"{seeds} seeds, variant {variant_name}", f"{'':<22}{'disruption-cost':>18}{'upstream':>14}"]
    for key in KEYS:
        d, u = total["disruption-cost"][key], total["upstream"][key]
        if key == "bytesUnpinned":
            lines.append(f"{'GiB unpinned':<22}{d / 2**30:>18.1f}{u / 2**30:>14.1f}")
        else:
            lines.append(f"{key:<22}{d:>18.3f}{u:>14.3f}")
    lines.append("")
    for name, value, bar, ok in bars(total):
        lines.append(f"{name:<40}{value:>10.3f}  {bar:<8} {'ok' if ok else 'FAIL'}")
    return "\n".join(lines)


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.order", description=__doc__.split("\n")[0])
    parser.add_argument("seeds", nargs="?", default="1-30", help="seeds: 1-30, or 3,5,9-12")
    parser.add_argument("--variant", default="base", choices=sorted(VARIANTS))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--per-seed", action="store_true", help="print each seed's numbers")
    parser.add_argument("--json", help="write every seed's summaries here")
    parser.add_argument("--flags", nargs=argparse.REMAINDER, default=[], help="more simulate flags (last)")
    args = parser.parse_args(argv)
    seeds = _seeds(args.seeds)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = list(pool.map(run_seed, seeds, [args.variant] * len(seeds), [tuple(args.flags)] * len(seeds)))
    if args.per_seed:
        for seed, run in zip(seeds, runs, strict=True):
            cells = "  ".join(f"{o[:4]}: {run[o]['gibUnpinned']:>8.1f}GiB {run[o]['scaleDowns']:>2}rm "
                              f"{run[o]['scaleDownFailures']:>2}f {run[o]['nodeHours']:>7.2f}h "
                              f"{run[o]['dataLossEvents']}loss" for o in ORDERS)
            print(f"seed {seed:>4}  {cells}")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(zip(map(str, seeds), runs, strict=True)), indent=1))
    total = aggregate(runs)
    print(table(total, len(seeds), args.variant))
    return 0 if all(ok for *_, ok in bars(total)) else 1


if __name__ == "__main__":
    sys.exit(main())

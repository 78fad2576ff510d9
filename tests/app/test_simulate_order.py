"""The scale-down orders in ``simulate``: a small seeded scenario, and the shipped one with ``--compare-order``.

Seeded (``bench/order_scenarios.py``): five i3en nodes hold Rok volumes from a few GiB to over a TiB; at
36m the load drops so that two of them can go. Upstream's order (by name) drains two nodes holding ~1.5
TiB; the disruption-cost order drains the two holding a few GiB, removes as many nodes, and neither
loses data. ``python -m bench.order`` runs the same comparison over many seeds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.simulate.report import summary
from app.simulate.runner import run_scenario
from bench.order_scenarios import Knobs, generate, write_scenario
from emulator.scenario import load_scenario
from tests.factories import options

SMALL = Knobs(groups=(1, 1), nodes_per_group=(5, 6), hours=(1.5, 1.5), scan_intervals=(30,), slow_fault_chance=0.0)
SEED = 4


@pytest.fixture(scope="module")
def both_orders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    path = write_scenario(generate(SEED, SMALL), Path(tmp_path_factory.mktemp("order")) / "order.json")
    scenario = load_scenario(str(path))
    return {order: summary(run_scenario(scenario, options(f"--scale-down-order={order}"), seed=SEED))
            for order in ("disruption-cost", "upstream")}


def test_the_default_order_unpins_a_fraction_of_upstreams_bytes(both_orders: dict[str, dict[str, Any]]) -> None:
    cost, upstream = both_orders["disruption-cost"], both_orders["upstream"]
    assert upstream["bytesUnpinned"] > 1000 * 2**30, "upstream's order drains a node with a large volume"
    assert cost["bytesUnpinned"] * 10 < upstream["bytesUnpinned"]
    assert cost["scaleDowns"] == upstream["scaleDowns"] == 2
    assert cost["nodeHours"] <= upstream["nodeHours"]


@pytest.mark.parametrize("order", [pytest.param("disruption-cost", id="default"),
                                   pytest.param("upstream", id="upstream")])
def test_neither_order_loses_data_or_fails(both_orders: dict[str, dict[str, Any]], order: str) -> None:
    assert (both_orders[order]["dataLossEvents"], both_orders[order]["scaleDownFailures"]) == (0, 0)


def test_a_seed_draws_the_same_scenario() -> None:
    assert generate(SEED, SMALL) == generate(SEED, SMALL)
    assert generate(SEED, SMALL) != generate(SEED + 1, SMALL)


SHIPPED = str(Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "storage-scale-down-order.yaml")


def test_the_shipped_order_scenario_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--compare-order``: both orders storage-aware; the README's row (845 GiB against 3,141 GiB, 3 nodes each)."""
    report = tmp_path / "report.json"
    assert main(["simulate", SHIPPED, "--compare-order", "--quiet", "--report", str(report)]) == 0
    runs = json.loads(report.read_text())["compare"]
    assert set(runs) == {"disruption-cost", "upstream"}
    assert all(run["storageAware"] for run in runs.values())
    cost, upstream = runs["disruption-cost"], runs["upstream"]
    assert [(s["node"], s["result"]) for s in cost["scaleDowns"]] == [
        ("nvme-4", "Deleted"), ("nvme-2", "Deleted"), ("nvme-3", "Deleted")]
    assert [s["node"] for s in upstream["scaleDowns"]] == ["nvme-1", "nvme-3", "nvme-4"]
    assert (cost["summary"]["gibUnpinned"], upstream["summary"]["gibUnpinned"]) == (845.0, 3141.0)
    for run in (cost, upstream):
        assert (run["summary"]["scaleDowns"], run["summary"]["scaleDownFailures"], run["summary"]["dataLossEvents"]) \
            == (3, 0, 0)
    assert "disruption-cost" in capsys.readouterr().out


def test_one_comparison_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", SHIPPED, "--compare", "--compare-order"]) == 2
    assert "argument --compare-order: not allowed with argument --compare" in capsys.readouterr().err

"""``explain``'s answers in the live loop: storage detail in NotTriggerScaleUp, unremovable nodes in the status."""

from __future__ import annotations

import pytest
import yaml

from app.cli import build_parser
from app.run.flags import settings_from_args
from app.run.loop import EXPLAIN_ANNOTATION
from autoscaler.config import options_from_args
from emulator.world import World
from tests.app.run_helpers import live_loop
from tests.emulator.worlds import deployment, make_world, nvme_group, nvme_node, rok_class, statefulset


def test_not_trigger_scale_up_names_the_claim_that_fits_no_group() -> None:
    """A 5Ti volume fits neither the node (100Gi free) nor a new one (1000Gi): the event names the claim."""
    world = make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1", free="100Gi"),
                       statefulset("kafka", 1, "5Ti"))
    loop = live_loop(world)
    world.advance(world.clock.now + 10)
    loop.iterate(world.clock.now)
    (event,) = [e for e in world.cluster.events if e.reason == "NotTriggerScaleUp"]
    assert event.message.startswith("pod didn't trigger scale-up: 1 node(s) did not have enough free storage")
    assert "; storage: needs 5Ti" in event.message


def test_the_status_lists_each_unremovable_node_with_its_blocker() -> None:
    world = make_world(rok_class(), nvme_group(min_size=0), nvme_node("nvme-1"), nvme_node("nvme-2"),
                       deployment("web", 2, cpu="7"))
    loop = live_loop(world)
    world.advance(world.clock.now + 10)
    loop.iterate(world.clock.now)
    status = yaml.safe_load(world.cluster.statuses[-1].text)
    down = status["clusterWide"]["scaleDown"]
    assert down["unremovableNodeCount"] == 2
    assert {(n["name"], n["reason"]) for n in down["unremovableNodes"]} == {
        ("nvme-1", "NotUnderutilized"), ("nvme-2", "NotUnderutilized")}
    assert all("utilization" in n["blocker"] for n in down["unremovableNodes"])


def _annotation(world: World, node: str) -> str | None:
    (found,) = [n for n in world.cluster.list_objects().nodes if n.name == node]
    return found.annotations.get(EXPLAIN_ANNOTATION)


@pytest.mark.parametrize(("flags", "dry_run", "written"), [
    pytest.param(("--explain-node-annotation",), False, True, id="on"),
    pytest.param((), False, False, id="off-by-default"),
    pytest.param(("--explain-node-annotation",), True, False, id="dry-run-changes-no-node"),
])
def test_node_verdicts_are_written_as_an_annotation_when_asked(flags: tuple[str, ...], dry_run: bool,
                                                               written: bool) -> None:
    world = make_world(rok_class(), nvme_group(min_size=0), nvme_node("nvme-1"), deployment("web", 1, cpu="7"))
    loop = live_loop(world, dry_run=dry_run)
    loop.annotate_nodes = "--explain-node-annotation" in flags
    world.advance(world.clock.now + 10)
    loop.iterate(world.clock.now)
    value = _annotation(world, "nvme-1")
    if written:
        assert value is not None and value.startswith("Unremovable: NotUnderutilized: cpu utilization")
    else:
        assert value is None


@pytest.mark.parametrize(("argv", "expected"), [
    pytest.param([], False, id="default-off"),
    pytest.param(["--explain-node-annotation"], True, id="bare"),
    pytest.param(["--explain-node-annotation=false"], False, id="false"),
])
def test_the_annotation_flag(argv: list[str], expected: bool) -> None:
    args = build_parser().parse_args(["run", "--nodes=0:3:g", *argv])
    settings = settings_from_args(args, options_from_args(args).storage)
    assert settings.explain_node_annotation is expected

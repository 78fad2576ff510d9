"""JSON ``List`` scenarios read typed (``emulator.typed_scenario``) against the ordinary dict path.

The typed path is an accelerator: a generated scenario read both ways builds the same
world and the same run, and whatever the typed path declines reads as the ordinary path
reads it (the same objects, or the same one-line error).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import build_parser
from app.simulate.report import report
from app.simulate.runner import run_scenario
from autoscaler.config import Options, options_from_args
from emulator.scenario import load_scenario
from emulator.world import World
from kube.convert import InputError
from tests.emulator.worlds import nvme_group, nvme_node, rok_class, scenario_json

Json = dict[str, Any]

GENERATOR = Path(__file__).resolve().parents[2] / "tools" / "gen-bench-snapshot"
#: Report fields that measure this machine, not the run.
TIMINGS = frozenset(("wallSeconds", "loopSeconds", "loopSecondsP95", "loopSecondsMax", "loopSecondsMean",
                     "loopMillisMax", "loopMillisMean"))


def _options(path: Path) -> Options:
    return options_from_args(build_parser().parse_args(["simulate", str(path)]))


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _as_yaml(source: Path, target: Path) -> Path:
    """The same objects as YAML documents: read the ordinary way."""
    items = json.loads(source.read_text())["items"]
    target.write_text(yaml.safe_dump_all(items, sort_keys=False))
    return target


def _world_state(world: World) -> tuple[Any, ...]:
    cluster = world.cluster
    return (sorted(cluster.pods(), key=lambda p: p.ref), cluster.nodes(), dict(cluster.volumes()),
            dict(cluster.claims()), cluster.warnings, sorted(world.group_node_counts().items()))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``gen-bench-snapshot`` with ``--scenario``: Rok volumes, guard pods, pending pods with claims."""
    path = tmp_path_factory.mktemp("typed") / "scenario.json"
    subprocess.run([sys.executable, str(GENERATOR), "30", "6", "12", str(path), "--seed", "4",
                    "--scenario", "10m,1m"], check=True)
    return path


def test_generated_scenario_is_read_typed_and_builds_the_same_world(generated: Path, tmp_path: Path) -> None:
    typed = load_scenario(generated)
    ordinary = load_scenario(_as_yaml(generated, tmp_path / "scenario.yaml"))
    assert typed.typed is not None and typed.objects == ()
    assert ordinary.typed is None and ordinary.objects
    assert (typed.name, typed.duration, typed.scan_interval) == (ordinary.name, ordinary.duration,
                                                                  ordinary.scan_interval)
    assert _world_state(World(typed)) == _world_state(World(ordinary))


def test_generated_scenario_runs_the_same_typed_and_from_dicts(generated: Path, tmp_path: Path) -> None:
    options = _options(generated)
    typed = run_scenario(load_scenario(generated), options)
    ordinary = run_scenario(load_scenario(_as_yaml(generated, tmp_path / "scenario.yaml")), options)
    assert typed.events, "the run should scale: the comparison would be empty otherwise"
    assert _without_timings(report(typed)) == _without_timings(report(ordinary))


def _small(*extra: Json) -> list[Json]:
    return [scenario_json(duration="10m"), rok_class(), nvme_group(), nvme_node("n1"), nvme_node("n2"), *extra]


def _pod(name: str, **spec: Any) -> Json:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                     **spec}}


def _write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(("document", "typed"), [
    pytest.param({"apiVersion": "v1", "kind": "List", "items": _small(_pod("p"))}, True, id="list-read-typed"),
    pytest.param(_small(_pod("p")), False, id="a-json-array"),
    pytest.param({"kind": "List", "items": [{"kind": "List", "items": _small(_pod("p"))}]}, False,
                 id="a-list-in-the-list"),
    pytest.param({"kind": "List", "items": _small(_pod("p", tolerations=[{"operator": "Sometimes"}]))}, True,
                 id="a-field-read-leniently-declines-at-conversion"),
    pytest.param({"kind": "List", "items": _small(_pod("p"), _pod("p"))}, True, id="a-pod-twice"),
    pytest.param({"kind": "List", "items": _small(_pod("p", nodeName=7))}, True, id="a-field-of-the-wrong-type"),
    pytest.param({"kind": "List", "items": [*_small(), scenario_json()]}, False, id="two-scenarios"),
    pytest.param({"kind": "List", "items": _small()[1:]}, False, id="no-scenario"),
    pytest.param({"kind": "List", "items": [*_small(), {"metadata": {"name": "x"}}]}, False,
                 id="an-item-without-kind"),
])
def test_what_the_typed_path_declines_reads_as_the_ordinary_path(tmp_path: Path, document: Any, typed: bool) -> None:
    """Same world or same error, whichever path reads it; ``typed``: the typed split took the file."""
    fast = _outcome(_write(tmp_path / "s.json", document), typed)
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text(yaml.safe_dump(document))  # one YAML document: flattened by the ordinary path
    assert fast == _outcome(yaml_file, False)


def _outcome(path: Path, typed: bool) -> Any:
    """The world's state, or the error, reading ``path`` (named FILE: warnings and errors name it)."""
    try:
        scenario = load_scenario(path)
        assert (scenario.typed is not None) == typed
        return repr(_world_state(World(scenario))).replace(str(path), "FILE")
    except InputError as exc:
        return str(exc).replace(str(path), "FILE")

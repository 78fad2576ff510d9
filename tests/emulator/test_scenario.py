"""Scenario files: Go durations, the Scenario object's validation, and the shipped examples."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulator.scenario import load_scenario, parse_duration, parse_scenario
from emulator.scenario_documents import _StringTimesLoader
from emulator.world import World
from kube.convert import InputError
from tests.emulator.worlds import START, deployment, make_world, scenario_json

Json = dict[str, Any]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


@pytest.mark.parametrize(("text", "seconds"), [
    pytest.param("90s", 90.0, id="seconds"),
    pytest.param("15m", 900.0, id="minutes"),
    pytest.param("2h", 7200.0, id="hours"),
    pytest.param("1h30m", 5400.0, id="hours-and-minutes"),
    pytest.param("1.5h", 5400.0, id="fraction"),
    pytest.param("500ms", 0.5, id="milliseconds"),
    pytest.param("0", 0.0, id="bare-zero"),
])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", [
    pytest.param("90", id="no-unit"),
    pytest.param("1d", id="days-are-not-go"),
    pytest.param("-5m", id="negative"),
    pytest.param("", id="empty"),
    pytest.param("5 m", id="space"),
])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def _spec(**changes: Any) -> Json:
    doc = scenario_json()
    spec = doc["spec"]
    for key, value in changes.items():
        if value is None:
            spec.pop(key)
        else:
            spec[key] = value
    return doc


@pytest.mark.parametrize(("doc", "field", "message"), [
    pytest.param(_spec(duration="two hours"), "spec.duration", "not a duration", id="bad-duration"),
    pytest.param(_spec(duration=7200), "spec.duration", "not a duration string", id="number-duration"),
    pytest.param(_spec(scanInterval=None), "spec.scanInterval", "required", id="missing-scan-interval"),
    pytest.param(_spec(unpinSecondsPerGiB=None), "spec.unpinSecondsPerGiB", "required", id="missing-unpin"),
    pytest.param(_spec(unpinSecondsPerGiB=-1), "spec.unpinSecondsPerGiB", "greater than or equal to 0",
                 id="negative-unpin"),
    pytest.param(_spec(scanInterval="0s"), "spec.scanInterval", "greater than 0", id="zero-scan-interval"),
    pytest.param(_spec(volumeDetachDelay="soon"), "spec.volumeDetachDelay", "not a duration",
                 id="bad-detach-delay"),
    pytest.param(_spec(start="yesterday"), "spec.start", "RFC 3339", id="bad-start"),
    pytest.param(_spec(speed="fast"), "spec.speed", "unknown field", id="unknown-field"),
    pytest.param(_spec(events=[{"at": "5x"}]), "spec.events[0].at", "not a duration", id="bad-event-time"),
    pytest.param(_spec(events=[{"at": "3h"}]), "spec.events[0].at", "after the scenario's duration",
                 id="event-after-end"),
    pytest.param(_spec(events=[{"at": "1m", "scale": {"kind": "Job", "name": "x", "replicas": 1}}]),
                 "spec.events[0].scale[0].kind", "cannot be scaled", id="scale-job"),
    pytest.param(_spec(events=[{"at": "1m", "scale": {"kind": "Deployment", "name": "x", "replicas": -1}}]),
                 "spec.events[0].scale[0].replicas", "greater than or equal to 0", id="negative-replicas"),
    pytest.param(_spec(events=[{"at": "1m", "create": [{"metadata": {"name": "x"}}]}]),
                 "spec.events[0].create[0].kind", "required", id="create-without-kind"),
    pytest.param({**scenario_json(), "apiVersion": "v1"}, "apiVersion", "expected autoscaler.storage.dev",
                 id="wrong-api-version"),
    pytest.param(_spec(cloudFaults=[{"group": "g", "kind": "Meteor"}]), "spec.cloudFaults[0].kind",
                 "Input should be", id="unknown-fault-kind"),
    pytest.param(_spec(cloudFaults=[{"group": "g", "kind": "Quota", "from": "10m", "until": "5m"}]),
                 "spec.cloudFaults[0].until", "not after from", id="fault-window-backwards"),
    pytest.param(_spec(cloudFaults=[{"group": "g", "kind": "SlowProvisioning"}]),
                 "spec.cloudFaults[0].provisioningDelay", "required for SlowProvisioning", id="slow-without-delay"),
    pytest.param(_spec(cloudFaults=[{"group": "g", "kind": "Quota", "provisioningDelay": "5m"}]),
                 "spec.cloudFaults[0].provisioningDelay", "only SlowProvisioning", id="delay-on-quota"),
    pytest.param(_spec(cloudFaults=[{"group": "g", "kind": "Transient", "times": 0}]),
                 "spec.cloudFaults[0].times", "greater than or equal to 1", id="transient-zero-times"),
    pytest.param(_spec(storageDriverFaults=[{"kind": "Lazy"}]), "spec.storageDriverFaults[0].kind",
                 "Input should be", id="driver-fault-unknown-kind"),
    pytest.param(_spec(storageDriverFaults=[{"kind": "SlowUnpin"}]),
                 "spec.storageDriverFaults[0].unpinSecondsPerGiB", "required for SlowUnpin", id="slow-unpin-no-rate"),
    pytest.param(_spec(storageDriverFaults=[{"kind": "NoGuard", "unpinSecondsPerGiB": 3}]),
                 "spec.storageDriverFaults[0].unpinSecondsPerGiB", "only SlowUnpin", id="rate-on-no-guard"),
    pytest.param(_spec(storageDriverFaults=[{"kind": "StuckUnpin", "from": "10m", "until": "1m"}]),
                 "spec.storageDriverFaults[0].until", "not after from", id="driver-fault-window-backwards"),
])
def test_scenario_validation_names_the_field(doc: Json, field: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_scenario([doc], "s.yaml")
    error = caught.value
    assert (error.source, error.obj, error.field) == ("s.yaml", "Scenario/test", field)
    assert message in error.message
    assert str(error).startswith(f"s.yaml: Scenario/test: {field}: ")


@pytest.mark.parametrize(("docs", "message"), [
    pytest.param([], "no Scenario object", id="none"),
    pytest.param([scenario_json(), scenario_json()], "exactly one Scenario", id="two"),
])
def test_exactly_one_scenario_object(docs: list[Json], message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_scenario(docs, "s.yaml")


def test_a_fault_for_an_unknown_group_names_it() -> None:
    with pytest.raises(InputError) as caught:
        make_world(deployment("web", 1), faults=[{"group": "gpu", "kind": "OutOfCapacity"}])
    assert (caught.value.field, caught.value.message) == ("spec.cloudFaults[0].group",
                                                          "no NodeGroup 'gpu' in the scenario")


def test_a_driver_fault_for_an_unknown_group_names_it() -> None:
    with pytest.raises(InputError) as caught:
        make_world(deployment("web", 1), driver_faults=[{"group": "gpu", "kind": "StuckUnpin"}])
    assert (caught.value.field, caught.value.message) == ("spec.storageDriverFaults[0].group",
                                                          "no NodeGroup 'gpu' in the scenario")


def test_spec_in_seconds_and_events_sorted(tmp_path: Path) -> None:
    doc = scenario_json(duration="1h30m", events=[{"at": "20m", "delete": [{"kind": "Pod", "name": "a"}]},
                                                  {"at": "90s", "scale": {"kind": "StatefulSet", "name": "db",
                                                                          "replicas": 2}}])
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all([doc, deployment("web", 1)]))
    scenario = load_scenario(path)
    assert (scenario.name, scenario.start, scenario.duration, scenario.end) == ("test", START, 5400.0, START + 5400)
    assert (scenario.scan_interval, scenario.provisioning_delay, scenario.storage_driver_start_delay) == (10, 120, 60)
    assert [e.at for e in scenario.events] == [90.0, 1200.0]
    assert [e.index for e in scenario.events] == [1, 0]
    assert scenario.events[0].scale[0].namespace == "default"
    assert [o["kind"] for o in scenario.objects] == ["Deployment"]


def test_unquoted_timestamps_stay_strings(tmp_path: Path) -> None:
    """Hand-written YAML often leaves creationTimestamp unquoted; the converters want the string."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario_json()) + "---\nkind: Node\napiVersion: v1\nmetadata:\n"
                    "  name: n1\n  creationTimestamp: 2026-05-01T00:00:00Z\nstatus:\n  capacity: {cpu: '2'}\n")
    scenario = load_scenario(path)
    assert scenario.objects[0]["metadata"]["creationTimestamp"] == "2026-05-01T00:00:00Z"
    World(scenario)


@pytest.mark.parametrize(("objects", "events", "obj", "field"), [
    pytest.param([], [{"at": "1m", "scale": {"kind": "Deployment", "name": "ghost", "replicas": 1}}],
                 "Scenario/test", "spec.events[0].scale[0]", id="scale-unknown-workload"),
    pytest.param([deployment("web", 1)], [{"at": "1m", "delete": [{"kind": "Deployment", "name": "web"}]},
                                          {"at": "2m", "scale": {"kind": "Deployment", "name": "web", "replicas": 1}}],
                 "Scenario/test", "spec.events[1].scale[0]", id="scale-after-delete"),
    pytest.param([{**deployment("web", 1), "spec": {"replicas": "many"}}], [], "Deployment/default/web",
                 "spec.replicas", id="bad-replicas"),
    pytest.param([], [{"at": "1m", "create": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                                               "status": {"capacity": {"cpu": "lots"}}}]}],
                 "Node/n", "status.capacity.cpu", id="bad-object-in-event"),
])
def test_world_rejects_bad_objects_and_targets(objects: list[Json], events: list[Json], obj: str,
                                               field: str) -> None:
    with pytest.raises(InputError) as caught:
        make_world(*objects, events=events)
    assert (caught.value.obj, caught.value.field) == (obj, field)


@pytest.mark.parametrize("name", ["storage-scale-up", "storage-scale-down", "mixed-day", "cloud-stockout",
                                  "stuck-driver"])
def test_examples_load_and_build(name: str) -> None:
    scenario = load_scenario(EXAMPLES / f"{name}.yaml")
    assert scenario.name == name
    world = World(scenario)
    world.advance(world.start + 600)
    assert world.metrics.data_loss_events == []


@pytest.mark.parametrize("name", ["storage-scale-up", "mixed-day"])
def test_a_json_scenario_loads_as_its_yaml_twin(name: str, tmp_path: Path) -> None:
    """Large generated scenarios come as JSON (a List holding the Scenario); read as plan reads snapshots."""
    source = EXAMPLES / f"{name}.yaml"
    docs = [d for d in yaml.load_all(source.read_text(), Loader=yaml.SafeLoader) if d is not None]
    as_json = tmp_path / f"{name}.json"
    as_json.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, default=str))
    from_yaml, from_json = load_scenario(source), load_scenario(as_json)
    assert from_json.typed is not None  # its objects wait undecoded for the typed decoders
    decoded = tuple(from_json.typed.dicts())
    assert dataclasses.replace(from_json, source=from_yaml.source, objects=decoded, typed=None) == from_yaml


@pytest.mark.parametrize(("suffix", "text", "message"), [
    pytest.param(".json", '{"kind": "List", "items": [', "invalid JSON", id="broken-json"),
    pytest.param(".yaml", "{kind: Scenario, spec: [", "invalid YAML", id="flow-yaml-not-json"),
])
def test_a_broken_file_is_one_line(suffix: str, text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / f"s{suffix}"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_scenario(path)


class _SafeStringTimes(yaml.SafeLoader):
    """The pure-Python safe loader with the scenario loader's resolvers: the reference result."""


_SafeStringTimes.yaml_implicit_resolvers = _StringTimesLoader.yaml_implicit_resolvers

TRICKY_YAML = """
base: &b {x: 1, y: [1, 2.5, {z: yes, n: ~}], t: 2026-01-01T00:00:00Z}
merged: {<<: *b, y: 3}
alias: *b
tagged: !!str 12
hex: 0x1F
set: !!set {a, b}
bin: !!binary aGVsbG8=
seq: &s [a, *b, '', {}]
again: *s
"""


@pytest.mark.parametrize("text", [
    pytest.param(TRICKY_YAML, id="anchors-merge-keys-and-tags"),
    *(pytest.param(p.read_text(), id=p.stem) for p in sorted(EXAMPLES.glob("*.yaml"))),
])
def test_the_fast_builder_gives_the_safe_loaders_documents(text: str) -> None:
    fast = list(yaml.load_all(text, Loader=_StringTimesLoader))
    assert fast == list(yaml.load_all(text, Loader=_SafeStringTimes))
    if text is TRICKY_YAML:
        doc = fast[0]
        assert doc["alias"] is doc["base"] and doc["again"] is doc["seq"], "an alias is the same object"
        assert doc["base"]["t"] == "2026-01-01T00:00:00Z"


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("{[1]: 2}\n", "invalid YAML", id="unhashable-key"),
    pytest.param("a: !!python/object:os.system {}\n", "invalid YAML", id="unsafe-tag"),
    pytest.param("a: !!int x\n", "invalid YAML", id="bad-int"),
])
def test_the_fast_builder_refuses_what_the_safe_loader_refuses(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_scenario(path)

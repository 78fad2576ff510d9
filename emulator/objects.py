"""Scenario dicts -> model objects, once, at the edge of the world.

Most kinds go through ``kube.convert.Converter``, exactly as ``plan`` reads a
snapshot. Two kinds need more than the snapshot model keeps: PodDisruptionBudgets
(their spec, so ``disruptionsAllowed`` can be computed live: ``emulator.budgets``) and
the workload controllers the world runs (their pod templates: ``emulator.controllers``).
Errors are ``InputError``s naming the source, the object and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from emulator.budgets import PdbSpec, parse_pdb
from emulator.controllers import WORKLOAD_KINDS, WorkloadParseError, WorkloadSpec, parse_workloads
from emulator.scenario import Scenario
from emulator.typed_scenario import typed_objects
from kube.convert import Converter, FieldError, InputError, object_ref
from kube.featuregates import FeatureGates
from kube.model import ClusterObjects
from kube.names import StorageNames

__all__ = ["Prepared", "prepare", "prepare_scenario"]

Json = dict[str, Any]


@dataclass(slots=True)
class Prepared:
    """One batch of converted objects (the initial cluster, or one event's ``create``)."""

    objects: ClusterObjects
    pdbs: list[PdbSpec] = field(default_factory=list)
    workloads: list[WorkloadSpec] = field(default_factory=list)

    def workload_refs(self) -> set[tuple[str, str, str]]:
        """(kind, namespace, name) a scale or delete event may name: controllers and their Deployments."""
        refs = set()
        for w in self.workloads:
            refs.add(w.key)
            if w.deployment is not None:
                refs.add(("Deployment", w.namespace, w.deployment.name))
        return refs


def prepare(raw: Iterable[Json], source: str, names: StorageNames, gates: FeatureGates | None = None) -> Prepared:
    """Convert one batch of object dicts (the ordinary path)."""
    batch = _Batch(Converter(names, gates), source)
    for obj in raw:
        batch.add(obj)
    return batch.finish()


def prepare_scenario(scenario: Scenario, names: StorageNames, gates: FeatureGates | None = None) -> Prepared:
    """The scenario's initial objects: typed when it was read as a JSON ``List`` (``emulator.typed_scenario``),
    else, or when the typed path declines anything, from dicts, with the same result or error."""
    if scenario.typed is not None:
        batch = _Batch(Converter(names, gates), scenario.source)
        if typed_objects(scenario.typed, scenario.source, batch.converter, batch.add):
            try:
                return batch.finish()
            except InputError:
                pass  # the ordinary path names it, as it always has
        return prepare(scenario.typed.dicts(), scenario.source, names, gates)
    return prepare(scenario.objects, scenario.source, names, gates)


class _Batch:
    """Objects of one batch as they come: PDBs and workload controllers kept aside, the rest converted."""

    def __init__(self, converter: Converter, source: str) -> None:
        self.converter = converter
        self.source = source
        self.pdbs: list[PdbSpec] = []
        self.controllers: list[Json] = []

    def add(self, obj: Json) -> None:
        kind = obj.get("kind")
        if kind == "PodDisruptionBudget":
            try:
                self.pdbs.append(parse_pdb(obj))
            except FieldError as exc:
                raise InputError(self.source, object_ref(obj), exc.field, exc.message) from None
        elif kind in WORKLOAD_KINDS:
            self.controllers.append(obj)
        else:
            self.converter.add(obj, self.source)

    def finish(self) -> Prepared:
        source = self.source
        try:
            pairs = parse_workloads(self.controllers, self.converter.memos)
        except WorkloadParseError as exc:
            raise InputError(source, object_ref(exc.obj), exc.error.field, exc.error.message) from None
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            raise InputError(source, "", "", f"malformed controller ({exc})") from None
        objects = self.converter.objects
        seen: set[str] = set()
        for node in objects.nodes:
            if node.name in seen:
                raise InputError(source, f"Node/{node.name}", "metadata.name", "appears twice")
            seen.add(node.name)
        return Prepared(objects, self.pdbs, [spec for _, spec in pairs if spec is not None])

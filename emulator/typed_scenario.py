"""JSON ``List`` scenarios read as ``plan`` reads JSON snapshots: typed, without a dict tree.

A 10,000-node scenario is about 60 MB of JSON and 138,000 objects. Parsed into dicts and
then converted, it takes several times the parse; the typed decoders ``plan`` uses
(``kube.typedload``: Pods, Nodes, PVs and PVCs straight from bytes to the model, nested
values converted once per distinct value) take about twice the parse. So a scenario that
is one JSON ``List`` is split here into its ``Scenario`` object (a dict, validated by
``emulator.scenario``) and the other objects, kept as undecoded slices of the file
(``ScenarioObjects``); ``prepare_typed`` converts those when the world is built, once
per run (``--compare`` builds two worlds from one read).

An accelerator only, never a second source of truth: whatever it does not handle (a
YAML file, a list in a list, an item without a kind, a field of a shape the typed
decoders decline, any error) gives ``None`` and the caller takes the ordinary path
(``emulator.scenario_documents``, ``emulator.objects.prepare``), which gives the same
objects or the one-line error. ``tests/emulator/test_typed_scenario.py`` holds the two
paths equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET, Raw

from kube.convert import Converter
from kube.typedload import ANY_DECODER, KIND_DECODER, LIST_DECODER
from kube.typednodes import NodeDecoder
from kube.typedpods import PodDecoder
from kube.typedvolumes import VolumeDecoder

__all__ = ["ScenarioObjects", "split_json_list", "typed_objects"]

Json = dict[str, Any]

SCENARIO_KIND = "Scenario"


@dataclass(frozen=True, slots=True)
class ScenarioObjects:
    """A JSON ``List`` scenario's objects but the Scenario: each kind and its undecoded JSON."""

    kinds: tuple[str, ...]
    items: tuple[Raw, ...]

    def dicts(self) -> list[Json]:
        """Every object decoded to a dict, in file order (what the ordinary path reads)."""
        return [ANY_DECODER.decode(raw) for raw in self.items]


class _Unsupported(Exception):
    """The typed path does not handle this input: the ordinary path must read it."""


def split_json_list(data: bytes) -> tuple[Json, ScenarioObjects] | None:
    """The Scenario object and the other objects of a JSON ``List`` file, or None (ordinary path).

    None also when there is not exactly one Scenario: the ordinary path says so.
    """
    try:
        return _split(data)
    except (_Unsupported, msgspec.DecodeError, RecursionError):
        return None


def _split(data: bytes) -> tuple[Json, ScenarioObjects]:
    if not data.lstrip().startswith(b"{"):
        raise _Unsupported
    doc = LIST_DECODER.decode(data)
    if doc.kind != "List" or doc.items is UNSET or doc.items is None:
        raise _Unsupported  # typed lists (PodList) and the rest: the ordinary path flattens them
    kinds: list[str] = []
    items: list[Raw] = []
    scenario: Json | None = None
    for raw in doc.items:
        kind = KIND_DECODER.decode(raw).kind
        if type(kind) is not str or not kind or (kind.endswith("List") and kind != SCENARIO_KIND):
            raise _Unsupported  # no kind, or a list in the list: the ordinary path names or flattens it
        if kind == SCENARIO_KIND:
            if scenario is not None:
                raise _Unsupported  # two: the ordinary path names the second
            obj = ANY_DECODER.decode(raw)
            if type(obj) is not dict:
                raise _Unsupported
            scenario = obj
            continue
        kinds.append(kind)
        items.append(raw)
    if scenario is None:
        raise _Unsupported
    return scenario, ScenarioObjects(tuple(kinds), tuple(items))


#: Kinds the typed decoders read; ``kube.typedload`` takes the same four.
_TYPED = frozenset(("Pod", "PersistentVolumeClaim", "Node", "PersistentVolume"))


def typed_objects(objects: ScenarioObjects, source: str, converter: Converter,
                  other: Callable[[Json], None]) -> bool:
    """Decode every object in file order: the four big kinds typed into ``converter``, every
    other one to a dict handed to ``other`` (as the ordinary path reads it).

    False when anything was declined or refused: the ordinary path then reads everything
    again with a fresh converter. ``converter`` refuses every copy (``refuse_copies``).
    """
    converter.refuse_copies = True
    try:
        _decode(objects, source, converter, other)
    except Exception:
        return False
    pods = converter.objects.pods
    return len({pod.ref for pod in pods}) == len(pods)  # a pod twice: the ordinary path names it


def _decode(objects: ScenarioObjects, source: str, converter: Converter, other: Callable[[Json], None]) -> None:
    pods = PodDecoder(converter.memos)
    volumes = VolumeDecoder(converter.memos)
    nodes = NodeDecoder(converter.names, converter.memos)
    for kind, raw in zip(objects.kinds, objects.items, strict=True):
        if kind not in _TYPED:
            obj = ANY_DECODER.decode(raw)
            if type(obj) is not dict:
                raise _Unsupported
            other(obj)
        elif kind == "Pod":
            converter.add_pod(pods.decode(raw))
        elif kind == "PersistentVolumeClaim":
            converter.add_claim(volumes.claim(raw)[0], source)
        elif kind == "Node":
            converter.add_node(nodes.decode(raw, converter.objects.warnings), source)
        else:
            converter.add_volume(*volumes.volume(raw), source)

"""Typed decoding of JSON ``List`` snapshots: the big kinds without a full dict tree.

A 5,000-node snapshot is about 90 MB of JSON; parsed into dicts it takes more memory
than the whole decision, and most of it (images, env, commands, managed fields,
probes) is never read. Here the file is decoded into a list of raw items and each
item's kind is peeked:

* Pods, Nodes, PersistentVolumes and PersistentVolumeClaims go straight from bytes to
  the model (``kube.typedpods``, ``kube.typednodes``, ``kube.typedvolumes``): typed
  Structs, nested values converted once per distinct value by ``kube.convert``'s
  checked readers;
* every other kind (a few per cent of a snapshot) is decoded to dicts and handed to the
  ``Converter``.

This path is an accelerator only, never a second source of truth: anything it cannot
decode (a field of the wrong shape for a Struct, a document that is not a ``List``
object, a YAML file, a bad object a converter refuses) makes ``try_load`` return
``None`` and the caller loads the files again the ordinary way, which gives exactly
the same result or one-line error. The differential tests in ``tests/kube`` hold the
two paths equal, and a tripwire there requires every field the converters read to be
declared by one of these Structs (a field left out would read as absent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from kube.convert import Converter
from kube.documents import read_bytes
from kube.featuregates import FeatureGates
from kube.model import ClusterObjects
from kube.names import StorageNames
from kube.typednodes import NodeDecoder
from kube.typedpods import PodDecoder
from kube.typedvolumes import VolumeDecoder

__all__ = ["ANY_DECODER", "KIND_DECODER", "LIST_DECODER", "try_load"]


class _Kind(Struct):
    kind: Any = UNSET


class _List(Struct):
    kind: Any = UNSET
    items: list[Raw] | UnsetType | None = UNSET


#: One List item's ``kind`` alone; a ``List``'s ``kind`` and items left undecoded; any JSON.
#: Shared with the scenario reader (``emulator/typed_scenario.py``).
KIND_DECODER = msgspec.json.Decoder(_Kind)
LIST_DECODER = msgspec.json.Decoder(_List)
ANY_DECODER = msgspec.json.Decoder()


class _Unsupported(Exception):
    """The typed path does not handle this input: the ordinary path must read it."""


def _add_items(items: list[Raw], item_kind: str | None, converter: Converter, path: str) -> None:
    pods = PodDecoder(converter.memos)
    volumes = VolumeDecoder(converter.memos)
    nodes = NodeDecoder(converter.names, converter.memos)
    for i in range(len(items)):
        raw = items[i]
        items[i] = Raw()  # drop each raw slice as it is converted
        kind = KIND_DECODER.decode(raw).kind
        if kind is UNSET:
            if item_kind is None:
                raise _Unsupported  # the converter's "kind: required" error, from the ordinary path
            kind = item_kind
        elif type(kind) is not str:
            raise _Unsupported
        if kind == "Pod":
            converter.add_pod(pods.decode(raw))  # duplicates: looked for once, at the end (``try_load``)
            continue
        if kind == "PersistentVolumeClaim":
            converter.add_claim(volumes.claim(raw)[0], path)
            continue
        if kind == "Node":
            converter.add_node(nodes.decode(raw, converter.objects.warnings), path)
            continue
        if kind == "PersistentVolume":
            converter.add_volume(*volumes.volume(raw), path)
            continue
        obj = ANY_DECODER.decode(raw)
        if type(obj) is not dict or (kind.endswith("List") and "items" in obj):
            raise _Unsupported
        obj["kind"] = kind
        converter.add(obj, path)


def _add_file(path: str, converter: Converter) -> None:
    if path == "-" or path.endswith((".yaml", ".yml")):
        raise _Unsupported
    # Bytes, not text: msgspec checks UTF-8 inside strings itself (and refuses it outside
    # them as bad JSON), so decoding 90 MB to a str first would be done twice.
    data = read_bytes(path)
    if not data.lstrip().startswith(b"{"):
        raise _Unsupported
    doc = LIST_DECODER.decode(data)
    del data
    kind = doc.kind
    if type(kind) is not str or not kind.endswith("List") or doc.items is UNSET:
        raise _Unsupported
    if doc.items is None:
        return
    _add_items(doc.items, None if kind == "List" else kind[:-len("List")] or None, converter, path)


def try_load(paths: Sequence[str], names: StorageNames, gates: FeatureGates | None = None) -> ClusterObjects | None:
    """Every file's objects converted, or ``None`` when any file needs the ordinary path.

    ``None`` also for every error (the ordinary path names it exactly); the result,
    when there is one, equals what the ordinary path converts, before sorting and the
    cross-object checks the caller does.
    """
    converter = Converter(names, gates)
    converter.refuse_copies = True
    try:
        for path in paths:
            _add_file(path, converter)
    except Exception:
        return None
    pods = converter.objects.pods
    if len({pod.ref for pod in pods}) != len(pods):
        return None  # a pod twice: the ordinary path names it and the file it is in
    return converter.objects

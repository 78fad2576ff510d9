"""Read snapshot files (YAML documents, a JSON object, a ``List`` or an array; ``-`` is stdin).

Large JSON snapshots dominate ``plan``'s run time, so objects are converted as they
are taken out of the parsed document and the raw dicts are dropped at once, keeping
peak memory close to the parsed document alone. The library leaves the cyclic
garbage collector alone (a long-running process must be able to collect); a
one-shot command such as ``plan`` may pause it around loading.

Lists come as ``kubectl get -o yaml`` prints them (``kind: List``, each item with
its kind) or as the API returns them (``kind: PodList``, items without a kind: the
item's kind is the list's kind without ``List``). Input limits (size, nesting,
aliases) are in ``kube.documents``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kube.convert import Converter, InputError
from kube.convert.fields import describe
from kube.documents import json_documents, read_text, yaml_documents
from kube.featuregates import FeatureGates
from kube.model import ClusterObjects
from kube.names import StorageNames
from kube.typedload import try_load

__all__ = ["load_objects", "load_snapshot"]


def _documents(path: str, text: str) -> Iterator[Any]:
    if text.lstrip().startswith(("{", "[")):
        try:
            yield json_documents(path, text)
            return
        except InputError:
            if not path.endswith((".yaml", ".yml")):
                raise
            # a .yaml file in flow style: read it as YAML below
    yield from yaml_documents(path, text)


def _is_list(doc: dict[str, Any]) -> bool:
    kind = doc.get("kind")
    return type(kind) is str and kind.endswith("List") and "items" in doc


def _drain(items: list[Any], converter: Converter, path: str, where: str, item_kind: str | None) -> None:
    """Convert and drop each item; a typed list gives its kind to items without one."""
    for i in range(len(items)):
        obj = items[i]
        items[i] = None  # drop the raw object as soon as it is converted
        if obj is None:
            continue
        if type(obj) is dict:
            if item_kind is not None and "kind" not in obj:
                obj["kind"] = item_kind
            elif _is_list(obj):
                raise InputError(path, f"{where}[{i}]", "kind", "a list inside a list is not a Kubernetes object")
            converter.add(obj, path)
        else:
            raise InputError(path, f"{where}[{i}]", "", f"expected a Kubernetes object (a map), got {describe(obj)}")


def _add_document(doc: Any, index: int, converter: Converter, path: str) -> None:
    where = f"document {index + 1}"
    if isinstance(doc, list):
        _drain(doc, converter, path, where, None)
    elif isinstance(doc, dict) and _is_list(doc):
        kind = str(doc["kind"])
        items = doc.get("items")
        if items is None:
            return
        if type(items) is not list:
            raise InputError(path, kind, "items", f"expected a list, got {describe(items)}")
        _drain(items, converter, path, f"{kind}.items", None if kind == "List" else kind[:-len("List")] or None)
    elif isinstance(doc, dict):
        converter.add(doc, path)
    else:
        raise InputError(path, where, "", f"expected a Kubernetes object (a map), got {describe(doc)}")


def load_snapshot(paths: Sequence[str], names: StorageNames, gates: FeatureGates | None = None) -> ClusterObjects:
    """Load and convert every object of every file into one ``ClusterObjects``.

    JSON ``List`` files take the typed path (``kube.typedload``) first; whatever it
    does not handle, errors included, is read here the ordinary way.
    """
    objects = try_load(paths, names, gates)
    if objects is None:
        objects = load_objects(paths, names, gates)
    objects.nodes.sort(key=lambda n: n.name)
    _check_groups(objects, ", ".join(paths))
    return objects


def load_objects(paths: Sequence[str], names: StorageNames, gates: FeatureGates | None = None) -> ClusterObjects:
    """Every object of every file through parsed dicts (the ordinary path), unsorted and unchecked."""
    converter = Converter(names, gates)
    for path in paths:
        for index, doc in enumerate(_documents(path, read_text(path))):
            if doc is not None:
                _add_document(doc, index, converter, path)
    return converter.objects


def _check_groups(objects: ClusterObjects, source: str) -> None:
    """A node belongs to at most one group (by name or by labels): two would be a guess."""
    for node in objects.nodes:
        owners = [group.name for group in objects.node_groups if group.selects(node)]
        if len(owners) > 1:
            raise InputError(source, f"NodeGroup/{owners[1]}", "spec",
                             f"node {node.name} is also in group {owners[0]} (a node belongs to one group)")

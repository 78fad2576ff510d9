"""Reading a scenario file's documents: JSON when it is JSON, else YAML without implicit timestamps.

Split from ``emulator.scenario`` (which validates the ``Scenario`` object): this is how
the file becomes a flat list of object dicts, with ``plan``'s input limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from kube.convert import InputError
from kube.documents import json_documents, yaml_documents

__all__ = ["documents", "flatten"]

Json = dict[str, Any]

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"


class _StringTimesLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """YAML without implicit timestamps: ``creationTimestamp: 2026-06-01T00:00:00Z`` stays a string,
    as the converters expect (kubectl quotes it; hand-written scenarios often do not).

    Scalars are resolved in Python by both loaders, so dropping the timestamp resolver
    works for the C loader too; parsing and composing run in C. Documents are built by
    ``_build``, a direct walk of the composed nodes for plain maps, lists and strings
    (what Kubernetes objects are made of); anything else (numbers, booleans, merge keys,
    explicit tags) goes through the safe constructor, so the result is the safe loader's.
    """

    def construct_document(self, node: yaml.Node) -> Any:
        self._built: dict[int, object] = {}
        try:
            return self._build(node)
        finally:
            self._built = {}
            # The safe constructor's per-document state, reset as its construct_document does.
            self.constructed_objects: dict[yaml.Node, Any] = {}
            self.recursive_objects: dict[yaml.Node, None] = {}
            self.deep_construct = False

    def _build(self, node: yaml.Node) -> Any:
        kind, tag = type(node), node.tag
        if kind is yaml.ScalarNode and tag == _STR:
            return node.value
        built = self._built.get(id(node))
        if built is not None:
            return built  # an alias: the same object, as the safe constructor gives
        out: Any
        if kind is yaml.MappingNode and tag == _MAP and not any(k.tag == _MERGE for k, _ in node.value):
            out = {}
            for key_node, value_node in node.value:
                key = self._build(key_node)
                if isinstance(key, list | dict):
                    return self.construct_object(node, deep=True)  # refused there: unhashable key
                out[key] = self._build(value_node)
        elif kind is yaml.SequenceNode and tag == _SEQ:
            out = [self._build(item) for item in node.value]
        else:
            out = self.construct_object(node, deep=True)
        self._built[id(node)] = out
        return out


_StringTimesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def documents(source: str, text: str) -> Iterator[object]:
    """The file's documents, read as ``plan`` reads snapshots (``kube.load``): JSON when it is JSON.

    Size, nesting and alias limits first (``kube.documents``). JSON (a ``List`` holding the
    Scenario and the objects, as generators write large scenarios) parses an order of
    magnitude faster than YAML; a ``.yaml`` file in flow style that is not JSON is YAML.
    """
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            yield json_documents(source, text)
            return
        except InputError:
            if not source.endswith((".yaml", ".yml")):
                raise
    yield from yaml_documents(source, text, loader=_StringTimesLoader)


def flatten(doc: object, source: str, out: list[Json]) -> None:
    if doc is None:
        return
    if isinstance(doc, list):
        for item in doc:
            flatten(item, source, out)
        return
    if not isinstance(doc, dict):
        raise InputError(source, "", "", f"expected a Kubernetes object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError(source, kind, "items", "expected a list")
        for item in items:
            if isinstance(item, dict) and "kind" not in item and kind != "List":
                item["kind"] = kind[:-len("List")]  # a typed list (PodList): items carry no kind
            flatten(item, source, out)
        return
    out.append(doc)

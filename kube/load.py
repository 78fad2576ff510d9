"""Read snapshot files (YAML documents, a JSON object, a ``List`` or an array; ``-`` is stdin).

Large JSON snapshots dominate ``plan``'s run time, so objects are converted as they
are taken out of the parsed document and the raw dicts are dropped at once, keeping
peak memory close to the parsed document alone. The library leaves the cyclic
garbage collector alone (a long-running process must be able to collect); a
one-shot command such as ``plan`` may pause it around loading.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from kube.convert import Converter, InputError
from kube.model import ClusterObjects
from kube.names import StorageNames

__all__ = ["load_snapshot"]


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise InputError(path, "", "", f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(path, "", "", "not a UTF-8 text file") from None


def _documents(path: str, text: str) -> Iterator[Any]:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            yield json.loads(text)
            return
        except json.JSONDecodeError as exc:
            if not path.endswith((".yaml", ".yml")):
                raise InputError(path, "", "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") \
                    from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        yield from yaml.load_all(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(path, "", "", f"invalid YAML{where}: {problem}") from None


def _drain_items(items: list[Any], converter: Converter, path: str) -> None:
    for i in range(len(items)):
        obj = items[i]
        items[i] = None  # drop the raw object as soon as it is converted
        if isinstance(obj, dict) and str(obj.get("kind", "")).endswith("List") and "items" in obj:
            _drain_items(obj.get("items") or [], converter, path)
        elif obj is not None:
            converter.add(obj, path)


def load_snapshot(paths: Sequence[str], names: StorageNames) -> ClusterObjects:
    """Load and convert every object of every file into one ``ClusterObjects``."""
    converter = Converter(names)
    for path in paths:
        for doc in _documents(path, _read(path)):
            if doc is None:
                continue
            if isinstance(doc, list):
                _drain_items(doc, converter, path)
            elif isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
                items = doc.get("items") or []
                if not isinstance(items, list):
                    raise InputError(path, str(doc.get("kind")), "items", "expected a list")
                _drain_items(items, converter, path)
            else:
                converter.add(doc, path)
    objects = converter.objects
    objects.nodes.sort(key=lambda n: n.name)
    _check_unique(objects, paths)
    return objects


def _check_unique(objects: ClusterObjects, paths: Sequence[str]) -> None:
    source = ", ".join(paths)
    seen: set[str] = set()
    for node in objects.nodes:
        if node.name in seen:
            raise InputError(source, f"Node/{node.name}", "metadata.name", "appears twice")
        seen.add(node.name)
    groups: set[str] = set()
    for group in objects.node_groups:
        if group.name in groups:
            raise InputError(source, f"NodeGroup/{group.name}", "metadata.name", "appears twice")
        groups.add(group.name)

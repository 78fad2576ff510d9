"""A small kustomize renderer for ``deploy/``: exactly the features the overlays use, offline.

CI has no kustomize binary, so the tests render with this and, where ``kubectl`` is
installed, check it renders what ``kubectl kustomize`` does. Supported
``kustomization.yaml`` keys: ``resources`` (files and directories), ``namespace``,
``labels`` (``pairs``, metadata only), ``images`` (``newName``/``newTag``) and
``patches`` (a strategic-merge file by ``path``, or an inline JSON 6902 ``patch`` with a
``target``). Anything else fails loudly instead of rendering something different.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CLUSTER_SCOPED", "render"]

Json = dict[str, Any]

CLUSTER_SCOPED = frozenset({"ClusterRole", "ClusterRoleBinding", "Namespace", "PriorityClass", "StorageClass"})
KNOWN = frozenset({"apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"})
#: Strategic merge keys of the lists the overlays patch.
MERGE_KEYS = {"containers": "name", "env": "name", "volumes": "name", "volumeMounts": "name", "ports": "name"}


def _load(path: Path) -> list[Json]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            if key in MERGE_KEYS and isinstance(value, list) and isinstance(out.get(key), list):
                out[key] = _merge_list(out[key], value, MERGE_KEYS[key])
            elif value is None:
                out.pop(key, None)
            else:
                out[key] = _merge(out.get(key), value) if key in out else copy.deepcopy(value)
        return out
    return copy.deepcopy(patch)


def _merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    """Items with the same merge key merge; new items come first, as kustomize's merge puts them."""
    out = [copy.deepcopy(item) for item in base]
    new = []
    for item in patch:
        index = next((i for i, b in enumerate(out) if b.get(key) == item.get(key)), None)
        if index is None:
            new.append(copy.deepcopy(item))
        else:
            out[index] = _merge(out[index], item)
    return new + out


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def _json6902(obj: Json, ops: list[Json]) -> None:
    for op in ops:
        *parents, last = _pointer(op["path"])
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if op["op"] == "add" and isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), copy.deepcopy(op["value"]))
        elif op["op"] in ("add", "replace") and isinstance(node, dict):
            node[last] = copy.deepcopy(op["value"])
        elif op["op"] == "replace" and isinstance(node, list):
            node[int(last)] = copy.deepcopy(op["value"])
        else:
            raise ValueError(f"JSON patch op {op['op']!r} at {op['path']} is not supported by this renderer")


def _matches(obj: Json, target: Json) -> bool:
    meta = obj.get("metadata", {})
    return all(obj.get(k) == v if k == "kind" else meta.get(k) == v for k, v in target.items())


def render(directory: Path) -> list[Json]:
    """The objects ``kustomize build directory`` would produce (order not guaranteed)."""
    spec = _load(directory / "kustomization.yaml")[0]
    unknown = set(spec) - KNOWN
    if unknown:
        raise ValueError(f"{directory}/kustomization.yaml: unsupported keys {sorted(unknown)}")
    objects: list[Json] = []
    for entry in spec.get("resources", []):
        path = directory / entry
        objects.extend(render(path) if path.is_dir() else _load(path))
    for patch in spec.get("patches", []):
        if "path" in patch:
            document = _load(directory / patch["path"])[0]
            target = {"kind": document["kind"], "name": document["metadata"]["name"]}
            hits = [i for i, o in enumerate(objects) if _matches(o, target)]
            for i in hits:
                objects[i] = _merge(objects[i], document)
        else:
            target = patch["target"]
            hits = [i for i, o in enumerate(objects) if _matches(o, target)]
            for i in hits:
                _json6902(objects[i], yaml.safe_load(patch["patch"]))
        if not hits:
            raise ValueError(f"{directory}: patch {patch} matches no object")
    for obj in objects:
        meta = obj.setdefault("metadata", {})
        if "namespace" in spec and obj["kind"] not in CLUSTER_SCOPED:
            meta["namespace"] = spec["namespace"]
        for group in spec.get("labels", []):
            if set(group) - {"pairs"}:
                raise ValueError(f"{directory}: labels options {sorted(set(group) - {'pairs'})} unsupported")
            meta.setdefault("labels", {}).update(group["pairs"])
        for image in spec.get("images", []):
            for container in obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                if container.get("image", "").split(":")[0] == image["name"]:
                    container["image"] = f"{image.get('newName', image['name'])}:{image['newTag']}"
    return objects

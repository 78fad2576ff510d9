"""The fake API server's store: objects per resource, one resourceVersion counter, a watch history.

Like etcd behind a real API server, every write takes the next global
resourceVersion and appends an event to a bounded history; a watch from a
resourceVersion older than the history's start gets ``410 Gone`` (``compact()``
forces that). Objects are kept as dicts with their JSON encoding cached, so a LIST
of 150,000 pods is a join of bytes, not a re-serialization.

Tests seed and inspect the store directly (``put``, ``get``, ``delete``, ``compact``);
clients reach it over HTTP through ``tests.fakeapi.server``.
"""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tests.fakeapi.patching import selector_matches
from tests.fakeapi.resources import Resource, resource_for

__all__ = ["ApiError", "FakeState", "WatchEvent"]

Json = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped


class ApiError(Exception):
    """An error the server answers with a ``Status`` body."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> Json:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


@dataclass(frozen=True, slots=True)
class WatchEvent:
    rv: int
    resource: str  # Resource.key
    type: str  # ADDED, MODIFIED, DELETED
    namespace: str
    obj: bytes  # the object's JSON, kind and apiVersion included


class _Entry:
    """One stored object and its cached JSON encoding; either may be dropped and rebuilt."""

    __slots__ = ("_obj", "encoded")

    def __init__(self, obj: Json | None, encoded: bytes | None = None) -> None:
        self._obj = obj
        self.encoded = encoded

    @property
    def obj(self) -> Json:
        if self._obj is None:
            assert self.encoded is not None
            self._obj = json.loads(self.encoded)
        return self._obj

    @obj.setter
    def obj(self, value: Json) -> None:
        self._obj, self.encoded = value, None

    def json(self) -> bytes:
        if self.encoded is None:
            self.encoded = json.dumps(self._obj, separators=(",", ":")).encode()
        return self.encoded


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeState:
    """The objects, the resourceVersion counter and the watch history, behind one lock."""

    def __init__(self, history: int = 10_000) -> None:
        self.cond = threading.Condition()
        self.rv = 0
        self._store: dict[str, dict[Key, _Entry]] = {}
        self._history: deque[WatchEvent] = deque(maxlen=history)
        #: Watches from a resourceVersion below this get 410 Gone.
        self.compacted_rv = 0
        self.closed = False
        #: Bumped by ``compact()``: open watches end with a 410 ERROR event.
        self.epoch = 0
        #: Evicted pods are marked terminating instead of deleted (the test removes them).
        self.graceful_deletion = False
        #: Bumped by ``end_watches()``: open watches end cleanly, as at a server-side timeout.
        self.generation = 0
        self._uids = itertools.count(1)

    # --- writes ---------------------------------------------------------
    def _bump(self, resource: Resource, kind: str, entry: _Entry, obj: Json) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        entry.encoded = None
        ns = str(obj["metadata"].get("namespace") or "")
        event = WatchEvent(self.rv, resource.key, kind, ns, entry.json())
        if len(self._history) == self._history.maxlen:
            self.compacted_rv = self._history[0].rv + 1
        self._history.append(event)
        self.cond.notify_all()

    def _prepare(self, obj: Json, resource: Resource) -> Json:
        obj = copy.deepcopy(obj)
        obj["kind"], obj["apiVersion"] = resource.kind, resource.api_version
        meta = obj.setdefault("metadata", {})
        if resource.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, "Invalid", f"{resource.kind}: metadata.name: Required value")
            meta["name"] = f"{meta['generateName']}{next(self._uids):05x}"
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        meta.setdefault("creationTimestamp", _now())
        return obj

    def create(self, resource: Resource, obj: Json) -> Json:
        with self.cond:
            obj = self._prepare(obj, resource)
            meta = obj["metadata"]
            key = (str(meta.get("namespace") or ""), str(meta["name"]))
            table = self._store.setdefault(resource.key, {})
            if key in table:
                raise ApiError(409, "AlreadyExists", f'{resource.plural} "{key[1]}" already exists')
            entry = table[key] = _Entry(obj)
            self._bump(resource, "ADDED", entry, obj)
            return copy.deepcopy(obj)

    def update(self, resource: Resource, obj: Json) -> Json:
        """PUT: the body's resourceVersion, when given, must be the stored one (409)."""
        with self.cond:
            obj = self._prepare(obj, resource)
            meta = obj["metadata"]
            key = (str(meta.get("namespace") or ""), str(meta["name"]))
            entry = self._store.get(resource.key, {}).get(key)
            if entry is None:
                raise ApiError(404, "NotFound", f'{resource.plural} "{key[1]}" not found')
            self._precondition(resource, entry, meta.get("resourceVersion"))
            meta["uid"] = entry.obj["metadata"].get("uid")
            meta["creationTimestamp"] = entry.obj["metadata"].get("creationTimestamp")
            entry.obj = obj
            self._bump(resource, "MODIFIED", entry, obj)
            return copy.deepcopy(obj)

    @staticmethod
    def _precondition(resource: Resource, entry: _Entry, wanted: object) -> None:
        current = entry.obj["metadata"]["resourceVersion"]
        if wanted and str(wanted) != current:
            name = entry.obj["metadata"]["name"]
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {resource.plural} "{name}": '
                                            "the object has been modified; please apply your changes to the "
                                            "latest version and try again")

    def replace_with(self, resource: Resource, namespace: str, name: str, new: Json,
                     precondition_rv: object = None) -> Json:
        """Store ``new`` (a patched copy) under an existing key."""
        with self.cond:
            entry = self._entry(resource, namespace, name)
            self._precondition(resource, entry, precondition_rv)
            new = copy.deepcopy(new)
            new["metadata"]["name"], new["metadata"]["uid"] = name, entry.obj["metadata"].get("uid")
            if resource.namespaced:
                new["metadata"]["namespace"] = namespace
            entry.obj = new
            self._bump(resource, "MODIFIED", entry, new)
            return copy.deepcopy(new)

    def delete(self, resource: Resource, namespace: str, name: str) -> Json:
        with self.cond:
            table = self._store.get(resource.key, {})
            entry = table.pop((namespace, name), None)
            if entry is None:
                raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')
            self._bump(resource, "DELETED", entry, entry.obj)
            return copy.deepcopy(entry.obj)

    # --- reads ----------------------------------------------------------
    def _entry(self, resource: Resource, namespace: str, name: str) -> _Entry:
        entry = self._store.get(resource.key, {}).get((namespace, name))
        if entry is None:
            raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')
        return entry

    def read(self, resource: Resource, namespace: str, name: str) -> Json:
        with self.cond:
            return copy.deepcopy(self._entry(resource, namespace, name).obj)

    def list_json(self, resource: Resource, namespace: str | None,
                  field_selector: dict[str, str]) -> tuple[int, list[bytes]]:
        """The current resourceVersion and the encoded items (namespace None: all)."""
        with self.cond:
            items = [e.json() for (ns, _), e in self._store.get(resource.key, {}).items()
                     if (namespace is None or ns == namespace)
                     and (not field_selector or fields_match(e.obj, field_selector))]
            return self.rv, items

    def events_since(self, rv: int, resource: Resource, namespace: str | None) -> list[WatchEvent]:
        """History after ``rv``; raises 410 when ``rv`` is older than the history kept."""
        if rv + 1 < self.compacted_rv:
            raise ApiError(410, "Expired", f"too old resource version: {rv} ({self.compacted_rv - 1})")
        return [e for e in self._history if e.rv > rv and e.resource == resource.key
                and (namespace is None or e.namespace == namespace)]

    # --- eviction -------------------------------------------------------
    def evict(self, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        """policy/v1 Eviction: 404 when gone, 429 when a PDB allows no disruption, else delete.

        An eviction uses up one of the budget's allowed disruptions, as the real
        eviction subresource does (``status.disruptionsAllowed`` is decremented).
        With ``graceful_deletion`` the pod is only marked terminating (deletionTimestamp),
        as a kubelet would see it, until the test removes it; otherwise it goes at once.
        """
        pods, pdbs = resource_for("Pod"), resource_for("PodDisruptionBudget")
        with self.cond:
            pod = self._entry(pods, namespace, name).obj
            labels = pod["metadata"].get("labels") or {}
            matching = [e for (ns, _), e in self._store.get(pdbs.key, {}).items()
                        if ns == namespace and selector_matches((e.obj.get("spec") or {}).get("selector"), labels)]
            for entry in matching:
                if int((entry.obj.get("status") or {}).get("disruptionsAllowed") or 0) <= 0:
                    pdb = entry.obj["metadata"]["name"]
                    raise ApiError(429, "TooManyRequests",
                                   f"Cannot evict pod as it would violate the pod's disruption budget. ({pdb})")
            for entry in matching:
                status = entry.obj.setdefault("status", {})
                status["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) - 1
                self._bump(pdbs, "MODIFIED", entry, entry.obj)
            grace = grace_seconds if grace_seconds is not None else \
                int((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 30)
            if not self.graceful_deletion or grace == 0:
                self.delete(pods, namespace, name)
                return
            if "deletionTimestamp" not in pod["metadata"]:
                pod["metadata"].update({"deletionTimestamp": _now(), "deletionGracePeriodSeconds": grace})
                self._bump(pods, "MODIFIED", self._entry(pods, namespace, name), pod)

    # --- test helpers ---------------------------------------------------
    def put(self, obj: Json) -> Json:
        """Create or replace ``obj`` (by its kind and apiVersion), as a controller would."""
        resource = resource_for(str(obj["kind"]), obj.get("apiVersion"))
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or ("default" if resource.namespaced else ""))
        with self.cond:
            if (ns, str(meta.get("name"))) in self._store.get(resource.key, {}):
                body = copy.deepcopy(obj)
                body["metadata"].pop("resourceVersion", None)
                return self.update(resource, body)
            return self.create(resource, obj)

    def put_all(self, objs: Iterable[Json]) -> None:
        for obj in objs:
            self.put(obj)

    def load(self, objs: Iterable[Json]) -> int:
        """Bulk-load objects as they would be after compaction: no watch history, JSON kept encoded only.

        For large benchmarks: a stored object costs its JSON bytes until a write or
        a GET needs the dict. Returns the number loaded.
        """
        count = 0
        with self.cond:
            for obj in objs:
                resource = resource_for(str(obj["kind"]), obj.get("apiVersion"))
                obj["kind"], obj["apiVersion"] = resource.kind, resource.api_version
                self.rv += 1
                meta = obj.setdefault("metadata", {})
                if resource.namespaced:
                    meta.setdefault("namespace", "default")
                meta.setdefault("uid", f"uid-{next(self._uids)}")
                meta.setdefault("creationTimestamp", _now())
                meta["resourceVersion"] = str(self.rv)
                key = (str(meta.get("namespace") or ""), str(meta["name"]))
                entry = _Entry(None, json.dumps(obj, separators=(",", ":")).encode())
                self._store.setdefault(resource.key, {})[key] = entry
                count += 1
            self._history.clear()
            self.compacted_rv = self.rv + 1
        return count

    def get(self, kind: str, name: str, namespace: str = "") -> Json:
        resource = resource_for(kind)
        return self.read(resource, namespace or ("default" if resource.namespaced else ""), name)

    def remove(self, kind: str, name: str, namespace: str = "") -> None:
        resource = resource_for(kind)
        self.delete(resource, namespace or ("default" if resource.namespaced else ""), name)

    def names(self, kind: str) -> list[str]:
        resource = resource_for(kind)
        with self.cond:
            return sorted(n for _, n in self._store.get(resource.key, {}))

    def objects(self) -> list[Json]:
        """Every stored object (copies), as a ``kubectl get -o json`` dump would list them."""
        with self.cond:
            return [copy.deepcopy(e.obj) for table in self._store.values() for e in table.values()]

    def compact(self) -> None:
        """Forget the whole history: open watches and any watch from an older version get 410 Gone."""
        with self.cond:
            self._history.clear()
            self.compacted_rv = self.rv + 1
            self.epoch += 1
            self.cond.notify_all()

    def end_watches(self) -> None:
        """End every open watch cleanly (an API server restart, a server-side timeout)."""
        with self.cond:
            self.generation += 1
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def fields_match(obj: Json, selector: dict[str, str]) -> bool:
    """Whether ``obj`` has each dotted ``field`` equal to the wanted value (absent reads as "")."""
    for field, wanted in selector.items():
        node: Any = obj
        for part in field.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if str(node or "") != wanted:
            return False
    return True

"""One list-then-watch cache (client-go's reflector and store, in small).

A thread LISTs the collection, converts every item to the model and replaces its
store, then WATCHes from the LIST's resourceVersion, applying each event as it
arrives. Bookmarks advance the resourceVersion without an object. A watch that
ends cleanly (the server's ``timeoutSeconds``) is reopened from the last
resourceVersion; ``410 Gone`` means the history is gone: relist. Any other error
marks the watch lost and retries with exponential backoff.

State the loop reads (under the shared lock): ``synced`` (a LIST has filled the
store since the last relist began) and ``down`` (the reason the watch is lost, or
None). The loop never decides while any cache is unsynced or down.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from kube.clusterapi import ClusterAPIError, NotFound
from kube.convert import Converter, InputError
from kube.featuregates import FeatureGates
from kube.model import Unreadable
from kube.names import StorageNames
from kube.unreadable import unreadable_of
from kubeapi.gcpause import collector_paused
from kubeapi.kinds import Key, Kind, convert_one, key_of, typed_decoder
from kubeapi.transport import DROPPED, Expired, ListBody, Transport, WatchEvent, decode_item

__all__ = ["Informer", "Listener"]

log = logging.getLogger(__name__)

Json = dict[str, Any]
#: Called after each change with (cache name, event type ADDED/MODIFIED/DELETED/SYNCED, object or None).
Listener = Callable[[str, str, object], None]


class Informer:
    def __init__(self, kind: Kind, transport: Transport, names: StorageNames, lock: threading.RLock,
                 on_change: Callable[[str, str, object], None], *, namespace: str = "",
                 watch_seconds: int = 300, backoff: tuple[float, float] = (0.2, 30.0),
                 gates: FeatureGates | None = None) -> None:
        self.kind = kind
        self.path = kind.path.format(namespace=namespace)
        self._transport = transport
        self._converter = Converter(names, gates)
        #: Pods, claims and volumes skip the dict tree (``plan``'s typed decoders).
        self._typed = typed_decoder(kind.kind, self._converter.memos)
        self._lock = lock
        self._on_change = on_change
        self._watch_seconds = watch_seconds
        self._backoff = backoff
        self.store: dict[Key, object] = {}
        #: Warnings of conversion (bad annotations) and objects that failed to convert, by key.
        self.warnings: dict[Key, list[str]] = {}
        #: Objects that failed to convert (left out of ``store``): key -> what could still be
        #: read of them (a pod's node, a PV's affinity), so no node they could pin looks free.
        self.failed: dict[Key, Unreadable] = {}
        #: ``store`` grouped by ``kind.index`` (pods by node name), kept in step with it.
        self.index: dict[str, dict[Key, object]] = {}
        self.resource_version = ""
        self.synced = False
        #: Why the watch is lost (None while it is open or being reopened after a clean end).
        self.down: str | None = "not listed yet"
        self.relists = 0
        self.watch_errors = 0
        #: ``time.monotonic()`` of the last sign of life: a LIST, a watch opened, any event (bookmarks
        #: included). A watch that says nothing for longer than its ``timeoutSeconds`` is hung.
        self.last_heard = 0.0
        self._failures = 0  # consecutive failures of the current outage
        #: An optional kind the server does not serve (404 on LIST): empty, synced, not watched.
        self._absent = False
        self._absent_recheck = 300.0
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{kind.name}", daemon=True)

    # --- life cycle -----------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    @property
    def absent(self) -> bool:
        """An optional kind this API server does not serve: nothing is watched."""
        return self._absent

    def _run(self) -> None:
        delay = self._backoff[0]
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                if self._absent:
                    # Not served (an optional API): look again now and then, nothing to watch.
                    self._stop.wait(self._absent_recheck)
                    need_list = True
                    continue
                self._watch()
                delay = self._backoff[0]
            except Expired as exc:
                # The watch history no longer reaches our resourceVersion: the cache may
                # have missed events, so it is unsynced until the relist is done.
                log.info("%s: %s; relisting", self.kind.name, exc)
                with self._lock:
                    self.synced = False
                    self.down = f"relisting {self.kind.name} after 410 Gone"
                need_list = True
            except ClusterAPIError as exc:
                if self._stop.is_set():
                    break
                with self._lock:
                    self.down = f"watch of {self.kind.name} lost: {exc}"
                    self.watch_errors += 1
                # Logged once per outage (and once when it ends), counted every time.
                if self._failures == 0:
                    log.warning("%s: %s; retrying with backoff", self.kind.name, exc)
                else:
                    log.debug("%s: %s; retrying in %.1fs", self.kind.name, exc, delay)
                self._failures += 1
                self._stop.wait(delay)
                delay = min(delay * 2, self._backoff[1])
            except Exception as exc:
                # A bug or a garbled response must not leave a silently stale cache
                # behind a dead thread: the view goes unavailable and the cache relists.
                if self._stop.is_set():
                    break
                log.exception("%s: unexpected error; relisting", self.kind.name)
                with self._lock:
                    self.synced = False
                    self.down = f"cache of {self.kind.name} failed: {type(exc).__name__}: {exc}"
                    self.watch_errors += 1
                need_list = True
                self._stop.wait(delay)
                delay = min(delay * 2, self._backoff[1])

    def _recovered(self) -> None:
        if self._failures:
            log.warning("%s: watching again after %d failed attempts", self.kind.name, self._failures)
            self._failures = 0

    # --- list -----------------------------------------------------------
    def _list(self) -> None:
        with collector_paused():
            self._list_paused()

    def _list_paused(self) -> None:
        # rv=0 on the first LIST lets a real API server answer from its watch cache.
        query = [("resourceVersion", "0")] if not self.relists else []
        if self.kind.field_selector:
            query.append(("fieldSelector", self.kind.field_selector))
        started = time.perf_counter()
        try:
            body = self._transport.list(self.path, query=query, what=f"list {self.kind.name}")
        except NotFound:
            if not self.kind.optional:
                raise
            if not self._absent:
                log.warning("%s: not served by this API server; treated as empty", self.kind.name)
            self._absent = True
            body = ListBody()
        else:
            self._absent = False
        fetched = time.perf_counter()
        items = body.items or []
        fresh = _Tables()
        for i in range(len(items)):
            raw = items[i]
            items[i] = DROPPED  # let go of each item as soon as it is converted
            self._convert_raw(raw, fresh)
        # Said before the view is published: whoever waits for the sync then finds it logged.
        self._recovered()
        with self._lock:
            self.store, self.warnings, self.failed, self.index = fresh.store, fresh.warnings, fresh.failed, fresh.index
            self.resource_version = body.metadata.resourceVersion
            self.synced = True
            self.down = None
            self.relists += 1
            self.last_heard = time.monotonic()
        self._on_change(self.kind.name, "SYNCED", None)
        log.info("%s: listed %d at resourceVersion %s (fetch %.2fs, decode and convert %.2fs)", self.kind.name,
                 len(self.store), self.resource_version, fetched - started, time.perf_counter() - fetched)

    def _convert_raw(self, raw: msgspec.Raw, tables: _Tables) -> object:
        """Convert an encoded object into ``tables``; returns what is stored under its key now."""
        if self._typed is not None:
            try:
                model, namespace = self._typed(raw)
            except Exception:
                pass
            else:
                key = (namespace, str(getattr(model, "name")))  # noqa: B009 (every typed model has a name)
                tables.remove(key, self.kind)
                tables.add(key, model, self.kind)
                return model
        obj = decode_item(raw)
        self._convert_into(obj, tables)
        return tables.store.get(key_of(obj))

    def _convert_into(self, obj: Json, tables: _Tables) -> None:
        key = key_of(obj)
        tables.remove(key, self.kind)
        try:
            model, warned = convert_one(self._converter, self.kind, obj, f"{self.kind.name} watch")
        except InputError as exc:
            # One line naming object and field; the object is left out of the view.
            log.warning("%s", exc)
            tables.warnings[key] = [str(exc)]
            tables.failed[key] = unreadable_of(self.kind.kind, obj, str(exc))
            return
        tables.add(key, model, self.kind)
        if warned:
            tables.warnings[key] = warned

    # --- watch ----------------------------------------------------------
    def _watch(self) -> None:
        query = [("watch", "1"), ("allowWatchBookmarks", "true"), ("resourceVersion", self.resource_version),
                 ("timeoutSeconds", str(self._watch_seconds))]
        if self.kind.field_selector:
            query.append(("fieldSelector", self.kind.field_selector))
        read_timeout = float(self._watch_seconds) + 30.0
        stream = self._transport.watch(self.path, query, timeout=(self._transport.timeout[0], read_timeout))
        self._stream = stream
        if self._stop.is_set():
            stream.close()
            return
        self._recovered()
        with self._lock:
            self.down = None
            self.last_heard = time.monotonic()
        try:
            for event in stream:
                self.last_heard = time.monotonic()
                self._apply(event)
                if self._stop.is_set():
                    break
        finally:
            self._stream = None
            stream.close()

    def _apply(self, event: WatchEvent) -> None:
        kind = event.type
        if kind in ("ADDED", "MODIFIED") and self._typed is not None:
            try:
                head = _decode_head(event.object)
            except msgspec.MsgspecError:
                head = None
            if head is not None and head.metadata is not None:
                rv = str(head.metadata.resourceVersion or "")
                with self._lock:
                    tables = _Tables(self.store, self.warnings, self.failed, self.index)
                    changed = self._convert_raw(event.object, tables)
                    self.resource_version = rv or self.resource_version
                self._on_change(self.kind.name, str(kind), changed)
                return
        obj = event.decode_object()
        meta = obj.get("metadata") or {}
        if kind == "ERROR":
            code, message = obj.get("code"), obj.get("message") or obj.get("reason") or "watch error"
            if code == 410:
                raise Expired(f"watch of {self.kind.name}: {message}")
            raise ClusterAPIError(f"watch of {self.kind.name}: HTTP {code}: {message}")
        rv = str(meta.get("resourceVersion") or "")
        if kind == "BOOKMARK":
            with self._lock:
                self.resource_version = rv or self.resource_version
            return
        key = key_of(obj)
        with self._lock:
            tables = _Tables(self.store, self.warnings, self.failed, self.index)
            if kind == "DELETED":
                changed = tables.remove(key, self.kind)
            else:
                self._convert_into(obj, tables)
                changed = self.store.get(key)
            self.resource_version = rv or self.resource_version
        self._on_change(self.kind.name, str(kind), changed)


class _HeadMeta(msgspec.Struct, frozen=True):
    resourceVersion: Any = None  # noqa: N815 (the API's field name)


class _Head(msgspec.Struct, frozen=True):
    metadata: _HeadMeta | None = None


_decode_head = msgspec.json.Decoder(_Head).decode


class _Tables:
    """An informer's store with its warnings, failures and index, changed together."""

    __slots__ = ("failed", "index", "store", "warnings")

    def __init__(self, store: dict[Key, object] | None = None, warnings: dict[Key, list[str]] | None = None,
                 failed: dict[Key, Unreadable] | None = None,
                 index: dict[str, dict[Key, object]] | None = None) -> None:
        self.store = store if store is not None else {}
        self.warnings = warnings if warnings is not None else {}
        self.failed = failed if failed is not None else {}
        self.index = index if index is not None else {}

    def add(self, key: Key, model: object, kind: Kind) -> None:
        self.store[key] = model
        if kind.index is not None:
            self.index.setdefault(kind.index(model), {})[key] = model

    def remove(self, key: Key, kind: Kind) -> object:
        old = self.store.pop(key, None)
        self.warnings.pop(key, None)
        self.failed.pop(key, None)
        if old is not None and kind.index is not None:
            group = kind.index(old)
            bucket = self.index.get(group)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self.index[group]
        return old

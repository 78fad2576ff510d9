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
from collections.abc import Callable
from typing import Any

from kube.clusterapi import ClusterAPIError, NotFound
from kube.convert import Converter, InputError
from kube.names import StorageNames
from kubeapi.kinds import Key, Kind, convert_one, key_of
from kubeapi.transport import Expired, Transport

__all__ = ["Informer", "Listener"]

log = logging.getLogger(__name__)

Json = dict[str, Any]
#: Called after each change with (cache name, event type ADDED/MODIFIED/DELETED/SYNCED, object or None).
Listener = Callable[[str, str, object], None]


class Informer:
    def __init__(self, kind: Kind, transport: Transport, names: StorageNames, lock: threading.RLock,
                 on_change: Callable[[str, str, object], None], *, namespace: str = "",
                 watch_seconds: int = 300, backoff: tuple[float, float] = (0.2, 30.0)) -> None:
        self.kind = kind
        self.path = kind.path.format(namespace=namespace)
        self._transport = transport
        self._converter = Converter(names)
        self._lock = lock
        self._on_change = on_change
        self._watch_seconds = watch_seconds
        self._backoff = backoff
        self.store: dict[Key, object] = {}
        #: Warnings of conversion (bad annotations) and objects that failed to convert, by key.
        self.warnings: dict[Key, list[str]] = {}
        self.resource_version = ""
        self.synced = False
        #: Why the watch is lost (None while it is open or being reopened after a clean end).
        self.down: str | None = "not listed yet"
        self.relists = 0
        self.watch_errors = 0
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

    def _run(self) -> None:
        delay = self._backoff[0]
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
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
                    first = self.down is None
                    self.down = f"watch of {self.kind.name} lost: {exc}"
                    self.watch_errors += 1
                if first or need_list:
                    log.warning("%s: %s; retrying in %.1fs", self.kind.name, exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, self._backoff[1])

    # --- list -----------------------------------------------------------
    def _list(self) -> None:
        # rv=0 on the first LIST lets a real API server answer from its watch cache.
        query = [("resourceVersion", "0")] if not self.relists else []
        if self.kind.field_selector:
            query.append(("fieldSelector", self.kind.field_selector))
        try:
            body = self._transport.request("GET", self.path, query=query, verb="LIST",
                                           what=f"list {self.kind.name}")
        except NotFound:
            if not self.kind.optional:
                raise
            log.warning("%s: not served by this API server; treated as empty", self.kind.name)
            body = {"metadata": {"resourceVersion": ""}, "items": []}
        items = body.get("items") or []
        store: dict[Key, object] = {}
        warnings: dict[Key, list[str]] = {}
        for i in range(len(items)):
            obj = items[i]
            items[i] = None  # drop the raw object as soon as it is converted
            self._convert_into(obj, store, warnings)
        with self._lock:
            self.store, self.warnings = store, warnings
            self.resource_version = str((body.get("metadata") or {}).get("resourceVersion") or "")
            self.synced = True
            self.down = None
            self.relists += 1
        self._on_change(self.kind.name, "SYNCED", None)
        log.info("%s: listed %d at resourceVersion %s", self.kind.name, len(store), self.resource_version)

    def _convert_into(self, obj: Json, store: dict[Key, object], warnings: dict[Key, list[str]]) -> None:
        key = key_of(obj)
        try:
            model, warned = convert_one(self._converter, self.kind, obj, f"{self.kind.name} watch")
        except InputError as exc:
            # One line naming object and field; the object is left out of the view.
            log.warning("%s", exc)
            store.pop(key, None)
            warnings[key] = [str(exc)]
            return
        store[key] = model
        if warned:
            warnings[key] = warned
        else:
            warnings.pop(key, None)

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
        with self._lock:
            self.down = None
        try:
            for event in stream:
                self._apply(event)
                if self._stop.is_set():
                    break
        finally:
            self._stream = None
            stream.close()

    def _apply(self, event: Json) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
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
            if kind == "DELETED":
                old = self.store.pop(key, None)
                self.warnings.pop(key, None)
                changed: object = old
            else:
                self._convert_into(obj, self.store, self.warnings)
                changed = self.store.get(key)
            self.resource_version = rv or self.resource_version
        self._on_change(self.kind.name, str(kind), changed)

"""Raw JSON over the official client: its configuration, authentication and connection pool.

The generated models deserialize a 150,000-pod LIST far too slowly (see
``bench/kubeapi.py``), so the adapter asks ``ApiClient.call_api`` for the undecoded
response (``_preload_content=False``) and decodes bytes itself with msgspec. Every
request passes the client-side token bucket and is counted by verb, so a benchmark
or a test can prove a loop made no LIST. Errors of the client and of urllib3 are
translated into ``kube.clusterapi``'s typed errors here, in one place.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec
import urllib3
from kubernetes.client import ApiClient  # type: ignore[import-untyped]
from kubernetes.client.exceptions import ApiException  # type: ignore[import-untyped]

from kube.clusterapi import ClusterAPIError, Conflict, NotFound, TransientAPIError
from kubeapi.ratelimit import TokenBucket

__all__ = ["DROPPED", "Expired", "Forbidden", "ListBody", "TooManyRequests", "Transport", "WatchEvent", "WatchStream",
           "decode_item", "translate"]

log = logging.getLogger(__name__)

Json = dict[str, Any]
Timeout = tuple[float, float]

_decode = msgspec.json.Decoder().decode


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""  # noqa: N815 (the API's field name)


class ListBody(msgspec.Struct):
    """A LIST response with its items left encoded: each is decoded, converted and dropped in turn.

    ``msgspec.Raw`` items are views into the response body, so the peak is the body
    plus one item's dicts, not a dict tree of every item at once (at 150,000 real
    pods that tree is gigabytes).
    """

    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


_decode_list = msgspec.json.Decoder(ListBody).decode
#: Put in place of an item already converted, to let go of its bytes.
DROPPED = msgspec.Raw(b"null")


def decode_item(raw: msgspec.Raw) -> Json:
    """One item of a ``ListBody``; raises ``ClusterAPIError`` when it is not a JSON object."""
    try:
        item = _decode(raw)
    except msgspec.DecodeError as exc:
        raise ClusterAPIError(f"a LIST item is not JSON: {exc}") from None
    if not isinstance(item, dict):
        raise ClusterAPIError(f"a LIST item is not an object: {str(item)[:80]}")
    return item


class WatchEvent(msgspec.Struct, frozen=True):
    """One watch event; its object left encoded, for the typed decoders or ``decode_object``."""

    type: Any = None
    object: msgspec.Raw = msgspec.Raw()

    def decode_object(self) -> Json:
        """The object as dicts; ``{}`` when absent, null or not a JSON object."""
        if not len(self.object):
            return {}
        obj = _decode(self.object)
        return obj if isinstance(obj, dict) else {}


_decode_event = msgspec.json.Decoder(WatchEvent).decode


class Expired(ClusterAPIError):
    """HTTP 410 Gone (a resourceVersion too old to watch from): relist."""


class TooManyRequests(TransientAPIError):
    """HTTP 429: throttling, or (on an eviction) a PodDisruptionBudget refusing now."""


class Forbidden(ClusterAPIError):
    """HTTP 401/403: the credentials or RBAC do not allow the call; retrying will not help."""


def _status_message(body: object) -> str:
    if isinstance(body, bytes | str) and body:
        try:
            status = json.loads(body)
        except ValueError:
            return str(body)[:200]
        if isinstance(status, dict):
            return str(status.get("message") or status.get("reason") or "")
    return ""


def translate(exc: BaseException, what: str) -> ClusterAPIError:
    """One place that maps the client's and urllib3's errors to the seam's typed errors."""
    if isinstance(exc, ClusterAPIError):
        return exc
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        message = f"{what}: HTTP {status}: {_status_message(exc.body) or exc.reason}"
        if status == 404:
            return NotFound(message)
        if status == 409:
            return Conflict(message)
        if status == 410:
            return Expired(message)
        if status in (401, 403):
            return Forbidden(message)
        if status == 429 or status >= 500 or status == 0:
            retry_after = 1.0
            headers: Mapping[str, str] = exc.headers or {}
            with contextlib.suppress(ValueError):
                retry_after = float(headers.get("Retry-After") or 1.0)
            return TooManyRequests(message, retry_after) if status == 429 else TransientAPIError(message, retry_after)
        return ClusterAPIError(message)
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
        return TransientAPIError(f"{what}: {type(exc).__name__}: {exc}")
    raise exc


class Transport:
    """Requests through one ``ApiClient``: rate-limited, counted, errors translated."""

    def __init__(self, api_client: ApiClient, bucket: TokenBucket, *, timeout: Timeout = (5.0, 30.0)) -> None:
        self.api_client = api_client
        self.bucket = bucket
        self.timeout = timeout
        self._lock = threading.Lock()
        #: Requests made, by ``"VERB resource"`` (``"LIST pods"``, ``"WATCH nodes"``, ``"PATCH nodes"``).
        self.calls: Counter[str] = Counter()

    def _count(self, verb: str, path: str) -> None:
        parts = [p for p in path.split("/") if p]
        # /api/v1/nodes/x, /apis/g/v/namespaces/ns/pods/x/eviction: the resource is the
        # segment after the version, or after namespaces/{ns}.
        rest = parts[2:] if parts and parts[0] == "api" else parts[3:]
        if len(rest) >= 3 and rest[0] == "namespaces":
            rest = rest[2:]
        label = f"{verb} {rest[0] if rest else '?'}"
        if len(rest) >= 3:
            label += f"/{rest[2]}"
        with self._lock:
            self.calls[label] += 1

    def _call(self, method: str, path: str, query: Sequence[tuple[str, str]] = (), body: object = None, *,
              content_type: str = "application/json", timeout: Timeout | None = None) -> Any:
        self.bucket.acquire()
        return self.api_client.call_api(
            path, method, query_params=list(query),
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body, auth_settings=["BearerToken"], _preload_content=False,
            _request_timeout=timeout or self.timeout)

    def _bytes(self, method: str, path: str, query: Sequence[tuple[str, str]], body: object, *, content_type: str,
               what: str) -> bytes:
        try:
            response = self._call(method, path, query, body, content_type=content_type)
            try:
                return bytes(response.data or b"")
            finally:
                response.release_conn()
        except Exception as exc:
            raise translate(exc, what) from None

    def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: object = None,
                content_type: str = "application/json", what: str = "", verb: str = "") -> Json:
        """One call; the decoded JSON body. Raises the seam's typed errors.

        ``verb`` labels the call in ``calls``.
        """
        self._count(verb or method, path)
        what = what or f"{method} {path}"
        data = self._bytes(method, path, query, body, content_type=content_type, what=what)
        if not data:
            return {}
        try:
            decoded = _decode(data)
        except msgspec.DecodeError as exc:
            raise ClusterAPIError(f"{what}: the response is not JSON: {exc}") from None
        return decoded if isinstance(decoded, dict) else {}

    def list(self, path: str, *, query: Sequence[tuple[str, str]] = (), what: str = "") -> ListBody:
        """A collection GET (counted as ``LIST``), items left encoded (``decode_item`` each)."""
        self._count("LIST", path)
        what = what or f"list {path}"
        data = self._bytes("GET", path, query, None, content_type="application/json", what=what)
        try:
            return _decode_list(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ClusterAPIError(f"{what}: the response is not a list: {exc}") from None

    def watch(self, path: str, query: Sequence[tuple[str, str]], timeout: Timeout) -> WatchStream:
        """Open a watch; iterate the stream for decoded events (``{"type", "object"}``)."""
        self._count("WATCH", path)
        try:
            response = self._call("GET", path, query, timeout=timeout)
        except Exception as exc:
            raise translate(exc, f"watch {path}") from None
        return WatchStream(response, path)


class WatchStream:
    """The events of one watch response; ``close()`` from another thread ends it."""

    def __init__(self, response: Any, path: str) -> None:
        self._response = response
        self.path = path
        self._closed = False

    def __iter__(self) -> Iterator[WatchEvent]:
        buffer = b""
        try:
            for chunk in self._response.stream(amt=None, decode_content=False):
                buffer += chunk
                if b"\n" not in chunk:
                    continue
                # One split per chunk: splitting a line at a time copies the rest of the
                # buffer per event, quadratic in the events a chunk carries.
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        try:
                            event = _decode_event(line)
                        except msgspec.ValidationError:
                            continue  # valid JSON but not an event object: nothing to apply
                        except msgspec.DecodeError as exc:
                            raise ClusterAPIError(f"watch {self.path}: an event is not JSON: {exc}") from None
                        yield event
        except Exception as exc:
            if self._closed:
                return
            raise translate(exc, f"watch {self.path}") from None
        finally:
            self._release()

    def _release(self) -> None:
        try:
            self._response.release_conn()
        except Exception:  # the connection may already be gone; nothing to give back
            log.debug("releasing watch connection of %s failed", self.path, exc_info=True)

    def close(self) -> None:
        """Interrupt a blocked read (urllib3 ``shutdown``) and drop the connection."""
        self._closed = True
        try:
            self._response.shutdown()
        except Exception:
            log.debug("shutting down the watch of %s failed", self.path, exc_info=True)
        try:
            self._response.close()
        except Exception:
            log.debug("closing the watch of %s failed", self.path, exc_info=True)

"""Reading snapshot-like files safely: size, encoding, nesting and alias limits.

Every input is bounded before it is parsed, so no file can crash, hang or
exhaust memory: the size is capped, text must be UTF-8, JSON may not use
``NaN``/``Infinity`` or overlong numbers, and YAML is first scanned as an event
stream (flat, no recursion) to refuse nesting deeper than ``MAX_DEPTH`` (the C
YAML composer recurses and crashes on deep input), recursive aliases, and
aliases that would expand past ``MAX_ALIAS_EXPANSION`` nodes (a "billion laughs"
document). Errors are ``InputError`` naming the file and the limit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import msgspec
import yaml

from kube.convert.errors import InputError

__all__ = ["MAX_ALIAS_EXPANSION", "MAX_BYTES", "MAX_DEPTH", "check_yaml", "json_documents", "read_bytes", "read_text",
           "yaml_documents"]

#: Largest file read (a 5,000-node snapshot is about 90 MB of JSON).
MAX_BYTES = 512 * 2**20
#: Deepest nesting of maps and lists (Kubernetes objects nest about 15 deep).
MAX_DEPTH = 100
#: Most nodes YAML aliases may add beyond the document's own.
MAX_ALIAS_EXPANSION = 1_000_000

_CLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NODE_EVENTS = (yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)


def read_bytes(path: str, what: str = "") -> bytes:
    """A file's bytes (not standard input); refuses more than ``MAX_BYTES``. UTF-8 is the reader's to check."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(what or path, "", "", f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise InputError(what or path, "", "", f"larger than the limit of {MAX_BYTES // 2**20} MiB")
    return raw


def read_text(path: str, what: str = "") -> str:
    """The file (``-``: standard input) as text; refuses more than ``MAX_BYTES`` and non-UTF-8 bytes."""
    label = what or path
    if path != "-":
        raw: bytes | str = read_bytes(path, what)
    else:
        try:
            stream = getattr(sys.stdin, "buffer", None)
            raw = stream.read(MAX_BYTES + 1) if stream is not None else sys.stdin.read(MAX_BYTES + 1)
        except OSError as exc:
            raise InputError(label, "", "", f"cannot read: {exc.strerror or exc}") from None
        if len(raw) > MAX_BYTES:
            raise InputError(label, "", "", f"larger than the limit of {MAX_BYTES // 2**20} MiB")
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(label, "", "", f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") \
            from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_documents(path: str, text: str) -> Any:
    """One JSON value; refuses NaN/Infinity, overlong numbers and nesting past the interpreter's limit.

    msgspec parses about a quarter faster than ``json`` (and refuses NaN, numbers out of
    range and deep nesting too); whatever it refuses goes through ``json`` again, whose
    errors carry a line and column (or which reads it, as ``json`` always did).
    """
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(path, "", "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(path, "", "", "invalid JSON: nested too deeply") from None
    except ValueError as exc:
        raise InputError(path, "", "", f"invalid JSON: {str(exc).splitlines()[0]}") from None


def _yaml_error(path: str, exc: yaml.YAMLError) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    if "maximum nesting depth" in problem:
        # PyYAML >= 6.0.4 stops at its own depth (1,000) while scanning, before the
        # event scan below can apply the lower limit: the input is past ours either way.
        problem = f"nested deeper than the limit of {MAX_DEPTH} levels"
    return InputError(path, "", "", f"invalid YAML{where}: {problem}")


class _Open:
    """A collection being scanned: its anchor, expanded size, and (maps) keys seen so far."""

    __slots__ = ("anchor", "keys", "size", "want_key")

    def __init__(self, anchor: str | None, mapping: bool) -> None:
        self.anchor, self.size = anchor, 1
        self.keys: set[str] | None = set() if mapping else None
        self.want_key = mapping


def _fail(path: str, event: Any, problem: str) -> InputError:
    return InputError(path, "", "", f"invalid YAML at line {event.start_mark.line + 1}: {problem}")


def check_yaml(path: str, text: str) -> None:
    """Scan the event stream for nesting, duplicate keys, recursive aliases and alias expansion.

    Raises ``InputError``. Duplicate keys are refused because a YAML loader keeps the
    last silently, and the API server's strict decoding refuses them.
    """
    stack: list[_Open] = []
    sizes: dict[str, int] = {}
    expansion = 0
    try:
        events: Iterator[Any] = yaml.parse(text, Loader=_CLoader)
        for event in events:
            kind = type(event)
            if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                done = stack.pop()
                if done.anchor is not None:
                    sizes[done.anchor] = done.size
                if stack:
                    stack[-1].size += done.size
                continue
            if kind not in _NODE_EVENTS:
                continue
            parent = stack[-1] if stack else None
            if parent is not None and parent.keys is not None:
                if parent.want_key and kind is yaml.ScalarEvent and event.value != "<<":
                    if event.value in parent.keys:
                        raise _fail(path, event, f"duplicate key {event.value[:60]!r}")
                    parent.keys.add(event.value)
                parent.want_key = not parent.want_key
            if kind is yaml.ScalarEvent:
                if parent is not None:
                    parent.size += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif kind is yaml.AliasEvent:
                size = sizes.get(event.anchor)
                if size is None:
                    recursive = any(node.anchor == event.anchor for node in stack)
                    raise _fail(path, event, "an alias refers to a node that contains it" if recursive
                                else f"unknown alias {event.anchor!r}")
                expansion += size
                if expansion > MAX_ALIAS_EXPANSION:
                    raise _fail(path, event, f"aliases expand to more than the limit of {MAX_ALIAS_EXPANSION} "
                                             "nodes")
                if parent is not None:
                    parent.size += size
            else:
                if len(stack) >= MAX_DEPTH:
                    raise _fail(path, event, f"nested deeper than the limit of {MAX_DEPTH} levels")
                stack.append(_Open(event.anchor, kind is yaml.MappingStartEvent))
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None


def yaml_documents(path: str, text: str, loader: type[Any] = _CLoader) -> Iterator[Any]:
    """Every document of a YAML stream, after ``check_yaml``."""
    check_yaml(path, text)
    try:
        yield from yaml.load_all(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    except (ValueError, OverflowError, TypeError, RecursionError) as exc:
        # Scalars the constructor cannot build (a 5,000-digit integer, 2026-13-45T00:00:00).
        raise InputError(path, "", "", f"invalid YAML: {' '.join(str(exc).split())[:200]}") from None

"""Flags as data: one ``Flag`` per flag drives the parser, the options and ``docs/flags.md``.

A table of ``Flag`` rows (``autoscaler.flagtable`` for the decision flags,
``app.run.flagtable`` for ``run``'s) is the only place a flag is written: its name,
parser, default, description, where its value goes (``field``, a dotted path into
``Options`` or ``RunSettings``) and whether it means anything here. ``add_to_parser``
registers the rows with argparse, ``field_values`` reads them back by field,
``ignored_given`` lists the accepted-only flags a command line gave (each earns one
start-up warning), and ``markdown`` renders the reference page.

Semantics follow Go's ``flag``/``pflag`` as upstream Cluster Autoscaler uses them
(``config/flags/flags.go``): ``--name=value`` and ``--name value``; a boolean given
alone is true; no abbreviations (the parsers are built with ``allow_abbrev=False``).

To add a flag: add one ``Flag(...)`` row to the right table (``field`` names where its
value goes, ``ignored`` says why it has no effect if it has none), add the field to the
options dataclass, and run ``python -m app.flagdocs`` to regenerate ``docs/flags.md``
(``tests/app/test_flag_table.py`` fails until the page matches the tables).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kube.duration import parse_duration

__all__ = ["Flag", "Kind", "add_to_parser", "bool_flag", "duration_flag", "field_values", "float_flag",
           "go_duration", "ignored_given", "int_flag", "markdown", "min_max_flag", "non_negative_int",
           "positive_quantity_flag", "quantity_flag", "ratio_flag", "signed_duration_flag"]


class Kind(StrEnum):
    VALUE = "value"
    #: ``--name`` alone is true; ``--name=false`` turns it off.
    BOOL = "bool"
    #: Repeatable; the values in order (Go's ``stringArray``/``MultiStringFlag``).
    LIST = "list"


def quantity_flag(text: str) -> int:
    """A Kubernetes quantity (``500Mi``, ``2Gi``, ``1T``) in bytes, not negative."""
    from kube.quantity import QuantityError, parse_quantity

    try:
        value = parse_quantity(text.strip())
    except (QuantityError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a quantity (e.g. 500Mi, 2Gi): {exc}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def positive_quantity_flag(text: str) -> int:
    value = quantity_flag(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0")
    return value


def bool_flag(text: str) -> bool:
    """Go's ``strconv.ParseBool`` plus yes/no."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "t"):
        return True
    if lowered in ("false", "0", "no", "f"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


def signed_duration_flag(text: str) -> float:
    """Go-style (``90s``, ``15m``, ``1h30m``), signed; a bare number is seconds."""
    try:
        return parse_duration(text, signed=True, bare_seconds=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def duration_flag(text: str) -> float:
    """A duration that may not be negative (only ``--scale-down-unready-time`` gives a sign a meaning)."""
    value = signed_duration_flag(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative (a duration here must not be)")
    return value


def int_flag(text: str) -> int:
    stripped = text.strip()
    if not (stripped.lstrip("+-").isascii() and stripped.lstrip("+-").isdigit()) or len(stripped) > 20:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(stripped)


def non_negative_int(text: str) -> int:
    value = int_flag(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def float_flag(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not text.isascii() or math.isnan(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    return value


def ratio_flag(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not text.isascii() or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return value


def min_max_flag(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,18})\s*:\s*(\d{1,18})\s*", text, re.ASCII)
    if not match or int(match.group(1)) > int(match.group(2)):
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN:MAX with MIN <= MAX")
    return int(match.group(1)), int(match.group(2))


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` for whole-millisecond values: ``10m0s``, ``1h0m0s``, ``0s``, ``-1s``."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    total = abs(seconds)
    if total < 1:
        return f"{sign}{round(total * 1000)}ms"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    sec_text = f"{secs:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{sign}{int(hours)}h{int(minutes)}m{sec_text}s"
    if minutes:
        return f"{sign}{int(minutes)}m{sec_text}s"
    return f"{sign}{sec_text}s"


_DURATIONS = (duration_flag, signed_duration_flag)
#: What ``--help`` shows as a flag's value, by parser (Go's help names the type).
_METAVARS: dict[Callable[[str], Any], str] = {
    duration_flag: "DURATION", signed_duration_flag: "DURATION", int_flag: "INT", non_negative_int: "INT",
    float_flag: "FLOAT", ratio_flag: "RATIO", min_max_flag: "MIN:MAX"}


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag: everything the parser, the options and the docs need to know about it."""

    name: str
    help: str
    #: Turns the command-line text into the value (raises ``argparse.ArgumentTypeError``).
    parse: Callable[[str], Any] = str
    #: The parsed default (what the parser yields when the flag is absent).
    default: Any = None
    #: Where the value goes: a dotted path into the options (``scale_up.max_nodes_total``);
    #: "" when it goes nowhere (accepted-only flags, or read directly by the command).
    field: str = ""
    kind: Kind = Kind.VALUE
    #: Non-empty: the flag is accepted but has no effect here, and this says why (the warning).
    ignored: str = ""
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    #: The field's value from the parsed value (may raise ``ConfigError`` naming the flag).
    convert: Callable[[Any], Any] | None = None
    #: Extra spellings (``-v``); ``--name`` is always accepted.
    aliases: tuple[str, ...] = ()
    hidden: bool = False
    #: Not one of upstream CA's flags (this project's own).
    ours: bool = False
    #: The default as ``--help`` shows it, when the parsed value would not say it (a level, a late default).
    shown: str = ""

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    def shown_default(self) -> str:
        """The default as Go's ``--help`` and CA's FAQ print it."""
        value = self.default
        if self.shown:
            return self.shown
        if self.kind is Kind.LIST:
            return "[" + ",".join(value or ()) + "]"
        if self.kind is Kind.BOOL:
            return "true" if value else "false"
        if value is None or value == ():
            return ""
        if self.parse in _DURATIONS:
            return go_duration(float(value))
        if self.parse is min_max_flag:
            return f'"{value[0]}:{value[1]}"'
        if isinstance(value, str):
            return f'"{value}"' if value else ""
        return f"{value:g}" if isinstance(value, float) else str(value)

    def help_text(self) -> str:
        text = self.help
        if self.ignored:
            text += f" [accepted, no effect here: {self.ignored}]"
        shown = self.shown_default()
        if shown:
            text += f" (default: {shown})"
        return text.replace("%", "%%")


def add_to_parser(parser: argparse.ArgumentParser, flags: Iterable[Flag]) -> None:
    """Register every flag; accepted-only flags stay absent from the namespace unless given."""
    for flag in flags:
        kwargs: dict[str, Any] = {"dest": flag.dest,
                                  "help": argparse.SUPPRESS if flag.hidden else flag.help_text(),
                                  "default": argparse.SUPPRESS if flag.ignored else flag.default}
        if flag.kind is Kind.BOOL:
            kwargs.update(type=bool_flag, nargs="?", const=True, metavar="BOOL")
        elif flag.kind is Kind.LIST:
            kwargs.update(type=flag.parse, action="append")
            if not flag.ignored:
                kwargs["default"] = []
        else:
            kwargs["type"] = flag.parse
        if flag.choices:
            kwargs["choices"] = flag.choices
        if flag.metavar:
            kwargs["metavar"] = flag.metavar
        elif flag.kind is not Kind.BOOL and not flag.choices:
            kwargs["metavar"] = _METAVARS.get(flag.parse, "STRING")
        parser.add_argument(f"--{flag.name}", *flag.aliases, **kwargs)


def field_values(args: argparse.Namespace, flags: Iterable[Flag]) -> dict[str, Any]:
    """field path -> value for every flag with a field; repeatable flags sharing a field are joined."""
    out: dict[str, Any] = {}
    for flag in flags:
        if not flag.field or flag.ignored:
            continue
        value = getattr(args, flag.dest)
        if flag.kind is Kind.LIST:
            value = tuple(value)
        if flag.convert is not None:
            value = flag.convert(value)
        if flag.field in out and isinstance(value, tuple):
            out[flag.field] = (*out[flag.field], *value)
        else:
            out[flag.field] = value
    return out


def nested(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"a.b": 1, "c": 2}`` -> ``{"a": {"b": 1}, "": {"c": 2}}`` (one level, as the options are)."""
    out: dict[str, dict[str, Any]] = {"": {}}
    for path, value in values.items():
        group, _, name = path.rpartition(".")
        out.setdefault(group, {})[name] = value
    return out


def ignored_given(args: argparse.Namespace, flags: Iterable[Flag]) -> list[Flag]:
    """The accepted-only flags this command line gave, in table order."""
    return [f for f in flags if f.ignored and hasattr(args, f.dest)]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(sections: Sequence[tuple[str, Sequence[Flag]]]) -> str:
    """The reference page: per section, one row per flag (hidden flags left out)."""
    lines = ["# Flags", "",
             "Generated from the flag tables (`autoscaler/flagtable.py`, `app/run/flagtable.py`) by",
             "`python -m app.flagdocs`; do not edit by hand. Flags marked *accepted* are upstream",
             "Cluster Autoscaler's and are parsed and type-checked, but mean nothing here: each one given",
             "earns one warning at start-up. *ours* marks this project's own flags.", ""]
    for title, flags in sections:
        lines += [f"## {title}", "", "| flag | default | effect | goes to | description |",
                  "| --- | --- | --- | --- | --- |"]
        for f in flags:
            if f.hidden:
                continue
            effect = f"accepted: {f.ignored}" if f.ignored else "implemented"
            if f.ours:
                effect += " (ours)"
            where = f"`{f.field}`" if f.field else ""
            lines.append(f"| `--{f.name}` | `{f.shown_default()}` | {_cell(effect)} | {where} | {_cell(f.help)} |"
                         .replace("| `` |", "|  |"))
        lines.append("")
    return "\n".join(lines)

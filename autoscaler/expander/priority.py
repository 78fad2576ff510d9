"""The ``priority`` expander: prefer the node groups an operator ranked highest.

Upstream ``expander/priority``: the ``priorities`` key of the
``cluster-autoscaler-priority-expander`` ConfigMap is YAML mapping an integer
priority to a list of regular expressions. A group takes the highest priority whose
list has a regex that matches anywhere in its name (``re.search``: unanchored, as
Go's ``MatchString``), and the options of the best-ranked groups are kept.

When no option's group matches, or the configuration is missing or does not
parse, nothing is filtered: the rest of the chain decides. A missing or broken
configuration is reported in ``ctx.warnings`` so the operator hears of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import yaml

from autoscaler.expander.base import ExpanderContext, ExpansionOption

__all__ = ["PriorityConfigError", "PriorityFilter", "parse_priorities"]

Priorities = dict[int, tuple[re.Pattern[str], ...]]


class PriorityConfigError(ValueError):
    """The ``priorities`` YAML is not a mapping of integer priority to a list of regexes."""


def _priority(key: object) -> int:
    # bool is an int in Python, but ``true:`` is not a priority anyone meant.
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str):
        try:
            return int(key.strip())
        except ValueError:
            pass
    raise PriorityConfigError(f"priority {key!r} is not an integer")


def _patterns(priority: int, value: object) -> tuple[re.Pattern[str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PriorityConfigError(f"priority {priority}: expected a list of regexes, got {value!r}")
    compiled: list[re.Pattern[str]] = []
    for text in value:
        try:
            compiled.append(re.compile(text))
        except re.error as exc:
            raise PriorityConfigError(f"priority {priority}: {text!r} is not a regex ({exc})") from None
    return tuple(compiled)


@lru_cache(maxsize=8)
def _parsed(text: str) -> Priorities | PriorityConfigError:
    """One parse per distinct configuration text; the loop reads the ConfigMap every
    iteration, but its text rarely changes, so YAML and regexes are not redone each time."""
    try:
        return _parse(text)
    except PriorityConfigError as exc:
        return exc


def parse_priorities(text: str) -> Priorities:
    """Parse the ``priorities`` YAML (cached per text); raises ``PriorityConfigError`` saying what is wrong."""
    parsed = _parsed(text)
    if isinstance(parsed, PriorityConfigError):
        raise PriorityConfigError(str(parsed))
    return dict(parsed)


def _parse(text: str) -> Priorities:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PriorityConfigError(f"not YAML: {exc}") from None
    if document is None:
        raise PriorityConfigError("empty")
    if not isinstance(document, dict):
        raise PriorityConfigError("expected a mapping of integer priority to a list of regexes")
    parsed: Priorities = {}
    for key, value in document.items():
        priority = _priority(key)
        parsed[priority] = parsed.get(priority, ()) + _patterns(priority, value)
    return parsed


def _group_priority(group: str, priorities: Priorities) -> int | None:
    matching = [p for p, patterns in priorities.items() if any(pat.search(group) for pat in patterns)]
    return max(matching, default=None)


class PriorityFilter:
    """Keeps the options whose group has the highest matching priority."""

    name: str = "priority"

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
        if ctx.priority_config is None:
            ctx.warnings.append("priority expander: no priority configuration; options not filtered")
            return list(options)
        priorities = _parsed(ctx.priority_config)
        if isinstance(priorities, PriorityConfigError):
            ctx.warnings.append(f"priority expander: invalid configuration ({priorities}); options not filtered")
            return list(options)
        ranked = [(option, _group_priority(option.group, priorities)) for option in options]
        known = [rank for _, rank in ranked if rank is not None]
        if not known:
            return list(options)
        best = max(known)
        return [option for option, rank in ranked if rank == best]

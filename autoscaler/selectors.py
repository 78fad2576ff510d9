"""Label selectors given as flag text, parsed once per distinct text.

``--storage-guard-pod-selector`` is validated when the flags are read
(``config.options_from_args``); the planners ask for the parsed selector every loop,
so the parse is cached here instead of repeated.
"""

from __future__ import annotations

from functools import lru_cache

from kube.convert import parse_label_selector_string
from kube.model import LabelSelector

__all__ = ["guard_selector"]


@lru_cache(maxsize=16)
def guard_selector(text: str) -> LabelSelector | None:
    """The guard pods' selector; None when the flag is empty (no guard configured)."""
    return parse_label_selector_string(text) if text else None

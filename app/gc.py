"""The garbage collector paused while one autoscaler loop runs (the commands' side, never the library's).

A loop over a large cluster allocates millions of short-lived objects next to the
hundreds of thousands of long-lived ones the watch caches hold; a full collection
started in the middle of a loop walks all of them and can cost as much as the loop.
Commands that run loops (``simulate``, ``run``) wrap each iteration in
``collector_paused()``: the collector is off while the loop runs and on again
between loops, where it catches up at its own pace. Nothing is frozen
(``gc.freeze``), so objects the loop drops are still collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the collector for the ``with`` block; restore its previous state afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

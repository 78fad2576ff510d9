"""Pause the cyclic garbage collector while LIST responses are converted, as ``kube.load`` does.

Converting 150,000 pods allocates millions of acyclic objects; with the collector
on, it rescans the growing heap over and over and a sync takes several times
longer. Informers list concurrently, so the pause is counted: the collector comes
back when the last conversion ends. The library never freezes the heap (a process
converting watch events for weeks must not move garbage out of the collector's
reach); ``run`` freezes it once, after the first complete sync.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["collector_paused"]

class _Pause:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.was_enabled = False


_PAUSE = _Pause()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    with _PAUSE.lock:
        if _PAUSE.holders == 0:
            _PAUSE.was_enabled = gc.isenabled()
            gc.disable()
        _PAUSE.holders += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.holders -= 1
            if _PAUSE.holders == 0 and _PAUSE.was_enabled:
                gc.enable()

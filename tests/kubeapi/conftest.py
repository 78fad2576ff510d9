"""Fixtures: a fake API server on loopback and the live adapter talking HTTP to it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubeapi import KubeClusterAPI, RetryPolicy
from tests.fakeapi import FakeAPIServer

#: Fast retries so fault tests take fractions of a second.
FAST_RETRY = RetryPolicy(attempts=3, initial=0.01, maximum=0.05, conflict_attempts=4)


def eventually(check: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``check`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(bookmark_seconds=0.1) as server:
        yield server


def connect(api: FakeAPIServer, tmp_path: Path, **kwargs: object) -> KubeClusterAPI:
    options: dict[str, object] = {"qps": 1000.0, "burst": 1000, "timeout": (1.0, 1.0), "watch_seconds": 5,
                                  "retry": FAST_RETRY, "backoff": (0.01, 0.1)}
    options.update(kwargs)
    return KubeClusterAPI.from_kubeconfig(str(api.write_kubeconfig(tmp_path / "kubeconfig")), **options)  # type: ignore[arg-type]


@pytest.fixture
def cluster(api: FakeAPIServer, tmp_path: Path) -> Iterator[KubeClusterAPI]:
    adapter = connect(api, tmp_path)
    adapter.start()
    assert adapter.wait_synced(5.0), adapter.caches.unavailable_reason()
    yield adapter
    adapter.stop()

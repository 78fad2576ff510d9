"""Fixtures of the GCE provider tests: a fake REST server with the standard world, and a provider on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloudproviders.gce import GceProvider
from tests.cloudproviders.fakes.gce import FakeGce
from tests.cloudproviders.gce_world import gce_provider, standard_world


@pytest.fixture
def fake() -> Iterator[FakeGce]:
    with FakeGce() as server:
        standard_world(server)
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    """The retry policy's waits, recorded instead of slept."""
    return []


@pytest.fixture
def provider(fake: FakeGce, sleeps: list[float]) -> Iterator[GceProvider]:
    built = gce_provider(fake, sleeps)
    built.refresh()
    yield built
    built.close()

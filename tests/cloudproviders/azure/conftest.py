"""Fixtures of the Azure provider tests: a fake REST server with the standard world, and a provider on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloudproviders.azure import AzureProvider
from tests.cloudproviders.azure_world import azure_provider, standard_world
from tests.cloudproviders.fakes.azure import FakeAzure


@pytest.fixture
def fake() -> Iterator[FakeAzure]:
    with FakeAzure() as server:
        standard_world(server)
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    """The retry policy's waits, recorded instead of slept."""
    return []


@pytest.fixture
def provider(fake: FakeAzure, sleeps: list[float]) -> Iterator[AzureProvider]:
    built = azure_provider(fake, sleeps)
    built.refresh()
    yield built
    built.close()

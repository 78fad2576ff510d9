"""Every provider harness the conformance suite runs, imported only when its case runs.

Add a provider with one line: ``HARNESSES.append(("<id>", "<module>:<factory>"))``. The
factory is called with no argument and returns a context manager yielding a
``conformance.Harness`` (so a harness can start and stop its fake cloud around one test);
the import happens inside the test, so a missing SDK fails (or skips) only its own cases.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import AbstractContextManager

from tests.cloudproviders.conformance import Harness

__all__ = ["HARNESSES", "HarnessFactory", "load"]

HarnessFactory = Callable[[], AbstractContextManager[Harness]]

#: (pytest id, "module:factory").
HARNESSES: list[tuple[str, str]] = [
    ("emulator", "tests.cloudproviders.emulator_harness:emulator_harness"),
    ("aws", "tests.cloudproviders.aws_harness:aws_harness"),
]


def load(reference: str) -> HarnessFactory:
    """The factory named by ``"module:attribute"``."""
    module_name, _, attribute = reference.partition(":")
    factory: HarnessFactory = getattr(importlib.import_module(module_name), attribute)
    return factory
HARNESSES.append(("gce", "tests.cloudproviders.gce_harness:gce_harness"))
HARNESSES.append(("azure", "tests.cloudproviders.azure_harness:azure_harness"))

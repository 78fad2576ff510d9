"""Machine shapes as upstream CA's ``machine_types_test.go``: custom types from their names."""

from __future__ import annotations

import pytest

from cloudproviders.gce.machine import custom_machine, is_custom, machine_family
from cloudproviders.interface import CloudError

MIB = 2**20


@pytest.mark.parametrize(("name", "cpus", "memory"), [
    pytest.param("custom-2-2816", 2, 2816 * MIB, id="n1-custom"),
    pytest.param("custom-2-2816-ext", 2, 2816 * MIB, id="n1-custom-extended-memory"),
    pytest.param("n2-custom-2-2816", 2, 2816 * MIB, id="family-custom"),
    pytest.param("n2-custom-2-2816-ext", 2, 2816 * MIB, id="family-custom-extended-memory"),
    pytest.param("e2-custom-medium-2816", 2, 2816 * MIB, id="e2-medium"),
    pytest.param("e2-custom-micro-2048", 2, 2048 * MIB, id="e2-micro"),
    pytest.param("e2-custom-small-2048", 2, 2048 * MIB, id="e2-small"),
])
def test_custom_machine(name: str, cpus: int, memory: int) -> None:
    assert is_custom(name)
    shape = custom_machine(name)
    assert (shape.cpus, shape.memory_bytes) == (cpus, memory)


@pytest.mark.parametrize(("name", "custom"), [
    pytest.param("e2-custom", True, id="no-cpus"),
    pytest.param("e2-custom-8", True, id="no-memory"),
    pytest.param("e2-custom-abc-2048", True, id="cpus-not-a-number"),
    pytest.param("other-a2-2816", False, id="not-custom"),
    pytest.param("n1-standard-8", False, id="predefined"),
])
def test_not_a_custom_shape(name: str, custom: bool) -> None:
    assert is_custom(name) is custom
    with pytest.raises(CloudError, match=name):
        custom_machine(name)


@pytest.mark.parametrize(("name", "family"), [
    pytest.param("n1-standard-8", "n1", id="predefined"),
    pytest.param("e2-small", "e2", id="short"),
    pytest.param("f1-micro", "n1", id="f1"),
    pytest.param("g1-small", "n1", id="g1"),
    pytest.param("custom-2-2816", "n1", id="custom-without-family"),
    pytest.param("n2-custom-2-2816-ext", "n2", id="custom-with-family"),
])
def test_machine_family(name: str, family: str) -> None:
    assert machine_family(name) == family


def test_a_name_without_dashes_has_no_family() -> None:
    with pytest.raises(CloudError, match="nodashes"):
        machine_family("nodashes")

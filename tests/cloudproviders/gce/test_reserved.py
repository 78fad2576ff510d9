"""Reserve estimates as upstream CA's ``gce/reserved_test.go`` and ``templates_test.go`` state them."""

from __future__ import annotations

import math

import pytest

from cloudproviders.gce.reserved import (
    Arch,
    Distribution,
    EvictionHard,
    OsInfo,
    kernel_reserved,
    local_ssd_overhead,
    os_reserved_ephemeral,
    parse_eviction_hard,
)

KIB, MIB, GIB = 2**10, 2**20, 2**30
BASE = 16 * MIB  # upstream kernelReservedMemory
LOW = 8 * MIB  # lowMemoryOffset, at 8 GiB or less
TLB = 64 * MIB  # swiotlbReservedMemory, above 3 GiB


def correction(memory: int) -> int:
    return int(min(0.00175 * memory, 248 * MIB))


@pytest.mark.parametrize(("memory", "distribution", "arch", "expected"), [
    pytest.param(256 * MIB, Distribution.COS, Arch.AMD64, 4 * MIB + BASE + LOW + correction(256 * MIB), id="cos-256Mi"),
    pytest.param(2 * GIB, Distribution.COS, Arch.AMD64, 32 * MIB + BASE + LOW + correction(2 * GIB), id="cos-2Gi"),
    pytest.param(3 * GIB, Distribution.COS, Arch.AMD64, 48 * MIB + BASE + LOW + correction(3 * GIB), id="cos-3Gi"),
    pytest.param(int(3.25 * GIB), Distribution.COS, Arch.AMD64,
                 52 * MIB + BASE + TLB + LOW + correction(int(3.25 * GIB)), id="cos-3.25Gi-needs-the-tlb"),
    pytest.param(128 * GIB, Distribution.COS, Arch.AMD64, 2 * GIB + BASE + TLB + correction(128 * GIB), id="cos-128Gi"),
    pytest.param(128 * GIB, Distribution.UBUNTU, Arch.AMD64, 2 * GIB + BASE + TLB + correction(128 * GIB) + 4 * MIB,
                 id="ubuntu-128Gi"),
    pytest.param(2 * GIB, Distribution.UBUNTU, Arch.AMD64, 32 * MIB + BASE + LOW + correction(2 * GIB) + 4 * MIB,
                 id="ubuntu-2Gi"),
    pytest.param(3 * GIB, Distribution.COS, Arch.ARM64,
                 round((48 * MIB + BASE + LOW + correction(3 * GIB)) * 0.9971), id="cos-arm64"),
    pytest.param(256 * GIB, Distribution.COS, Arch.AMD64, 4 * GIB + BASE + TLB + 248 * MIB, id="correction-capped"),
    pytest.param(4 * GIB, Distribution.WINDOWS_LTSC, Arch.AMD64, 64 * MIB + BASE + TLB + LOW,
                 id="linux-on-another-image-no-correction"),
])
def test_kernel_reserved_linux(memory: int, distribution: Distribution, arch: Arch, expected: int) -> None:
    assert kernel_reserved(OsInfo("linux", distribution, arch), memory) == expected


def test_windows_kernel_keeps_nothing() -> None:
    assert kernel_reserved(OsInfo("windows"), 4 * GIB) == 0


@pytest.mark.parametrize(("distribution", "arch", "expected"), [
    pytest.param(Distribution.COS, Arch.AMD64,
                 math.ceil(0.015635 * 100 * GIB) + math.ceil(4.148 * GIB) + 100 * MIB, id="cos"),
    pytest.param(Distribution.COS, Arch.ARM64,
                 math.ceil(0.015635 * 100 * GIB) + math.ceil(4.148 * GIB) + 100 * MIB + 64 * MIB, id="cos-arm64"),
    pytest.param(Distribution.UBUNTU, Arch.AMD64,
                 math.ceil(0.03083 * 100 * GIB) + math.ceil(0.171 * GIB) + 100 * MIB, id="ubuntu"),
    pytest.param(Distribution.WINDOWS_SAC, Arch.AMD64, math.ceil(0.1133 * GIB) + math.ceil(0.010 * GIB),
                 id="windows"),
])
def test_os_reserved_ephemeral(distribution: Distribution, arch: Arch, expected: int) -> None:
    assert os_reserved_ephemeral(OsInfo("linux", distribution, arch), 100 * GIB) == expected


def test_small_disks_buffer_a_thousandth() -> None:
    small = 10 * GIB
    expected = math.ceil(0.015635 * small) + math.ceil(4.148 * GIB) + math.ceil(0.001 * small)
    assert os_reserved_ephemeral(OsInfo("linux"), small) == expected


@pytest.mark.parametrize(("count", "distribution", "expected"), [
    pytest.param(1, Distribution.COS, 7289472 * KIB, id="measured-cos"),
    pytest.param(1, Distribution.UBUNTU, 7219840 * KIB, id="measured-ubuntu"),
    pytest.param(10, Distribution.COS, 52837800 * KIB, id="rounded-up-to-16"),
    pytest.param(20, Distribution.COS, 78686620 * KIB, id="rounded-up-to-24"),
    pytest.param(2, Distribution.WINDOWS_LTSC, 0, id="never-measured"),
])
def test_local_ssd_overhead(count: int, distribution: Distribution, expected: int) -> None:
    assert local_ssd_overhead(count, distribution) == expected


@pytest.mark.parametrize(("memory", "storage", "expected"), [
    pytest.param("200Mi", "15%", EvictionHard(200 * MIB, 0.15), id="both"),
    pytest.param("2Gi", "11.5%", EvictionHard(2 * GIB, 0.115), id="fractional-percent"),
    pytest.param("", "", EvictionHard(), id="empty-defaults"),
    pytest.param("110292", "11", EvictionHard(110292, 0.1), id="percent-sign-missing"),
    pytest.param("abcb12", "-11%", EvictionHard(), id="unparsable-and-negative"),
    pytest.param("1Gi", "120%", EvictionHard(GIB, 0.1), id="above-100-percent"),
])
def test_parse_eviction_hard(memory: str, storage: str, expected: EvictionHard) -> None:
    assert parse_eviction_hard({"memory.available": memory, "nodefs.available": storage}) == expected


def test_no_eviction_hard_is_the_default() -> None:
    assert parse_eviction_hard(None) == parse_eviction_hard({}) == EvictionHard(100 * MIB, 0.1)

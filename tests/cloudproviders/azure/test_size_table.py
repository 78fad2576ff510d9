"""The shipped VM size table: generated from upstream's ``azure_instance_types.go``, read as facts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cloudproviders.azure.skus import static_sku, static_table

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "azure_instance_types.py"
GO = '''
var InstanceTypes = map[string]*InstanceType{
	"Standard_D2ps_v5": {
		InstanceType: "Standard_D2ps_v5",
		SkuFamily:    "standardDPSv5Family",
		VCPU:         2,
		MemoryMb:     8192,
		GPU:          0,
		Architecture: "arm64",
	},
	"Standard_A1_v2": {
		InstanceType: "Standard_A1_v2",
		SkuFamily:    "standardAv2Family",
		VCPU:         1,
		MemoryMb:     2048,
		GPU:          0,
		Architecture: "amd64",
	},
}
'''


def test_the_generator_writes_sorted_csv_rows() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT)], input=GO, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["name,vcpus,memory_mib,gpus,arch", "Standard_A1_v2,1,2048,0,amd64",
                                "Standard_D2ps_v5,2,8192,0,arm64"]


def test_the_generator_refuses_input_without_sizes() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], input="package azure\n", capture_output=True, text=True,
                          check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert "no InstanceTypes entries" in done.stderr


def test_the_table_holds_every_upstream_size() -> None:
    table = static_table()
    assert len(table) == 1370
    assert {sku.arch for sku in table.values()} == {"amd64", "arm64"}


@pytest.mark.parametrize(("size", "nvme_disks"), [
    pytest.param("Standard_L8s_v3", 1, id="lsv3"),
    pytest.param("Standard_L80s_v2", 10, id="lsv2"),
    pytest.param("Standard_L48as_v3", 6, id="lasv3"),
    pytest.param("Standard_D4s_v5", 0, id="no-nvme"),
])
def test_l_series_nvme_from_the_published_disk_count(size: str, nvme_disks: int) -> None:
    sku = static_sku(size)
    assert sku is not None and sku.nvme_bytes == nvme_disks * 1_920_000_000_000

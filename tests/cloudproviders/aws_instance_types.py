"""Regenerates ``cloudproviders/aws/instance_types.json`` from moto's copy of DescribeInstanceTypes.

The AWS provider's static instance-type list, used when DescribeInstanceTypes fails or does not
know a type (CA's ``GetStaticEC2InstanceTypes`` fallback). Run from the repository root after
upgrading moto: ``python -m tests.cloudproviders.aws_instance_types``.
"""

from __future__ import annotations

import gzip
import json
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from typing import Any

TARGET = Path(__file__).resolve().parents[2] / "cloudproviders" / "aws" / "instance_types.json"


def compact(raw: dict[str, Any]) -> list[Any]:
    """[vCPUs, memory MiB, architectures, GPU count, instance store GB, NVMe support]."""
    storage = raw.get("InstanceStorageInfo") or {}
    gpus = sum(int(g.get("Count") or 0) for g in (raw.get("GpuInfo") or {}).get("Gpus", []) or [])
    return [int((raw.get("VCpuInfo") or {}).get("DefaultVCpus") or 0),
            int((raw.get("MemoryInfo") or {}).get("SizeInMiB") or 0),
            list((raw.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []),
            gpus, int(storage.get("TotalSizeInGB") or 0), str(storage.get("NvmeSupport") or "unsupported")]


def moto_types() -> dict[str, dict[str, Any]]:
    data = files("moto").joinpath("ec2/resources/instance_types.json.gz").read_bytes()
    loaded: dict[str, dict[str, Any]] = json.loads(gzip.decompress(data))
    return loaded


def main() -> None:
    types = {name: compact(raw) for name, raw in sorted(moto_types().items())}
    document = {"source": f"DescribeInstanceTypes as moto {version('moto')} records it", "types": types}
    TARGET.write_text(json.dumps(document, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()

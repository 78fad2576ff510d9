"""Regenerate ``cloudproviders/azure/instance_types.csv`` from upstream CA's static VM size list.

Reads ``cluster-autoscaler/cloudprovider/azure/azure_instance_types.go`` (a generated Go
map of every VM size: vCPUs, memory in MiB, GPU count, CPU architecture) and writes the
facts as CSV, one size per line, sorted by name. Usage::

    git -C autoscaler show HEAD:cluster-autoscaler/cloudprovider/azure/azure_instance_types.go \\
        | python3 scripts/azure_instance_types.py > cloudproviders/azure/instance_types.csv
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Iterator

_ENTRY = re.compile(
    r'"(?P<key>[^"]+)":\s*\{\s*InstanceType:\s*"(?P<name>[^"]+)",\s*SkuFamily:\s*"[^"]*",\s*'
    r"VCPU:\s*(?P<vcpus>\d+),\s*MemoryMb:\s*(?P<memory>\d+),\s*GPU:\s*(?P<gpus>\d+),\s*"
    r'Architecture:\s*"(?P<arch>[^"]+)",\s*\}')
HEADER = ("name", "vcpus", "memory_mib", "gpus", "arch")


def rows(go_source: str) -> Iterator[tuple[str, str, str, str, str]]:
    for match in _ENTRY.finditer(go_source):
        yield match["name"], match["vcpus"], match["memory"], match["gpus"], match["arch"]


def main() -> int:
    found = sorted(set(rows(sys.stdin.read())), key=lambda row: row[0].lower())
    if not found:
        print("no InstanceTypes entries found on stdin", file=sys.stderr)
        return 1
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The standard GCE world on the fake (two MIGs, their templates and machine types) and a provider on it.

"nvme": n2-highmem-8 (8 vCPU, 64 GiB) with 4 local NVMe SSDs (4 x 375 GiB); its kube-env
``node_labels`` carries the max-capacity label 1,900,000,000,000 bytes, which overrides
the SSD arithmetic (1.9e12 is not a multiple of 375 GiB). "general": n2-standard-4
(4 vCPU, 16 GiB), no local disk.
"""

from __future__ import annotations

import dataclasses

from cloudproviders.config import ProviderConfig, StaticGroup
from cloudproviders.gce import GceProvider, RetryPolicy, make_provider
from cloudproviders.gce.settings import GceSettings
from kube.model import Node
from kube.names import StorageNames
from tests.cloudproviders.fakes.gce import FakeGce
from tests.factories import node

__all__ = ["NVME_BYTES", "PROJECT", "ZONE", "gce_node", "gce_provider", "standard_world"]

PROJECT = "proj"
ZONE = "europe-west4-a"
NVME_BYTES = 1_900_000_000_000
NVME_KUBE_ENV = (
    "AUTOSCALER_ENV_VARS: node_labels=pool=nvme,"
    f"{StorageNames().max_capacity_label}={NVME_BYTES};node_taints=storage=local:NoSchedule;os=linux\n"
    "KUBERNETES_MASTER: 'false'\n"
)


def standard_world(fake: FakeGce) -> None:
    fake.add_machine_type("n2-highmem-8", 8, 65536, ZONE, PROJECT)
    fake.add_machine_type("n2-standard-4", 4, 16384, ZONE, PROJECT)
    fake.add_template("nvme-template", "n2-highmem-8", local_ssds=4, kube_env=NVME_KUBE_ENV)
    fake.add_template("general-template", "n2-standard-4")
    fake.add_mig("nvme", "nvme-template", 0, ZONE, PROJECT)
    fake.add_mig("general", "general-template", 2, ZONE, PROJECT)


def gce_provider(fake: FakeGce, sleeps: list[float], *, static: tuple[StaticGroup, ...] | None = None,
                 auto: tuple[str, ...] = (), price_file: str | None = None, clock: list[float] | None = None,
                 operation_timeout: float = 20.0) -> GceProvider:
    """A provider on the fake; every wait is recorded in ``sleeps`` instead of slept."""
    if static is None:
        static = (StaticGroup(0, 10, f"{ZONE}/nvme"), StaticGroup(1, 5, f"{ZONE}/general"))
    config = ProviderConfig(static_groups=static, auto_discovery=auto, price_file=price_file)
    settings = GceSettings(project=PROJECT, zones=(ZONE,), endpoint=fake.url,
                           operation_timeout_seconds=operation_timeout)
    now = clock if clock is not None else [0.0]
    return make_provider(config, settings, RetryPolicy(sleep=sleeps.append), clock=lambda: now[0])


def gce_node(name: str, instance: str, zone: str = ZONE) -> Node:
    """A node as the kubelet registers the instance ``instance``."""
    return dataclasses.replace(node(name), provider_id=f"gce://{PROJECT}/{zone}/{instance}")

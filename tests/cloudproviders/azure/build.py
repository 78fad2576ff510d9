"""Build the template of one scale set through the provider over the Microsoft.Compute fake."""

from __future__ import annotations

from typing import Any

from cloudproviders.azure.group import VmssGroup
from cloudproviders.config import StaticGroup
from kube.model import Node
from tests.cloudproviders.azure_world import azure_provider
from tests.cloudproviders.fakes.azure import FakeAzure

__all__ = ["MIB", "TAG", "XILINX", "built", "forbid_skus", "template"]

TAG = "k8s.io_cluster-autoscaler_node-template_"
XILINX = "xilinx.com/fpga-xilinx_u250_gen3x16_xdma_shell_2_1-0"
MIB = 2**20


def built(fake: FakeAzure, sleeps: list[float], size: str = "Standard_D4s_v5", *, predictions: bool = True,
          **scale_set: Any) -> VmssGroup:
    """The group of one scale set ``pool`` of ``size`` (more ARM fields in ``scale_set``), templates built."""
    fake.add_scale_set("pool", size, **scale_set)
    provider = azure_provider(fake, sleeps, static=(StaticGroup(0, 5, "pool"),), label_predictions=predictions)
    provider.refresh()
    (group,) = provider.node_groups()
    assert isinstance(group, VmssGroup)
    group.template_node()
    provider.close()
    return group


def template(fake: FakeAzure, sleeps: list[float], size: str = "Standard_D4s_v5", **scale_set: Any) -> Node:
    node = built(fake, sleeps, size, **scale_set).template_node()
    assert node is not None
    return node


def forbid_skus(fake: FakeAzure) -> None:
    fake.fail_next_http("skus", 403, "AuthorizationFailed", "The client does not have authorization to perform "
                                                             "action 'Microsoft.Compute/skus/read'.")

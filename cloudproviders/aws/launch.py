"""Which instance type a group's next instance gets, read as CA reads it (the launch source).

CA's AWS provider (``aws_wrapper.go``, ``getInstanceTypesForAsgs``) looks, in this order, at:

1. the launch configuration's instance type;
2. the group's launch template: its ``InstanceType``, else, with attribute-based selection
   (``InstanceRequirements`` and an ``ImageId``), the first type
   ``GetInstanceTypesFromInstanceRequirements`` returns for the image's architectures and
   virtualization types (``DescribeImages``);
3. a mixed-instances policy: the first override's instance type; else the requirements of
   its only override, matched the same way against the policy template's image; else the
   policy's launch template as in 2.

A mixed policy without instance-type overrides also hands its requirements (the override's,
else the launch template's) to the template: their minimum vCPUs, memory and NVIDIA GPUs
stand in for the instance type's (``updateCapacityWithRequirementsOverrides``).

The root volume (first EBS block device mapping) comes from the launch data read on the way;
CA does not read it, this project makes it the template's ephemeral storage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cloudproviders.aws.api import AwsApi
from cloudproviders.aws.state import LaunchSpec
from cloudproviders.interface import CloudError

__all__ = ["Launch", "resolve_launch"]

#: The ``InstanceRequirements`` fields CA passes on to GetInstanceTypesFromInstanceRequirements
#: (``getRequirementsRequestFromEC2`` / ``...FromAutoscaling``); the names are the same in
#: the Auto Scaling, EC2 and request shapes.
_REQUEST_FIELDS = (
    "MemoryMiB", "VCpuCount", "AcceleratorCount", "AcceleratorManufacturers", "AcceleratorNames",
    "AcceleratorTotalMemoryMiB", "AcceleratorTypes", "BareMetal", "BaselineEbsBandwidthMbps", "BurstablePerformance",
    "CpuManufacturers", "ExcludedInstanceTypes", "InstanceGenerations", "LocalStorage", "LocalStorageTypes",
    "MemoryGiBPerVCpu", "NetworkInterfaceCount", "OnDemandMaxPricePercentageOverLowestPrice",
    "RequireHibernateSupport", "SpotMaxPricePercentageOverLowestPrice", "TotalLocalStorageGB",
)


@dataclass(frozen=True, slots=True)
class Launch:
    instance_type: str
    root_volume_bytes: int | None = None
    #: A mixed policy's attribute-based requirements when it names no instance type (capacity overrides).
    requirements: Mapping[str, Any] | None = None


def resolve_launch(api: AwsApi, group: str, launch: LaunchSpec) -> Launch:
    """The launch source's instance type (see the module docstring); ``CloudError`` if there is none."""
    data: Mapping[str, Any]
    if launch.launch_configuration is not None:
        data = api.launch_configuration(launch.launch_configuration) or {}
        return Launch(_named(group, data.get("InstanceType")), _root_volume_bytes(data))
    if launch.launch_template is not None:
        data = _template_data(api, group, launch.launch_template)
        return Launch(_template_type(api, group, data), _root_volume_bytes(data))
    mixed = launch.mixed
    if mixed is None:
        raise CloudError(f"node group {group}: no launch configuration, launch template or mixed-instances policy")
    if mixed.override_types:
        # CA takes the first override without reading the template; its root volume is a bonus.
        try:
            data = _template_data(api, group, mixed.launch_template) if mixed.launch_template is not None else {}
        except CloudError:
            data = {}
        return Launch(mixed.override_types[0], _root_volume_bytes(data))
    if mixed.launch_template is None:
        raise CloudError(f"node group {group}: no launch template found for mixed instances policy")
    data = _template_data(api, group, mixed.launch_template)
    root = _root_volume_bytes(data)
    if mixed.requirements_override is not None:
        instance_type = _matching_type(api, group, data.get("ImageId"), mixed.requirements_override)
        return Launch(instance_type, root, mixed.requirements_override)
    return Launch(_template_type(api, group, data), root, data.get("InstanceRequirements"))


def _named(group: str, instance_type: object) -> str:
    if not instance_type:
        raise CloudError(f"node group {group}: no instance type in its launch source")
    return str(instance_type)


def _template_data(api: AwsApi, group: str, spec: Mapping[str, Any]) -> Mapping[str, Any]:
    data = api.launch_template_data(spec)
    if data is None:
        name = spec.get("LaunchTemplateName") or spec.get("LaunchTemplateId")
        raise CloudError(f"node group {group}: launch template {name} version {spec.get('Version')} not found")
    return data


def _template_type(api: AwsApi, group: str, data: Mapping[str, Any]) -> str:
    if data.get("InstanceType"):
        return str(data["InstanceType"])
    if data.get("InstanceRequirements") and data.get("ImageId"):
        return _matching_type(api, group, data["ImageId"], data["InstanceRequirements"])
    raise CloudError(f"node group {group}: unable to find instance type using launch template")


def _matching_type(api: AwsApi, group: str, image_id: object, requirements: Mapping[str, Any]) -> str:
    """The first type AWS matches to ``requirements`` for the image (``getInstanceTypeFromInstanceRequirements``)."""
    if not image_id:
        raise CloudError(f"node group {group}: attribute-based instance selection without an ImageId")
    if not requirements.get("VCpuCount") or not requirements.get("MemoryMiB"):
        raise CloudError(f"node group {group}: instance requirements without VCpuCount and MemoryMiB")
    images = api.images(str(image_id))
    architectures = [str(i["Architecture"]) for i in images if i.get("Architecture")]
    virtualization = [str(i["VirtualizationType"]) for i in images if i.get("VirtualizationType")]
    request = {k: requirements[k] for k in _REQUEST_FIELDS if requirements.get(k) not in (None, "", [])}
    types = api.instance_types_for_requirements(request, architectures, virtualization)
    if not types:
        raise CloudError(f"node group {group}: no instance types found for its instance requirements")
    return types[0]


def _root_volume_bytes(data: Mapping[str, Any]) -> int | None:
    """The first EBS mapping's size (GiB) in bytes."""
    for mapping in data.get("BlockDeviceMappings", []) or []:
        size = (mapping.get("Ebs") or {}).get("VolumeSize")
        if size:
            return int(size) * 2**30
    return None

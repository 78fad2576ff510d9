"""The AWS calls the provider makes, each through ``errors.call`` (translated, retried).

One boto3 session, one Auto Scaling, one EC2 and one EKS client. The clients are made without an
``endpoint_url`` so boto3's standard ``AWS_ENDPOINT_URL`` (and per-service
``AWS_ENDPOINT_URL_AUTO_SCALING``/``_EC2``/``_EKS``) environment variables apply, as they do for
every AWS tool (moto's server mode in tests). botocore's retries are off: ``errors.call``
is the one retry layer. Responses are returned as botocore's dicts; ``state.py`` and
``template.py`` read them.

IAM: each method names the permission it needs (README, "AWS").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]

from cloudproviders.aws.errors import RetryPolicy, call

#: Cap on one retry wait: AWS throttling (RequestLimitExceeded) asks for longer backoffs.
AWS_MAX_WAIT_SECONDS = 20.0

__all__ = ["AwsApi", "Raw"]

Raw = dict[str, Any]

#: DescribeAutoScalingGroups accepts at most this many names per call.
_NAMES_PER_CALL = 50
#: DescribeInstanceTypes accepts at most this many types per call.
_TYPES_PER_CALL = 100


class AwsApi:
    """Thin typed wrapper over the two clients; every method raises ``CloudError`` on failure."""

    def __init__(self, session: boto3.Session, region: str, retry: RetryPolicy | None = None) -> None:
        config = Config(region_name=region, retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=30)
        self.region = region
        self.retry = retry or RetryPolicy(max_wait_seconds=AWS_MAX_WAIT_SECONDS)
        self._autoscaling = session.client("autoscaling", config=config)
        self._ec2 = session.client("ec2", config=config)
        self._eks = session.client("eks", config=config)

    def _call(self, what: str, operation: Callable[[], Raw]) -> Raw:
        return call(self.retry, what, operation)

    # --- autoscaling:DescribeAutoScalingGroups ------------------------------------------------
    def groups_named(self, names: Sequence[str]) -> list[Raw]:
        """The ASGs among ``names`` that exist (missing ones are simply absent)."""
        out: list[Raw] = []
        for start in range(0, len(names), _NAMES_PER_CALL):
            chunk = list(names[start:start + _NAMES_PER_CALL])
            out.extend(self._groups(f"DescribeAutoScalingGroups {','.join(chunk)}", {"AutoScalingGroupNames": chunk}))
        return out

    def groups_matching(self, filters: Sequence[Mapping[str, Any]]) -> list[Raw]:
        """The ASGs whose tags match every filter (``tag-key`` / ``tag:<key>``)."""
        return self._groups("DescribeAutoScalingGroups by tags", {"Filters": [dict(f) for f in filters]})

    def _groups(self, what: str, request: Raw) -> list[Raw]:
        out: list[Raw] = []
        token: str | None = None
        while True:
            page_request = {**request, **({"NextToken": token} if token else {})}
            page = self._call(what, partial(self._autoscaling.describe_auto_scaling_groups, **page_request))
            out.extend(page.get("AutoScalingGroups", []))
            token = page.get("NextToken")
            if not token:
                return out

    # --- autoscaling:DescribeScalingActivities ---------------------------------------------------
    def recent_activities(self, group: str) -> list[Raw]:
        """The group's most recent scaling activities, newest first (one page)."""
        page = self._call(f"DescribeScalingActivities {group}",
                          lambda: self._autoscaling.describe_scaling_activities(AutoScalingGroupName=group,
                                                                                MaxRecords=20))
        activities: list[Raw] = page.get("Activities", [])
        return activities

    # --- autoscaling:SetDesiredCapacity ------------------------------------------------------------
    def set_desired_capacity(self, group: str, size: int) -> None:
        self._call(f"SetDesiredCapacity {group} to {size}",
                   lambda: self._autoscaling.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=size,
                                                                  HonorCooldown=False))

    # --- autoscaling:TerminateInstanceInAutoScalingGroup -------------------------------------------
    def terminate_and_decrement(self, instance_id: str) -> None:
        """Terminate one instance and lower its group's desired capacity by one."""
        self._call(f"TerminateInstanceInAutoScalingGroup {instance_id}",
                   lambda: self._autoscaling.terminate_instance_in_auto_scaling_group(
                       InstanceId=instance_id, ShouldDecrementDesiredCapacity=True))

    # --- autoscaling:DescribeLaunchConfigurations --------------------------------------------------
    def launch_configuration(self, name: str) -> Raw | None:
        page = self._call(f"DescribeLaunchConfigurations {name}",
                          lambda: self._autoscaling.describe_launch_configurations(LaunchConfigurationNames=[name]))
        found: list[Raw] = page.get("LaunchConfigurations", [])
        return found[0] if found else None

    # --- ec2:DescribeLaunchTemplateVersions --------------------------------------------------------
    def launch_template_data(self, spec: Mapping[str, Any]) -> Raw | None:
        """``LaunchTemplateData`` of the version a group's launch template spec names ($Default if none)."""
        request: Raw = {"Versions": [str(spec.get("Version") or "$Default")]}
        if spec.get("LaunchTemplateId"):
            request["LaunchTemplateId"] = spec["LaunchTemplateId"]
        elif spec.get("LaunchTemplateName"):
            request["LaunchTemplateName"] = spec["LaunchTemplateName"]
        else:
            return None
        label = request.get("LaunchTemplateId") or request.get("LaunchTemplateName")
        page = self._call(f"DescribeLaunchTemplateVersions {label}",
                          lambda: self._ec2.describe_launch_template_versions(**request))
        versions: list[Raw] = page.get("LaunchTemplateVersions", [])
        if not versions:
            return None
        data: Raw = versions[0].get("LaunchTemplateData", {})
        return data

    # --- ec2:DescribeInstanceTypes -----------------------------------------------------------------
    def instance_types(self, names: Sequence[str]) -> dict[str, Raw]:
        """``InstanceTypeInfo`` by name for those of ``names`` that exist."""
        out: dict[str, Raw] = {}
        for start in range(0, len(names), _TYPES_PER_CALL):
            chunk = list(names[start:start + _TYPES_PER_CALL])
            token: str | None = None
            while True:
                request: Raw = {"InstanceTypes": chunk, **({"NextToken": token} if token else {})}
                page = self._call(f"DescribeInstanceTypes {','.join(chunk)}",
                                  partial(self._ec2.describe_instance_types, **request))
                for info in page.get("InstanceTypes", []):
                    out[str(info["InstanceType"])] = info
                token = page.get("NextToken")
                if not token:
                    break
        return out

    # --- ec2:DescribeImages ------------------------------------------------------------------------
    def images(self, image_id: str) -> list[Raw]:
        """The image(s) behind ``image_id`` (architecture and virtualization type for attribute-based selection)."""
        page = self._call(f"DescribeImages {image_id}", lambda: self._ec2.describe_images(ImageIds=[image_id]))
        images: list[Raw] = page.get("Images", [])
        return images

    # --- ec2:GetInstanceTypesFromInstanceRequirements ------------------------------------------------
    def instance_types_for_requirements(self, requirements: Mapping[str, Any], architectures: Sequence[str],
                                        virtualization: Sequence[str]) -> list[str]:
        """The instance types matching attribute-based requirements, in AWS's order (all pages)."""
        out: list[str] = []
        token: str | None = None
        while True:
            request: Raw = {"ArchitectureTypes": list(architectures), "VirtualizationTypes": list(virtualization),
                            "InstanceRequirements": dict(requirements), **({"NextToken": token} if token else {})}
            page = self._call("GetInstanceTypesFromInstanceRequirements",
                              partial(self._ec2.get_instance_types_from_instance_requirements, **request))
            out.extend(str(t["InstanceType"]) for t in page.get("InstanceTypes", []) if t.get("InstanceType"))
            token = page.get("NextToken")
            if not token:
                return out

    # --- eks:DescribeNodegroup ---------------------------------------------------------------------
    def nodegroup(self, cluster: str, nodegroup: str) -> Raw:
        """One EKS managed node group (labels, taints, tags, capacity type, ...)."""
        page = self._call(f"DescribeNodegroup {cluster}/{nodegroup}",
                          lambda: self._eks.describe_nodegroup(clusterName=cluster, nodegroupName=nodegroup))
        found: Raw = page.get("nodegroup", {})
        return found

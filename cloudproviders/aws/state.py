"""One Auto Scaling group as the last ``DescribeAutoScalingGroups`` showed it (frozen).

The provider's cache is a map of these, replaced wholesale on refresh and edited only by
the provider's own successful calls. ``instances()`` follows CA's AWS provider
(``cloudprovider/aws/auto_scaling_groups.go``, ``createPlaceholdersForDesiredNonStartedInstances``;
``aws_cloud_provider.go``, instance status): desired capacity above the group's instances
shows as placeholder instances ``aws:///<zone>/i-placeholder-<group>-<n>`` in state
CREATING (unlike CA, terminating instances do not count against the desired capacity:
AWS launches their replacements), and when a scaling activity since this process's last
resize failed (a launch the cloud could not fulfil), those placeholders carry its error,
classified from the activity's message.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cloudproviders.aws.errors import CAPACITY_CODES, QUOTA_CODES
from cloudproviders.interface import Instance, InstanceError, InstanceErrorClass, InstanceState

__all__ = ["AsgInstance", "AsgState", "LaunchSpec", "MixedPolicy", "launch_error", "parse_provider_id"]

_CREATING = frozenset({"Pending", "Pending:Wait", "Pending:Proceed"})
_DELETING_PREFIXES = ("Terminating", "Terminated", "Detaching", "Detached")
PLACEHOLDER_PREFIX = "i-placeholder-"


#: CA ``validAwsRefIdRegex`` (``aws_cloud_provider.go``): ``aws:///<zone>/<id>[/<suffix>]``, or a placeholder.
_PROVIDER_ID = re.compile(r"aws:///[-0-9a-z]*/[-0-9a-z]*(/[-0-9a-z.]*)?|aws:///[-0-9a-z]*/i-placeholder.*")


def parse_provider_id(provider_id: str) -> str | None:
    """The instance ID of ``aws:///<zone>/<instance-id>`` as CA's ``AwsRefFromProviderId`` reads it; None otherwise
    (no providerID, another cloud's, an EKS hybrid node's)."""
    if not _PROVIDER_ID.fullmatch(provider_id):
        return None
    return provider_id[len("aws:///"):].split("/")[1] or None


@dataclass(frozen=True, slots=True)
class AsgInstance:
    instance_id: str
    zone: str
    lifecycle_state: str

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.instance_id}"

    @property
    def state(self) -> InstanceState:
        if self.lifecycle_state in _CREATING or self.lifecycle_state.startswith("Warmed:"):
            return InstanceState.CREATING
        if self.lifecycle_state.startswith(_DELETING_PREFIXES):
            return InstanceState.DELETING
        return InstanceState.RUNNING


def _template_spec(raw: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A launch template spec with its version made explicit: AWS reads no version as ``$Default``
    (CA ``aws_wrapper.go``, ``buildLaunchTemplateFromSpec``)."""
    if not raw:
        return None
    return {**raw, "Version": raw.get("Version") or "$Default"}


@dataclass(frozen=True, slots=True)
class MixedPolicy:
    """What a mixed-instances policy says about new instances (CA ``auto_scaling_groups.go``, ``buildAsgFromAWS``)."""

    launch_template: Mapping[str, Any] | None = None
    #: The overrides' instance types, in priority order.
    override_types: tuple[str, ...] = ()
    #: Attribute-based selection: the ``InstanceRequirements`` of the only override, as CA reads it.
    requirements_override: Mapping[str, Any] | None = None

    @classmethod
    def from_api(cls, raw: Mapping[str, Any]) -> MixedPolicy:
        template = raw.get("LaunchTemplate") or {}
        overrides = template.get("Overrides", []) or []
        types = tuple(str(o["InstanceType"]) for o in overrides if o.get("InstanceType"))
        requirements = overrides[0].get("InstanceRequirements") if len(overrides) == 1 else None
        return cls(_template_spec(template.get("LaunchTemplateSpecification")), types, requirements or None)


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """How the group launches instances: a launch configuration, a launch template, or a mixed policy."""

    launch_template: Mapping[str, Any] | None = None
    launch_configuration: str | None = None
    mixed: MixedPolicy | None = None

    @property
    def override_types(self) -> tuple[str, ...]:
        return self.mixed.override_types if self.mixed is not None else ()


@dataclass(frozen=True, slots=True)
class AsgState:
    name: str
    min_size: int
    max_size: int
    desired: int
    instances: tuple[AsgInstance, ...]
    zones: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    #: Why the newest launch failed, if it did (set by the provider from scaling activities).
    launch_error: InstanceError | None = None

    @classmethod
    def from_api(cls, raw: Mapping[str, Any]) -> AsgState:
        """From one ``DescribeAutoScalingGroups`` entry."""
        mixed = raw.get("MixedInstancesPolicy")
        launch = LaunchSpec(
            launch_template=_template_spec(raw.get("LaunchTemplate")),
            launch_configuration=raw.get("LaunchConfigurationName") or None,
            mixed=MixedPolicy.from_api(mixed) if mixed else None,
        )
        instances = tuple(
            AsgInstance(str(i["InstanceId"]), str(i.get("AvailabilityZone", "")), str(i.get("LifecycleState", "")))
            for i in raw.get("Instances", []) or []
        )
        return cls(
            name=str(raw["AutoScalingGroupName"]),
            min_size=int(raw.get("MinSize", 0)),
            max_size=int(raw.get("MaxSize", 0)),
            desired=int(raw.get("DesiredCapacity", 0)),
            instances=instances,
            # In AWS's order: the first is the template's zone, as in CA (``getAsgTemplate``).
            zones=tuple(str(z) for z in raw.get("AvailabilityZones", []) or []),
            tags={str(t["Key"]): str(t.get("Value", "")) for t in raw.get("Tags", []) or []},
            launch=launch,
        )

    def live_instances(self) -> tuple[AsgInstance, ...]:
        """Instances that count against the desired capacity (not terminating)."""
        return tuple(i for i in self.instances if i.state is not InstanceState.DELETING)

    def instance_list(self) -> list[Instance]:
        """Real instances, then one CREATING placeholder per desired instance AWS has not started."""
        out = [Instance(i.provider_id, i.state) for i in self.instances]
        zone = self.zones[0] if self.zones else ""
        for n in range(max(0, self.desired - len(self.live_instances()))):
            out.append(Instance(f"aws:///{zone}/{PLACEHOLDER_PREFIX}{self.name}-{n}", InstanceState.CREATING,
                                self.launch_error))
        return out


def launch_error(activities: Sequence[Mapping[str, Any]], since: dt.datetime | None) -> InstanceError | None:
    """The error of a failed scaling activity since ``since`` (when given), newest first.

    As CA's ``isNodeGroupAvailable`` (``auto_scaling_groups.go``): activities are read newest
    first until one started before ``since``; any failed one among them makes the group's
    requested instances unfulfillable, even when a newer activity succeeded.
    """
    for activity in activities:
        started = activity.get("StartTime")
        if since is not None and isinstance(started, dt.datetime) and started < since:
            return None
        if str(activity.get("StatusCode", "")) in ("Failed", "Cancelled"):
            return _classified(activity)
    return None


def _classified(activity: Mapping[str, Any]) -> InstanceError:
    message = str(activity.get("StatusMessage", "")) or str(activity.get("Description", ""))
    for codes, error_class in ((QUOTA_CODES, InstanceErrorClass.QUOTA),
                               (CAPACITY_CODES, InstanceErrorClass.OUT_OF_CAPACITY)):
        code = next((c for c in sorted(codes, key=lambda c: (-len(c), c)) if c in message), None)
        if code is not None:
            return InstanceError(error_class, code, message)
    return InstanceError(InstanceErrorClass.OTHER, str(activity.get("StatusCode", "Failed")), message)

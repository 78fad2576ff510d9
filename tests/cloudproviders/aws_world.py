"""AWS as moto fakes it, arranged for the provider's tests and conformance harness.

``aws_env`` sets dummy credentials and the region (and clears endpoint/profile variables
a developer's shell may carry); ``AwsWorld`` creates launch templates, launch
configurations and ASGs through boto3 against moto, and ``WireFaults`` answers chosen
calls instead of moto: botocore's ``before-call`` hook (what ``botocore.stub.Stubber``
uses) returns the XML body AWS would send, parsed by botocore's own protocol parser, so
the client raises exactly the ``ClientError`` a real response would give:

* ``fail(operation, status, code, message)``: the next call of ``operation`` gets that
  error response, as AWS would send it;
* ``respond(operation, body)``: the next call gets this XML body with status 200 (e.g.
  scaling activities moto does not record, or EC2 calls moto does not implement);
* ``lag_launches``: SetDesiredCapacity is accepted but no instance starts, as on real AWS
  in the seconds after the call (or forever, when a launch fails): moto's desired
  capacity is set without launching.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import boto3  # type: ignore[import-untyped]
import botocore.session  # type: ignore[import-untyped]
from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]
from botocore.loaders import create_loader  # type: ignore[import-untyped]
from botocore.parsers import create_parser  # type: ignore[import-untyped]
from moto.autoscaling.models import autoscaling_backends
from moto.core.models import DEFAULT_ACCOUNT_ID

from cloudproviders.aws import build_provider
from cloudproviders.aws.api import AwsApi
from cloudproviders.aws.errors import RetryPolicy
from cloudproviders.aws.provider import AwsProvider
from cloudproviders.config import ProviderConfig, StaticGroup

__all__ = ["AMI", "CLUSTER_TAGS", "EC2_XMLNS", "REGION", "AwsWorld", "WireFaults", "aws_env", "session"]

REGION = "us-east-1"
AMI = "ami-12c6146b"  # one of moto's built-in images
CLUSTER = "conformance"
#: CA's recommended auto-discovery tags.
CLUSTER_TAGS = {"k8s.io/cluster-autoscaler/enabled": "true", f"k8s.io/cluster-autoscaler/{CLUSTER}": "owned"}
DISCOVERY = f"asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/{CLUSTER}"
_XMLNS = "http://autoscaling.amazonaws.com/doc/2011-01-01/"
EC2_XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"


@contextmanager
def aws_env(**extra: str) -> Iterator[None]:
    """Dummy credentials and the region for the duration; nothing of the developer's AWS set-up leaks in."""
    values = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
              "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "AWS_CONFIG_FILE": os.devnull,
              "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "MOTO_EC2_LOAD_DEFAULT_AMIS": "false", **extra}
    cleared = [k for k in os.environ if (k.startswith("AWS_ENDPOINT_URL") or k == "AWS_PROFILE") and k not in extra]
    with mock.patch.dict(os.environ, values):
        for key in cleared:
            os.environ.pop(key, None)
        yield


class _Body:
    """The raw stream botocore reads a response from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def error_xml(code: str, message: str, sender: bool = True) -> str:
    kind = "Sender" if sender else "Receiver"
    return (f"<ErrorResponse xmlns=\"{_XMLNS}\"><Error><Type>{kind}</Type><Code>{code}</Code>"
            f"<Message>{message}</Message></Error><RequestId>fault</RequestId></ErrorResponse>")


@dataclass(frozen=True)
class _Error:
    code: str
    message: str

    def body(self, protocol: str, status: int) -> str:
        if protocol in ("rest-json", "json"):  # EKS
            return json.dumps({"__type": self.code, "message": self.message})
        return error_xml(self.code, self.message, status < 500)


@dataclass
class WireFaults:
    #: Pending canned answers per operation name (``SetDesiredCapacity``), first first.
    pending: dict[str, list[tuple[int, str | _Error]]] = field(default_factory=dict)
    lag_launches: bool = False
    #: Operation names in the order they reached the wire (answered here or by moto).
    calls: list[str] = field(default_factory=list)
    #: (operation, request parameters as serialized) in the same order.
    requests: list[tuple[str, Any]] = field(default_factory=list)

    def fail(self, operation: str, status: int, code: str, message: str) -> None:
        self.pending.setdefault(operation, []).append((status, _Error(code, message)))

    def respond(self, operation: str, body: str) -> None:
        self.pending.setdefault(operation, []).append((200, body))

    def install(self, session: boto3.Session) -> None:
        for service in ("auto-scaling", "ec2", "eks"):
            session.events.register_first(f"before-call.{service}", self._hook)

    def _hook(self, model: Any, params: Mapping[str, Any], **_: Any) -> tuple[AWSResponse, Any] | None:
        operation = str(model.name)
        self.calls.append(operation)
        self.requests.append((operation, params.get("body")))
        queued = self.pending.get(operation)
        if queued:
            status, answer = queued.pop(0)
            body = answer.body(model.metadata["protocol"], status) if isinstance(answer, _Error) else answer
            return _answer(model, status, body)
        if self.lag_launches and operation == "SetDesiredCapacity":
            groups = autoscaling_backends[DEFAULT_ACCOUNT_ID][REGION].autoscaling_groups
            form = params["body"]  # the query protocol's fields, before URL encoding
            groups[form["AutoScalingGroupName"]].desired_capacity = int(form["DesiredCapacity"])
            body = (f"<SetDesiredCapacityResponse xmlns=\"{_XMLNS}\"><ResponseMetadata><RequestId>lag</RequestId>"
                    "</ResponseMetadata></SetDesiredCapacityResponse>")
            return _answer(model, 200, body)
        return None


def _answer(model: Any, status: int, body: str) -> tuple[AWSResponse, Any]:
    """What botocore's endpoint would hand the client for this HTTP response."""
    raw = body.encode()
    parser = create_parser(model.metadata["protocol"])
    parsed = parser.parse({"status_code": status, "headers": {}, "body": raw}, model.output_shape)
    return AWSResponse("https://wire-fault.invalid/", status, {}, _Body(raw)), parsed


#: One botocore loader for every session of the test run: parsing the EC2 service model
#: takes most of a second, and a fresh session would parse it again.
_LOADER = create_loader()


def session() -> boto3.Session:
    """A boto3 session (standard credential and endpoint resolution) sharing the parsed service models."""
    core = botocore.session.Session()
    core.register_component("data_loader", _LOADER)
    return boto3.Session(botocore_session=core, region_name=REGION)


class AwsWorld:
    """ASGs in moto (call inside ``aws_env()`` and ``mock_aws()``)."""

    def __init__(self) -> None:
        self.session = session()
        self.faults = WireFaults()
        self.faults.install(self.session)
        self.sleeps: list[float] = []
        setup = session()  # no fault hooks on the arranging side
        self.ec2 = setup.client("ec2")
        self.autoscaling = setup.client("autoscaling")
        self.eks = setup.client("eks")

    def launch_template(self, name: str, instance_type: str, **data: Any) -> None:
        self.ec2.create_launch_template(LaunchTemplateName=name,
                                        LaunchTemplateData={"InstanceType": instance_type, "ImageId": AMI, **data})

    def group(self, name: str, *, min_size: int, max_size: int, desired: int, instance_type: str | None = None,
              launch_configuration: str | None = None, mixed_overrides: Sequence[str] = (),
              tags: Mapping[str, str] | None = None, zones: Sequence[str] = (f"{REGION}a",)) -> None:
        """An ASG launching ``instance_type`` through a launch template of its own name (or a launch configuration)."""
        request: dict[str, Any] = {
            "AutoScalingGroupName": name, "MinSize": min_size, "MaxSize": max_size, "DesiredCapacity": desired,
            "AvailabilityZones": list(zones),
            "Tags": [{"Key": k, "Value": v, "PropagateAtLaunch": False} for k, v in (tags or {}).items()],
        }
        if launch_configuration is not None:
            self.autoscaling.create_launch_configuration(LaunchConfigurationName=launch_configuration,
                                                         ImageId=AMI, InstanceType=instance_type or "m5.large")
            request["LaunchConfigurationName"] = launch_configuration
        elif mixed_overrides:
            self.launch_template(name, instance_type or mixed_overrides[0])
            request["MixedInstancesPolicy"] = {"LaunchTemplate": {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [{"InstanceType": t} for t in mixed_overrides]}}
        else:
            assert instance_type is not None
            self.launch_template(name, instance_type)
            request["LaunchTemplate"] = {"LaunchTemplateName": name, "Version": "$Latest"}
        self.autoscaling.create_auto_scaling_group(**request)

    def nodegroup(self, cluster: str, name: str, **fields: Any) -> None:
        """An EKS managed node group (and its cluster, made once) with ``labels``, ``taints``, ``tags``, ..."""
        role = f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/eks"
        if cluster not in self.eks.list_clusters()["clusters"]:
            self.eks.create_cluster(name=cluster, roleArn=role, resourcesVpcConfig={})
        self.eks.create_nodegroup(clusterName=cluster, nodegroupName=name, nodeRole=role, subnets=["subnet-1"],
                                  **fields)

    def instance_ids(self, group: str) -> list[str]:
        found = self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
        return sorted(i["InstanceId"] for i in found[0]["Instances"]) if found else []

    def instance_type_of(self, instance_id: str) -> str:
        reservations = self.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        return str(reservations[0]["Instances"][0]["InstanceType"])

    def api(self) -> AwsApi:
        """The provider's client layer over this world (faults and all), sleeping never."""
        return AwsApi(self.session, REGION, RetryPolicy(attempts=3, sleep=self.sleeps.append))

    def provider(self, *, static: Sequence[StaticGroup] = (), discovery: Sequence[str] = (),
                 refresh: bool = True, **config: Any) -> AwsProvider:
        """The provider over this world, sleeping never (waits recorded in ``sleeps``)."""
        built = build_provider(ProviderConfig(static_groups=tuple(static), auto_discovery=tuple(discovery), **config),
                               session=self.session, retry=RetryPolicy(attempts=3, sleep=self.sleeps.append))
        assert isinstance(built, AwsProvider)
        if refresh:
            built.refresh()
        return built

"""The AWS permissions the docs and ``deploy/`` grant are exactly the calls the provider makes.

The calls are read from ``cloudproviders/aws/api.py`` (every AWS call goes through it) and
named as IAM names them (``<service>:<Operation>``, botocore's operation names); the README's
"AWS" permission table and ``deploy/overlays/eks/iam-policy.json`` must list the same set:
nothing missing (a call AccessDenied in production), nothing extra (least privilege).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import boto3  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
#: api.py's client attributes -> (boto3 service name, IAM service prefix).
_CLIENTS = {"_autoscaling": ("autoscaling", "autoscaling"), "_ec2": ("ec2", "ec2"), "_eks": ("eks", "eks")}


def calls() -> set[str]:
    source = (ROOT / "cloudproviders/aws/api.py").read_text()
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    out: set[str] = set()
    for attribute, (service, prefix) in _CLIENTS.items():
        mapping = session.client(service).meta.method_to_api_mapping
        for method in re.findall(rf"self\.{attribute}\.(\w+)", source):
            out.add(f"{prefix}:{mapping[method]}")
    return out


def readme_permissions() -> set[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## AWS\n"):]
    section = section[section.index("**IAM permissions**"):]
    table = section[:section.index("\n\n", section.index("| permission |"))]
    return set(re.findall(r"^\| `([a-z0-9]+:[A-Za-z]+)` \|", table, flags=re.MULTILINE))


def policy_actions() -> set[str]:
    policy = json.loads((ROOT / "deploy/overlays/eks/iam-policy.json").read_text())
    return {action for statement in policy["Statement"] for action in statement["Action"]}


def test_the_provider_calls_what_the_docs_grant_and_nothing_else() -> None:
    made = calls()
    assert "eks:DescribeNodegroup" in made and "ec2:GetInstanceTypesFromInstanceRequirements" in made
    assert readme_permissions() == made
    assert policy_actions() == made

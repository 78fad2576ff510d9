"""The AWS cloud provider: Auto Scaling groups as node groups, through boto3.

``build_provider`` is what ``cloudproviders.config.load_provider("aws", config)`` calls.
It reads ``--cloud-config`` and the region, parses ``--node-group-auto-discovery``
(``asg:tag=...``) and the price table, and makes the clients; it makes no AWS call: the
loop's first ``refresh()`` lists the groups. Flags, IAM permissions and template tags:
README, "AWS".
"""

from __future__ import annotations

import boto3  # type: ignore[import-untyped]

from cloudproviders.aws.api import AwsApi
from cloudproviders.aws.errors import RetryPolicy
from cloudproviders.aws.pricing import load_prices
from cloudproviders.aws.provider import AwsProvider
from cloudproviders.aws.settings import parse_auto_discovery, read_cloud_config, resolve_region
from cloudproviders.config import CloudConfigError, ProviderConfig
from cloudproviders.interface import CloudProvider

__all__ = ["AwsProvider", "build_provider"]


def build_provider(config: ProviderConfig, *, session: boto3.Session | None = None,
                   retry: RetryPolicy | None = None) -> CloudProvider:
    """The AWS provider for ``config``; ``CloudConfigError`` (one line naming the flag) for bad input.

    ``session`` and ``retry`` are for embedding and tests (a session with its own event
    hooks, a retry policy that does not sleep); by default boto3's standard credential
    and endpoint resolution applies, ``AWS_ENDPOINT_URL`` included.
    """
    discovery = [parse_auto_discovery(spec) for spec in config.auto_discovery]
    if not config.static_groups and not discovery:
        raise CloudConfigError("--cloud-provider=aws: give --nodes=MIN:MAX:ASG or "
                               "--node-group-auto-discovery=asg:tag=<key>[=<value>],...")
    cloud_config = read_cloud_config(config.cloud_config)
    session = session or boto3.Session()
    region = resolve_region(cloud_config, session.region_name)
    api = AwsApi(session, region, retry)
    return AwsProvider(config, api, discovery, load_prices(config.price_file))

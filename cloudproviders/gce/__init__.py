"""Google Compute Engine provider: managed instance groups (MIGs) as node groups.

Entry point ``build_provider(config)`` (called by ``cloudproviders.config.load_provider``);
see ``settings.py`` for the ``--cloud-config`` file and ``README.md`` ("GCE") for flags,
IAM permissions and the template labels for local storage.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from cloudproviders.config import ProviderConfig
from cloudproviders.gce.api import ComputeApi
from cloudproviders.gce.provider import GceProvider
from cloudproviders.gce.settings import GceSettings, load_settings
from cloudproviders.interface import CloudProvider
from cloudproviders.retry import RetryPolicy

__all__ = ["GceProvider", "GceSettings", "RetryPolicy", "build_provider", "make_provider"]


def make_provider(config: ProviderConfig, settings: GceSettings, retry: RetryPolicy | None = None,
                  clock: Callable[[], float] = time.monotonic) -> GceProvider:
    """A provider with explicit settings, retry policy and clock (tests inject ones that never wait)."""
    return GceProvider(config, settings, ComputeApi(settings, retry or RetryPolicy()), clock=clock)


def build_provider(config: ProviderConfig) -> CloudProvider:
    """The GCE provider for these flags; ``CloudConfigError`` names a bad flag or config key."""
    return make_provider(config, load_settings(config.cloud_config, os.environ))

"""Azure provider: virtual machine scale sets (Uniform) as node groups.

Entry point ``build_provider(config)`` (called by ``cloudproviders.config.load_provider``);
see ``settings.py`` for the ``--cloud-config`` file and ``README.md`` ("Azure") for flags,
role permissions and the template tags for local storage.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from azure.core.credentials import TokenCredential

from cloudproviders.azure.api import ComputeApi, StaticTokenCredential
from cloudproviders.azure.provider import AzureProvider
from cloudproviders.azure.settings import AzureSettings, load_settings
from cloudproviders.config import ProviderConfig
from cloudproviders.interface import CloudProvider
from cloudproviders.retry import RetryPolicy

__all__ = ["AzureProvider", "AzureSettings", "RetryPolicy", "StaticTokenCredential", "build_provider",
           "make_provider"]


def make_provider(config: ProviderConfig, settings: AzureSettings, retry: RetryPolicy | None = None,
                  clock: Callable[[], float] = time.monotonic,
                  credential: TokenCredential | None = None) -> AzureProvider:
    """A provider with explicit settings, retry policy, clock and credential (tests never wait)."""
    return AzureProvider(config, settings, ComputeApi(settings, retry or RetryPolicy(), credential), clock=clock)


def build_provider(config: ProviderConfig) -> CloudProvider:
    """The Azure provider for these flags; ``CloudConfigError`` names a bad flag or config key."""
    return make_provider(config, load_settings(config.cloud_config, os.environ))

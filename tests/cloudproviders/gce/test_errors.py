"""GCE errors at the wire -> the CloudError family; transient ones retried; settings validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudproviders.config import CloudConfigError
from cloudproviders.gce import GceProvider
from cloudproviders.gce.provider import parse_auto_discovery
from cloudproviders.gce.settings import load_settings, parse_mig_name
from cloudproviders.interface import CloudError, InsufficientCapacity, NotFound, QuotaExceeded, Transient
from tests.cloudproviders.fakes.gce import FakeGce
from tests.cloudproviders.gce_world import ZONE, gce_node, gce_provider


def act(provider: GceProvider, operation: str) -> None:
    general = next(g for g in provider.node_groups() if g.name.endswith("/general"))
    if operation == "increase":
        general.increase_size(1)
    else:
        general.delete_nodes([gce_node("n", general.instances()[0].id.rsplit("/", 1)[-1])])


@pytest.mark.parametrize("operation", ["increase", "delete"])
@pytest.mark.parametrize(("kind", "error"), [
    pytest.param("capacity", InsufficientCapacity, id="capacity"),
    pytest.param("quota", QuotaExceeded, id="quota"),
    pytest.param("notfound", NotFound, id="notfound"),
])
def test_permanent_errors_are_raised_typed(provider: GceProvider, fake: FakeGce, operation: str, kind: str,
                                           error: type[CloudError]) -> None:
    fake.fail_next(operation, kind)
    with pytest.raises(error, match="general"):
        act(provider, operation)


def test_a_capacity_error_is_not_a_quota_error(provider: GceProvider, fake: FakeGce) -> None:
    fake.fail_next("increase", "capacity")
    with pytest.raises(InsufficientCapacity) as caught:
        act(provider, "increase")
    assert not isinstance(caught.value, QuotaExceeded)


@pytest.mark.parametrize("operation", ["increase", "delete"])
@pytest.mark.parametrize("kind", ["throttle", "server"])
def test_transient_errors_are_retried(provider: GceProvider, fake: FakeGce, sleeps: list[float], operation: str,
                                      kind: str) -> None:
    fake.retry_after = "3"
    fake.fail_next(operation, kind)
    act(provider, operation)
    assert sleeps[0] == (3.0 if kind == "throttle" else 1.0)  # Retry-After honoured for 429


def test_retries_are_bounded(provider: GceProvider, fake: FakeGce, sleeps: list[float]) -> None:
    for _ in range(4):
        fake.fail_next("increase", "server")
    with pytest.raises(Transient, match="HTTP 503"):
        act(provider, "increase")
    assert len([s for s in sleeps if s >= 1.0]) == 3  # four attempts, three waits, each capped


def test_refresh_fails_whole_when_a_static_mig_is_gone(provider: GceProvider, fake: FakeGce) -> None:
    del fake.migs[(ZONE, "nvme")]
    with pytest.raises(NotFound, match="nvme"):
        provider.refresh()


def test_a_refused_endpoint_is_transient(fake: FakeGce, sleeps: list[float]) -> None:
    built = gce_provider(fake, sleeps)
    fake.stop()
    with pytest.raises(Transient, match="ConnectionError"):
        built.refresh()
    built.close()


def test_slow_operations_are_polled_then_left_to_the_cloud(fake: FakeGce, sleeps: list[float],
                                                           caplog: pytest.LogCaptureFixture) -> None:
    fake.pending_polls = 3
    built = gce_provider(fake, sleeps, operation_timeout=0.25)
    built.refresh()
    act(built, "increase")
    assert sleeps == [0.1, 0.1, 0.1]
    fake.pending_polls = 10
    act(built, "increase")
    assert any("operation still running" in r.getMessage() for r in caplog.records)
    built.close()


@pytest.mark.parametrize(("text", "env", "message"), [
    pytest.param("", {}, "no \\[global\\] section", id="no-section"),
    pytest.param("[global]\nzones = a\n", {}, "project-id", id="no-project"),
    pytest.param("[global]\nproject-id = p\napi-endpoint = http://compute.example.com\n", {}, "https",
                 id="plain-http-remote"),
    pytest.param("[global]\nproject-id = p\noperation-timeout = soon\n", {}, "operation-timeout", id="bad-timeout"),
    pytest.param("not ini", {}, "cloud-config", id="not-ini"),
])
def test_bad_cloud_config(tmp_path: Path, text: str, env: dict[str, str], message: str) -> None:
    path = tmp_path / "gce.conf"
    path.write_text(text)
    with pytest.raises(CloudConfigError, match=message):
        load_settings(str(path), env)


def test_settings_from_environment() -> None:
    settings = load_settings(None, {"GCE_PROJECT": "p", "GCE_ZONES": "z1, z2", "GCE_API_ENDPOINT": "http://127.0.0.1:1"})
    assert (settings.project, settings.zones, settings.endpoint) == ("p", ("z1", "z2"), "http://127.0.0.1:1")
    with pytest.raises(CloudConfigError, match="GCE_PROJECT"):
        load_settings(None, {})


@pytest.mark.parametrize(("name", "expected"), [
    pytest.param("europe-west4-a/pool", ("p", "europe-west4-a", "pool"), id="zone-name"),
    pytest.param("https://www.googleapis.com/compute/v1/projects/q/zones/z/instanceGroups/pool", ("q", "z", "pool"),
                 id="url"),
    pytest.param("projects/q/zones/z/instanceGroupManagers/pool", ("q", "z", "pool"), id="manager-path"),
])
def test_mig_names(name: str, expected: tuple[str, str, str]) -> None:
    ref = parse_mig_name(name, "p")
    assert (ref.project, ref.zone, ref.name) == expected


@pytest.mark.parametrize("spec", [
    pytest.param("asg:tag=x", id="other-cloud"),
    pytest.param("mig:namePrefix=p,min=0", id="no-max"),
    pytest.param("mig:namePrefix=p,min=3,max=1", id="max-below-min"),
    pytest.param("mig:namePrefix=p,min=x,max=1", id="not-int"),
    pytest.param("mig:namePrefix=(,min=0,max=1", id="bad-regex"),
    pytest.param("mig:namePrefix=p,min=0,max=1,zone=z", id="unknown-field"),
])
def test_bad_auto_discovery(spec: str) -> None:
    with pytest.raises(CloudConfigError, match="auto-discovery"):
        parse_auto_discovery(spec)


def test_bad_mig_name() -> None:
    with pytest.raises(CloudConfigError, match="zone/name"):
        parse_mig_name("just-a-name", "p")


@pytest.mark.parametrize(("answer", "error"), [
    pytest.param((403, "quotaExceeded", "Quota 'CPUS' exceeded. Limit: 24.0"), QuotaExceeded, id="403-quota"),
    pytest.param((403, "rateLimitExceeded", "Rate Limit Exceeded"), Transient, id="403-rate-limit"),
    pytest.param((403, "userRateLimitExceeded", "User Rate Limit Exceeded"), Transient, id="403-user-rate-limit"),
    pytest.param((400, "invalid", "ZONE_RESOURCE_POOL_EXHAUSTED: no capacity"), InsufficientCapacity,
                 id="400-exhausted-in-message"),
    pytest.param((503, "backendError", "Backend Error"), Transient, id="503"),
    pytest.param((400, "invalid", "Invalid value for field 'size'"), CloudError, id="400-invalid"),
    pytest.param((412, "conditionNotMet", "Precondition failed"), CloudError, id="412"),
])
def test_http_errors_map(provider: GceProvider, fake: FakeGce, answer: tuple[int, str, str],
                         error: type[CloudError]) -> None:
    for _ in range(4):  # enough to outlast the retries of a transient one
        fake.fail_next_http("increase", *answer)
    with pytest.raises(CloudError) as caught:
        act(provider, "increase")
    assert type(caught.value) is error
    assert "resize" in str(caught.value)


@pytest.mark.parametrize(("code", "error"), [
    pytest.param("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", InsufficientCapacity, id="exhausted-details"),
    pytest.param("QUOTA_EXCEEDED", QuotaExceeded, id="quota"),
    pytest.param("RESOURCE_NOT_FOUND", NotFound, id="not-found"),
    pytest.param("CONDITION_NOT_MET", CloudError, id="other"),
])
def test_operation_errors_map(provider: GceProvider, fake: FakeGce, code: str, error: type[CloudError]) -> None:
    fake.fail_next_operation("delete", code, f"{code}: details")
    with pytest.raises(CloudError) as caught:
        act(provider, "delete")
    assert type(caught.value) is error
    assert code in str(caught.value)


def test_missing_credentials_is_one_clear_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from cloudproviders.config import ProviderConfig, load_provider

    monkeypatch.setenv("GCE_PROJECT", "p")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(CloudConfigError, match="no Application Default Credentials"):
        load_provider("gce", ProviderConfig())

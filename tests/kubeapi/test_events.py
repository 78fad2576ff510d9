"""Events as client-go's recorder writes them: a repeat is counted, one object cannot flood."""

from __future__ import annotations

from typing import Any

from kubeapi import KubeClusterAPI
from kubeapi.events import SPAM_BURST, SPAM_REFILL_SECONDS, EventRecorder
from tests.fakeapi import FakeAPIServer


def _events(api: FakeAPIServer, namespace: str = "default") -> list[dict[str, Any]]:
    return [api.state.get("Event", name, namespace) for name in api.state.names("Event")]


def test_a_repeated_event_is_counted_not_duplicated(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    for _ in range(3):
        cluster.record_event("Pod", "default", "web", "NotTriggerScaleUp", "pod didn't trigger scale-up")
    cluster.record_event("Pod", "default", "web", "NotTriggerScaleUp", "another message")
    events = sorted(_events(api), key=lambda e: e["message"])
    assert [(e["message"], e["count"]) for e in events] == [
        ("another message", 1), ("pod didn't trigger scale-up", 3)]
    assert len(api.requests("POST", "/events$")) == 2
    assert len(api.requests("PATCH", "/events/")) == 2


def test_an_expired_event_is_written_anew(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    cluster.record_event("Node", "", "n0", "ScaleDown", "removing")
    (name,) = api.state.names("Event")
    api.state.remove("Event", name, "default")  # the API server's event TTL
    cluster.record_event("Node", "", "n0", "ScaleDown", "removing")
    assert [e["count"] for e in _events(api)] == [1]


def test_one_object_cannot_flood(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    now = [0.0]
    recorder = EventRecorder(cluster.transport, clock=lambda: now[0])
    sent = [recorder.record("Node", "", "n0", "ScaleDown", f"m{i}", warning=False) for i in range(SPAM_BURST + 5)]
    assert sent.count(True) == SPAM_BURST and recorder.dropped == 5
    assert recorder.record("Node", "", "n1", "ScaleDown", "other node", warning=False), "budgets are per object"
    now[0] += SPAM_REFILL_SECONDS
    assert recorder.record("Node", "", "n0", "ScaleDown", "later", warning=False)
    assert not recorder.record("Node", "", "n0", "ScaleDown", "too soon", warning=False)

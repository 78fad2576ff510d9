"""Reservations are held only for pods the cluster shows: anyone who can reach /filter could
otherwise hold a pending claim's bytes on every node for a real pod's whole timeout."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import pod_json
from tests.scheduling.test_reservations import filter_names, race_cluster
from tests.scheduling.wire import extender_args, extender_at

Json = dict[str, Any]


def _with_uid(pod: Json, uid: str) -> Json:
    pod["metadata"]["uid"] = uid
    return pod


@pytest.mark.parametrize("forged", [
    pytest.param(pod_json("ghost", claims=["a-data"]), id="no-such-pod"),
    pytest.param(_with_uid(pod_json("a", claims=["a-data"]), "forged-uid"), id="name-of-a-pod-uid-not-its"),
    pytest.param(pod_json("b", claims=["a-data"]), id="claim-the-pod-does-not-mount"),
])
def test_a_forged_pod_is_answered_but_holds_nothing(forged: Json) -> None:
    with extender_at(race_cluster()) as (client, extender, _):
        answer = client.post("/filter", extender_args(forged, names=["last"]))
        real = filter_names(client, "a", "a-data", ["last"])
        refused = extender.metrics.registry.get_sample_value("storage_scheduler_extender_reservations_refused_total")
    assert answer["NodeNames"] == ["last"]  # the answer itself is harmless
    assert real["NodeNames"] == ["last"]  # and takes nothing from the real pod
    assert [r.uid for r in extender.book.others("")] == ["uid-default-a"]
    assert refused == 1


def test_many_forged_calls_leave_no_reservations_behind() -> None:
    with extender_at(race_cluster()) as (client, extender, _):
        for i in range(300):
            client.post("/filter", extender_args(_with_uid(pod_json(f"f{i}", claims=["a-data"]), f"u{i}"),
                                                 names=["last", "other"]))
        held = len(extender.book)
        real = filter_names(client, "a", "a-data", ["last"])
    assert held == 0
    assert real["NodeNames"] == ["last"]

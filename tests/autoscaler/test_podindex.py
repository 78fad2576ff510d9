"""The per-node pod index patched from last loop's (``autoscaler/podindex.py``) equals one built afresh."""

from __future__ import annotations

import random
from collections.abc import Callable

import msgspec.structs
import pytest

from autoscaler.podindex import PodIndex, index_pods
from kube.model import Pod, Resources
from tests.factories import pod

CUTOFF = -10
Change = Callable[[list[Pod], random.Random], list[Pod]]


def _cluster(seed: int) -> list[Pod]:
    rng = random.Random(seed)
    pods = [pod(f"p{i}", str(rng.randint(1, 4)), "1Gi", f"n{rng.randint(0, 19)}", owner=("ReplicaSet", "rs"))
            for i in range(300)]
    pods += [pod(f"pending{i}", "1", "1Gi") for i in range(10)]
    pods.append(pod("ports", "1", "1Gi", "n3", host_ports=[8080]))
    return pods


def _replace(pods: list[Pod], rng: random.Random, count: int, **changes: object) -> list[Pod]:
    out = list(pods)
    for i in rng.sample([i for i, p in enumerate(pods) if p.node_name and p.name.startswith("p")], count):
        out[i] = msgspec.structs.replace(out[i], **changes)
    return out


def _relabel(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return _replace(pods, rng, 5, labels={"churn": "1"})


def _resize(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return _replace(pods, rng, 5, requests=Resources(7000, 2**33))


def _start_deleting(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return _replace(pods, rng, 3, deleted=1.0)


def _finish(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return _replace(pods, rng, 3, phase="Succeeded")


def _move(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return _replace(pods, rng, 2, node_name="n0")


def _append(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return [*pods, *(pod(f"new{i}", "1", "1Gi", f"n{rng.randint(0, 19)}") for i in range(4)),
            pod("new-pending", "1", "1Gi")]


def _append_on_a_new_node(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return [*pods, pod("first-on-n99", "1", "1Gi", "n99")]


def _remove(pods: list[Pod], rng: random.Random) -> list[Pod]:
    out = list(pods)
    del out[rng.randrange(len(out))]
    return out


def _bind_pending(pods: list[Pod], rng: random.Random) -> list[Pod]:
    out = list(pods)
    i = next(i for i, p in enumerate(out) if not p.node_name)
    out[i] = msgspec.structs.replace(out[i], node_name="n1", phase="Running")
    return out


def _touch_the_ports_pod(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return [msgspec.structs.replace(p, labels={"x": "y"}) if p.name == "ports" else p for p in pods]


def _expendable(pods: list[Pod], rng: random.Random) -> list[Pod]:
    return _replace(pods, rng, 2, priority=-100)


@pytest.mark.parametrize(("change", "patched"), [
    pytest.param(_relabel, True, id="labels-changed-in-place"),
    pytest.param(_resize, True, id="requests-changed-in-place"),
    pytest.param(_start_deleting, True, id="deletion-started"),
    pytest.param(_append, True, id="pods-appended"),
    pytest.param(_finish, False, id="pods-finished"),
    pytest.param(_move, False, id="pods-moved-to-another-node"),
    pytest.param(_append_on_a_new_node, False, id="first-pod-of-a-node"),
    pytest.param(_remove, False, id="a-pod-removed"),
    pytest.param(_bind_pending, False, id="a-pending-pod-bound"),
    pytest.param(_touch_the_ports_pod, False, id="a-pod-with-host-ports"),
    pytest.param(_expendable, False, id="pods-became-expendable"),
])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_patched_index_equals_a_fresh_one(change: Callable[[list[Pod], random.Random], list[Pod]], patched: bool,
                                          seed: int) -> None:
    before = _cluster(seed)
    previous = index_pods(before, CUTOFF)
    after = change(before, random.Random(seed))
    result = index_pods(after, CUTOFF, previous)
    fresh = index_pods(after, CUTOFF)
    for field in PodIndex.__dataclass_fields__:
        assert getattr(result, field) == getattr(fresh, field), field
    assert list(result.by_node) == list(fresh.by_node), "nodes in the same order"
    untouched = [name for name in fresh.by_node if fresh.by_node[name] == previous.by_node.get(name)]
    if patched:
        assert result.pods is not previous.pods
        assert all(result.by_node[name] is previous.by_node[name] for name in untouched), \
            "unchanged nodes keep their lists (what is kept per node stays valid by identity)"
    else:
        assert all(result.by_node[name] is not previous.by_node.get(name) for name in result.by_node)


def test_the_same_objects_give_the_same_index() -> None:
    pods = _cluster(1)
    previous = index_pods(pods, CUTOFF)
    assert index_pods(list(pods), CUTOFF, previous) is previous

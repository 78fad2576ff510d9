"""``run`` keeps its memory flat: the live loop over the fake API server, a few hundred loops.

Every loop has something to do, so whatever the loop kept per loop would show: an empty
node joins the ``ng`` group and is removed (tainted, deleted, its events written), and a
pod no group can help stays pending. Between loop ``WARM_UP`` (caches warm, every table at
its working size) and ``LOOPS`` loops later, the test compares

* what the loop and the adapter hold: the bytes of every object reachable from them
  (``retained_bytes``), which a record kept per loop (an event, its message, a list slot)
  would grow by hundreds of bytes a loop;
* the process's resident set size, as the operator sees it (coarsely: the fake API
  server shares the process and allocators keep freed pages).

The fake API server's own bookkeeping is kept bounded the way a real one's is: a short
watch history, Events expired (their TTL), the request log cleared each loop.
"""

from __future__ import annotations

import gc
import logging
import resource
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.run.events import EventEmitter
from app.run.loop import LiveLoop
from app.run.metrics import Metrics
from app.run.seams import ActLog, GuardedCluster, GuardedProvider
from kubeapi import KubeClusterAPI
from tests.app.fakecloud import FakeCloud, FakeGroup, provider_id
from tests.factories import node_json, options, pod_json
from tests.fakeapi import FakeAPIServer, FakeState
from tests.kubeapi.conftest import connect

NOW = 1_800_000_000.0
WARM_UP = 30
LOOPS = 150
#: What the loop may hold more after 150 loops: about 100 bytes a loop, the responses of whichever watches
#: happen to be open (a record kept per loop costs hundreds of bytes each loop).
MAX_RETAINED_BYTES = 16 * 1024
MAX_RSS_BYTES = 16 * 2**20
#: Not part of what an object holds: code, classes, modules (shared by every instance).
_SHARED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType,
           types.MethodDescriptorType, types.WrapperDescriptorType, types.GetSetDescriptorType)


def _node(name: str) -> dict[str, object]:
    obj = node_json(name, "4", "8Gi", labels={"ng": "ng"})
    obj["spec"]["providerID"] = provider_id("ng", name)
    return obj


@pytest.fixture
def adapter(tmp_path: Path) -> Iterator[tuple[FakeAPIServer, KubeClusterAPI, FakeCloud]]:
    with FakeAPIServer(FakeState(history=100), bookmark_seconds=0.1) as server:
        server.state.put(_node("busy"))
        server.state.put(pod_json("web", cpu="3", node="busy", pending=False))
        server.state.put(pod_json("huge", cpu="64"))
        cloud = FakeCloud(server.state)
        cloud.groups["ng"] = FakeGroup(cloud, "ng", 0, 100)
        cluster = connect(server, tmp_path)
        cluster.start()
        assert cluster.wait_synced(5.0), cluster.caches.unavailable_reason()
        try:
            yield server, cluster, cloud
        finally:
            cluster.stop()


def _loop(cluster: KubeClusterAPI, cloud: FakeCloud) -> LiveLoop:
    metrics, acts = Metrics(), ActLog()
    guarded = GuardedCluster(cluster, metrics, lambda: None, acts)
    emitter = EventEmitter(guarded, "kube-system", "cluster-autoscaler-status")
    flags = options("--scale-down-unneeded-time=0s", "--scale-down-delay-after-add=0s",
                    "--scale-down-delay-after-delete=0s")
    return LiveLoop(guarded, GuardedProvider(cloud, metrics, lambda: None, acts), flags, metrics, emitter, acts)


def _cached(cluster: KubeClusterAPI, name: str) -> bool:
    return any(n.name == name for n in cluster.caches.nodes())


def _expire(server: FakeAPIServer) -> None:
    for event in server.state.objects():
        if event.get("kind") == "Event":
            server.state.remove("Event", event["metadata"]["name"], event["metadata"].get("namespace", ""))
    server.log.clear()


def retained_bytes(*roots: object) -> int:
    """``sys.getsizeof`` summed over every object reachable from ``roots``, each counted once.

    The test's doubles (the fake cloud and, behind it, the fake API server's state) are
    not the loop's memory: the walk stops at them.
    """
    seen: set[int] = set()
    stack = list(roots)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SHARED) or type(obj).__module__.startswith("tests."):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _wait(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 5.0
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.001)


def test_memory_stays_flat_over_hundreds_of_loops(adapter: tuple[FakeAPIServer, KubeClusterAPI, FakeCloud]) -> None:
    server, cluster, cloud = adapter
    loop = _loop(cluster, cloud)
    group = cloud.groups["ng"]
    logging.disable(logging.WARNING)  # the test's log capture keeps every record
    try:
        for i in range(WARM_UP + LOOPS):
            if i == WARM_UP:
                gc.collect()
                held, rss = retained_bytes(loop, cluster), _rss()
            server.state.put(_node("idle"))
            group.target = group.target_size() + 1  # the instance the cloud launched for it
            _wait(lambda: _cached(cluster, "idle"), "the idle node cached")
            assert loop.iterate(NOW + i), f"loop {i} failed"
            _wait(lambda: not _cached(cluster, "idle"), "the idle node gone")
            _expire(server)
        gc.collect()
        held_after, rss_after = retained_bytes(loop, cluster), _rss()
    finally:
        logging.disable(logging.NOTSET)
    assert len(group.deleted) == WARM_UP + LOOPS, "every loop removed the idle node"
    assert held_after - held < MAX_RETAINED_BYTES, f"the loop holds {held_after - held} bytes more after {LOOPS} loops"
    assert rss_after - rss < MAX_RSS_BYTES, f"RSS grew by {(rss_after - rss) / 2**20:.1f} MiB over {LOOPS} loops"

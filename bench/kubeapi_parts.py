"""The three processes of the adapter benchmark (``bench.kubeapi``): server, adapter, decode.

Each runs in its own subprocess so its peak RSS is its own:

* ``serve``: a fake API server (``tests.fakeapi``) holding the snapshot's objects,
  kept as encoded JSON; it prints one JSON line (url, load time, RSS) when ready and
  serves until its stdin closes.
* ``adapter``: ``KubeClusterAPI`` against that server: start-up sync time, then
  ``--loops`` calls of ``list_objects()`` with some pod churn between them (patched
  through the API, arriving as watch events), LIST calls after sync, peak RSS.
* ``decode``: one raw LIST of every pod, decoded (a) by the adapter's path (msgspec +
  ``kube.convert``) and (b) by the official client's generated models
  (``ApiClient.deserialize(..., "V1PodList")``, what ``list_pod_for_all_namespaces``
  does), each timed.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Json = dict[str, Any]


def _rss_kib() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


# ---------------------------------------------------------------------------- server


def realistic_pod(pod: Json, index: int) -> None:
    """Add what a real API server returns for a running pod (defaults, status, service-account volume).

    The generator's pods are ~430 bytes; real ones are several KB, and decoding cost
    grows with size. This brings them to ~2.5 KB without changing what the model reads.
    """
    meta, spec = pod["metadata"], pod["spec"]
    meta.setdefault("generateName", meta["name"].rsplit("-", 1)[0] + "-")
    meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    meta["labels"] = {**meta.get("labels", {}), "pod-template-hash": f"{index % 9973:05x}"}
    vol = f"kube-api-access-{index % 100000:05d}"
    for container in spec["containers"]:
        container.update({
            "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    {"name": "LOG_LEVEL", "value": "info"}],
            "volumeMounts": [{"name": vol, "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        })
    spec.update({
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {},
        "serviceAccount": "default", "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "tolerationSeconds": 300}],
        "volumes": [*spec.get("volumes", []), {"name": vol, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                         "fieldPath": "metadata.namespace"}}]}}]}}],
    })
    ip = f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}"
    t = "2026-01-01T00:00:05Z"
    pod["status"] = {
        "phase": "Running", "hostIP": "192.168.0.1", "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": "Burstable",
        "startTime": t,
        "conditions": [{"type": c, "status": "True", "lastProbeTime": None, "lastTransitionTime": t}
                       for c in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": c["name"], "ready": True, "restartCount": 0, "started": True,
                               "image": c.get("image", ""), "imageID": "docker-pullable://app@sha256:" + "0" * 64,
                               "containerID": f"containerd://{index:064x}",
                               "state": {"running": {"startedAt": t}}, "lastState": {}}
                              for c in spec["containers"]],
    }


def serve(snapshot: Path, realistic: bool, bookmark_seconds: float) -> int:
    from tests.fakeapi import FakeAPIServer, FakeState
    from tests.fakeapi.resources import resource_for

    started = time.perf_counter()
    gc.disable()
    with open(snapshot, encoding="utf-8") as handle:
        items = json.load(handle)["items"]

    def known(items: list[Any]) -> Iterator[Json]:
        for i in range(len(items)):
            obj, items[i] = items[i], None
            try:
                resource_for(str(obj["kind"]), obj.get("apiVersion"))
            except KeyError:
                continue  # NodeGroup: the snapshot's own kind, not served by an API server
            if realistic and obj["kind"] == "Pod":
                realistic_pod(obj, i)
            yield obj

    state = FakeState()
    loaded = state.load(known(items))
    del items
    gc.enable()
    gc.collect()
    server = FakeAPIServer(state, bookmark_seconds=bookmark_seconds, max_watch_seconds=3600).start()
    print(json.dumps({"url": server.url, "objects": loaded, "load_seconds": time.perf_counter() - started,
                      "rss_kib": _rss_kib()}), flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop()
    return 0


# ---------------------------------------------------------------------------- adapter


def adapter(kubeconfig: str, loops: int, churn: int, qps: float, burst: int) -> int:
    import urllib3

    from kubeapi import KubeClusterAPI

    started = time.perf_counter()
    api = KubeClusterAPI.from_kubeconfig(kubeconfig, qps=qps, burst=burst, timeout=(5.0, 300.0))
    api.start()
    if not api.wait_synced(1200):
        print(json.dumps({"error": f"not synced: {api.caches.unavailable_reason()}"}), flush=True)
        return 1
    sync_seconds = time.perf_counter() - started
    rss_after_sync = _rss_kib()
    lists_at_sync = sum(n for call, n in api.transport.calls.items() if call.startswith("LIST"))
    times: list[float] = []
    pods = sorted((p.namespace, p.name) for p in api.caches.pods())[:churn * loops]
    counts: Json = {}
    writer = urllib3.PoolManager()
    host = api.transport.api_client.configuration.host
    for loop in range(loops):
        # Churn: another client changes pods between loops; they arrive as watch events.
        version = api.caches.version
        for ns, name in pods[loop * churn:(loop + 1) * churn]:
            writer.request("PATCH", f"{host}/api/v1/namespaces/{ns}/pods/{name}",
                           body=json.dumps({"metadata": {"labels": {"bench-loop": str(loop)}}}).encode(),
                           headers={"Content-Type": "application/merge-patch+json"})
        deadline = time.monotonic() + 30
        while api.caches.version < version + churn and time.monotonic() < deadline:
            time.sleep(0.005)
        t0 = time.perf_counter()
        objects = api.list_objects()
        times.append(time.perf_counter() - t0)
        counts = {"nodes": len(objects.nodes), "pods": len(objects.pods), "claims": len(objects.claims),
                  "volumes": len(objects.volumes), "controllers": len(objects.controllers)}
    lists_after = sum(n for call, n in api.transport.calls.items() if call.startswith("LIST")) - lists_at_sync
    result = {
        "sync_seconds": sync_seconds, "throttled_seconds": api.transport.bucket.waited,
        "list_objects_seconds": times, "list_objects_median": sorted(times)[len(times) // 2],
        "list_objects_max": max(times), "lists_after_sync": lists_after, "counts": counts,
        "rss_after_sync_kib": rss_after_sync, "peak_rss_kib": _rss_kib(), "churn_per_loop": churn,
        "calls": dict(api.transport.calls),
    }
    api.stop()
    print(json.dumps(result), flush=True)
    return 0


# ---------------------------------------------------------------------------- decode


def decode(kubeconfig: str, generated: bool) -> int:
    import msgspec

    from kube.convert import Converter
    from kube.names import StorageNames
    from kubeapi import KubeClusterAPI
    from kubeapi.kinds import KINDS, convert_one
    from kubeapi.transport import DROPPED, ListBody, decode_item

    api = KubeClusterAPI.from_kubeconfig(kubeconfig, qps=100, burst=100, timeout=(5.0, 600.0))
    response = api.transport._call("GET", "/api/v1/pods")
    raw: bytes = response.data
    # Every variant runs with the cyclic GC paused (the adapter pauses it while it
    # converts a LIST): this compares decoding work, not collector scans.
    gc.disable()
    result: Json = {"bytes": len(raw)}
    pods_kind = next(k for k in KINDS if k.name == "pods")

    # The adapter's path: the list with items left encoded, then each item decoded and converted.
    t0 = time.perf_counter()
    body = msgspec.json.decode(raw, type=ListBody)
    items = body.items or []
    converter = Converter(StorageNames())
    decode_s = 0.0
    for i in range(len(items)):
        d0 = time.perf_counter()
        obj = decode_item(items[i])
        items[i] = DROPPED
        decode_s += time.perf_counter() - d0
        convert_one(converter, pods_kind, obj, "bench")
    total = time.perf_counter() - t0
    result.update({"pods": len(items), "own_decode_seconds": decode_s, "own_convert_seconds": total - decode_s,
                   "own_total_seconds": total})
    del body, items
    t0 = time.perf_counter()
    json.loads(raw)
    result["json_loads_seconds"] = time.perf_counter() - t0
    if generated:
        class _Response:
            data = raw.decode()

        t0 = time.perf_counter()
        pod_list = api.transport.api_client.deserialize(_Response(), "V1PodList")
        result["generated_seconds"] = time.perf_counter() - t0
        result["generated_pods"] = len(pod_list.items)
    result["peak_rss_kib"] = _rss_kib()
    print(json.dumps(result), flush=True)
    return 0

"""The scheduling servers' transport under load: ``python -m bench.http_load [--nodes N] [--clients C]``.

Starts ``scheduler-extender`` and ``pod-webhook`` as deployed (own processes, loopback,
plain HTTP) and measures what issue 18 asks of the transport:

* **keep-alive load**: ``--clients`` connections opened at once, each sending
  ``--requests`` calls back to back (a closed loop); latency per call from the first
  byte sent to the last byte read, p50/p99/max over all calls. Three loads: ``/mutate``
  (one AdmissionReview), ``/filter`` of a pod without claims over a small cluster
  (``--small`` nodes), and the same over ``--nodes`` nodes (each call then carries 5,000
  names and is throughput-bound: one event loop answers 200 clients in turn);
* **burst**: ``--clients`` new connections at once, one call each: the time until all are
  answered;
* **oversized body**: a 60 MB ``Content-Length`` and a 60 MB chunked body: status, time,
  and the server's peak RSS (``VmHWM``) before and after;
* **ExtenderArgs with whole Nodes** (``nodeCacheCapable: false``) at ``--nodes``: the body
  size for kubelet-like nodes (labels, conditions, addresses, node info and
  ``--images`` images each, no managedFields) and the answer's status and time.

The server's CPU time per call (``/proc/<pid>/stat``) is reported beside the wall time:
on a shared machine it is the figure that moves least with other processes' load; so is
the client's own (this process), since on two cores a client as costly as the server
would be half of what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from bench.filter_latency import _cluster_file, _cpu_seconds, _percentile, _start, build_cluster_json, pod

__all__ = ["main"]

Json = dict[str, Any]
MB = 1_000_000


def kubelet_node(i: int, images: int) -> Json:
    """A node as the API server serves it (and kube-scheduler forwards it), without managedFields."""
    name = f"node-{i:05d}"
    condition = {"lastHeartbeatTime": "2026-06-01T12:00:00Z", "lastTransitionTime": "2026-05-01T12:00:00Z"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"0f6c9a54-2a4e-4a6f-9d7e-{i:012d}", "resourceVersion": "123456789",
                     "creationTimestamp": "2026-05-01T12:00:00Z",
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": f"zone-{i % 3}",
                                "topology.kubernetes.io/region": "region-1",
                                "node.kubernetes.io/instance-type": "m5.4xlarge",
                                "beta.kubernetes.io/instance-type": "m5.4xlarge", "beta.kubernetes.io/os": "linux",
                                "beta.kubernetes.io/arch": "amd64", "eks.amazonaws.com/nodegroup": "nvme-pool"},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                                     "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{i:017x}"}),
                                     "rok.arrikto.com/capacity": str(1 << 40)}},
        "spec": {"providerID": f"aws:///region-1a/i-{i:017x}", "podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24"},
        "status": {
            "capacity": {"cpu": "16", "memory": "65049588Ki", "pods": "110", "ephemeral-storage": "104845292Ki",
                         "hugepages-2Mi": "0", "attachable-volumes-aws-ebs": "25"},
            "allocatable": {"cpu": "15890m", "memory": "63977460Ki", "pods": "110",
                            "ephemeral-storage": "95551679124", "hugepages-2Mi": "0",
                            "attachable-volumes-aws-ebs": "25"},
            "conditions": [{**condition, "type": t, "status": s, "reason": r, "message": m} for t, s, r, m in (
                ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 256 % 256}.{i % 256}"},
                          {"type": "Hostname", "address": f"ip-10-0-{i // 256 % 256}-{i % 256}.ec2.internal"},
                          {"type": "InternalDNS", "address": f"ip-10-0-{i // 256 % 256}-{i % 256}.ec2.internal"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": f"{i:032x}", "systemUUID": f"ec2{i:029x}", "bootID": f"{i:032x}",
                         "kernelVersion": "5.10.210-201.852.amzn2.x86_64", "osImage": "Amazon Linux 2",
                         "containerRuntimeVersion": "containerd://1.7.11", "kubeletVersion": "v1.30.6",
                         "kubeProxyVersion": "v1.30.6", "operatingSystem": "linux", "architecture": "amd64"},
            "images": [{"names": [f"registry.example/team-{k % 17}/service-{k}@sha256:{k:064x}",
                                  f"registry.example/team-{k % 17}/service-{k}:v1.{k}.0"],
                        "sizeBytes": 50_000_000 + k * 1_000_003} for k in range(images)],
        },
    }


# --- the servers ------------------------------------------------------------------------------
def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / MB
    return 0.0


def _request(path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    await reader.readexactly(length)
    return status


class _Caller(asyncio.Protocol):
    """One keep-alive client in a closed loop: sends ``payload``, reads the answer, sends again,
    ``calls`` times. A protocol, not a StreamReader and a coroutine, so the client costs a
    fraction of the server's CPU per call: on two cores it must not be what is measured."""

    def __init__(self, payload: bytes, calls: int, start: asyncio.Event, times: list[float],
                 done: asyncio.Future[int]) -> None:
        self._payload, self._left, self._start = payload, calls, start
        self._times, self._done = times, done
        self._transport: asyncio.Transport | None = None
        self._buffer = b""
        self._need = -1  # bytes of the whole answer, once its headers are in
        self._status = 0
        self._bad = 0
        self._began = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        asyncio.get_running_loop().create_task(self._go())

    async def _go(self) -> None:
        await self._start.wait()
        self._send()

    def _send(self) -> None:
        assert self._transport is not None
        self._began = time.perf_counter()
        self._transport.write(self._payload)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._need < 0:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self._buffer[:end]
            self._status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self._need = end + 4 + length
        if len(self._buffer) < self._need:
            return
        self._times.append((time.perf_counter() - self._began) * 1e3)
        self._bad += self._status != 200
        self._buffer, self._need, self._left = self._buffer[self._need:], -1, self._left - 1
        if self._left:
            self._send()
        elif self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._done.done():
            self._done.set_result(self._bad + self._left)  # calls never answered count as bad


async def _keep_alive(port: int, payload: bytes, clients: int, requests: int) -> tuple[list[float], int]:
    """Every client's latencies (ms) in one list, and the number of non-200 answers."""
    loop = asyncio.get_running_loop()
    start = asyncio.Event()
    times: list[float] = []
    done: list[asyncio.Future[int]] = []
    for _ in range(clients):
        finished: asyncio.Future[int] = loop.create_future()
        await loop.create_connection(functools.partial(_Caller, payload, requests, start, times, finished),
                                     "127.0.0.1", port)
        done.append(finished)
    await asyncio.sleep(0.5)  # every connection open before the first call
    start.set()
    return times, sum(await asyncio.gather(*done))


async def _burst(port: int, payload: bytes, clients: int) -> tuple[float, int]:
    """Seconds until ``clients`` new connections opened at once are all answered; how many got 200."""
    async def one() -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(payload)
        status = await asyncio.wait_for(_read_response(reader), 30)
        writer.close()
        return status

    began = time.perf_counter()
    statuses = await asyncio.gather(*(one() for _ in range(clients)), return_exceptions=True)
    return time.perf_counter() - began, sum(1 for s in statuses if s == 200)


async def _oversized(port: int, chunked: bool) -> tuple[int, float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    began = time.perf_counter()
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {60 * MB}"
    writer.write(f"POST /filter HTTP/1.1\r\nHost: bench\r\n{framing}\r\n\r\n".encode())
    block = b"[{}," * (MB // 4)
    status = 0
    try:
        # With a length the answer comes before any body byte; a chunked body is sent until refused.
        for _ in range(60 if chunked else 0):
            writer.write(b"%x\r\n%s\r\n" % (len(block), block))
            await writer.drain()
            if reader.at_eof() or reader._buffer:  # type: ignore[attr-defined]  # answered early
                break
    except ConnectionError:
        pass
    try:
        status = await asyncio.wait_for(_read_response(reader), 30)
    except (ConnectionError, asyncio.IncompleteReadError):
        status = -1
    writer.close()
    return status, time.perf_counter() - began


# --- the report ---------------------------------------------------------------------------------
def _row(what: str, times: list[float], bad: int, cpu_ms: float, client_ms: float) -> str:
    return (f"{what:<34} {len(times):>6} {statistics.median(times):>8.2f} {_percentile(times, 0.99):>8.2f}"
            f" {max(times):>8.2f} {cpu_ms:>8.3f} {client_ms:>8.3f} {bad:>5}")


def _load(label: str, pid: int, port: int, path: str, body: Json, *, args: argparse.Namespace) -> str:
    payload = _request(path, json.dumps(body).encode())
    cpu, client = _cpu_seconds(pid), time.process_time()
    times, bad = asyncio.run(_keep_alive(port, payload, args.clients, args.requests))
    cpu_ms = (_cpu_seconds(pid) - cpu) / len(times) * 1e3
    # The client's own CPU per call: on two cores, a client near the server's cost is half the measure.
    client_ms = (time.process_time() - client) / len(times) * 1e3
    return _row(label, times, bad, cpu_ms, client_ms)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.http_load")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--small", type=int, default=100, help="nodes of the small cluster")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=20, help="calls per keep-alive client")
    parser.add_argument("--images", type=int, default=20, help="images per node in the full-Nodes body")
    args = parser.parse_args(argv)
    out = sys.stdout
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "u1", "operation": "CREATE", "namespace": "default", "object": pod("p", [])}}
    with tempfile.TemporaryDirectory() as directory:
        small = _cluster_file(build_cluster_json(args.small, 0), directory)
        big_json = build_cluster_json(args.nodes, args.nodes * 4)
        big = os.path.join(directory, "big.json")
        with open(big, "w", encoding="utf-8") as handle:
            json.dump({"apiVersion": "v1", "kind": "List", "items": big_json}, handle)
        names = [o["metadata"]["name"] for o in big_json if o["kind"] == "Node"]
        del big_json
        # What is left (the names, the payloads) lives to the end: keep the cyclic collector
        # from walking it during the loads: it doubled the client's CPU per /mutate call.
        gc.collect()
        gc.freeze()
        out.write(f"{args.clients} keep-alive clients x {args.requests} calls (closed loop); load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
        out.write(f"{'load':<34} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu ms':>8} "
                  f"{'client':>8} {'!200':>5}\n")
        hook, hook_port = _start(small, "pod-webhook")
        try:
            out.write(_load("/mutate", hook.pid, hook_port, "/mutate", review, args=args) + "\n")
        finally:
            hook.terminate()
            hook.wait(30)
        ext, port = _start(small)
        try:
            small_names = [f"node-{i:05d}" for i in range(args.small)]
            out.write(_load(f"/filter, {args.small} nodes", ext.pid, port, "/filter",
                            {"Pod": pod("no-claims", []), "NodeNames": small_names}, args=args) + "\n")
            took, ok = asyncio.run(_burst(port, _request("/filter", json.dumps(
                {"Pod": pod("no-claims", []), "NodeNames": small_names}).encode()), args.clients))
            out.write(f"burst: {args.clients} new connections at once, {ok} answered 200 in {took:.2f}s\n")
        finally:
            ext.terminate()
            ext.wait(30)
        ext, port = _start(big)
        try:
            out.write(_load(f"/filter, {args.nodes} nodes", ext.pid, port, "/filter",
                            {"Pod": pod("no-claims", []), "NodeNames": names}, args=args) + "\n")
            before = _peak_rss_mb(ext.pid)
            for chunked in (False, True):
                status, took = asyncio.run(_oversized(port, chunked))
                out.write(f"60 MB {'chunked' if chunked else 'Content-Length'} body: status {status} in "
                          f"{took:.2f}s; server peak RSS {before:.0f} -> {_peak_rss_mb(ext.pid):.0f} MB\n")
            full = json.dumps({"Pod": pod("no-claims", []), "NodeNames": None, "Nodes": {
                "apiVersion": "v1", "kind": "NodeList", "metadata": {},
                "items": [kubelet_node(i, args.images) for i in range(args.nodes)]}}).encode()
            began = time.perf_counter()
            status = asyncio.run(_one_call(port, _request("/filter", full)))
            out.write(f"ExtenderArgs with whole Nodes, {args.nodes} nodes x {args.images} images: "
                      f"{len(full) / MB:.1f} MB ({len(full) / args.nodes / 1000:.1f} kB a node), status {status} in "
                      f"{time.perf_counter() - began:.2f}s; server peak RSS {_peak_rss_mb(ext.pid):.0f} MB\n")
        finally:
            ext.terminate()
            ext.wait(30)
    return 0


async def _one_call(port: int, payload: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 26)
    writer.write(payload)
    status = await asyncio.wait_for(_read_response(reader), 120)
    writer.close()
    return status


if __name__ == "__main__":
    raise SystemExit(main())

"""The live adapter's benchmark: ``python -m bench.kubeapi [options]``.

A fake API server (its own process) holds the benchmark cluster (``bench.run``'s
snapshot with no pending pods: 5,000 nodes x 30 pods = 150,000 pods by default). The
adapter (its own process) syncs its watch caches from it and then serves
``list_objects()`` from memory. Reported:

* start-up sync time (every LIST converted, every watch open), and the part of it
  spent waiting for the client-side rate limiter (``--qps``/``--burst``);
* steady-state ``list_objects()`` time (target <= 1 s) with ``--churn`` pod changes
  arriving as watch events between loops;
* LIST calls after sync (target 0); peak RSS of the adapter process;
* decoding one 150,000-pod LIST: msgspec + ``kube.convert`` vs the official client's
  generated models.

Results go to ``bench/out/kubeapi-results.json``; see bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.run import DEFAULT_OUT, REPO, BenchError, ensure_snapshot, run_measured, snapshot_path

__all__ = ["main"]

LIST_OBJECTS_TARGET = 1.0


def _kubeconfig(url: str, path: Path) -> Path:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "bench",
              "clusters": [{"name": "bench", "cluster": {"server": url}}],
              "users": [{"name": "bench", "user": {"token": "bench"}}],
              "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}]}
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _child(part: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "bench.kubeapi", "--part", part, *args]


def _measured(argv: list[str], out_dir: Path, stem: str, timeout: float) -> dict[str, Any]:
    stdout, stderr = out_dir / f"{stem}.out", out_dir / f"{stem}.stderr"
    seconds, rss, code = run_measured(argv, stdout, stderr, timeout)
    lines = stdout.read_text(encoding="utf-8").strip().splitlines()
    if code != 0 or not lines:
        tail = stderr.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        raise BenchError(f"{stem} failed (exit status {code}): {' / '.join(tail) or lines}")
    result: dict[str, Any] = json.loads(lines[-1])
    result["wall_seconds"], result["child_peak_rss_kib"] = seconds, rss
    return result


def run(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / ".gitignore").write_text("*\n", encoding="utf-8")
    snapshot = snapshot_path(out_dir, args.nodes, args.pods_per_node, 0, args.seed)
    ensure_snapshot(snapshot, args.nodes, args.pods_per_node, 0, args.seed)
    serve_argv = _child("serve", str(snapshot), "--bookmark-seconds", str(args.bookmark_seconds))
    if args.realistic:
        serve_argv.append("--realistic")
    print("loading the fake API server ...", file=sys.stderr, flush=True)
    server = subprocess.Popen(serve_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO, text=True)
    try:
        assert server.stdout is not None
        ready = server.stdout.readline()
        if not ready:
            raise BenchError("the fake API server did not start")
        served = json.loads(ready)
        kubeconfig = _kubeconfig(served["url"], out_dir / "kubeapi-kubeconfig.json")
        print(f"serving {served['objects']} objects at {served['url']}; measuring the adapter ...",
              file=sys.stderr, flush=True)
        adapter = _measured(_child("adapter", str(kubeconfig), "--loops", str(args.loops), "--churn", str(args.churn),
                                   "--qps", str(args.qps), "--burst", str(args.burst)),
                            out_dir, "kubeapi-adapter", args.timeout)
        print("decoding one LIST of every pod ...", file=sys.stderr, flush=True)
        decode_argv = _child("decode", str(kubeconfig))
        if not args.skip_generated:
            decode_argv.append("--generated")
        decoded = _measured(decode_argv, out_dir, "kubeapi-decode", args.timeout)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    results = {"parameters": {**{k: v for k, v in vars(args).items() if k != "part"}, "snapshot": str(snapshot)},
               "machine": {"nproc": os.cpu_count(), "python": sys.version.split()[0]},
               "server": served, "adapter": adapter, "decode": decoded,
               "targets": {"list_objects_seconds_max": LIST_OBJECTS_TARGET, "lists_after_sync": 0}}
    (out_dir / "kubeapi-results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(render(results))
    ok = adapter["list_objects_max"] <= LIST_OBJECTS_TARGET and adapter["lists_after_sync"] == 0
    return 0 if ok else 1


def render(results: dict[str, Any]) -> str:
    a, d, s = results["adapter"], results["decode"], results["server"]
    mib = 1024.0
    lines = [
        f"cluster: {a['counts']}  (server holds {s['objects']} objects, loaded in {s['load_seconds']:.1f}s, "
        f"{s['rss_kib'] / mib:.0f} MiB)",
        f"start-up sync           {a['sync_seconds']:8.2f} s  (--qps {results['parameters']['qps']:g} "
        f"--burst {results['parameters']['burst']})",
        f"list_objects median     {a['list_objects_median']:8.3f} s  max {a['list_objects_max']:.3f} s "
        f"(target <= {LIST_OBJECTS_TARGET:.0f} s; {a['churn_per_loop']} pod changes per loop)",
        f"LIST calls after sync   {a['lists_after_sync']:8d}    (target 0)",
        f"adapter peak RSS        {a['child_peak_rss_kib'] / mib:8.0f} MiB (after sync "
        f"{a['rss_after_sync_kib'] / mib:.0f} MiB)",
        f"decode {d['pods']} pods ({d['bytes'] / 1e6:.0f} MB):",
        f"  msgspec + kube.convert {d['own_total_seconds']:7.2f} s  (decode {d['own_decode_seconds']:.2f} s, "
        f"convert {d['own_convert_seconds']:.2f} s; json.loads alone {d['json_loads_seconds']:.2f} s)",
    ]
    if "generated_seconds" in d:
        lines.append(f"  client generated models {d['generated_seconds']:6.2f} s  "
                     f"({d['generated_seconds'] / d['own_total_seconds']:.1f}x ours)")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.kubeapi", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--loops", type=int, default=10, help="list_objects() calls measured")
    parser.add_argument("--churn", type=int, default=100, help="pods patched between loops")
    parser.add_argument("--qps", type=float, default=5.0, help="client-side rate limit (CA's default 5)")
    parser.add_argument("--burst", type=int, default=10, help="client-side burst (CA's default 10)")
    parser.add_argument("--bookmark-seconds", type=float, default=5.0)
    parser.add_argument("--realistic", action="store_true",
                        help="serve pods as a real API server would (defaults, status: ~2.5 KB each)")
    parser.add_argument("--skip-generated", action="store_true", help="skip the generated-model decoding")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--part", choices=["serve", "adapter", "decode"], help=argparse.SUPPRESS)
    parser.add_argument("target", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--generated", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from bench import kubeapi_parts as parts

    if args.part == "serve":
        return parts.serve(Path(args.target), args.realistic, args.bookmark_seconds)
    if args.part == "adapter":
        return parts.adapter(args.target, args.loops, args.churn, args.qps, args.burst)
    if args.part == "decode":
        return parts.decode(args.target, args.generated)
    try:
        return run(args)
    except BenchError as exc:
        print(f"bench.kubeapi: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

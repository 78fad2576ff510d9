"""Command line: ``plan SNAPSHOT... [flags]``, ``explain SNAPSHOT... TARGET...``, ``simulate SCENARIO``, ``run``.

Bad input never ends in a traceback: a bad flag, file or object prints one line on
stderr naming what is wrong, and the exit status is 2. ``plan`` imports neither
cloud SDKs nor the Kubernetes client, so it starts fast.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from autoscaler.config import ConfigError, Options, add_flags, options_from_args
from autoscaler.flagspec import ignored_given
from autoscaler.flagtable import DECISION_FLAGS

if TYPE_CHECKING:
    from autoscaler.runonce import LoopDecision
    from kube.model import ClusterObjects

__all__ = ["main"]

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors in one line (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _now(text: str | None) -> float:
    if text is None:
        return time.time()
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--now: {text!r} is not an RFC 3339 time (e.g. 2026-06-01T12:00:00Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


#: ``simulate --max-simulated-loops``' default: about 20 minutes at the ~1 ms a loop of the
#: shipped scenarios (mixed-day: 8,640 loops in about 8 s), far beyond any of them.
DEFAULT_MAX_LOOPS = 1_000_000


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="autoscaler", description="A storage-aware Kubernetes Cluster Autoscaler.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    # Go's flag package knows no abbreviations: --scale-down-unneeded is not --scale-down-unneeded-time.
    plan = sub.add_parser("plan", help="what the autoscaler would do with a cluster snapshot (offline)",
                          allow_abbrev=False, usage="%(prog)s SNAPSHOT... [flags]")
    plan.add_argument("snapshots", nargs="+", metavar="SNAPSHOT", help="YAML/JSON files, - for stdin")
    plan.add_argument("--output", choices=("json", "text"), default="json")
    plan.add_argument("--now", default=None, help="the loop's clock, RFC 3339 (default: now)")
    add_flags(plan)
    explain = sub.add_parser("explain", help="why pods did (not) trigger a scale-up, why nodes are (not) removed",
                             allow_abbrev=False, usage="%(prog)s [SNAPSHOT...] TARGET... [flags]")
    explain.add_argument("items", nargs="+", metavar="SNAPSHOT|TARGET",
                         help="snapshot files (- for stdin), then targets: pod/NAMESPACE/NAME, node/NAME, pods, nodes; "
                              "no file: the live cluster, read only, with run's flags (--kubeconfig, --nodes, ...)")
    explain.add_argument("--output", choices=("json", "text"), default="json")
    explain.add_argument("--now", default=None, help="the loop's clock, RFC 3339 (default: now)")
    add_flags(explain)
    sim = sub.add_parser("simulate", help="run the real loop over a simulated cluster and cloud (scenario file)",
                         allow_abbrev=False, usage="%(prog)s SCENARIO [flags]")
    sim.add_argument("scenario", metavar="SCENARIO", help="scenario YAML (snapshot objects + one Scenario)")
    sim.add_argument("--report", metavar="FILE.json", help="write the machine-readable report here")
    sim.add_argument("--chart", metavar="FILE.png", help="draw nodes, pending pods and storage use over time")
    compare = sim.add_mutually_exclusive_group()
    compare.add_argument("--compare", action="store_true",
                         help="run twice, storage-aware and --storage-aware=false, and compare")
    compare.add_argument("--compare-order", action="store_true",
                         help="run twice, storage-aware both times, with --scale-down-order=disruption-cost "
                              "and =upstream, and compare")
    sim.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    sim.add_argument("--seed", type=int, default=0, help="seed of the simulated world")
    sim.add_argument("--max-simulated-loops", type=int, default=DEFAULT_MAX_LOOPS, metavar="N",
                     help=f"refuse a run of more loops (duration / scan interval, per variant) than this "
                          f"(default {DEFAULT_MAX_LOOPS:,})")
    add_flags(sim)
    # Unset unless given, so a scenario's own scanInterval applies by default.
    sim.set_defaults(scan_interval=None)
    from app.run.flags import add_run_flags

    live = sub.add_parser("run", help="the live autoscaler: a Kubernetes cluster and a cloud provider",
                          allow_abbrev=False, usage="%(prog)s [flags] (every flag: docs/flags.md)")
    add_flags(live)
    add_run_flags(live)
    add_run_flags(explain)  # explain with no snapshot file reads the live cluster as run does
    from app.scheduling_cmd import add_commands

    add_commands(sub)
    return parser


def load_without_collector(paths: Sequence[str], options: Options) -> ClusterObjects:
    """Load with the cyclic collector paused, then freeze what was loaded.

    ``plan`` is one-shot: the parsed tree holds no cycles and scanning it repeatedly
    would cost more than parsing it, and the loaded objects live as long as the
    decision, so freezing them keeps the collector from re-scanning ~10^6 objects on
    every later collection. The library itself never touches the collector.
    """
    from kube.load import load_snapshot

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return load_snapshot(paths, options.storage, options.feature_gates)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _priority_config(path: str) -> str:
    """The ``--priority-config`` file, read within the input limits and parsed now, so a bad
    file stops ``plan`` with one line instead of being found (or ignored) mid-decision."""
    from autoscaler.expander.priority import PriorityConfigError, parse_priorities
    from kube.convert import InputError
    from kube.documents import check_yaml, read_text

    # Every error names the flag first, then the file: a person looks at the flag, not at a snapshot.
    try:
        text = read_text(path)
        check_yaml(path, text)
    except InputError as exc:
        raise InputError(_FLAG, exc.source, exc.field, exc.message) from None
    try:
        parse_priorities(text)
    except PriorityConfigError as exc:
        raise InputError(_FLAG, path, "", str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(_FLAG, path, "", f"unreadable ({type(exc).__name__})") from None
    return text


_FLAG = "--priority-config"


def _plan(args: argparse.Namespace, options: Options) -> int:
    # One decision, then exit: the collector stays paused for the whole command (what
    # ``run_once`` and the rendering allocate is freed by reference counting; collections
    # would only rescan it).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _plan_once(args, options)
    finally:
        if was_enabled:
            gc.enable()


def decide(paths: Sequence[str], options: Options, now: float) -> tuple[ClusterObjects, LoopDecision]:
    """Load a snapshot and run one loop of the decision code on it (``plan`` and ``explain`` alike).

    Raises ``InputError`` for bad input.
    """
    from autoscaler.runonce import run_once
    from cloudproviders.snapshot import SnapshotProvider

    priorities = None
    if options.priority_config_file is not None:
        priorities = _priority_config(options.priority_config_file)
    objects = load_without_collector(paths, options)
    if priorities is not None:
        objects.priority_config = priorities
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    return objects, run_once(objects, provider, options, now, steady_state=True)


def _plan_once(args: argparse.Namespace, options: Options) -> int:
    from app.plan_output import dumps, to_json, to_text
    from kube.convert import InputError

    now = _now(args.now)
    try:
        _, decision = decide(args.snapshots, options, now)
    except InputError as exc:
        sys.stderr.write(f"autoscaler plan: {exc}\n")
        return EXIT_BAD_INPUT
    if args.output == "json":
        sys.stdout.write(dumps(to_json(decision)))
    else:
        sys.stdout.write(to_text(decision))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a bad flag already reported in one line
        return int(exc.code or 0)
    if args.command in ("scheduler-extender", "pod-webhook"):  # servers with flags of their own
        from app.scheduling_cmd import run as serve

        return serve(args)
    try:
        options = options_from_args(args)
        if args.command in ("plan", "simulate"):
            for flag in ignored_given(args, DECISION_FLAGS):
                sys.stderr.write(f"autoscaler {args.command}: warning: flag --{flag.name} has no effect here: "
                                 f"{flag.ignored}\n")
        if options.ignored_feature_gates:  # accepted as CA accepts Kubernetes' gates; nothing here reads them
            sys.stderr.write(f"autoscaler {args.command}: --feature-gates: not modelled, ignored: "
                             f"{', '.join(options.ignored_feature_gates)}\n")
        if args.command == "plan":
            return _plan(args, options)
        if args.command == "explain":
            from app.explain.command import explain

            return explain(args, options, _now(args.now))
        if args.command == "simulate":
            from app.simulate.command import simulate

            return simulate(args, options)
        if args.command == "run":
            from app.run.command import run

            return run(args, options)
    except ConfigError as exc:
        sys.stderr.write(f"autoscaler {args.command}: {exc}\n")
        return EXIT_BAD_INPUT
    parser.error(f"unknown command {args.command}")

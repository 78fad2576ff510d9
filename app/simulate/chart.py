"""``simulate --chart``: nodes, pending pods, storage utilization and bytes being unpinned over simulated time.

One PNG with four stacked panels sharing the time axis; with ``--compare`` both
runs are drawn, storage-aware solid and upstream dashed. matplotlib is imported
here only, with the Agg backend (no display needed).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.simulate.runner import RunResult

__all__ = ["write_chart"]

GiB = 2**30


def write_chart(runs: Sequence[tuple[str, RunResult]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(10, 10), sharex=True, constrained_layout=True)
    styles = ["-", "--", ":"]
    for i, (label, run) in enumerate(runs):
        hours = [p.time / 3600 for p in run.timeline]
        style = styles[i % len(styles)]
        groups = sorted({g for p in run.timeline for g in p.nodes})
        total = [sum(p.nodes.values()) for p in run.timeline]
        axes[0].plot(hours, total, style, linewidth=2, label=f"{label}: all nodes")
        if len(groups) > 1:
            for g in groups:
                axes[0].plot(hours, [p.nodes.get(g, 0) for p in run.timeline], style, linewidth=1,
                             alpha=0.6, label=f"{label}: {g}")
        axes[1].plot(hours, [p.pending for p in run.timeline], style, linewidth=2, label=label)
        storage = [p.storage_utilization * 100 if p.storage_utilization is not None else float("nan")
                   for p in run.timeline]
        axes[2].plot(hours, storage, style, linewidth=2, label=label)
        axes[3].plot(hours, [p.unpin_bytes_in_flight / GiB for p in run.timeline], style, linewidth=2, label=label)
    axes[0].set_ylabel("nodes")
    axes[1].set_ylabel("pending pods")
    axes[2].set_ylabel("local storage used (%)")
    axes[3].set_ylabel("bytes in flight (GiB)")
    axes[3].set_ylim(bottom=0)
    axes[3].set_xlabel("simulated time (hours)")
    axes[0].set_title(title)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", ncol=2)
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""bench.latency's report: the markdown tables (latency, throughput, CPU per request, footprint) and
the chart, from the results bench.latency writes to latency.json."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.queries import KINDS


def cpu_cell(row: dict, key: str, name: str) -> str:
    value = (row.get(key) or {}).get(name)
    return "—" if value is None else f"{value:.1f}"

def markdown(results: dict) -> str:
    lines = [
        "| memories | query kind | clients | recall p50 / p95 / p99 ms | recall/s | bare _msearch p50 / p95 / p99 ms | bare/s | recall ÷ bare p50 / p95 | all engine calls p50 "
        "| CPU ms per recall: service / engine | CPU ms per bare: engine |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sorted(results["sizes"], key=int):
        res = results["sizes"][size]
        for kind, per_c in res["kinds"].items():
            for conc, row in sorted(per_c.items(), key=lambda kv: int(kv[0])):
                r, b = row["recall"], row["bare"]
                lines.append(
                    f"| {int(size):,} | {kind} | {conc} | {r['p50']:.1f} / {r['p95']:.1f} / {r['p99']:.1f} | {r['qps']:.0f} | "
                    f"{b['p50']:.1f} / {b['p95']:.1f} / {b['p99']:.1f} | {b['qps']:.0f} | {row['ratio_p50']:.2f} / {row['ratio_p95']:.2f} | "
                    f"{row['bare_all']['p50']:.1f} | {cpu_cell(row, 'cpu_ms_per_recall', 'service')} / {cpu_cell(row, 'cpu_ms_per_recall', 'engine')} | "
                    f"{cpu_cell(row, 'cpu_ms_per_bare', 'engine')} |"
                )
    lines.append("")
    lines.append("| memories | index on disk (as loaded) | per 100k memories | edges index | segments | engine heap used / max | engine RSS | load time | after the runs: deleted docs, disk |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for size in sorted(results["sizes"], key=int):
        res = results["sizes"][size]
        f = res.get("footprint_loaded") or res["footprint"]
        after = res["footprint"]
        n = int(size)
        per100k = f["memories_bytes"] / n * 100_000
        load = res.get("load") or {}
        lines.append(
            f"| {n:,} | {f['memories_bytes'] / 2**20:,.0f} MB | {per100k / 2**20:,.0f} MB | {f['edges_bytes'] / 2**20:,.0f} MB ({f['edges_docs']:,} edges) | "
            f"{f['segments']} | {f['heap_used_bytes'] / 2**20:,.0f} / {f['heap_max_bytes'] / 2**20:,.0f} MB | "
            f"{format(f['jvm_rss_bytes'] / 2**20, ',.0f') + ' MB' if f.get('jvm_rss_bytes') else '—'} | "
            f"{(str(round(load['seconds'])) + ' s (' + str(round(load['memories_per_s'])) + '/s, ' + load['vectors'] + ' vectors)') if load else 'reused'} | "
            f"{after.get('memories_docs_deleted', 0):,}, {after['memories_bytes'] / 2**20:,.0f} MB |"
        )
    return "\n".join(lines)


def chart(results: dict, path: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("no chart: matplotlib is missing (make bench-latency installs the bench extra)", file=sys.stderr)
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(results["sizes"], key=int)
    kinds = [k for k in KINDS if any(k in results["sizes"][s]["kinds"] for s in sizes)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    for kind in kinds:
        xs = [int(s) for s in sizes if "1" in results["sizes"][s]["kinds"].get(kind, {})]
        p50 = [results["sizes"][str(x)]["kinds"][kind]["1"]["recall"]["p50"] for x in xs]
        p95 = [results["sizes"][str(x)]["kinds"][kind]["1"]["recall"]["p95"] for x in xs]
        line, = ax1.plot(xs, p50, marker="o", label=f"{kind} p50")
        ax1.plot(xs, p95, marker="x", linestyle=":", color=line.get_color(), label=f"{kind} p95")
    xs = [int(s) for s in sizes if "1" in results["sizes"][s]["kinds"].get("unscoped", {})]
    if xs:
        ax1.plot(xs, [results["sizes"][str(x)]["kinds"]["unscoped"]["1"]["bare"]["p50"] for x in xs], color="black",
                 linestyle="--", marker="s", label="bare engine p50 (unscoped)")
    ax1.set_xscale("log")
    ax1.set_xlabel("memories")
    ax1.set_ylabel("GET /recall latency, ms (1 client)")
    ax1.set_title("Recall latency vs corpus size")
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=7, ncol=2)
    width = 0.8 / max(1, len(sizes))
    for i, s in enumerate(sizes):
        vals = [results["sizes"][s]["kinds"].get(k, {}).get("1", {}).get("ratio_p50", 0) for k in kinds]
        ax2.bar([j + i * width for j in range(len(kinds))], vals, width, label=f"{int(s):,} memories")
    ax2.axhline(1.5, color="red", linestyle="--", linewidth=1, label="goal ≤ 1.5")
    ax2.set_xticks([j + width * (len(sizes) - 1) / 2 for j in range(len(kinds))], kinds)
    ax2.set_ylabel("recall p50 ÷ bare _msearch p50")
    ax2.set_title("Recall vs the bare engine (1 client)")
    ax2.grid(True, axis="y", alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True



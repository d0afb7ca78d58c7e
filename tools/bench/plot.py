#!/usr/bin/env python3
"""Plots each cost of a scale benchmark run against N, one line per backend (and liveness mode).

    npm run bench:scale -- --backend kubernetes,etcd,zookeeper --json scale.json
    python3 tools/bench/plot.py scale.json scale.png

Needs matplotlib (Debian: apt-get install python3-matplotlib). A size that
saturated is drawn with a cross instead of a dot; one that was not run is left
out. The title carries the run's date, machine and options, as the table does.
The elections-only baseline (N = 0, `--members 0`) is a dotted level across
each panel it has a value in, for the other lines to be read against.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402

MIB = 2**20


def latency(key, stat, unit_ms=1):
    return lambda r: r[key]["summary"][stat] / unit_ms if r[key].get("summary") else None


# (title, unit, [(label, value of a row or None)])
PANELS = [
    ("API server / server CPU", "cores", [("load", lambda r: r["server"]["cores"]), ("idle", lambda r: r["server"]["idleCores"])]),
    ("server RSS", "MiB", [("", lambda r: r["server"]["rssBytes"] / MIB)]),
    ("requests", "per second", [("", lambda r: r["requests"]["perSecond"])]),
    ("member writes (heartbeats, removals)", "per second", [("", lambda r: r["requests"].get("memberWritesPerSecond"))]),
    ("watch events delivered, in all", "per second", [("", lambda r: r["watch"]["eventsPerSecond"])]),
    ("watch events per process", "per second", [("", lambda r: r["watch"]["perProcessPerSecond"])]),
    ("CPU per member", "millicores", [("", lambda r: r["perMember"]["cores"] * 1000)]),
    ("RSS per member", "MiB", [("", lambda r: r["perMember"]["rssBytes"] / MIB)]),
    ("announce → seen by every master", "ms", [("p50", latency("announce", "p50")), ("p99", latency("announce", "p99"))]),
    ("crash → removed", "s", [("p50", latency("crash", "p50", 1000)), ("p99", latency("crash", "p99", 1000))]),
    ("graceful handover", "ms", [("p50", latency("handover", "p50")), ("p99", latency("handover", "p99"))]),
]


def main(source, target):
    with open(source) as f:
        results = json.load(f)
    rows = [r for r in results["rows"] if not r.get("skipped") and r.get("server")]
    # One line per backend and member setting, named as the table names it (results.ts seriesName).
    def series_of(r):
        if r["members"] == 0:
            return f'{r["backend"]} (elections only)'
        setting = [r["liveness"]] if r.get("liveness", "heartbeat") != "heartbeat" else []
        if r.get("memberTiming"):
            t = r["memberTiming"]
            setting.append(f'{t["heartbeatIntervalMs"]}/{t["leaseDurationMs"]} ms')
        return f'{r["backend"]} ({", ".join(setting)})' if setting else r["backend"]

    baselines = [r for r in rows if r["members"] == 0]
    rows = [r for r in rows if r["members"] > 0]
    backends = list(dict.fromkeys(series_of(r) for r in rows))
    sizes = sorted({r["members"] for r in rows})
    columns = 5
    lines = (len(PANELS) + columns - 1) // columns
    fig, axes = plt.subplots(lines, columns, figsize=(4.2 * columns, 3.6 * lines), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (title, unit, series) in zip(axes.flat, PANELS):
        for b, backend in enumerate(backends):
            mine = sorted((r for r in rows if series_of(r) == backend), key=lambda r: r["members"])
            for s, (label, value) in enumerate(series):
                points = [(r["members"], value(r), bool(r["saturated"])) for r in mine]
                points = [p for p in points if p[1] is not None]
                if not points:
                    continue
                style = ["-", "--", ":"][s % 3]
                name = f"{backend} {label}".strip()
                ax.plot([p[0] for p in points], [p[1] for p in points], style, color=colours[b % len(colours)], label=name)
                for n, y, saturated in points:
                    ax.plot(n, y, "x" if saturated else "o", color=colours[b % len(colours)], markersize=7 if saturated else 4)
        for base in baselines:
            value = series[0][1](base)
            if value is not None:
                ax.axhline(value, linestyle=":", color="grey", label=f"{series_of(base)}, N = 0")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("N (members)")
        ax.set_ylabel(unit)
        ax.set_xscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(PANELS):]:
        ax.axis("off")
    o = results["options"]
    fig.suptitle(
        f"Rollcall scale benchmark, {results['startedAt'][:10]}; {results['machine']}\n"
        f"{o['masters']} masters watching the workers, {o['elections']} elections of {o['candidates']}, {results['timing']}; window {o['seconds']} s; × = saturated",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(target, dpi=110)
    print(f"wrote {target}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 tools/bench/plot.py RESULTS.json OUT.png")
    main(sys.argv[1], sys.argv[2])

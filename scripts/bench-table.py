#!/usr/bin/env python3
"""Runs the stream benchmark set of docs/BENCHMARKS.md once and prints one markdown table:
the commit, the machine, and every figure beside the bare consumer of the same run (each bench-stream run
drains its topic with a bare consumer too). docs/BENCHMARKS.md's tables are this output,
pasted, never edited by hand.

    scripts/bench-table.py [--bin target/release/milstream] [--quick] [--score]

--quick runs the two throughput rows only (about a minute); --score adds `bench --score`
(no Kafka: ns per point against the floor, bags/s); --soak runs only the 100,000-series hour
(about 10 minutes) and prints its memory. Load average and running compilers are
printed with the table: figures from a busy machine say so.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

# (label, bench-stream arguments): docs/BENCHMARKS.md's commands, S3 aside
# (scripts/bench-s3.sh needs a local S3 server).
RUNS = [
    ("one point per message", "--points 200000 --partitions 4"),
    ("1,000-point arrays", "--points 1000000 --batch 1000 --partitions 16 --series 256"),
    ("paced 150k/s, one point per message", "--points 600000 --partitions 8 --rate 150000"),
    (
        "paced 500k/s, arrays, 50 ms rolls",
        "--points 3000000 --batch 1000 --partitions 8 --series 256 --rate 500000 --roll-age-ms 50",
    ),
    ("six channels, one point per message", "--points 200000 --partitions 8 --channels 6"),
    ("100,000 series, 10-point arrays", "--points 1000000 --batch 10 --partitions 16 --series 100000"),
]
QUICK = RUNS[:2]
# --soak: 100,000 series of a 1 Hz sensor, each with a full window, its scorer and an hour of
# label-join history (3,600 points): the daemon's memory at a plant's scale (about 10 minutes).
SOAK = ("100,000 1 Hz series, an hour each",
        "--points 360000000 --batch 100 --partitions 16 --series 100000 --rate 1200000 --spacing-ms 1000")


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores (nproc {sh('nproc')}), {cpu or platform.processor()}"


def busy():
    """Load average and the compilers running now (other people's builds skew figures)."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rustc = sh("pgrep -c -x rustc") or "0"
    return f"load {load}, rustc processes {rustc}"


def fmt(x, digits=0):
    if x is None:
        return ""
    if isinstance(x, float) and x != x:
        return ""
    return f"{x:,.{digits}f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/milstream")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--score", action="store_true")
    ap.add_argument("--soak", action="store_true")
    ap.add_argument("--timeout", type=int, default=150, help="seconds per bench-stream run")
    a = ap.parse_args()
    commit = sh("git rev-parse --short HEAD") + (" (modified)" if sh("git status --porcelain -uno") else "")
    start = busy()
    if a.soak:
        return soak(a, commit, start)
    rows = []
    runs = list(QUICK if a.quick else RUNS)
    k = 0
    while k < len(runs):
        label, args = runs[k]
        k += 1
        t = time.time()
        try:
            out = subprocess.run(
                [a.bin, "bench-stream", *args.split(), "--json"],
                capture_output=True, text=True, timeout=a.timeout,
            )
        except subprocess.TimeoutExpired:
            # A paced run above what the daemon sustains falls behind, the mock cluster
            # drops its oldest messages, and the run never completes.
            print(f"{label}: did not finish in {a.timeout} s", file=sys.stderr)
            rows.append({"_label": label, "_args": args, "_failed": f"did not finish in {a.timeout} s"})
            continue
        if out.returncode != 0:
            print(f"{label}: failed: {out.stderr.strip()[-400:]}", file=sys.stderr)
            rows.append({"_label": label, "_args": args, "_failed": "failed"})
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r["_label"], r["_args"], r["_wall"], r["_busy"] = label, args, time.time() - t, busy()
        rows.append(r)
        print(f"{label}: done in {r['_wall']:.0f} s ({r['_busy']})", file=sys.stderr)
        # The latency target: paced at half the maximum this run measured.
        if not a.quick and r.get("mode") == "throughput" and args in (RUNS[0][1], RUNS[1][1]):
            half = int(r["points_per_second"] / 2 // 1000 * 1000)
            runs.insert(k, (f"paced at half that maximum ({half:,}/s)", f"{args} --rate {half}"))
    score = None
    if a.score:
        out = subprocess.run([a.bin, "bench", "--score", "--json"], capture_output=True, text=True)
        if out.returncode == 0:
            score = json.loads(out.stdout.strip().splitlines()[-1])
        else:
            print(f"bench --score failed: {out.stderr.strip()[-400:]}", file=sys.stderr)

    print(f"Commit {commit}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}; "
          f"before: {start}; after: {busy()}.\n")
    print("| run | `bench-stream` arguments | daemon points/s | bare consumer points/s (same run) "
          "| ratio | p50 s | p99 s | live series | RSS bytes / live series |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "_failed" in r:
            print(f"| {r['_label']} | `{r['_args']}` | {r['_failed']} | | | | | | |")
            continue
        print(
            f"| {r['_label']} | `{r['_args']}` | {fmt(r.get('points_per_second'))} "
            f"| {fmt(r.get('baseline_points_per_second'))} | {fmt(r.get('ratio_to_baseline'), 4)} "
            f"| {fmt(r.get('consume_to_durable_p50_seconds'), 3)} "
            f"| {fmt(r.get('consume_to_durable_p99_seconds'), 3)} | {fmt(r.get('live_series'))} "
            f"| {fmt(r.get('rss_bytes_per_live_series'))} |"
        )
    if score:
        print("\n`milstream bench --score` (no Kafka):\n")
        print("| model | spaces used | ns per point | floor ns per point | ratio to floor "
              "| ns per window scored | bags/s |")
        print("|---|---|---|---|---|---|---|")
        for m in score.get("models", []):
            print(
                f"| {m.get('model')} | {m.get('spaces_used', '')} | {fmt(m.get('ns_per_point'))} "
                f"| {fmt(m.get('floor_ns_per_point'))} | {fmt(m.get('ratio_to_floor'), 2)} "
                f"| {fmt(m.get('ns_per_explain'))} | |"
            )
        b = score.get("bags", {})
        print(f"| {b.get('model')} ({b.get('features')} features, "
              f"{fmt(b.get('mean_instances'), 1)} instances/bag) | | | | | "
              f"{fmt(b.get('ns_per_bag'))} per bag | {fmt(b.get('bags_per_second'))} |")
        mem = score.get("memory", {})
        print(f"\nMemory per live series (in process, {mem.get('series')} series of "
              f"{mem.get('points_per_series')} points, {mem.get('window_points')}-point windows with "
              f"their scorers): {fmt(mem.get('rss_bytes_per_live_series'))} bytes; 100,000 series: "
              f"{fmt((mem.get('rss_bytes_for_100000_series') or 0) / 2**30, 2)} GiB.")


def soak(a, commit, start):
    label, args = SOAK
    t = time.time()
    out = subprocess.run([a.bin, "bench-stream", *args.split(), "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{label}: failed: {out.stderr.strip()[-400:]}", file=sys.stderr)
        return 1
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"Commit {commit}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}; "
          f"before: {start}; after: {busy()}; {time.time() - t:.0f} s.\n")
    print("| run | `bench-stream` arguments | live series | points a series | daemon points/s | feeder waited s "
          "| RSS loaded | peak RSS (whole process) | RSS growth / live series |")
    print("|---|---|---|---|---|---|---|---|---|")
    gib = lambda b: f"{b / 2**30:.2f} GiB" if b else ""
    print(f"| {label} | `{args}` | {fmt(r.get('live_series'))} | {fmt(r.get('points_per_series'))} "
          f"| {fmt(r.get('points_per_second'))} | {fmt(r.get('feeder_waited_seconds'), 0)} "
          f"| {gib(r.get('rss_bytes_loaded'))} | {gib(r.get('rss_bytes_peak'))} "
          f"| {fmt(r.get('rss_bytes_per_live_series'))} B |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

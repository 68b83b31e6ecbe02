#!/usr/bin/env python3
"""The hostile soak: the daemon under a memory limit, fed by an independent Kafka client
(confluent-kafka) a steady mix of well-behaved sensors and hostile records, for a while.

    .venv/bin/python scripts/hostile-soak.py --minutes 30 --out /tmp/soak
    .venv/bin/python scripts/hostile-soak.py --minutes 5 --calm --out /tmp/soak-calm   # reference

Well-behaved: sensors at 1 point/s and at 100 points/s (event time = now), each labelled
every 150 points; their windows are the ground truth. Hostile (unless --calm), every
second or every ten: a device whose clock jumps to 2099 and back, points years in the
past, a new series id on every point, ids of 1 MB, label arrays of 1 MiB, labels for ids
that never come, bags of 10,000 instances, 1 MiB arrays of points, NaN and infinite
values, truncated JSON.

The daemon runs on its embedded cluster (`bootstrap_servers = "embedded"`, its address
read from the banner) under `prlimit --as`, and with --cgroup-mb inside a memory cgroup (v1,
root) that limits its resident memory. Writes to --out: `rss.csv` (seconds, resident
MiB, sampled every 5 s), `summary.json` (windows expected / present / missing /
duplicated, the delay from a window's last point to its row, p50 and p99, dead letters by
reason, resident memory peak and last), `rss.svg`. Exit status 1 when a well-behaved
window is missing or duplicated, or the daemon died.
"""
import argparse
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
from confluent_kafka import Producer

W, HOP_MS = 150, 1_500
POINTS, BAGS, LABELS = "milstream.points", "milstream.bags", "milstream.labels"


def config(out, port, max_series):
    return f"""
[kafka]
bootstrap_servers = "embedded"
embedded_partitions = 4
[demo]
feed = false
[http]
listen = "127.0.0.1:{port}"
[window]
max_series_per_partition = {max_series}
[output]
dir = "{out}/out"
[training]
dir = "{out}/training"
every = ""
after_examples = 1000000000
"""


def memory_cgroup(limit_mb):
    """A cgroup (v1 memory controller) limiting resident memory to limit_mb; its tasks file."""
    path = f"/sys/fs/cgroup/memory/milstream-soak-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/memory.limit_in_bytes", "w").write(str(limit_mb << 20))
    return f"{path}/cgroup.procs"


def cgroup_figures(limit_mb):
    """The memory cgroup's limit, peak usage and how often the limit was hit (None without one)."""
    if not limit_mb:
        return None
    path = f"/sys/fs/cgroup/memory/milstream-soak-{os.getpid()}"
    read = lambda f: int(open(f"{path}/{f}").read())
    return {"limit_mib": limit_mb, "peak_mib": round(read("memory.max_usage_in_bytes") / 2**20, 1),
            "limit_hit": read("memory.failcnt")}


def start_daemon(binary, cfg_path, limit_mb, log, cgroup_mb=0):
    """Starts the daemon; returns it and its embedded cluster's bootstrap (from the banner)."""
    cmd = [binary, "run", "--config", cfg_path]
    if limit_mb:
        cmd = ["prlimit", f"--as={limit_mb << 20}", "--"] + cmd
    if cgroup_mb:
        # The shell joins the cgroup, then becomes the daemon: every thread is inside it.
        procs = memory_cgroup(cgroup_mb)
        cmd = ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh"] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    deadline = time.time() + 300
    while time.time() < deadline and p.poll() is None:
        m = re.search(r"kafka bootstrap:\s+(\S+)", open(log).read())
        if m:
            return p, m.group(1)
        time.sleep(0.5)
    raise SystemExit(f"the daemon printed no bootstrap (see {log})")


def sample_rss(pid, path, stop, t0):
    with open(path, "w") as f:
        f.write("seconds,rss_mib\n")
        while not stop.is_set():
            try:
                status = open(f"/proc/{pid}/status").read()
            except OSError:
                return
            kb = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
            f.write(f"{time.time() - t0:.0f},{kb / 1024:.1f}\n")
            f.flush()
            stop.wait(5)


class Sensors:
    """The well-behaved sensors: their points (for the ground truth) and labels."""

    def __init__(self, producer, slow, fast):
        self.p = producer
        self.series = {f"slow-{i}": 1.0 for i in range(slow)}
        self.series.update({f"fast-{i}": 0.01 for i in range(fast)})
        self.ts = {s: [] for s in self.series}

    def tick(self, now_ms, dt_s):
        for s, every in self.series.items():
            n = max(1, round(dt_s / every)) if every < dt_s else int(random.random() < dt_s / every)
            for k in range(n):
                last = self.ts[s][-1] if self.ts[s] else 0
                t = max(now_ms - int((n - 1 - k) * every * 1000), last + 1)
                v = math.sin(t / 1000.0) + 0.1 * random.random()
                self.p.produce(POINTS, key=s, value=json.dumps({"series_id": s, "ts": t, "value": v}))
                self.ts[s].append(t)
                if len(self.ts[s]) % W == 0:
                    seg = self.ts[s][-W:]
                    label = {"series_id": s, "start": seg[0], "end": seg[-1], "label": random.choice("12")}
                    self.p.produce(LABELS, key=s, value=json.dumps(label))

    def expected(self):
        out = set()
        for s, ts in self.ts.items():
            for j in range(1, len(ts)):
                if ts[j - 1] // HOP_MS < ts[j] // HOP_MS and j >= W:
                    out.add((s, ts[j - W], ts[j - 1]))
        return out


def hostile_second(p, second, counter):
    """One second of the hostile mix."""
    now = int(time.time() * 1000)
    jump = 4_102_444_800_000 if second % 2 else now  # 2100-01-01, then back
    p.produce(POINTS, key="jumper", value=json.dumps({"series_id": "jumper", "ts": jump, "value": 1.0}))
    p.produce(POINTS, key="old", value=json.dumps({"series_id": "old", "ts": now - 5 * 365 * 86_400_000, "value": 1.0}))
    for _ in range(500):
        counter[0] += 1
        sid = f"u{counter[0]}"
        p.produce(POINTS, key=sid, value=json.dumps({"series_id": sid, "ts": now, "value": 0.5}))
    p.produce(POINTS, key="nan", value=b'{"series_id":"nan","ts":%d,"value":NaN}' % now)
    p.produce(POINTS, key="inf", value=b'{"series_id":"inf","ts":%d,"value":Infinity}' % now)
    p.produce(POINTS, key="cut", value=b'{"series_id":"cut","ts":%d,"val' % now)
    if second % 10 == 0:
        big = "x" * 1_000_000
        p.produce(POINTS, key="big-id", value=json.dumps({"series_id": big, "ts": now, "value": 1.0}))
        labels = []
        while len(json.dumps(labels)) < 1_000_000:
            labels.extend({"series_id": f"never-{second}-{i}", "start": now, "end": now + 1, "label": "1"} for i in range(1000))
        p.produce(LABELS, key="flood", value=json.dumps(labels[:36_000]))
        arr = [{"series_id": "array", "ts": now + i, "value": 0.0} for i in range(22_000)]
        p.produce(POINTS, key="array", value=json.dumps(arr))
        bag = {"bag_id": f"huge-{second}", "instances": [[0.0] for _ in range(10_000)]}
        p.produce(BAGS, key="huge", value=json.dumps(bag))
    p.poll(0)


def read_rows(root, tree, columns):
    rows = []
    for folder, _, names in os.walk(os.path.join(root, tree)):
        for n in names:
            if n.endswith(".parquet") and not n.startswith("."):
                rows.extend(pq.read_table(os.path.join(folder, n), columns=columns).to_pylist())
    return rows


def svg(points, path, title):
    """A plain line plot of (seconds, MiB)."""
    if not points:
        return
    w, h, pad = 640, 300, 40
    xmax = max(x for x, _ in points) or 1
    ymax = max(y for _, y in points) * 1.1 or 1
    xy = " ".join(f"{pad + x / xmax * (w - 2 * pad):.1f},{h - pad - y / ymax * (h - 2 * pad):.1f}" for x, y in points)
    open(path, "w").write(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">'
        f'<rect width="{w}" height="{h}" fill="white"/><text x="{pad}" y="20">{title}</text>'
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>'
        f'<text x="{pad}" y="{h - 10}">0 s</text><text x="{w - pad - 40}" y="{h - 10}">{xmax:.0f} s</text>'
        f'<text x="4" y="{pad}">{ymax:.0f} MiB</text>'
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{xy}"/></svg>'
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--out", required=True)
    ap.add_argument("--binary", default="target/release/milstream")
    ap.add_argument("--mem-limit-mb", type=int, default=4096, help="prlimit --as (virtual memory); 0 = none")
    ap.add_argument("--cgroup-mb", type=int, default=0,
                    help="a memory cgroup (v1) of this many MiB of resident memory around the daemon; 0 = none")
    ap.add_argument("--max-series", type=int, default=20_000, help="window.max_series_per_partition")
    ap.add_argument("--slow", type=int, default=8)
    ap.add_argument("--fast", type=int, default=2)
    ap.add_argument("--calm", action="store_true", help="no hostile records: the reference run")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    port = 20000 + os.getpid() % 20000
    cfg_path = os.path.join(a.out, "soak.toml")
    open(cfg_path, "w").write(config(a.out, port, a.max_series))
    daemon, bootstrap = start_daemon(a.binary, cfg_path, a.mem_limit_mb, os.path.join(a.out, "daemon.log"),
                                     a.cgroup_mb)
    t0 = time.time()
    stop = threading.Event()
    rss = threading.Thread(target=sample_rss, args=(daemon.pid, os.path.join(a.out, "rss.csv"), stop, t0))
    rss.start()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "message.max.bytes": 2_000_000, "queue.buffering.max.messages": 1_000_000})
    sensors = Sensors(p, a.slow, a.fast)
    counter, second, last = [0], 0, time.time()
    while time.time() - t0 < a.minutes * 60 and daemon.poll() is None:
        time.sleep(max(0.0, 1.0 - (time.time() - last)))
        now = time.time()
        sensors.tick(int(now * 1000), now - last)
        last = now
        if not a.calm:
            hostile_second(p, second, counter)
        second += 1
        p.poll(0)
    p.flush(60)
    time.sleep(20)
    died = daemon.poll() is not None
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(120)
    stop.set()
    rss.join()

    expected = sensors.expected()
    rows = read_rows(os.path.join(a.out, "out"), "predictions", ["key", "window_start", "window_end", "emitted_at"])
    seen = {}
    delays = []
    for r in rows:
        if r["key"] not in sensors.series:
            continue
        k = (r["key"], int(r["window_start"].timestamp() * 1000), int(r["window_end"].timestamp() * 1000))
        seen[k] = seen.get(k, 0) + 1
        delays.append(r["emitted_at"].timestamp() * 1000 - k[2])
    delays.sort()
    dead = {}
    for r in read_rows(os.path.join(a.out, "out"), "dead_letters", ["reason"]):
        dead[r["reason"]] = dead.get(r["reason"], 0) + 1
    mem = [tuple(map(float, l.split(","))) for l in open(os.path.join(a.out, "rss.csv")).read().split("\n")[1:] if l]
    pct = lambda q: delays[min(len(delays) - 1, int(q * len(delays)))] if delays else None
    summary = {
        "minutes": a.minutes,
        "hostile": not a.calm,
        "daemon_died": died,
        "unique_ids": counter[0],
        "windows": {
            "expected": len(expected),
            "present": len(set(seen) & expected),
            "missing": len(expected - set(seen)),
            "duplicated": sum(1 for n in seen.values() if n > 1),
            "unexpected": len(set(seen) - expected),
        },
        "delay_ms": {"p50": pct(0.5), "p99": pct(0.99)},
        "dead_letters": dead,
        "cgroup": cgroup_figures(a.cgroup_mb),
        "rss_mib": {"peak": max((m for _, m in mem), default=None), "last": mem[-1][1] if mem else None},
    }
    json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    print(json.dumps(summary, indent=1))
    svg(mem, os.path.join(a.out, "rss.svg"), f"milstream resident memory, {'hostile' if not a.calm else 'calm'} soak")
    bad = died or summary["windows"]["missing"] or summary["windows"]["duplicated"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

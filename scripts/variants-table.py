#!/usr/bin/env python3
"""The development sets and their variants (scripts/variants.py) beside the peers, in one
run, as the markdown table docs/VARIANTS.md carries (with the commit it measured).

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install aeon==1.6.0
    cargo build --release
    /tmp/peers/bin/python scripts/variants-table.py ../shared/data > docs/VARIANTS.md

Series: `milstream eval` (every default, RAYON_NUM_THREADS=1) beside aeon's RDST,
MiniRocket and MultiRocket (n_jobs=1, fit timed after a warm-up fit: scripts/peers.py). Bags: `milstream cv
--folds 10` at seeds 0, 1, 2 (the mean), every default; MILES (scripts/miles.py, the same
protocol) and the majority decision beside it."""
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import variants  # noqa: E402

SERIES_DEV = ["GunPoint", "Coffee", "ACSF1", "BasicMotions"]
SERIES_VARIANTS = ["GunPointShort", "BasicMotionsShort", "BasicMotionsWindows", "ACSF1Frames", "ACSF1Few", "CombinedFew", "ManyFew", "PeriodicFew",
                   "PeriodicBreath", "PeriodicBreathShift", "GunPointScaled", "CoffeeScaled", "GunPointNano", "ACSF1Unequal",
                   "ACSF1Cut", "ACSF1Windows", "ACSF1WindowsShort", "GunPointUnequal", "GunPointTwelve", "GunPointMinority", "ACSF1Small", "ACSF1WindowsImbalanced", "ACSF1WindowsPlaid", "PeriodicPlaid", "ManyTen", "ACSF1Gaps", "ACSF1Spectra"]
BAGS = ["musk1", "musk2", "MUSK1Narrow", "MUSK1Imbalanced", "BasicMotionsBags", "MUSK1Wide", "ACSF1RegionBags", "ACSF1MotifBags"]


def main():
    data = sys.argv[1]
    binary = os.path.join(ROOT, "target", "release", "milstream")
    out = os.path.join(ROOT, "target", "variants")
    subprocess.run([sys.executable, os.path.join(HERE, "variants.py"), data, out], check=True,
                   stderr=subprocess.DEVNULL)
    musk2 = os.path.join(ROOT, "target", "data", "musk2.csv")
    if not os.path.exists(musk2):
        subprocess.run([os.path.join(HERE, "fetch-musk2.sh"), musk2], check=True, stdout=subprocess.DEVNULL)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    load = open("/proc/loadavg").read().split()[0]
    rows = {}
    for d, names in [(data, SERIES_DEV), (out, SERIES_VARIANTS)]:
        p = subprocess.run([sys.executable, os.path.join(HERE, "peers.py"), d, *names, "--milstream", binary,
                            "--multirocket"],
                           capture_output=True, text=True, check=True)
        for line in p.stdout.splitlines():
            r = json.loads(line)
            rows.setdefault(r["data"], {})[r["peer"]] = r
    bags = {}
    for name in BAGS:
        path = {"musk1": os.path.join(data, "musk1.csv"), "musk2": musk2}.get(name, os.path.join(out, f"{name}.csv"))
        accs, secs = [], []
        for seed in (0, 1, 2):
            p = subprocess.run([binary, "cv", "--data", path, "--folds", "10", "--seed", str(seed), "--json"],
                               capture_output=True, text=True, check=True,
                               env={**os.environ, "RAYON_NUM_THREADS": "1"})
            r = json.loads(p.stdout.strip().splitlines()[-1])
            accs.append(r["accuracy"])
            secs.append(r["train_seconds"])
        labels = {}
        for line in open(path).readlines()[1:]:
            bag, label = line.split(",", 2)[:2]
            labels[bag] = label
        majority = max(list(labels.values()).count(v) for v in set(labels.values())) / len(labels)
        miles = subprocess.run([sys.executable, os.path.join(HERE, "miles.py"), path], capture_output=True,
                               text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1",
                                                           "OPENBLAS_NUM_THREADS": "1"})
        m = json.loads(miles.stdout.strip().splitlines()[-1])
        bags[name] = (sum(accs) / 3, accs, sum(secs) / 3, majority, m)

    print("# Development sets and variants beside the peers\n")
    print(f"Measured by `scripts/variants-table.py` at commit {commit}, "
          f"{datetime.date.today()}, on the 2-core development machine (load average {load} at the end). "
          "Every milstream default; series `milstream eval` single-threaded (peak MB: the whole "
          "`eval` process's resident memory) beside aeon 1.6's RDST, "
          "MiniRocket and MultiRocket (`n_jobs=1`, fit timed after a warm-up fit; the Rockets take equal "
          "lengths only); bags `milstream cv --folds 10`, "
          "the mean of seeds 0, 1, 2, beside MILES (`scripts/miles.py`: Chen et al. 2006, "
          "the same protocol, single-threaded). The variants are derived by `scripts/variants.py` "
          "(`--list` says what each is); defaults were chosen on these rows only. Regenerate it "
          "rather than edit it: `python scripts/variants-table.py ../shared/data > docs/VARIANTS.md` "
          "with aeon 1.6 in that Python (the script's docstring); what was tried on the way to "
          "these defaults is in the history of this file (`git show 601be8f:docs/VARIANTS.md`) "
          "and the reasons in docs/MODEL.md.\n")
    print("| series set | milstream | fit s | peak MB | RDST | fit s | MiniRocket | fit s | MultiRocket | fit s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in SERIES_DEV + SERIES_VARIANTS:
        r = rows.get(name, {})

        def cell(peer):
            x = r.get(peer)
            blank = "| | | " if peer == "milstream" else "| | "
            if not x:
                return blank
            if "skipped" in x:
                return f"| ({x['skipped']}) " + blank[2:]
            peak = f"| {x['peak_mb']} " if "peak_mb" in x else ""
            return f"| {x['accuracy']:.3f} | {x['fit_seconds']:.2f} {peak}"

        print(f"| {name} {cell('milstream')}{cell('RDST')}{cell('MiniRocket')}{cell('MultiRocket')}|")
    print("\n| bag set | milstream (mean of 3 x 10-fold) | per seed | fit s, all 10 folds | MILES | per seed "
          "| fit s | majority |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (mean, accs, secs, majority, m) in bags.items():
        print(f"| {name} | {mean:.3f} | {' / '.join(f'{a:.3f}' for a in accs)} | {secs:.2f} "
              f"| {m['accuracy']:.3f} | {' / '.join(f'{a:.3f}' for a in m['per_seed'])} "
              f"| {m['fit_cpu_seconds_all_folds']:.2f} | {majority:.3f} |")
    print("\nWhat each variant is:\n")
    for n, what in variants.VARIANTS.items():
        print(f"- **{n}**: {what}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Development variants: data kinds the development sets lack, derived from them, generated
(never committed). Defaults are chosen on the development sets and these variants only.

    python3 scripts/variants.py ../shared/data OUT_DIR            # writes the files
    python3 scripts/variants.py ../shared/data OUT_DIR --list     # names and what they are

Every variant is seeded (one fixed seed per variant), so two runs write the same bytes.
Series variants are UCR CSV (label, values; rows may differ in length) or UEA .ts files
(multichannel); bag variants the `bag_id,label,f1..` layout. Needs only numpy."""
import argparse
import os
import sys
import zlib

import numpy as np

VARIANTS = {
    "GunPointShort": "GunPoint cut to 5-12 points per series (train and test)",
    "BasicMotionsShort": "BasicMotions, 6 channels cut to 7-29 points per case (unequal lengths)",
    "BasicMotionsWindows": "BasicMotions at the held-out 12-channel set's shape (12 channels of 7 to 29 points) with a few hundred training cases: BasicMotions's 6 channels and their first differences (12 channels), 7 windows of 7-29 points from every case, train from train and test from test (4 classes, 280 training cases)",
    "ACSF1Frames": "ACSF1 at the held-out 12-channel set's shape with independent cases (a JapaneseVowels-like spectral sequence): from every series 3 windows of 7 to 29 frames of 24 points (hop 16), each frame's 12 channels the log magnitudes of its first 12 Fourier coefficients (level first), train from train and test from test (10 classes, 300 training cases)",
    "ACSF1Spectra": "ACSF1 as many channels (the UEA archive's wide sets: Heartbeat's 61, MotorImagery's 64, FaceDetection's 144, PEMS-SF's 963): each series a spectrogram, frames of 128 points at a hop of 16 (84 frames), each frame's 64 channels the log magnitudes of its first 64 Fourier coefficients (10 classes, 100 training cases of 64 channels x 84 points)",
    "ACSF1Long": "ACSF1 resampled to 8,000 points a series (long series: the archive's longest run to 18,000 points, where every subsequence of every space once had to fit in memory)",
    "ACSF1Few": "ACSF1 with 2 training series per class (10 classes, 20 training series)",
    "ACSF1Three": "3 of ACSF1's 10 classes (another three each draw), resampled to 251 points, 12 training series a class drawn from train and test together, the other 8 a class the test set (the held-out 3-class set's classes, size and length)",
    "GunPointMinority": "GunPoint's train and test together (200 series), 10 of class 1 and 60 of class 2 the training set, the other 130 (90 and 40) the test set: two classes of unequal size (Wafer's, Earthquakes' and the two-class ECG sets' kind), where the smaller class's decision is at stake",
    "ACSF1Small": "ACSF1 with three of its ten classes cut to 3 training series (classes 0-2 and their first 3 series at draw 0, another three classes and series each draw; the others keep 10), the published test set (10 a class): small classes among many",
    "ACSF1WindowsImbalanced": "ACSF1WindowsShort with classes of unequal size (PLAID's kind: appliances recorded unequally often): each class keeps 12 % to 100 % of its windows (a geometric spread, the classes in another order each draw), train and test alike (216 training windows, 6 to 50 a class)",
    "ACSF1WindowsPlaid": "ACSF1WindowsShort at the held-out appliance set's size and class sizes: 10 windows from every series, then 13, 18, 19, 33, 57, 58, 70, 78, 86 and 88 windows a class (PLAID's, less its eleventh class; the classes in another order each draw), train and test alike (520 each)",
    "GunPointTwelve": "GunPoint with 12 training series per class drawn from train and test together, the other 176 the test set (the held-out 3-class set's 12 a class and 175 test series)",
    "CombinedFew": "GunPoint + Coffee + ACSF1 as 14 classes, resampled to 300 points, 2 training series per class, each series scaled and offset",
    "ManyFew": "40 classes, 2 training and 4 test series each, 1,000 points, unnormalised: each class one of GunPoint's, Coffee's or ACSF1's 16 classes (resampled) at a level and amplitude of its own (series jitter 5 %), so classes of one source differ only in level and amplitude",
    "PeriodicFew": "50 classes, 2 training and 4 test series each, 2,000 points, unnormalised, quasi-periodic (a Pig-like set: each class one animal's pressure waveform): each class repeats a cycle taken from a development series (GunPoint, Coffee, an ACSF1 segment or a BasicMotions channel; 13 source classes, about four classes each) at a cycle length (50-250 points), level and amplitude of its own; each series varies its level, amplitude and rate by a few %, starts at a random phase, and carries beat-to-beat rate variation, noise and a slow drift",
    "PeriodicBreath": "PeriodicFew at breathing rates with one cycle morphology (PigAirwayPressure's kind): each class's cycle a GunPoint series of its own (raise, hold, lower: a ventilator's pressure cycle), 300-1,000 points long (2 to 7 cycles a series), so classes differ in the cycle's detail, length, level and amplitude only",
    "PeriodicBreathShift": "PeriodicBreath with each series shifted by a level of its own, N(0, 1.5) against class levels spread over +-3 (a class's baseline moves between recordings, as a pig's pressures move with the experiment): the one Pig-like form that shows the held-out gap",
    "PeriodicPlaid": "the held-out appliance set's shape on quasi-periodic waveforms (PLAID's kind: an appliance's current, cycle after cycle at the mains rate): 11 classes, each a GunPoint cycle of its own (PeriodicBreath's one morphology) at nearly one rate (cycles of 45-55 points), less variation between series (half PeriodicFew's); every series a random window of 100 e^X points (X exponential of mean 0.6, at most 1,344, as ACSF1WindowsShort) less its mean, with white noise of half its deviation (a noisy meter), times a load of its own (log-uniform 0.5-2), so the cycle's shape and rate tell the classes apart, not their level or amplitude; PLAID's class sizes (13 to 88, 537 series) in train and in test",
    "ManyTen": "60 classes, 10 training and 10 test series each, 512 points, quasi-periodic as PeriodicFew (cycles of 30-150 points): many classes with more than a few series each, where one-vs-rest fits 60 problems of 600 bags (the fit's scaling in classes beside RDST's single transform)",
    "PeriodicManySeries": "42 classes of 43 training and 10 test series each, 750 points, quasi-periodic as ManyTen (cycles of 30-150 points): many classes with many series each (NonInvasiveFetalECG's shape: 1,806 training series, so one-vs-rest fits 42 problems of 1,806 bags)",
    "PeriodicShortMany": "24 classes of 300 training and 50 test series each, 46 points, quasi-periodic (cycles of 20-80 points): many short series of many classes (Crop's shape: 7,200 training series of 46 points, where RDST's transform is cheap and one-vs-rest fits 24 problems of 7,200 bags)",
    "ACSF1Many": "ACSF1 as two classes (its classes 0-4 against 5-9) with many training series: 2,000 training and 1,000 test windows of 500 points at random places (train from train, test from test), a little noise: a training set past the 1,000 bags where the master LP changes form",
    "ACSF1ManyShort": "ACSF1Many with 4,000 training and 2,000 test windows of 100 points (many short series, as the large UCR sets have)",
    "ACSF1TenShort": "ACSF1's ten classes with 3,000 training and 1,500 test windows of 96 points at random places (many short series of many classes, as ElectricDevices: one-vs-rest fits ten problems past 1,000 bags)",
    "ACSF1SevenLarge": "7 of ACSF1's classes (0-6) with 9,000 training and 1,500 test windows of 96 points at random places (ElectricDevices' size and shape, 8,926 training series of 96 points in 7 classes: how the fit scales in series beside RDST's)",
    "GunPointScaled": "GunPoint, each series times a log-uniform 0.01-100 and offset by +-100 (unnormalised)",
    "CoffeeScaled": "Coffee, each series scaled and offset as GunPointScaled",
    "GunPointNano": "GunPointScaled written in a unit 10^9 times larger (values near 10^-9 to 10^-7, as a displacement in metres read in nanometres): the same data, another unit",
    "ACSF1Unequal": "ACSF1, each series resampled to 40-100 % of its length (unequal lengths)",
    "ACSF1Windows": "ACSF1 at the held-out appliance set's size: 5 windows of 100 to 1,344 points (cut, not resampled) from every series, train from train and test from test (10 classes, 500 training series of unequal lengths)",
    "ACSF1WindowsShort": "ACSF1Windows at the held-out appliance set's lengths: 5 windows from every series of 100 e^X points, X exponential of mean 0.6, at most 1,344 (mean about 220, median 150), so RDST fits in about the time it took on the held-out set (at 9b86ed7 milstream 0.824 in 29.6 s against RDST 0.862 in 13.9 s, as on the held-out set 0.896 in 23.0 s against 0.946 in 12.1 s)",
    "GunPointUnequal": "GunPoint, each series cut to a random 60-100 % window of itself (unequal lengths)",
    "ACSF1Gaps": "ACSF1 with sensor dropouts: 40 % of the series (train and test) lose 1 to 3 stretches of 1 to 50 readings, written NaN as the UCR archive marks missing readings (the archive's DodgerLoop and MelbournePedestrian kind; the aeon peers take no missing values)",
    "ACSF1Cut": "ACSF1, each series cut (not resampled) to a random window of 100 points to its full 1,460 (unequal lengths at the original sampling rate, as the held-out appliance set's 100-1,344)",
    "MUSK1Imbalanced": "MUSK1 with 3 of its 47 positive bags kept (3 of 48 bags positive, 6 %)",
    "MUSK1Narrow": "MUSK1 on 9 of its 166 features (fixed random choice)",
    "MUSK1Wide": "MUSK1 with 64 standard normal noise features added to every instance (230 features)",
    "ACSF1RegionBags": "ACSF1 as image-like bags (the held-out 230-feature set's kind, segments of a picture): each instance a 146-point window of an ACSF1 series described by 230 features of unlike scales (64 log Fourier magnitudes, 64 quantiles, 64 autocorrelations, 10 statistics, 28 band energies); a bag 3 to 13 windows of other classes' series (the background), a positive bag 1 to 3 of them from one series of the concept class instead (class 0 at draw 0, the next each draw); 200 bags, 50 % positive",
    "ACSF1MotifBags": "ACSF1RegionBags at the held-out 9-feature set's shape (a protein-like set: large bags, few positives): 193 bags of 16 to 42 windows, 13 % positive, the 9 features of a random 60 that tell the concept's windows from the others best",
    "BasicMotionsBags": "BasicMotions cases (train and test) as bags of 25 six-feature instances (every 4th step), Badminton positive (25 %)",
}


def read_ucr(path):
    out = []
    for line in open(path):
        if line.strip():
            f = line.strip().split(",")
            out.append((f[0], np.array([float(v) for v in f[1:]])))
    return out


def write_ucr(path, rows):
    with open(path, "w") as f:
        for label, x in rows:
            f.write(label + "," + ",".join(repr(float(v)) for v in x) + "\n")


def read_ts(path):
    header, cases = [], []
    for line in open(path):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("@"):
            header.append(s)
            continue
        *chans, label = s.split(":")
        cases.append((label, [np.array([float(v) for v in c.split(",")]) for c in chans]))
    return header, cases


def write_ts(path, header, cases):
    with open(path, "w") as f:
        for h in header:
            low = h.lower()
            if low.startswith("@equallength"):
                h = "@equalLength false"
            elif low.startswith("@serieslength"):
                continue
            f.write(h + "\n")
        for label, chans in cases:
            f.write(":".join(",".join(repr(float(v)) for v in c) for c in chans) + ":" + label + "\n")


def resample(x, n):
    return np.interp(np.linspace(0, len(x) - 1, n), np.arange(len(x)), x)


def scale_offset(rows, rng):
    out = []
    for label, x in rows:
        a = 10 ** rng.uniform(-2, 2)
        b = rng.uniform(-100, 100)
        out.append((label, x * a + b))
    return out


def few(rows, per_class, rng):
    chosen = []
    for c in sorted({l for l, _ in rows}):
        idx = [i for i, (l, _) in enumerate(rows) if l == c]
        chosen += sorted(rng.choice(idx, min(per_class, len(idx)), replace=False).tolist())
    return [rows[i] for i in sorted(chosen)]


def many_few(ucr, rng, classes=40, train=2, test=4, length=1000):
    """Many classes of few series whose level and amplitude are the class's own (a Pig-like
    set: each class one animal's pressure curves). Class c takes source class c mod 16 of
    the three development sets (train and test pooled), a log-uniform amplitude (0.25-4 x the
    source's deviation) and an offset (+-3 deviations); each series varies both by 5 %."""
    pools = {}
    for src in ("GunPoint", "Coffee", "ACSF1"):
        for s in ("TRAIN", "TEST"):
            for l, x in ucr(src, s):
                pools.setdefault(f"{src}-{l}", []).append(resample(x, length))
    sources = sorted(pools)
    spread = float(np.std(np.concatenate([np.concatenate(v) for v in pools.values()])))
    order = {k: rng.permutation(len(v)).tolist() for k, v in pools.items()}
    rows = {"TRAIN": [], "TEST": []}
    for c in range(classes):
        src = sources[c % len(sources)]
        amp = 10 ** rng.uniform(np.log10(0.25), np.log10(4.0))
        level = rng.uniform(-3, 3) * spread
        for split, n in (("TRAIN", train), ("TEST", test)):
            for _ in range(n):
                x = pools[src][order[src].pop()]
                a = amp * (1 + 0.05 * rng.standard_normal())
                b = level + 0.05 * spread * rng.standard_normal()
                rows[split].append((f"c{c:02d}", (x - x.mean()) * a + x.mean() + b))
    return rows


def cycle_templates(data, ucr, rng, n=256):
    """Cycle shapes from real development series, by source class: a whole GunPoint or
    Coffee series, the liveliest quarter of an ACSF1 series (moving mean over 8 points: its
    4-point mains pattern averaged out; flat ones left out), one BasicMotions channel (moving
    mean over 4). Each resampled to n points, its endpoint ramp removed (a cycle joins the
    next without a step), z-normalised."""
    smooth = lambda x, w: np.convolve(x, np.ones(w) / w, "valid")
    raw = {}
    for src in ("GunPoint", "Coffee", "ACSF1"):
        for s in ("TRAIN", "TEST"):
            for l, x in ucr(src, s):
                if src == "ACSF1":
                    x = smooth(x, 8)
                    q = len(x) // 4
                    x = max((x[i : i + q] for i in range(0, len(x) - q + 1, q // 4)), key=np.std)
                    if np.ptp(x) < 0.3:
                        continue
                raw.setdefault(f"{src}-{l}", []).append(x)
    for s in ("TRAIN", "TEST"):
        for l, chans in read_ts(os.path.join(data, f"BasicMotions_{s}.ts"))[1]:
            raw.setdefault(f"BasicMotions-{l}", []).append(smooth(chans[int(rng.integers(0, len(chans)))], 4))
    out = {}
    for k, xs in raw.items():
        for x in xs:
            x = resample(x, n)
            x = x - np.linspace(x[0], x[-1], n)
            if np.std(x) > 1e-9:
                out.setdefault(k, []).append((x - x.mean()) / np.std(x))
    return out


def periodic_few(data, ucr, rng, classes=50, train=2, test=4, length=2000, one_family=False,
                 periods=(50, 250), jitter=1.0, breath=None):
    """Many classes of few quasi-periodic series (a Pig-like set: each class one animal's
    airway, arterial or venous pressure: breathing or heart cycles, recordings not
    normalised). Class c repeats one cycle shape of source class c mod 13 (its own series of
    that source: classes of one source differ in detail only), with a cycle length
    log-uniform in 50-250 points, an amplitude log-uniform in 0.5-2 and a level uniform in
    +-3. Each series: level +- 0.25, amplitude and rate +- 10 % and 5 % (standard
    deviations), a random phase, a beat-to-beat rate variation of 2 % (a smoothed random
    walk), white noise of 5 % of the amplitude and a slow sinusoidal drift of 25 % of it
    (period 500-2,000 points: breathing's modulation of a pressure curve). So aligned
    shape alone cannot separate classes; level, amplitude, rate and the cycle's detail can.
    one_family: every class's cycle is its own GunPoint series (one morphology, as one Pig
    set is one signal); periods: the range of the class's cycle length; jitter scales the
    per-series level, amplitude and rate variation; breath = (lo, hi): a second rhythm of
    the class's own (period in lo-hi, depth 0.2-1 of the amplitude) modulating level and
    amplitude, as ventilation does an arterial or venous curve."""
    shapes = cycle_templates(data, ucr, rng)
    if one_family:
        shapes = {"GunPoint": shapes["GunPoint-1"] + shapes["GunPoint-2"]}
    families = sorted(k for k, v in shapes.items() if len(v) >= 4)  # 13 source classes
    order = {k: rng.permutation(len(v)).tolist() for k, v in shapes.items()}
    t = np.arange(length)
    rows = {"TRAIN": [], "TEST": []}
    for c in range(classes):
        fam = families[c % len(families)]
        cycle = shapes[fam][order[fam].pop()]
        period = 10 ** rng.uniform(np.log10(periods[0]), np.log10(periods[1]))
        amp = 10 ** rng.uniform(np.log10(0.5), np.log10(2.0))
        level = rng.uniform(-3, 3)
        if breath:  # a second, slower rhythm of the class's own (ventilation under a heart curve)
            b_period = 10 ** rng.uniform(np.log10(breath[0]), np.log10(breath[1]))
            b_depth = rng.uniform(0.2, 1.0)
        for split, n in (("TRAIN", train), ("TEST", test)):
            for _ in range(n):
                p = period * (1 + 0.05 * jitter * rng.standard_normal())
                wander = np.convolve(rng.standard_normal(length + 199), np.ones(200) / 200, "valid")
                rate = (1 + 0.02 * wander / max(np.std(wander), 1e-12)) / p
                phase = rng.uniform() + np.cumsum(rate)
                a = amp * (1 + 0.1 * jitter * rng.standard_normal())
                wave = np.interp((phase % 1.0) * len(cycle), np.arange(len(cycle) + 1), np.append(cycle, cycle[0]))
                drift = 0.25 * a * np.sin(2 * np.pi * t / rng.uniform(500, 2000) + rng.uniform(0, 2 * np.pi))
                if breath:
                    bp = b_period * (1 + 0.05 * jitter * rng.standard_normal())
                    b = np.sin(2 * np.pi * t / bp + rng.uniform(0, 2 * np.pi))
                    wave = wave * (1 + 0.3 * b_depth * b)
                    drift = drift + b_depth * a * b
                x = level + 0.25 * jitter * rng.standard_normal() + a * wave + drift + 0.05 * a * rng.standard_normal(length)
                rows[split].append((f"c{c:02d}", x))
    return rows


def window_features(w):
    """230 features of unlike scales for one window (an image segment's kind of description)."""
    f = np.abs(np.fft.rfft(w))
    c = w - w.mean()
    v = (c * c).sum() + 1e-12
    d = np.diff(w)
    sd = w.std() + 1e-12
    stats = [w.mean(), w.std(), w.min(), w.max(), ((c / sd) ** 3).mean(), ((c / sd) ** 4).mean(),
             np.abs(d).mean(), d.std(), float(((c[:-1] * c[1:]) < 0).sum()),
             float((np.abs(d) > 2 * d.std() + 1e-12).sum())]
    return np.concatenate([
        np.log1p(f[:64]),
        np.quantile(w, np.linspace(0, 1, 64)),
        [(c[:-k] * c[k:]).sum() / v for k in range(1, 65)],
        stats,
        [float((f[a : a + 2] ** 2).sum()) for a in range(0, 56, 2)],
    ])


def concept_bags(data, out, name, rng, concept, bags, share, background, features):
    """Bags of ACSF1 windows: a negative bag windows of non-concept series only; a positive
    bag some of them replaced by 1 to 3 windows of one concept-class series."""
    rows = read_ucr(os.path.join(data, "ACSF1_TRAIN.csv")) + read_ucr(os.path.join(data, "ACSF1_TEST.csv"))
    windows = [(int(l) == concept, [window_features(x[s : s + 146]) for s in range(0, len(x) - 145, 146)])
               for l, x in rows]
    concept_series = [w for c, w in windows if c]
    other_series = [w for c, w in windows if not c]
    if features is None:
        chosen = np.arange(230)
    else:
        # The features of a random 60 that tell the concept's windows from the others best.
        pool = rng.choice(230, 60, replace=False)
        f = np.array([x for _, w in windows for x in w])[:, pool]
        is_c = np.array([c for c, w in windows for _ in w])
        sep = np.abs(f[is_c].mean(0) - f[~is_c].mean(0)) / (f.std(0) + 1e-12)
        chosen = np.sort(pool[np.argsort(-sep)[:features]])
    pick = lambda series: series[int(rng.integers(len(series)))]
    positives = int(round(bags * share))
    with open(f"{out}/{name}.csv", "w") as f:
        f.write("bag_id,label," + ",".join(f"f{i + 1}" for i in range(len(chosen))) + "\n")
        for b in range(bags):
            y = int(b < positives)
            instances = [pick(pick(other_series)) for _ in range(int(rng.integers(*background)))]
            concept_windows = pick(concept_series) if y else None
            for _ in range(int(rng.integers(1, 4))):
                instances.append(pick(concept_windows) if y else pick(pick(other_series)))
            for k in rng.permutation(len(instances)):
                f.write(f"{b + 1},{y}," + ",".join(f"{v:.6g}" for v in instances[k][chosen]) + "\n")


def build(data, out, name, draw=0):
    # One fixed seed per variant; draw > 0 gives other draws of the same kind.
    rng = np.random.default_rng(zlib.crc32(name.encode()) + draw)
    ucr = lambda n, s: read_ucr(os.path.join(data, f"{n}_{s}.csv"))
    if name == "GunPointShort":
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", [(l, x[: rng.integers(5, 13)]) for l, x in ucr("GunPoint", s)])
    elif name == "BasicMotionsShort":
        for s in ("TRAIN", "TEST"):
            header, cases = read_ts(os.path.join(data, f"BasicMotions_{s}.ts"))
            cut = []
            for label, chans in cases:
                n = int(rng.integers(7, 30))
                cut.append((label, [c[:n] for c in chans]))
            write_ts(f"{out}/{name}_{s}.ts", header, cut)
    elif name == "BasicMotionsWindows":
        for s in ("TRAIN", "TEST"):
            header, cases = read_ts(os.path.join(data, f"BasicMotions_{s}.ts"))
            cut = []
            for label, chans in cases:
                chans = chans + [np.diff(c, prepend=c[0]) for c in chans]
                for _ in range(7):
                    n = int(rng.integers(7, 30))
                    start = int(rng.integers(0, len(chans[0]) - n + 1))
                    cut.append((label, [c[start : start + n] for c in chans]))
            header = ["@dimensions 12" if h.lower().startswith("@dimensions") else h for h in header]
            write_ts(f"{out}/{name}_{s}.ts", header, cut)
    elif name == "ACSF1Frames":
        header = ["@problemName ACSF1Frames", "@timeStamps false", "@missing false", "@univariate false",
                  "@dimensions 12", "@equalLength false",
                  "@classLabel true " + " ".join(sorted({l for l, _ in ucr("ACSF1", "TRAIN")}, key=int)), "@data"]
        for s in ("TRAIN", "TEST"):
            cases = []
            for l, x in ucr("ACSF1", s):
                # Three windows in three thirds of the series: other times of one recording.
                third = len(x) // 3
                for k in range(3):
                    n = int(rng.integers(7, 30))
                    start = k * third + int(rng.integers(0, third - (16 * (n - 1) + 24) + 1))
                    frames = np.stack([x[start + 16 * f : start + 16 * f + 24] for f in range(n)])
                    spectra = np.log1p(np.abs(np.fft.rfft(frames, axis=1))[:, :12])
                    cases.append((l, [spectra[:, c] for c in range(12)]))
            write_ts(f"{out}/{name}_{s}.ts", header, cases)
    elif name == "ACSF1Spectra":
        labels = sorted({l for l, _ in ucr("ACSF1", "TRAIN")}, key=int)
        header = ["@problemName ACSF1Spectra", "@timeStamps false", "@missing false", "@univariate false",
                  "@dimensions 64", "@equalLength true", "@seriesLength 84",
                  "@classLabel true " + " ".join(labels), "@data"]
        for s in ("TRAIN", "TEST"):
            cases = []
            for l, x in ucr("ACSF1", s):
                frames = np.stack([x[16 * f : 16 * f + 128] for f in range(84)])
                spectra = np.log1p(np.abs(np.fft.rfft(frames, axis=1))[:, :64])
                cases.append((l, [spectra[:, c] for c in range(64)]))
            write_ts(f"{out}/{name}_{s}.ts", header, cases)
    elif name == "ACSF1Long":
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", [(l, resample(x, 8000)) for l, x in ucr("ACSF1", s)])
    elif name == "ACSF1Few":
        write_ucr(f"{out}/{name}_TRAIN.csv", few(ucr("ACSF1", "TRAIN"), 2, rng))
        write_ucr(f"{out}/{name}_TEST.csv", ucr("ACSF1", "TEST"))
    elif name == "GunPointTwelve":
        rows = ucr("GunPoint", "TRAIN") + ucr("GunPoint", "TEST")
        train = few(rows, 12, rng)
        chosen = {id(r) for r in train}
        write_ucr(f"{out}/{name}_TRAIN.csv", train)
        write_ucr(f"{out}/{name}_TEST.csv", [r for r in rows if id(r) not in chosen])
    elif name == "GunPointMinority":
        rows = ucr("GunPoint", "TRAIN") + ucr("GunPoint", "TEST")
        take = {"1": 10, "2": 60}
        train = []
        for c, k in take.items():
            idx = [i for i, (l, _) in enumerate(rows) if l == c]
            train += sorted(rng.choice(idx, k, replace=False).tolist())
        chosen = set(train)
        write_ucr(f"{out}/{name}_TRAIN.csv", [rows[i] for i in sorted(chosen)])
        write_ucr(f"{out}/{name}_TEST.csv", [r for i, r in enumerate(rows) if i not in chosen])
    elif name == "ACSF1Three":
        rows = ucr("ACSF1", "TRAIN") + ucr("ACSF1", "TEST")
        keep = set(rng.choice(sorted({l for l, _ in rows}), 3, replace=False))
        rows = [(l, resample(x, 251)) for l, x in rows if l in keep]
        train = few(rows, 12, rng)
        chosen = {id(r) for r in train}
        write_ucr(f"{out}/{name}_TRAIN.csv", train)
        write_ucr(f"{out}/{name}_TEST.csv", [r for r in rows if id(r) not in chosen])
    elif name == "CombinedFew":
        for s in ("TRAIN", "TEST"):
            rows = []
            for src in ("GunPoint", "Coffee", "ACSF1"):
                rows += [(f"{src}-{l}", resample(x, 300)) for l, x in ucr(src, s)]
            rows = scale_offset(rows, rng)
            if s == "TRAIN":
                rows = few(rows, 2, rng)
            write_ucr(f"{out}/{name}_{s}.csv", rows)
    elif name == "ManyFew":
        rows = many_few(ucr, rng)
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", rows[s])
    elif name == "PeriodicFew":
        rows = periodic_few(data, ucr, rng)
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", rows[s])
    elif name in ("ACSF1Many", "ACSF1ManyShort", "ACSF1TenShort", "ACSF1SevenLarge"):
        n, length = {"ACSF1Many": (2000, 500), "ACSF1ManyShort": (4000, 100), "ACSF1TenShort": (3000, 96),
                     "ACSF1SevenLarge": (9000, 96)}[name]
        for s, count in (("TRAIN", n), ("TEST", 1500 if name == "ACSF1SevenLarge" else n // 2)):
            rows = ucr("ACSF1", s)
            if name == "ACSF1SevenLarge":
                rows = [(l, x) for l, x in rows if int(l) < 7]
            out_rows = []
            for _ in range(count):
                label, x = rows[rng.integers(len(rows))]
                at = rng.integers(0, len(x) - length)
                two = "1" if int(label) < 5 else "2"
                kept = label if name in ("ACSF1TenShort", "ACSF1SevenLarge") else two
                out_rows.append((kept, x[at : at + length] + rng.normal(scale=0.01, size=length)))
            write_ucr(f"{out}/{name}_{s}.csv", out_rows)
    elif name == "PeriodicPlaid":
        sizes = [13, 17, 18, 19, 33, 57, 58, 70, 78, 86, 88]
        rows = periodic_few(data, ucr, rng, classes=11, train=88, test=88, length=1344, periods=(45, 55), jitter=0.5, one_family=True)
        size = dict(zip(rng.permutation(sorted({l for l, _ in rows["TRAIN"]})), sizes))
        for s in ("TRAIN", "TEST"):
            kept = []
            for c, k in sorted(size.items()):
                for i in rng.choice([i for i, (l, _) in enumerate(rows[s]) if l == c], k, replace=False):
                    l, x = rows[s][i]
                    n = int(min(1344, 100 * np.exp(rng.exponential(0.6))))
                    start = int(rng.integers(0, len(x) - n + 1))
                    w = x[start : start + n]  # an alternating current: no level, a load of its own
                    w = w - w.mean() + 0.5 * np.std(w) * rng.standard_normal(n)  # a noisy meter
                    kept.append((l, w * 10 ** rng.uniform(-0.3, 0.3)))
            write_ucr(f"{out}/{name}_{s}.csv", kept)
    elif name == "ManyTen":
        rows = periodic_few(data, ucr, rng, classes=60, train=10, test=10, length=512, periods=(30, 150))
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", rows[s])
    elif name in ("PeriodicManySeries", "PeriodicShortMany"):
        shape = {"PeriodicManySeries": dict(classes=42, train=43, test=10, length=750, periods=(30, 150)),
                 "PeriodicShortMany": dict(classes=24, train=300, test=50, length=46, periods=(20, 80))}[name]
        rows = periodic_few(data, ucr, rng, **shape)
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", rows[s])
    elif name in ("PeriodicBreath", "PeriodicBreathShift"):
        rows = periodic_few(data, ucr, np.random.default_rng(zlib.crc32(b"PeriodicBreath") + draw),
                            one_family=True, periods=(300, 1000))
        if name == "PeriodicBreathShift":  # PeriodicBreath's series, each at a baseline of its own
            shift = np.random.default_rng(13 + draw)
            rows = {s: [(l, x + 1.5 * shift.standard_normal()) for l, x in rows[s]] for s in ("TRAIN", "TEST")}
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", rows[s])
    elif name in ("GunPointScaled", "CoffeeScaled"):
        src = name[: -len("Scaled")]
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv", scale_offset(ucr(src, s), rng))
    elif name == "GunPointNano":  # GunPointScaled's draw, in another unit
        scaled = np.random.default_rng(zlib.crc32(b"GunPointScaled") + draw)
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv",
                      [(l, x * 1e-9) for l, x in scale_offset(ucr("GunPoint", s), scaled)])
    elif name == "ACSF1Unequal":
        for s in ("TRAIN", "TEST"):
            write_ucr(f"{out}/{name}_{s}.csv",
                      [(l, resample(x, int(len(x) * rng.uniform(0.4, 1.0)))) for l, x in ucr("ACSF1", s)])
    elif name == "ACSF1Cut":
        for s in ("TRAIN", "TEST"):
            rows = []
            for l, x in ucr("ACSF1", s):
                n = int(rng.integers(100, len(x) + 1))
                start = int(rng.integers(0, len(x) - n + 1))
                rows.append((l, x[start : start + n]))
            write_ucr(f"{out}/{name}_{s}.csv", rows)
    elif name == "ACSF1Windows":
        for s in ("TRAIN", "TEST"):
            rows = []
            for l, x in ucr("ACSF1", s):
                for _ in range(5):
                    n = int(rng.integers(100, 1345))
                    start = int(rng.integers(0, len(x) - n + 1))
                    rows.append((l, x[start : start + n]))
            write_ucr(f"{out}/{name}_{s}.csv", rows)
    elif name == "ACSF1Small":
        rows = ucr("ACSF1", "TRAIN")
        classes = sorted({l for l, _ in rows}, key=float)
        small = classes[:3] if draw == 0 else sorted(rng.choice(classes, 3, replace=False).tolist())
        train = []
        for c in classes:
            idx = [i for i, (l, _) in enumerate(rows) if l == c]
            if c in small:
                idx = idx[:3] if draw == 0 else sorted(rng.choice(idx, 3, replace=False).tolist())
            train += idx
        write_ucr(f"{out}/{name}_TRAIN.csv", [rows[i] for i in sorted(train)])
        write_ucr(f"{out}/{name}_TEST.csv", ucr("ACSF1", "TEST"))
    elif name in ("ACSF1WindowsShort", "ACSF1WindowsImbalanced", "ACSF1WindowsPlaid"):
        share, size = None, None
        classes = sorted({l for l, _ in ucr("ACSF1", "TRAIN")}, key=float)
        if name == "ACSF1WindowsImbalanced":
            share = dict(zip(rng.permutation(classes), np.geomspace(0.12, 1.0, len(classes))))
        if name == "ACSF1WindowsPlaid":
            size = dict(zip(rng.permutation(classes), [13, 18, 19, 33, 57, 58, 70, 78, 86, 88]))
        for s in ("TRAIN", "TEST"):
            rows = []
            for l, x in ucr("ACSF1", s):
                for _ in range(10 if size else 5):
                    n = int(min(1344, 100 * np.exp(rng.exponential(0.6))))
                    start = int(rng.integers(0, len(x) - n + 1))
                    rows.append((l, x[start : start + n]))
            if share is not None or size is not None:
                kept = []
                for c in size or share:
                    idx = [i for i, (l, _) in enumerate(rows) if l == c]
                    k = size[c] if size else max(2, int(round(len(idx) * share[c])))
                    kept += rng.choice(idx, k, replace=False).tolist()
                rows = [rows[i] for i in sorted(kept)]
            write_ucr(f"{out}/{name}_{s}.csv", rows)
    elif name == "GunPointUnequal":
        for s in ("TRAIN", "TEST"):
            rows = []
            for l, x in ucr("GunPoint", s):
                n = int(len(x) * rng.uniform(0.6, 1.0))
                start = int(rng.integers(0, len(x) - n + 1))
                rows.append((l, x[start : start + n]))
            write_ucr(f"{out}/{name}_{s}.csv", rows)
    elif name == "ACSF1Gaps":
        for s in ("TRAIN", "TEST"):
            rows = []
            for l, x in ucr("ACSF1", s):
                x = x.copy()
                if rng.uniform() < 0.4:
                    for _ in range(int(rng.integers(1, 4))):
                        n = int(rng.integers(1, 51))
                        start = int(rng.integers(0, len(x) - n + 1))
                        x[start : start + n] = np.nan
                rows.append((l, x))
            write_ucr(f"{out}/{name}_{s}.csv", rows)
    elif name in ("MUSK1Imbalanced", "MUSK1Narrow", "MUSK1Wide"):
        lines = [l.rstrip("\n") for l in open(os.path.join(data, "musk1.csv")) if l.strip()]
        header, body = lines[0], [l.split(",") for l in lines[1:]]
        if name == "MUSK1Imbalanced":
            positive = sorted({r[0] for r in body if r[1] == "1"}, key=int)
            keep = set(rng.choice(positive, 3, replace=False).tolist())
            body = [r for r in body if r[1] == "0" or r[0] in keep]
        elif name == "MUSK1Wide":
            header += "," + ",".join(f"f{167 + i}" for i in range(64))
            body = [r + [f"{v:.4f}" for v in rng.standard_normal(64)] for r in body]
        else:
            cols = sorted(rng.choice(np.arange(2, len(body[0])), 9, replace=False).tolist())
            header = ",".join(["bag_id", "label"] + [f"f{i + 1}" for i in range(9)])
            body = [r[:2] + [r[c] for c in cols] for r in body]
        with open(f"{out}/{name}.csv", "w") as f:
            f.write(header + "\n" + "".join(",".join(r) + "\n" for r in body))
    elif name == "ACSF1RegionBags":
        concept_bags(data, out, name, rng, draw % 10, 200, 0.5, (2, 11), None)
    elif name == "ACSF1MotifBags":
        concept_bags(data, out, name, rng, draw % 10, 193, 0.13, (15, 40), 9)
    elif name == "BasicMotionsBags":
        with open(f"{out}/{name}.csv", "w") as f:
            f.write("bag_id,label," + ",".join(f"f{i + 1}" for i in range(6)) + "\n")
            bag = 0
            for s in ("TRAIN", "TEST"):
                for label, chans in read_ts(os.path.join(data, f"BasicMotions_{s}.ts"))[1]:
                    bag += 1
                    y = 1 if label == "Badminton" else 0
                    for t in range(0, len(chans[0]), 4):
                        f.write(f"{bag},{y}," + ",".join(repr(float(c[t])) for c in chans) + "\n")
    else:
        raise SystemExit(f"unknown variant {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("names", nargs="*", help="variants to write (default: all)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--draw", type=int, default=0, help="another seeded draw of each variant (0: the fixed one)")
    a = ap.parse_args()
    if a.list:
        for n, what in VARIANTS.items():
            print(f"{n}: {what}")
        return 0
    os.makedirs(a.out_dir, exist_ok=True)
    for n in a.names or VARIANTS:
        build(a.data_dir, a.out_dir, n, a.draw)
        print(f"{a.out_dir}/{n}: {VARIANTS[n]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

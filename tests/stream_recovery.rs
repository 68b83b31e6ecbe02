//! At-least-once with harmless duplicates: SIGKILL a `milstream run` child mid-stream (also
//! while it writes a file), restart it in the same group, and the committed output holds
//! every expected prediction exactly once; a second member joining mid-stream splits the
//! partitions and together they emit everything.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::scratch;
use common::stream::*;
use milstream::mil::Sample;

fn any_file(out: &Path) -> bool {
    !read_predictions(out).is_empty()
}

fn tmp_file_visible(out: &Path) -> bool {
    !temp_files(out).is_empty()
}

/// What a crash loop left: the output folder and the logs of every run.
struct CrashRun {
    out: std::path::PathBuf,
    final_log: String,
    /// Assignment, commit, warning and error lines of the runs that were killed.
    history: String,
    expected: std::collections::BTreeMap<(String, i64, i64), Vec<f64>>,
    model: milstream::mil::Model,
}

/// Runs the daemon as a child in group `group`, SIGKILLs it three times at different
/// moments after it owns its partitions, restarts it until every window arrived and stops
/// it with SIGTERM. `commit_extra` goes into the config's `[commit]` section.
fn crash_loop(group: &str, commit_extra: &str) -> CrashRun {
    crash_loop_on(&cluster(3), group, commit_extra, None)
}

/// [`crash_loop`] against the broker at `bootstrap`.
/// `roll_rows` replaces the test config's 40 rows a file.
fn crash_loop_on(
    bootstrap: &str,
    group: &str,
    commit_extra: &str,
    roll_rows: Option<usize>,
) -> CrashRun {
    let dir = scratch(group);
    let out = dir.join("out");
    let bootstrap = bootstrap.to_string();
    let (model_path, model) = model_file(&dir);
    let stream = known_stream(6, 6, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let _ = config(&bootstrap, &out, &model_path, group, "");
    let cfg_path = config_path(&out, group);
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    let mut text = text.replace("[commit]\n", &format!("[commit]\n{commit_extra}\n"));
    if let Some(n) = roll_rows {
        assert!(
            text.contains("roll_rows = 40\n"),
            "the test config rolls at 40 rows"
        );
        text = text.replace("roll_rows = 40\n", &format!("roll_rows = {n}\n"));
    }
    std::fs::write(&cfg_path, text).unwrap();
    let (feeder, fed) = paced_producer(bootstrap.clone(), point_messages(&stream), 130);

    // Three crashes at different moments after the child owns its partitions: right after
    // its first file (before any commit), after its first commit and a further second of
    // work, and while a file is being written (when we catch one within three seconds).
    type Moment = Box<dyn Fn(&Path, Duration, &str) -> bool>;
    let moments: [Moment; 3] = [
        Box::new(|o, _, _| any_file(o)),
        Box::new(|_, owned, log| {
            owned > Duration::from_millis(1_000) && log.contains("first offsets committed")
        }),
        Box::new(|o, owned, _| {
            owned > Duration::from_millis(1_000)
                && (tmp_file_visible(o) || owned > Duration::from_millis(4_000))
        }),
    ];
    for (i, moment) in moments.iter().enumerate() {
        let log = dir.join(format!("child-{i}.log"));
        let mut child = spawn_child(&cfg_path, &log);
        let started = Instant::now();
        let mut owned_since = None;
        while started.elapsed() < Duration::from_secs(60) {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if owned_since.is_none() && text.contains("partition assigned") {
                owned_since = Some(Instant::now());
            }
            if owned_since.is_some_and(|t| moment(&out, t.elapsed(), &text)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        assert!(
            !fed.load(Ordering::SeqCst) || i == 0,
            "crash {i} came after the stream ended: slow the feed"
        );
    }
    let mut child = spawn_child(&cfg_path, &dir.join("child-final.log"));
    let complete = wait_until(Duration::from_secs(150), || {
        fed.load(Ordering::SeqCst) && window_keys(&read_predictions(&out)).is_superset(&want)
    });
    // Graceful stop: SIGTERM, exit 0, everything committed.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    feeder.join().unwrap();
    let final_log = std::fs::read_to_string(dir.join("child-final.log")).unwrap_or_default();
    assert!(
        complete,
        "not every window arrived; final log:\n{final_log}"
    );
    assert!(
        status.success(),
        "exit status {status:?}; log:\n{final_log}"
    );
    let mut history = String::new();
    for i in 0..moments.len() {
        let l = std::fs::read_to_string(dir.join(format!("child-{i}.log"))).unwrap_or_default();
        history.push_str(&format!("--- child {i}\n"));
        for line in l.lines().filter(|l| {
            l.contains("assigned")
                || l.contains("replay point")
                || l.contains("commit")
                || l.contains("WARN")
                || l.contains("ERROR")
        }) {
            history.push_str(line);
            history.push('\n');
        }
    }
    CrashRun {
        out,
        final_log,
        history,
        expected,
        model,
    }
}

/// Every expected window exactly once, scored as the never-killed model scores it, and no
/// temp file left.
fn assert_exactly_the_expected_windows(run: &CrashRun) {
    let rows = read_predictions(&run.out);
    let want: BTreeSet<_> = run.expected.keys().cloned().collect();
    assert_eq!(
        window_keys(&rows),
        want,
        "every expected prediction, nothing else; earlier runs:\n{}",
        run.history
    );
    assert_eq!(rows.len(), want.len(), "no duplicate rows");
    assert!(
        temp_files(&run.out).is_empty(),
        "temp files left: {:?}",
        temp_files(&run.out)
    );
    for r in &rows {
        let w = &run.expected[&(r.key.clone(), r.start.unwrap(), r.end.unwrap())];
        assert_eq!(
            r.scores,
            run.model
                .predict(&Sample::Series(w.clone()))
                .unwrap()
                .scores,
            "window {} {:?} scored differently from the reference; earlier runs:\n{}",
            r.key,
            r.start,
            run.history
        );
    }
}

#[test]
fn sigkill_mid_stream_then_restart_gives_every_prediction_exactly_once() {
    let run = crash_loop("crash", "");
    // The restarts resumed from commits with a replay point, not from the beginning.
    assert!(
        run.final_log.contains("replay_from=Some("),
        "the final run found no commit to resume from:\n{}\nearlier runs:\n{}",
        run.final_log,
        run.history
    );
    assert!(
        run.final_log.contains("commit_metadata=Some("),
        "the commit carried its replay point:\n{}",
        run.final_log
    );
    assert_exactly_the_expected_windows(&run);
}

/// A broker that drops commit metadata (Tansu does), simulated by committing bare offsets:
/// the restarts recover the replay point from the newest durable output file instead, and
/// the output is exactly the never-killed reference's. The files carry their metadata where
/// an independent reader (pyarrow) sees it.
#[test]
fn without_commit_metadata_the_replay_point_comes_from_the_output_files() {
    // One row a file: at a hop both series of a partition emit a window at neighbouring
    // offsets, so the second window's file spans one offset while its replay point is the
    // start of the windows still open, W points of each series back: some file's replay point
    // then lies before its own range however fast the machine seals files (with 40 rows or
    // 300 ms a file, a file spanned about one hop, as long as a window: a coin toss).
    let run = crash_loop_on(&cluster(3), "nometa", "metadata = false", Some(1));
    let restarts = format!("{}\n{}", run.history, run.final_log);
    assert!(
        restarts.contains("source=\"output_file\""),
        "no restart recovered its replay point from a file:\n{restarts}"
    );
    assert!(
        !restarts.contains("commit_metadata=Some(") && !restarts.contains("source=\"commit_"),
        "commit metadata was used although none was committed:\n{restarts}"
    );
    assert_exactly_the_expected_windows(&run);

    // pyarrow reads each file's range and replay point from the footer.
    let script = r#"
import sys, glob, pyarrow.parquet as pq
for f in sorted(glob.glob(sys.argv[1] + "/predictions/*/*.parquet")):
    m = pq.read_metadata(f).metadata
    name = f.rsplit("/", 1)[1][: -len(".parquet")]
    first, last = int(m[b"milstream.first_offset"]), int(m[b"milstream.last_offset"])
    replay = int(m[b"milstream.replay_from"])
    assert name.endswith("-%020d-%020d" % (first, last)), (f, m)
    assert replay <= last + 1, (f, m)
    assert m[b"milstream.topic"].decode() == name.rsplit("-", 3)[0], (f, m)
    print(name, first, last, replay)
"#;
    let o = common::tools::python_with("pyarrow", "pyarrow")
        .args(["-c", script, run.out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pyarrow: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.lines().count() > 3, "files checked:\n{listed}");
    // Some file's replay point lies before its own range: windows span files.
    assert!(
        listed.lines().any(|l| {
            let v: Vec<i64> = l.split(' ').skip(1).map(|x| x.parse().unwrap()).collect();
            v[2] < v[0]
        }),
        "files checked:\n{listed}"
    );
}

#[test]
fn a_second_member_joins_mid_stream_and_together_they_emit_everything() {
    second_member_joins(&cluster(4), "rebalance");
}

/// Two daemons in one group on the broker at `bootstrap`: the second joins mid-stream.
fn second_member_joins(bootstrap: &str, group: &str) {
    let dir = scratch(group);
    let out = dir.join("out");
    let bootstrap = bootstrap.to_string();
    let (model_path, _) = model_file(&dir);
    let stream = known_stream(8, 5, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    // The same model under two file names: model_version then tells which member wrote a row.
    let model_b = dir.join("member-b.json");
    std::fs::copy(&model_path, &model_b).unwrap();
    let cfg_a = config(&bootstrap, &out, &model_path, group, "");
    let mut cfg_b = cfg_a.clone();
    cfg_b.model.series_path = Some(model_b);
    let (feeder, fed) = paced_producer(bootstrap.clone(), point_messages(&stream), 250);

    let (a, stop_a) = spawn_daemon(cfg_a);
    assert!(
        wait_until(Duration::from_secs(60), || any_file(&out)),
        "the first member writes"
    );
    let (b, stop_b) = spawn_daemon(cfg_b);
    let complete = wait_until(Duration::from_secs(150), || {
        fed.load(Ordering::SeqCst) && window_keys(&read_predictions(&out)).is_superset(&want)
    });
    stop_b.send(true).unwrap();
    stop_a.send(true).unwrap();
    b.join().unwrap().expect("member b stops cleanly");
    a.join().unwrap().expect("member a stops cleanly");
    feeder.join().unwrap();
    assert!(complete, "not every window arrived");

    let rows = read_predictions(&out);
    assert_eq!(window_keys(&rows), want);
    // Both members wrote: the partitions were split between them.
    let writers: BTreeSet<&str> = rows
        .iter()
        .map(|r| r.model_version.split('-').next().unwrap())
        .collect();
    assert_eq!(
        writers,
        BTreeSet::from(["member", "model"]),
        "rows by member"
    );
    // Duplicates may only come from a revoke that timed out; they must be identical.
    for r in &rows {
        for s in rows
            .iter()
            .filter(|s| s.key == r.key && s.start == r.start && s.file != r.file)
        {
            assert_eq!(
                (&r.label, &r.scores),
                (&s.label, &s.scores),
                "duplicates must be identical"
            );
        }
    }
    eprintln!("rebalance: {} rows for {} keys", rows.len(), want.len());
}

/// Whether a prediction file was renamed into place after `t` (a rewrite counts).
fn file_written_since(out: &Path, t: std::time::SystemTime) -> bool {
    let Ok(dates) = std::fs::read_dir(out.join("predictions")) else {
        return false;
    };
    dates.flatten().any(|d| {
        std::fs::read_dir(d.path())
            .into_iter()
            .flatten()
            .flatten()
            .any(|f| {
                !f.file_name().to_string_lossy().starts_with('.')
                    && f.metadata().and_then(|m| m.modified()).is_ok_and(|m| m > t)
            })
    })
}

/// The crash-loop soak: a producer at a fixed rate, the daemon SIGKILLed at
/// `MILSTREAM_SOAK_KILLS` (default 50) random moments over about ten minutes, restarted each
/// time; then every (key, window) compared with the never-killed reference (the offline
/// predict of the same points). Prints lost, duplicated, differing and the distribution of
/// kill-to-first-new-file times. Run with
/// `cargo test --release --test stream_recovery -- --ignored --nocapture soak`.
#[test]
#[ignore]
fn soak_sigkill_at_fifty_random_moments() {
    use rand::{Rng, SeedableRng};
    let kills: usize = std::env::var("MILSTREAM_SOAK_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let group = "soak";
    let dir = scratch(group);
    let out = dir.join("out");
    let bootstrap = cluster(3);
    let (model_path, model) = model_file(&dir);
    // 8 sensors x 60 series x 150 points = 72,000 points at 120 points/s: ten minutes.
    let stream = known_stream(8, 60, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let _ = config(&bootstrap, &out, &model_path, group, "");
    let cfg_path = config_path(&out, group);
    let (feeder, fed) = paced_producer(bootstrap.clone(), point_messages(&stream), 120);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(50);
    let mut restarts: Vec<f64> = Vec::new();
    let mut without_file = 0usize;
    let mut child = spawn_child(&cfg_path, &dir.join("child-0.log"));
    let mut killed: Option<(Instant, std::time::SystemTime)> = None;
    for i in 0..kills {
        let deadline = Instant::now() + Duration::from_millis(rng.random_range(2_000..14_000));
        let mut first = None;
        while Instant::now() < deadline {
            if let (None, Some((at, since))) = (first, killed) {
                if file_written_since(&out, since) {
                    first = Some(at.elapsed().as_secs_f64());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if killed.is_some() {
            match first {
                Some(s) => restarts.push(s),
                None => without_file += 1,
            }
        }
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        killed = Some((Instant::now(), std::time::SystemTime::now()));
        child = spawn_child(&cfg_path, &dir.join(format!("child-{}.log", i + 1)));
    }
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let (at, since) = killed.expect("at least one kill");
    if wait_until(Duration::from_secs(120), || file_written_since(&out, since)) {
        restarts.push(at.elapsed().as_secs_f64());
    }
    let complete = wait_until(Duration::from_secs(900), || {
        fed.load(Ordering::SeqCst) && window_keys(&read_predictions(&out)).is_superset(&want)
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    feeder.join().unwrap();
    let rows = read_predictions(&out);
    let got = window_keys(&rows);
    let lost = want.difference(&got).count();
    let duplicated = rows.len() - got.len();
    let differing = rows
        .iter()
        .filter(|r| {
            let w = &expected[&(r.key.clone(), r.start.unwrap(), r.end.unwrap())];
            r.scores != model.predict(&Sample::Series(w.clone())).unwrap().scores
        })
        .count();
    restarts.sort_by(f64::total_cmp);
    let q = |p: f64| restarts[((restarts.len() - 1) as f64 * p).round() as usize];
    eprintln!(
        "soak: {kills} SIGKILLs; {} windows expected, {} rows: lost {lost}, duplicated {duplicated}, \
         differing {differing}; temp files left {}",
        want.len(),
        rows.len(),
        temp_files(&out).len()
    );
    eprintln!(
        "kill-to-first-new-file (s): n {} min {:.1} median {:.1} p90 {:.1} max {:.1}; \
         {without_file} restarts were killed again before their first file",
        restarts.len(),
        q(0.0),
        q(0.5),
        q(0.9),
        q(1.0)
    );
    assert!(complete && status.success(), "the final run did not finish");
    assert_eq!((lost, duplicated, differing), (0, 0, 0));
    assert!(temp_files(&out).is_empty());
}

/// Seconds from a SIGKILL to the restarted child's first new durable file, with the group's
/// session timeout at librdkafka's default (45 s), for dynamic and for static membership
/// (`kafka.instance_id`).
/// Prints the figures; run with
/// `cargo test --release --test stream_recovery -- --ignored --nocapture kill_to_first_file`.
#[test]
#[ignore]
fn kill_to_first_file_with_and_without_static_membership() {
    kill_to_first_file(&|| (cluster(3), None), "mock", false);
}

/// The same on Tansu (run by `scripts/real-broker-tests.sh`).
#[test]
#[ignore]
fn tansu_kill_to_first_file_with_and_without_static_membership() {
    kill_to_first_file(
        &|| {
            let t = common::tansu::Tansu::start("restart", 3);
            (t.bootstrap.clone(), Some(t))
        },
        "tansu",
        true,
    );
}

/// A broker (and what keeps it running) per measurement.
type Broker = dyn Fn() -> (String, Option<common::tansu::Tansu>);

/// `static_rejoins_at_once`: the broker hands a static member's partitions back on its rejoin
/// (KIP-345), so the static restart must beat the dynamic one, which waits out the session.
fn kill_to_first_file(broker: &Broker, name: &str, static_rejoins_at_once: bool) {
    let mut figures = Vec::new();
    for (mode, instance) in [("dynamic", ""), ("static", "instance_id = \"scorer-0\"\n")] {
        let group = format!("restart-{name}-{mode}");
        let dir = scratch(&group);
        let out = dir.join("out");
        let (bootstrap, _running) = broker();
        let (model_path, _) = model_file(&dir);
        let stream = known_stream(6, 16, 1_700_000_001_500);
        let _ = config(&bootstrap, &out, &model_path, &group, "");
        let cfg_path = config_path(&out, &group);
        let text = std::fs::read_to_string(&cfg_path)
            .unwrap()
            .replace("\"6000\"", "\"45000\"")
            .replace("[kafka]\n", &format!("[kafka]\n{instance}"));
        std::fs::write(&cfg_path, text).unwrap();
        let (feeder, _fed) = paced_producer(bootstrap.clone(), point_messages(&stream), 150);
        let mut child = spawn_child(&cfg_path, &dir.join("child-0.log"));
        assert!(
            wait_until(Duration::from_secs(90), || read_predictions(&out).len()
                > 20),
            "{mode}: the first child writes"
        );
        std::thread::sleep(Duration::from_secs(2));
        child.kill().expect("SIGKILL");
        let killed = Instant::now();
        let killed_at = std::time::SystemTime::now();
        child.wait().unwrap();
        let mut child = spawn_child(&cfg_path, &dir.join("child-1.log"));
        // A prediction file renamed into place after the kill (a rewrite counts: it is
        // the restarted child's first durable output).
        let new_file = wait_until(Duration::from_secs(120), || {
            file_written_since(&out, killed_at)
        });
        let secs = killed.elapsed().as_secs_f64();
        child.kill().unwrap();
        child.wait().unwrap();
        drop(feeder);
        assert!(new_file, "{mode}: no new file within 120 s");
        eprintln!("kill-to-first-new-file {mode}: {secs:.1} s (session.timeout.ms = 45000)");
        figures.push((mode, secs));
    }
    // librdkafka's mock cluster matches classic-protocol members by member id only
    // (rd_kafka_mock_cgrp_classic_member_find), so a static id does not shorten the restart
    // there (measured 89.8 s dynamic, 89.9 s static): no order to assert. A real broker
    // (KIP-345, Kafka 2.3+) hands the partitions back on the rejoin: on Tansu 45.8 s dynamic
    // against 6.8 s static. The dynamic restart waits out the 45 s session timeout and the
    // static one does not, so half the dynamic figure separates them on any machine.
    eprintln!("figures: {figures:?}");
    if static_rejoins_at_once {
        let (dynamic, fixed) = (figures[0].1, figures[1].1);
        assert!(
            fixed < dynamic / 2.0,
            "static membership did not shorten the restart: {figures:?}"
        );
    }
}

/// The real broker (Tansu, which drops commit metadata): SIGKILL recovery goes through the
/// output files' replay points. Run by `scripts/real-broker-tests.sh`.
#[test]
#[ignore]
fn tansu_sigkill_mid_stream_then_restart_gives_every_prediction_exactly_once() {
    let broker = common::tansu::Tansu::start("crash", 3);
    let run = crash_loop_on(&broker.bootstrap, "tansu-crash", "", None);
    let restarts = format!("{}\n{}", run.history, run.final_log);
    assert!(
        restarts.contains("source=\"output_file\""),
        "no restart recovered its replay point from a file:\n{restarts}"
    );
    assert_exactly_the_expected_windows(&run);
}

/// Two daemons on Tansu: a rebalance splits the partitions and nothing is lost.
#[test]
#[ignore]
fn tansu_a_second_member_joins_mid_stream() {
    let broker = common::tansu::Tansu::start("rebalance", 4);
    second_member_joins(&broker.bootstrap, "tansu-rebalance");
}

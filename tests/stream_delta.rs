//! `output.format = "delta"`: the outputs as Delta tables, exactly once by the tables' own
//! transactions, checked with independent readers (Python `deltalake`, delta-rs; DuckDB's
//! Parquet reader over the files the log names; `scripts/delta_check.py`):
//! - two writers owning one partition at once (a zombie and its successor) commit each row
//!   once: the loser of a version re-reads the log and drops what the winner committed;
//! - the crash loop: the daemon SIGKILLed three times mid-stream, restarted, and the table
//!   holds every expected window exactly once, scored as the never-killed model scores it,
//!   with `transaction_version` at the partitions' progress and no commit without its file;
//! - the store (moto S3) stopped for 30 s mid-stream: nothing lost, nothing twice;
//! - commits whose answer S3 loses (made, then a 500; the retry finds them there): each
//!   known for the writer's own, its file kept.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::scratch;
use common::stream::*;
use milstream::config::Role;
use milstream::mil::Sample;
use milstream::stream::ingest::record::{PredictionRecord, RecordKind};
use milstream::stream::output::delta::DeltaTables;
use milstream::stream::output::sink::Segment;
use milstream::stream::output::store::Store;
use serde_json::{json, Value};

/// `scripts/delta_check.py` on the table at `uri`: deltalake's and DuckDB's view of it.
fn delta_check(uri: &str, app_ids: &[String], options: Option<&Value>) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/delta_check.py");
    let mut cmd = common::tools::python_with("deltalake, duckdb", "deltalake==1.6.6 duckdb");
    cmd.arg(script)
        .arg(uri)
        .arg(serde_json::to_string(app_ids).unwrap());
    if let Some(o) = options {
        cmd.arg(o.to_string());
    }
    let out = cmd.output().expect("python runs");
    assert!(
        out.status.success(),
        "delta_check.py {uri} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("delta_check.py prints JSON")
}

/// (key, window_start, window_end) of each row deltalake read.
fn window_rows(check: &Value) -> Vec<(String, i64, i64)> {
    check["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_i64().unwrap(),
                r[2].as_i64().unwrap(),
            )
        })
        .collect()
}

/// A prediction of series `key` completed at `offset` of partition 0.
fn prediction(key: &str, offset: i64) -> PredictionRecord {
    serde_json::from_value(json!({
        "key": key, "kind": "window",
        "window_start_ms": offset * 10, "window_end_ms": offset * 10 + 9,
        "label": "a", "classes": ["a", "b"], "scores": [0.5, -0.5],
        "model_kind": "series", "model_name": "m", "model_version": "v1", "top": [],
        "source_topic": "points", "source_partition": 0, "source_offset": offset,
        "first_offset": offset, "emitted_at_ms": 1_700_000_000_000i64,
    }))
    .unwrap()
}

/// A segment of `points`/0 over `first..=last` with a prediction at every offset.
fn segment(first: i64, last: i64) -> Segment {
    let mut s = Segment::new("points", 0, first, 1_700_000_000_000);
    s.last_offset = last;
    s.replay_from = first;
    s.predictions = (first..=last)
        .map(|o| prediction(&format!("s{o}"), o))
        .collect();
    s
}

/// A zombie (an earlier owner still flushing) and the new owner of one partition write
/// overlapping segments of it into the same table, each through its own view of the log
/// (as two processes would): the zombie's view is stale, so its commit loses the version to
/// the new owner's and it re-reads the log; the rows the new owner committed are dropped
/// from its segment. Then both race, segment against segment, from threads. deltalake reads
/// every offset exactly once.
#[test]
fn a_zombie_writer_loses_the_version_and_the_table_holds_each_row_once() {
    let dir = scratch("delta-zombie");
    let out = dir.join("out");
    let store = Store::Local(out.clone());
    let zombie = DeltaTables::new("g");
    let owner = DeltaTables::new("g");
    zombie
        .write_segment(&store, &segment(0, 99), false)
        .unwrap();
    // The new owner replays from 50 (its Kafka commit) while the zombie still holds 100..=199.
    owner
        .write_segment(&store, &segment(50, 149), false)
        .unwrap();
    owner
        .write_segment(&store, &segment(150, 249), false)
        .unwrap();
    let w = zombie
        .write_segment(&store, &segment(100, 199), false)
        .unwrap();
    assert_eq!(
        w.prediction_files, 0,
        "the zombie's segment was held by the table already"
    );
    // Both at once from the table's version (the new owner replays from the Kafka commit,
    // never past what the zombie has not committed), in segments of different bounds.
    let (a, b) = (Arc::new(zombie), Arc::new(owner));
    let threads: Vec<_> = [(a, 25), (b, 20)]
        .into_iter()
        .map(|(t, len)| {
            let store = store.clone();
            std::thread::spawn(move || {
                for first in (250..600).step_by(len) {
                    t.write_segment(&store, &segment(first, first + len as i64 - 1), false)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let app = "milstream/g/points/0".to_string();
    let check = delta_check(
        &format!("{}/predictions", out.display()),
        std::slice::from_ref(&app),
        None,
    );
    let mut offsets: Vec<i64> = check["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[5].as_i64().unwrap())
        .collect();
    offsets.sort();
    let want: Vec<i64> = (0..=609).collect();
    assert_eq!(offsets, want, "every offset once");
    assert_eq!(check["txn"][&app], json!(610), "{check}");
    assert_eq!(check["missing"], json!([]), "every committed file exists");
    assert_eq!(
        check["duckdb_same"],
        json!(true),
        "DuckDB reads the same rows"
    );
    // What the restarted daemon reads on assignment: the tables' txn, no data file.
    let fresh = DeltaTables::new("g");
    let point = fresh
        .replay_point(&store, Role::Scorer, ("points", 0, RecordKind::Point))
        .unwrap();
    assert_eq!(point.map(|p| p.1), Some(610));
    // Table care as README has it (compact, checkpoint, vacuum with delta-rs): a writer
    // that starts afterwards reads the txn from the checkpoint and goes on exactly once.
    let table = format!("{}/predictions", out.display());
    let care = common::tools::python_with("deltalake", "deltalake==1.6.6")
        .args([
            "-c",
            &format!(
                "from deltalake import DeltaTable as T; t=T('{table}'); t.optimize.compact(); \
             t.create_checkpoint(); t.vacuum(retention_hours=0, dry_run=False, full=True, \
             enforce_retention_duration=False)"
            ),
        ])
        .output()
        .unwrap();
    assert!(
        care.status.success(),
        "{}",
        String::from_utf8_lossy(&care.stderr)
    );
    let after = DeltaTables::new("g");
    let point = after
        .replay_point(&store, Role::Scorer, ("points", 0, RecordKind::Point))
        .unwrap();
    assert_eq!(
        point.map(|p| p.1),
        Some(610),
        "the txn read from the checkpoint"
    );
    after
        .write_segment(&store, &segment(600, 629), false)
        .unwrap();
    let check = delta_check(&table, std::slice::from_ref(&app), None);
    assert_eq!(
        window_rows(&check).len(),
        630,
        "after compaction: every offset once"
    );
    assert_eq!(check["txn"][&app], json!(630));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Any data file under the predictions table yet (committed or not).
fn any_data_file(out: &Path) -> bool {
    fn walk(d: &Path) -> bool {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let p = e.path();
                if p.is_dir() {
                    walk(&p)
                } else {
                    p.extension().is_some_and(|x| x == "parquet")
                }
            })
    }
    walk(&out.join("predictions"))
}

/// Runs the daemon (delta output) as a child in `group` on `bootstrap` (3 partitions),
/// SIGKILLs it three times after it owns its partitions (after its first data file, after
/// its first Kafka commit, and a random moment 1-4 s in), restarts it until deltalake reads
/// every expected window, and stops it with SIGTERM. Returns the final check, the expected
/// windows, the model and the runs' logs.
#[allow(clippy::type_complexity)]
fn delta_crash_loop(
    bootstrap: &str,
    group: &str,
    commit_extra: &str,
) -> (
    Value,
    BTreeMap<(String, i64, i64), Vec<f64>>,
    milstream::mil::Model,
    String,
) {
    let dir = scratch(group);
    let out = dir.join("out");
    let (model_path, model) = model_file(&dir);
    let stream = known_stream(6, 6, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let _ = config(bootstrap, &out, &model_path, group, "");
    let cfg_path = config_path(&out, group);
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    let text = text
        .replace("[output]\n", "[output]\nformat = \"delta\"\n")
        .replace("[commit]\n", &format!("[commit]\n{commit_extra}\n"));
    std::fs::write(&cfg_path, text).unwrap();
    let p = producer(bootstrap);
    let msgs = point_messages(&stream);
    let feed = {
        let bootstrap = bootstrap.to_string();
        std::thread::spawn(move || {
            let p = producer(&bootstrap);
            // About 130 messages a second: the kills fall mid-stream.
            for chunk in msgs.chunks(50) {
                produce_all(&p, chunk);
                std::thread::sleep(Duration::from_millis(385));
            }
        })
    };
    drop(p);
    let random_ms = 1_000 + u64::from(std::process::id() % 3_000);
    type Moment = Box<dyn Fn(&Path, Duration, &str) -> bool>;
    let moments: [Moment; 3] = [
        Box::new(|o, _, _| any_data_file(o)),
        Box::new(|_, owned, log| {
            owned > Duration::from_millis(1_000) && log.contains("first offsets committed")
        }),
        Box::new(move |_, owned, _| owned > Duration::from_millis(random_ms)),
    ];
    let mut history = String::new();
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
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        history.push_str(&format!("--- child {i}\n"));
        for l in text
            .lines()
            .filter(|l| l.contains("replay point") || l.contains("WARN") || l.contains("ERROR"))
        {
            history.push_str(l);
            history.push('\n');
        }
    }
    let final_log = dir.join("child-final.log");
    let mut child = spawn_child(&cfg_path, &final_log);
    let table = format!("{}/predictions", out.display());
    let apps: Vec<String> = (0..3)
        .map(|p| format!("milstream/{group}/{POINTS}/{p}"))
        .collect();
    // deltalake's view, polled every 2 s until every window is in (or 150 s passed).
    let deadline = Instant::now() + Duration::from_secs(150);
    while Instant::now() < deadline {
        if out.join("predictions/_delta_log").exists() {
            let check = delta_check(&table, &apps, None);
            if window_rows(&check)
                .into_iter()
                .collect::<BTreeSet<_>>()
                .is_superset(&want)
            {
                break;
            }
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    feed.join().unwrap();
    let text = std::fs::read_to_string(&final_log).unwrap_or_default();
    assert!(status.success(), "exit status {status:?}; log:\n{text}");
    for l in text.lines().filter(|l| l.contains("replay point")) {
        history.push_str(l);
        history.push('\n');
    }
    (delta_check(&table, &apps, None), expected, model, history)
}

/// The crash loop with Delta output on the mock cluster: 0 lost, 0 duplicated, 0 differing,
/// every commit's file present, the txn versions at the partitions' progress.
#[test]
fn sigkill_three_times_then_restart_gives_each_window_once_in_the_delta_table() {
    let bootstrap = cluster(3);
    let (check, expected, model, history) = delta_crash_loop(&bootstrap, "delta-crash", "");
    assert_crash_loop_exact(
        &bootstrap,
        "delta-crash",
        &check,
        &expected,
        &model,
        &history,
    );
}

/// The same with bare Kafka commits (as a broker that drops commit metadata leaves them,
/// Tansu): the restarts take the replay point from the tables' txn versions.
#[test]
fn without_commit_metadata_the_replay_point_comes_from_the_table_txn() {
    let bootstrap = cluster(3);
    let group = "delta-bare";
    let (check, expected, model, history) = delta_crash_loop(&bootstrap, group, "metadata = false");
    assert!(
        history.contains("delta table txn"),
        "no replay point came from the tables:\n{history}"
    );
    assert_crash_loop_exact(&bootstrap, group, &check, &expected, &model, &history);
}

/// The crash loop on a real broker: Tansu, which drops commit metadata, so each restart
/// takes its replay point from the tables' txn. Run by `scripts/real-broker-tests.sh`.
#[test]
#[ignore]
fn tansu_sigkill_three_times_then_restart_gives_each_window_once_in_the_delta_table() {
    let broker = common::tansu::Tansu::start("delta-crash", 3);
    let group = "tansu-delta";
    let (check, expected, model, history) = delta_crash_loop(&broker.bootstrap, group, "");
    assert!(
        history.contains("delta table txn"),
        "no replay point came from the tables:\n{history}"
    );
    assert_crash_loop_exact(
        &broker.bootstrap,
        group,
        &check,
        &expected,
        &model,
        &history,
    );
}

/// The crash-loop soak with Delta output: a producer at a fixed rate, the daemon SIGKILLed
/// at `MILSTREAM_SOAK_KILLS` (default 50) random moments over about ten minutes, restarted
/// each time; then the table read with deltalake and DuckDB and every window compared with
/// the never-killed reference. Run with
/// `cargo test --release --test stream_delta -- --ignored --nocapture soak`.
#[test]
#[ignore]
fn soak_sigkill_at_fifty_random_moments_with_delta_tables() {
    use rand::{Rng, SeedableRng};
    let kills: usize = std::env::var("MILSTREAM_SOAK_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let group = "delta-soak";
    let dir = scratch(group);
    let out = dir.join("out");
    let bootstrap = cluster(3);
    let (model_path, model) = model_file(&dir);
    // 8 sensors x 60 series x 150 points = 72,000 points at 120 points/s: ten minutes.
    let stream = known_stream(8, 60, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let _ = config(&bootstrap, &out, &model_path, group, "");
    let cfg_path = config_path(&out, group);
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    std::fs::write(
        &cfg_path,
        text.replace("[output]\n", "[output]\nformat = \"delta\"\n"),
    )
    .unwrap();
    let (feeder, fed) = paced_producer(bootstrap.clone(), point_messages(&stream), 120);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(50);
    let mut history = String::new();
    let mut child = spawn_child(&cfg_path, &dir.join("child-0.log"));
    for i in 0..kills {
        std::thread::sleep(Duration::from_millis(rng.random_range(2_000..14_000)));
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        let log = std::fs::read_to_string(dir.join(format!("child-{i}.log"))).unwrap_or_default();
        for l in log.lines().filter(|l| l.contains("replay point")) {
            history.push_str(l);
            history.push('\n');
        }
        child = spawn_child(&cfg_path, &dir.join(format!("child-{}.log", i + 1)));
    }
    let table = format!("{}/predictions", out.display());
    let apps: Vec<String> = (0..3)
        .map(|p| format!("milstream/{group}/{POINTS}/{p}"))
        .collect();
    let complete = wait_until(Duration::from_secs(900), || {
        fed.load(std::sync::atomic::Ordering::SeqCst)
            && window_rows(&delta_check(&table, &apps, None))
                .into_iter()
                .collect::<BTreeSet<_>>()
                .is_superset(&want)
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    feeder.join().unwrap();
    assert!(complete && status.success(), "the final run did not finish");
    let check = delta_check(&table, &apps, None);
    eprintln!("soak: {kills} SIGKILLs");
    assert_crash_loop_exact(&bootstrap, group, &check, &expected, &model, &history);
}

/// 0 lost, 0 duplicated, 0 differing, 0 unexpected; every commit's file present; DuckDB
/// reads the same rows; each partition's txn past its last row and not past its Kafka
/// commit.
fn assert_crash_loop_exact(
    bootstrap: &str,
    group: &str,
    check: &Value,
    expected: &BTreeMap<(String, i64, i64), Vec<f64>>,
    model: &milstream::mil::Model,
    history: &str,
) {
    let rows = window_rows(check);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let got: BTreeSet<_> = rows.iter().cloned().collect();
    let lost = want.difference(&got).count();
    let extra = got.difference(&want).count();
    let duplicated = rows.len() - got.len();
    let mut differing = 0;
    for r in check["rows"].as_array().unwrap() {
        let key = (
            r[0].as_str().unwrap().to_string(),
            r[1].as_i64().unwrap(),
            r[2].as_i64().unwrap(),
        );
        let Some(w) = expected.get(&key) else {
            continue;
        };
        let scores: Vec<f64> = serde_json::from_value(r[3].clone()).unwrap();
        if scores != model.predict(&Sample::Series(w.clone())).unwrap().scores {
            differing += 1;
        }
    }
    println!(
        "delta crash loop: {} windows, lost {lost}, duplicated {duplicated}, differing {differing}, unexpected {extra}; table version {}, {} files, {} unreferenced data files",
        want.len(),
        check["version"],
        check["files"],
        check["unreferenced"].as_array().map_or(0, Vec::len)
    );
    assert_eq!(
        (lost, duplicated, differing, extra),
        (0, 0, 0, 0),
        "earlier runs:\n{history}"
    );
    assert_eq!(
        check["missing"],
        json!([]),
        "a commit without its data file"
    );
    assert_eq!(
        check["duckdb_same"],
        json!(true),
        "DuckDB reads other rows: {check}"
    );
    assert!(history.contains("replay point"), "{history}");
    // Each partition's txn: past its last row, and never past what Kafka has committed
    // (the commit waits for the table).
    let committed = committed_offsets(bootstrap, group, POINTS, 3);
    for p in 0..3 {
        let app = format!("milstream/{group}/{POINTS}/{p}");
        let txn = check["txn"][&app].as_i64().expect("a txn per partition");
        let last = check["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r[4] == json!(p))
            .map(|r| r[5].as_i64().unwrap())
            .max()
            .unwrap();
        assert!(
            txn > last,
            "partition {p}: txn {txn} not past its last row {last}"
        );
        assert!(
            committed.get(&p).is_some_and(|c| txn <= *c),
            "partition {p}: txn {txn} beyond the Kafka commit {committed:?}"
        );
    }
}

/// The deltalake storage options for the table on `moto`.
fn moto_options(moto: &common::s3::Moto) -> Value {
    json!({
        "AWS_ENDPOINT_URL": moto.endpoint(),
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    })
}

/// The S3 store (moto) stopped for 30 s mid-stream under a daemon writing Delta tables:
/// requests hang and time out, commits fail (some may land unanswered), the writer retries;
/// once the store is back, deltalake reads every window exactly once from S3.
#[test]
fn the_store_stopped_for_30_s_loses_and_duplicates_nothing_in_the_delta_table() {
    use common::s3::{Moto, BUCKET};
    let moto = Moto::start();
    let dir = scratch("delta-outage");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let local_out = dir.join("out");
    let _ = config(&bootstrap, &local_out, &model_path, "delta-outage", "");
    let path = config_path(&local_out, "delta-outage");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &format!("dir = \"{}\"", local_out.display()),
        &format!("dir = \"s3://{BUCKET}/doutage\"\nformat = \"delta\""),
    );
    let text = format!(
        "{text}\n{}timeout = \"1s\"\nconnect_timeout = \"1s\"\n",
        moto.config_table()
    );
    let cfg = milstream::config::Config::parse("delta s3 config", &text).expect("config parses");
    let stream = known_stream(4, 8, 1_700_000_001_500);
    let want: BTreeSet<_> = expected_windows(&stream).keys().cloned().collect();
    let msgs = point_messages(&stream);
    let (daemon, stop) = spawn_daemon(cfg);
    let p = producer(&bootstrap);
    let uri = format!("s3://{BUCKET}/doutage/predictions");
    let opts = moto_options(&moto);
    let apps: Vec<String> = (0..2)
        .map(|p| format!("milstream/delta-outage/{POINTS}/{p}"))
        .collect();
    let (first, rest) = msgs.split_at(msgs.len() / 3);
    produce_all(&p, first);
    let store = moto.store("doutage");
    assert!(
        wait_until(Duration::from_secs(60), || store
            .get("predictions/_delta_log/00000000000000000000.json")
            .is_ok_and(|b| b.is_some())),
        "no commit before the outage: {:?}",
        store.list("")
    );
    moto.pause();
    produce_all(&p, rest);
    std::thread::sleep(Duration::from_secs(30));
    moto.resume();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut check = delta_check(&uri, &apps, Some(&opts));
    while Instant::now() < deadline
        && !window_rows(&check)
            .into_iter()
            .collect::<BTreeSet<_>>()
            .is_superset(&want)
    {
        std::thread::sleep(Duration::from_secs(2));
        check = delta_check(&uri, &apps, Some(&opts));
    }
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    let check = delta_check(&uri, &apps, Some(&opts));
    let rows = window_rows(&check);
    let got: BTreeSet<_> = rows.iter().cloned().collect();
    println!(
        "delta S3 outage: {} windows, lost {}, duplicated {}, table version {}, {} files",
        want.len(),
        want.difference(&got).count(),
        rows.len() - got.len(),
        check["version"],
        check["files"]
    );
    assert_eq!(got, want, "no loss, nothing unexpected");
    assert_eq!(rows.len(), want.len(), "no duplicates");
    // Each partition with rows: its txn past its last row.
    for (p, app) in apps.iter().enumerate() {
        let last = check["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r[4] == json!(p))
            .map(|r| r[5].as_i64().unwrap())
            .max();
        if let Some(last) = last {
            let txn = check["txn"][app].as_i64();
            assert!(
                txn.is_some_and(|t| t > last),
                "{app}: txn {txn:?}, last row {last}"
            );
        }
    }
}

/// S3 makes a commit and its answer is lost (a 500 after the write; the client retries and
/// the retry finds the object there): the writer must know the commit for its own and keep
/// its data file. Every third commit's answer is lost through a forwarder in front of moto;
/// deltalake then reads every window once, and every file the log names is there.
#[test]
fn a_commit_whose_answer_is_lost_is_known_for_its_own_and_keeps_its_file() {
    use common::s3::{lose_commit_answers, Moto, BUCKET};
    let moto = Moto::start();
    let dir = scratch("delta-lost-answer");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let local_out = dir.join("out");
    let _ = config(&bootstrap, &local_out, &model_path, "delta-lost", "");
    let path = config_path(&local_out, "delta-lost");
    let target = moto
        .endpoint()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let (proxy, lost) = lose_commit_answers(target, 3);
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &format!("dir = \"{}\"", local_out.display()),
        &format!("dir = \"s3://{BUCKET}/dlost\"\nformat = \"delta\""),
    );
    let store_table = moto
        .config_table()
        .replace(&moto.endpoint(), &format!("http://127.0.0.1:{proxy}"));
    let cfg =
        milstream::config::Config::parse("delta s3 config", &format!("{text}\n{store_table}"))
            .expect("config parses");
    let stream = known_stream(4, 8, 1_700_000_001_500);
    let want: BTreeSet<_> = expected_windows(&stream).keys().cloned().collect();
    let (daemon, stop) = spawn_daemon(cfg);
    let p = producer(&bootstrap);
    let uri = format!("s3://{BUCKET}/dlost/predictions");
    let opts = moto_options(&moto);
    let apps: Vec<String> = (0..2)
        .map(|p| format!("milstream/delta-lost/{POINTS}/{p}"))
        .collect();
    // In slices, so that the partitions make several commits each.
    for chunk in point_messages(&stream).chunks(40) {
        produce_all(&p, chunk);
        std::thread::sleep(Duration::from_millis(300));
    }
    let store = moto.store("dlost");
    let all_in = wait_until(Duration::from_secs(120), || {
        store
            .get("predictions/_delta_log/00000000000000000000.json")
            .is_ok_and(|b| b.is_some())
            && {
                let check = delta_check(&uri, &apps, Some(&opts));
                // A commit without its file ends the wait: it will not come back.
                check["missing"] != json!([])
                    || window_rows(&check)
                        .into_iter()
                        .collect::<BTreeSet<_>>()
                        .is_superset(&want)
            }
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    let check = delta_check(&uri, &apps, Some(&opts));
    let rows = window_rows(&check);
    let got: BTreeSet<_> = rows.iter().cloned().collect();
    let lost = lost.load(std::sync::atomic::Ordering::SeqCst);
    println!(
        "delta lost commit answers: {lost} lost, {} windows, missing {}, duplicated {}, table version {}, {} files, files missing {}",
        want.len(),
        want.difference(&got).count(),
        rows.len() - got.len(),
        check["version"],
        check["files"],
        check["missing"]
    );
    assert!(
        lost >= 1,
        "no commit answer was lost: the test tested nothing"
    );
    assert_eq!(
        check["missing"],
        json!([]),
        "every file the log names is in the store"
    );
    assert!(all_in, "every window in the table");
    assert_eq!(got, want, "no loss, nothing unexpected");
    assert_eq!(rows.len(), want.len(), "no duplicates");
}

/// Schema evolution: a predictions table made before the finding columns existed (its
/// `metaData` without them) takes rows with them as an additive change (a new `metaData`
/// whose added columns are nullable), and deltalake reads the new schema.
#[test]
fn a_table_without_the_finding_columns_grows_them() {
    use milstream::stream::output::arrow::predictions::PREDICTION_SCHEMA;
    use milstream::stream::output::delta::actions::{encode, Action, Format, Metadata, Protocol};
    use milstream::stream::output::delta::commit::put_commit;
    use milstream::stream::output::delta::schema::{for_delta, schema_string};
    let dir = scratch("delta-evolve");
    let out = dir.join("out");
    let store = Store::Local(out.clone());
    let empty = arrow_array::RecordBatch::new_empty(PREDICTION_SCHEMA.clone());
    let full = schema_string(&for_delta(&empty).unwrap().schema()).unwrap();
    let mut old: Value = serde_json::from_str(&full).unwrap();
    let fields = old["fields"].as_array_mut().unwrap();
    fields.retain(|f| {
        let n = f["name"].as_str().unwrap();
        !n.starts_with("finding_") && n != "shown_share" && n != "probabilities"
    });
    let old_names = fields.len();
    let v0 = encode(&[
        Action::Protocol(Protocol::plain()),
        Action::MetaData(Metadata {
            id: "5f0c7a4e-0000-4000-8000-000000000001".into(),
            name: None,
            format: Format {
                provider: "parquet".into(),
                options: Default::default(),
            },
            schema_string: old.to_string(),
            partition_columns: vec![],
            configuration: Default::default(),
            created_time: Some(1_700_000_000_000),
        }),
    ]);
    put_commit(&store, "predictions", 0, v0).unwrap();
    DeltaTables::new("g")
        .write_segment(&store, &segment(0, 9), false)
        .unwrap();
    let check = delta_check(&format!("{}/predictions", out.display()), &[], None);
    let schema: Vec<&str> = check["schema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(old_names < schema.len(), "{schema:?}");
    assert_eq!(
        schema.last(),
        Some(&"probabilities"),
        "added last: {schema:?}"
    );
    assert_eq!(window_rows(&check).len(), 10);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two daemons briefly owning the same partitions: daemon A is frozen (SIGSTOP) mid-stream
/// with its writers' queues as they were, daemon B joins and takes every partition once A's
/// session runs out, replays from the Kafka commit and commits on; then A is thawed and its
/// writers flush what they held (a zombie) before it learns it lost the partitions. The
/// tables hold every window once: what A commits is filtered by the txn B moved, and a
/// commit racing B's loses the put-if-absent (counted from A's log, not asserted: whether
/// A held a segment at the freeze is a matter of timing).
#[test]
fn two_daemons_owning_one_partition_leave_each_window_once_in_the_table() {
    let bootstrap = cluster(3);
    let group = "delta-zombie2";
    let dir = scratch(group);
    let out = dir.join("out");
    let (model_path, model) = model_file(&dir);
    let stream = known_stream(6, 6, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let _ = config(&bootstrap, &out, &model_path, group, "");
    let cfg_path = config_path(&out, group);
    let text = std::fs::read_to_string(&cfg_path)
        .unwrap()
        .replace("[output]\n", "[output]\nformat = \"delta\"\n");
    std::fs::write(&cfg_path, text).unwrap();
    let msgs = point_messages(&stream);
    let feed = {
        let bootstrap = bootstrap.clone();
        std::thread::spawn(move || {
            let p = producer(&bootstrap);
            for chunk in msgs.chunks(50) {
                produce_all(&p, chunk);
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };
    let log_a = dir.join("a.log");
    let mut a = spawn_child(&cfg_path, &log_a);
    assert!(
        wait_until(Duration::from_secs(60), || any_data_file(&out)),
        "A wrote nothing"
    );
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(a.id() as i32, libc::SIGSTOP) };
    let log_b = dir.join("b.log");
    let mut b = spawn_child(&cfg_path, &log_b);
    // B owns the partitions once A's session (6 s) ran out and has committed since.
    let b_owns = wait_until(Duration::from_secs(60), || {
        std::fs::read_to_string(&log_b).is_ok_and(|t| t.contains("first offsets committed"))
    });
    std::thread::sleep(Duration::from_secs(2));
    unsafe { libc::kill(a.id() as i32, libc::SIGCONT) };
    let table = format!("{}/predictions", out.display());
    let apps: Vec<String> = (0..3)
        .map(|p| format!("milstream/{group}/{POINTS}/{p}"))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let check = delta_check(&table, &apps, None);
        if window_rows(&check)
            .into_iter()
            .collect::<BTreeSet<_>>()
            .is_superset(&want)
        {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    feed.join().unwrap();
    for c in [&mut a, &mut b] {
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        c.wait().unwrap();
    }
    assert!(b_owns, "B never committed");
    let check = delta_check(&table, &apps, None);
    let lost_races = std::fs::read_to_string(&log_a)
        .unwrap_or_default()
        .matches("delta commit lost to another writer")
        .count();
    println!("two daemons: A lost {lost_races} commit races to B");
    let history = std::fs::read_to_string(&log_b).unwrap_or_default();
    assert_crash_loop_exact(&bootstrap, group, &check, &expected, &model, &history);
}

/// Every table reads back: a segment with predictions, dead letters, a graded label and a
/// drift event makes one commit in each of the four tables, and deltalake and DuckDB (over
/// the files the log names) read each table's rows; the types Delta has no name for
/// (`uint32`) arrive as int64.
#[test]
fn all_four_tables_read_back_with_deltalake_and_duckdb() {
    use milstream::stream::ingest::record::DeadLetterRecord;
    use milstream::stream::quality::{DriftEventRecord, EvaluationRecord};
    let dir = scratch("delta-four");
    let out = dir.join("out");
    let store = Store::Local(out.clone());
    let mut seg = segment(0, 9);
    seg.dead_letters = (3..5)
        .map(|o| DeadLetterRecord {
            topic: "points".into(),
            partition: 0,
            offset: o,
            reason: "parse".into(),
            detail: "not JSON".into(),
            raw_prefix: "{".into(),
            at_ms: 1_700_000_000_000,
        })
        .collect();
    seg.quality.evaluations.push(EvaluationRecord {
        key: "s1".into(),
        segment: Some((10, 19)),
        label: "a".into(),
        predicted: "b".into(),
        correct: false,
        classes: vec!["a".into(), "b".into()],
        scores: vec![-0.1, 0.1],
        model_name: "m".into(),
        model_version: "v1".into(),
        source_topic: "points".into(),
        source_partition: 0,
        source_offset: 7,
        labeled_at_ms: 1_700_000_000_000,
    });
    seg.quality.drift_events.push(DriftEventRecord {
        model_name: "m".into(),
        model_version: "v1".into(),
        detector: "errors",
        method: "adwin",
        signal: "drift",
        observations: 40,
        action: "retrain",
        source_topic: "points".into(),
        source_partition: 0,
        source_offset: 8,
        at_ms: 1_700_000_000_000,
    });
    DeltaTables::new("g")
        .write_segment(&store, &seg, false)
        .unwrap();
    let script = format!(
        r#"
import duckdb, json
from deltalake import DeltaTable
out = {{}}
for t in ["predictions", "dead_letters", "evaluations", "drift_events"]:
    dt = DeltaTable("{root}/" + t)
    files = [f.removeprefix("file://") for f in dt.file_uris()]
    duck = duckdb.execute("select count(*) from read_parquet(?)", [files]).fetchone()[0]
    out[t] = [dt.to_pyarrow_table().num_rows, duck, dt.transaction_version("milstream/g/points/0")]
print(json.dumps(out))
"#,
        root = out.display()
    );
    let run = common::tools::python_with("deltalake, duckdb", "deltalake==1.6.6 duckdb")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let got: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        got,
        json!({"predictions": [10, 10, 10], "dead_letters": [2, 2, 10],
               "evaluations": [1, 1, 10], "drift_events": [1, 1, 10]}),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

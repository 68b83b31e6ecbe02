//! At-least-once with harmless duplicates: SIGKILL a `milstream run` child mid-stream (also
//! while it writes a file), restart it in the same group, and the committed output holds
//! every expected prediction exactly once; a second member joining mid-stream splits the
//! partitions and together they emit everything.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::scratch;
use common::stream::*;
use milstream::mil::Sample;

/// Produces `msgs` in the background at about `per_second`.
fn paced_producer(
    bootstrap: String,
    msgs: Vec<(String, String, Vec<u8>)>,
    per_second: usize,
) -> (std::thread::JoinHandle<()>, Arc<AtomicBool>) {
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let h = std::thread::spawn(move || {
        let p = producer(&bootstrap);
        let start = Instant::now();
        for (i, chunk) in msgs.chunks(50).enumerate() {
            produce_all(&p, chunk);
            let due = Duration::from_secs_f64(((i + 1) * 50) as f64 / per_second as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        flag.store(true, Ordering::SeqCst);
    });
    (h, done)
}

fn spawn_child(config: &Path, log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["run", "--config", config.to_str().unwrap()])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("milstream run starts")
}

fn any_file(out: &Path) -> bool {
    !read_predictions(out).is_empty()
}

fn tmp_file_visible(out: &Path) -> bool {
    !temp_files(out).is_empty()
}

#[test]
fn sigkill_mid_stream_then_restart_gives_every_prediction_exactly_once() {
    let dir = scratch("crash");
    let out = dir.join("out");
    let bootstrap = cluster(3);
    let (model_path, model) = model_file(&dir);
    let stream = known_stream(6, 6, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let _ = config(&bootstrap, &out, &model_path, "crash", "");
    let cfg_path = config_path(&out, "crash");
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
    let log = std::fs::read_to_string(dir.join("child-final.log")).unwrap_or_default();
    assert!(complete, "not every window arrived; final log:\n{log}");
    assert!(status.success(), "exit status {status:?}; log:\n{log}");
    // The restarts resumed from commits with a replay point, not from the beginning.
    if !log.contains("replay_from=Some(") {
        // Say what every run did about partitions and commits, to tell why.
        let mut history = String::new();
        for i in 0..moments.len() {
            let l = std::fs::read_to_string(dir.join(format!("child-{i}.log"))).unwrap_or_default();
            history.push_str(&format!("--- child {i}\n"));
            for line in l.lines().filter(|l| {
                l.contains("assigned")
                    || l.contains("commit")
                    || l.contains("WARN")
                    || l.contains("ERROR")
            }) {
                history.push_str(line);
                history.push('\n');
            }
        }
        panic!("the final run found no commit to resume from:\n{log}\nearlier runs:\n{history}");
    }

    let rows = read_predictions(&out);
    assert_eq!(
        window_keys(&rows),
        want,
        "every expected prediction, nothing else"
    );
    assert_eq!(rows.len(), want.len(), "no duplicate rows");
    assert!(
        temp_files(&out).is_empty(),
        "temp files left: {:?}",
        temp_files(&out)
    );
    for r in &rows {
        let w = &expected[&(r.key.clone(), r.start.unwrap(), r.end.unwrap())];
        assert_eq!(
            r.scores,
            model.predict(&Sample::Series(w.clone())).unwrap().scores
        );
    }
}

#[test]
fn a_second_member_joins_mid_stream_and_together_they_emit_everything() {
    let dir = scratch("rebalance");
    let out = dir.join("out");
    let bootstrap = cluster(4);
    let (model_path, _) = model_file(&dir);
    let stream = known_stream(8, 5, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    // The same model under two file names: model_version then tells which member wrote a row.
    let model_b = dir.join("member-b.json");
    std::fs::copy(&model_path, &model_b).unwrap();
    let cfg_a = config(&bootstrap, &out, &model_path, "rebalance", "");
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

//! Output on object storage, against a real S3-protocol server (moto's server mode): the
//! predictions end to end with pyarrow reading them from the S3 endpoint, SIGKILLs while
//! the daemon writes to S3, a trainer publishing to an S3 registry that a scorer process
//! follows, and the store stopped for 10 s mid-stream.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::s3::{read_store_predictions, Moto, BUCKET};
use common::stream::*;
use common::{load, scratch};
use milstream::config::Config;
use milstream::mil::Sample;

/// A test config (see `common::stream::config`) whose output goes to
/// `s3://BUCKET/<prefix>` on `moto`; `output_lines` go into `[output]`, `sections` at the
/// end. Returns the parsed config and the file for child processes.
fn s3_config(
    moto: &Moto,
    dir: &Path,
    bootstrap: &str,
    prefix: &str,
    group: &str,
    output_lines: &str,
    sections: &str,
) -> (Config, PathBuf) {
    let (model_path, _) = model_file(dir);
    let local_out = dir.join("out");
    let _ = config(bootstrap, &local_out, &model_path, group, "");
    let path = config_path(&local_out, group);
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &format!("dir = \"{}\"", local_out.display()),
        &format!("dir = \"s3://{BUCKET}/{prefix}\"\n{output_lines}"),
    );
    let text = format!("{text}\n{sections}\n{}", moto.config_table());
    std::fs::write(&path, &text).unwrap();
    let cfg = Config::parse("s3 test config", &text).expect("config parses");
    (cfg, path)
}

/// pyarrow reads the Hive-partitioned dataset under `s3://BUCKET/<prefix>/predictions`
/// from the endpoint: rows, distinct (key, window_end), the partition columns, and the
/// timestamp type. Every object must parse whole (no partial object is visible).
fn pyarrow_summary(moto: &Moto, prefix: &str) -> serde_json::Value {
    let out = moto.python(&format!(
        r#"
import json, pyarrow.dataset as ds, pyarrow.parquet as pq
root = "{BUCKET}/{prefix}/predictions"
d = ds.dataset(root, filesystem=fs, format="parquet", partitioning="hive")
t = d.to_table()
keys = set(zip(t.column("key").to_pylist(), t.column("window_end").cast("int64").to_pylist()))
infos = fs.get_file_info(pyarrow.fs.FileSelector("{BUCKET}/{prefix}", recursive=True))
files = [i.path for i in infos if i.type == pyarrow.fs.FileType.File]
for f in files:
    if f.endswith(".parquet"):
        pq.read_metadata(f, filesystem=fs)
import pyarrow.ipc
arrows = [f for f in files if f.endswith(".arrows")]
ipc_types = []
for f in arrows[:1]:
    with fs.open_input_stream(f) as src:
        sch = pyarrow.ipc.open_stream(src).schema
        ipc_types = [str(sch.field(c).type) for c in ("window_start", "window_end", "emitted_at")]
print(json.dumps({{"rows": t.num_rows, "distinct": len(keys), "columns": t.schema.names,
                  "window_end": str(t.schema.field("window_end").type),
                  "timestamps": [str(t.schema.field(c).type) for c in ("window_start", "window_end", "emitted_at")],
                  "ipc_timestamps": ipc_types, "files": files}}))
"#
    ));
    serde_json::from_str(out.trim().lines().last().unwrap()).unwrap()
}

#[test]
fn predictions_land_in_s3_once_each_and_pyarrow_reads_them_from_the_endpoint() {
    let moto = Moto::start();
    let dir = scratch("s3-e2e");
    let bootstrap = cluster(3);
    let (cfg, _) = s3_config(
        &moto,
        &dir,
        &bootstrap,
        "e2e",
        "s3e2e",
        "partition_by = \"hour\"\narrow_ipc = true",
        "",
    );
    let stream = known_stream(4, 4, 1_700_000_001_500);
    let want: BTreeSet<_> = expected_windows(&stream).keys().cloned().collect();
    let (daemon, stop) = spawn_daemon(cfg);
    produce_all(&producer(&bootstrap), &point_messages(&stream));
    let store = moto.store("e2e");
    let done = wait_until(Duration::from_secs(90), || {
        window_keys(&read_store_predictions(&store)).is_superset(&want)
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(
        done,
        "not every window reached S3: {} of {} rows; objects: {:?}",
        read_store_predictions(&store).len(),
        want.len(),
        store.list("")
    );
    let rows = read_store_predictions(&store);
    assert_eq!(
        window_keys(&rows),
        want,
        "every expected window, nothing else"
    );
    assert_eq!(rows.len(), want.len(), "each once");
    assert!(
        rows.iter().all(|r| r.file.contains("/hour=")),
        "hour partitions: {:?}",
        rows.first().map(|r| &r.file)
    );

    let s = pyarrow_summary(&moto, "e2e");
    assert_eq!(s["rows"], want.len(), "{s}");
    assert_eq!(s["distinct"], want.len(), "{s}");
    let columns: Vec<&str> = s["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        columns.contains(&"date") && columns.contains(&"hour"),
        "Hive partition columns: {columns:?}"
    );
    // Microseconds, UTC, in the Parquet files and the Arrow IPC copies alike.
    let us = serde_json::json!([
        "timestamp[us, tz=UTC]",
        "timestamp[us, tz=UTC]",
        "timestamp[us, tz=UTC]"
    ]);
    assert_eq!(s["timestamps"], us, "Parquet timestamp columns: {s}");
    assert_eq!(s["ipc_timestamps"], us, "Arrow IPC timestamp columns: {s}");
    let files: Vec<&str> = s["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        files
            .iter()
            .any(|f| f.contains("/arrow/date=") && f.ends_with(".arrows")),
        "the Arrow IPC copies are in S3 too: {files:?}"
    );
    assert!(
        files.iter().all(|f| !f.contains(".tmp")),
        "no temp objects: {files:?}"
    );

    let d = duckdb_summary(&moto, "e2e");
    assert_eq!(d["rows"], want.len(), "DuckDB from S3: {d}");
    assert_eq!(d["distinct"], want.len(), "DuckDB from S3: {d}");
    assert_eq!(d["window_end"], "TIMESTAMP WITH TIME ZONE", "{d}");
    assert!(d["dates"].as_i64().unwrap() >= 1, "{d}");
}

/// DuckDB (with the httpfs extension that scripts/test.sh installs from PyPI, no download)
/// queries `s3://BUCKET/<prefix>/predictions/*/*/*.parquet` (date and hour partitions) on
/// the endpoint, as docs/OPERATIONS.md shows analysts: rows, distinct (key, window_end), the type
/// of the timestamps and the count of date partitions.
fn duckdb_summary(moto: &Moto, prefix: &str) -> serde_json::Value {
    let out = moto.python(&format!(
        r#"
import json, os, duckdb, duckdb_ext
ext = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
con = duckdb.connect(config={{"extension_directory": ext, "autoinstall_known_extensions": False}})
con.execute("LOAD httpfs")
con.execute("CREATE SECRET (TYPE s3, KEY_ID 'test', SECRET 'test', REGION 'us-east-1', "
            "ENDPOINT '127.0.0.1:{port}', URL_STYLE 'path', USE_SSL false)")
rows, distinct, dates, ty = con.execute(
    "SELECT count(*), count(DISTINCT (key, window_end)), count(DISTINCT date), "
    "typeof(any_value(window_end)) FROM read_parquet("
    "'s3://{BUCKET}/{prefix}/predictions/*/*/*.parquet', hive_partitioning = true)"
).fetchone()
print(json.dumps({{"rows": rows, "distinct": distinct, "dates": dates, "window_end": ty}}))
"#,
        port = moto.port
    ));
    serde_json::from_str(out.trim().lines().last().unwrap()).unwrap()
}

#[test]
fn sigkill_while_writing_to_s3_loses_and_duplicates_nothing() {
    let moto = Moto::start();
    let dir = scratch("s3-crash");
    let bootstrap = cluster(3);
    // Bare commits: each restart finds its replay point by listing the S3 prefix.
    let (_, cfg_path) = s3_config(&moto, &dir, &bootstrap, "crash", "s3crash", "", "");
    let text = std::fs::read_to_string(&cfg_path)
        .unwrap()
        .replace("[commit]\n", "[commit]\nmetadata = false\n");
    std::fs::write(&cfg_path, text).unwrap();
    let stream = known_stream(6, 6, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let model = milstream::stream::embedded::train_embedded_model().unwrap();
    let store = moto.store("crash");

    let msgs = point_messages(&stream);
    let fed = Arc::new(AtomicBool::new(false));
    let feeder = {
        let (fed, bootstrap) = (fed.clone(), bootstrap.clone());
        std::thread::spawn(move || {
            let p = producer(&bootstrap);
            let start = Instant::now();
            for (i, chunk) in msgs.chunks(50).enumerate() {
                produce_all(&p, chunk);
                let due = Duration::from_secs_f64(((i + 1) * 50) as f64 / 130.0);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
            fed.store(true, Ordering::SeqCst);
        })
    };
    // Three SIGKILLs: after the first object, after the first commit and a second more,
    // and 2.5 s after the assignment (uploads are then in flight).
    let mut history = String::new();
    for i in 0..3 {
        let log = dir.join(format!("child-{i}.log"));
        let mut child = spawn_child(&cfg_path, &log);
        let started = Instant::now();
        let mut owned_since = None;
        while started.elapsed() < Duration::from_secs(60) {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if owned_since.is_none() && text.contains("partition assigned") {
                owned_since = Some(Instant::now());
            }
            let Some(t) = owned_since else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            let now = match i {
                0 => !store.list("predictions").unwrap_or_default().is_empty(),
                1 => {
                    t.elapsed() > Duration::from_millis(1_000)
                        && text.contains("first offsets committed")
                }
                _ => t.elapsed() > Duration::from_millis(2_500),
            };
            if now {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
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
    let complete = wait_until(Duration::from_secs(150), || {
        fed.load(Ordering::SeqCst)
            && window_keys(&read_store_predictions(&store)).is_superset(&want)
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    feeder.join().unwrap();
    let final_text = std::fs::read_to_string(&final_log).unwrap_or_default();
    assert!(
        complete,
        "not every window arrived; final log:\n{final_text}"
    );
    assert!(status.success(), "exit {status:?}:\n{final_text}");
    let restarts = format!("{history}\n{final_text}");
    assert!(
        restarts.contains("source=\"output_file\""),
        "no restart took its replay point from an S3 object:\n{restarts}"
    );

    let rows = read_store_predictions(&store);
    assert_eq!(window_keys(&rows), want, "0 lost; earlier runs:\n{history}");
    assert_eq!(rows.len(), want.len(), "0 duplicates by key");
    for r in &rows {
        let w = &expected[&(r.key.clone(), r.start.unwrap(), r.end.unwrap())];
        assert_eq!(
            r.scores,
            model.predict(&Sample::Series(w.clone())).unwrap().scores,
            "window {} scored as the reference",
            r.key
        );
    }
    let s = pyarrow_summary(&moto, "crash");
    assert_eq!(s["rows"], want.len(), "pyarrow from S3: {s}");
    assert_eq!(s["distinct"], want.len(), "pyarrow from S3: {s}");
}

/// One round of labeled GunPoint series for `sensors` sensors, aligned on the hop.
fn labeled_round(
    test: &milstream::mil::Dataset,
    r: usize,
    sensors: usize,
) -> Vec<(String, String, Vec<u8>)> {
    let t = 1_700_000_001_000 + r as i64 * HOP_MS;
    let mut msgs = Vec::new();
    let picks: Vec<usize> = (0..sensors)
        .map(|s| (s * 37 + r * 11) % test.len())
        .collect();
    for j in 0..W {
        for (s, &i) in picks.iter().enumerate() {
            let Sample::Series(v) = &test.samples[i] else {
                unreachable!()
            };
            let id = format!("sensor-{s}");
            let ts = t + j as i64 * SPACING_MS;
            msgs.push((
                POINTS.to_string(),
                id.clone(),
                format!(r#"{{"series_id":"{id}","ts":{ts},"value":{}}}"#, v[j]).into_bytes(),
            ));
        }
    }
    for (s, &i) in picks.iter().enumerate() {
        let id = format!("sensor-{s}");
        let end = t + (W as i64 - 1) * SPACING_MS;
        let l = &test.labels[i];
        msgs.push((
            LABELS.to_string(),
            id.clone(),
            format!(r#"{{"series_id":"{id}","start":{t},"end":{end},"label":"{l}"}}"#).into_bytes(),
        ));
    }
    msgs
}

#[test]
fn a_trainer_publishes_to_an_s3_registry_and_a_scorer_process_swaps_to_it() {
    let moto = Moto::start();
    let dir = scratch("s3-registry");
    let bootstrap = cluster(2);
    let registry = format!("s3://{BUCKET}/reg/models");
    // No models topic: the scorer can learn of the new version only from the registry.
    let no_topic = "[kafka]\nmodels_topic = \"\"\n";
    let scorer_sections =
        format!("[model]\nregistry_dir = \"{registry}\"\nregistry_poll_ms = 300\n");
    let (_, scorer_path) = s3_config(&moto, &dir, &bootstrap, "reg/out", "s3reg", "", "");
    let text = std::fs::read_to_string(&scorer_path).unwrap();
    let text = text
        .replace("[model]\n", &scorer_sections)
        .replace("[kafka]\n", no_topic);
    let text = format!("{text}\n[pipeline]\nrole = \"scorer\"\n");
    std::fs::write(&scorer_path, &text).unwrap();
    Config::parse("scorer", &text).expect("scorer config parses");

    let trainer_dir = dir.join("trainer");
    std::fs::create_dir_all(&trainer_dir).unwrap();
    let (_, trainer_path) = s3_config(
        &moto,
        &trainer_dir,
        &bootstrap,
        "reg/trainer-out",
        "s3reg",
        "",
        "",
    );
    let text = std::fs::read_to_string(&trainer_path)
        .unwrap()
        .replace("[model]\n", &format!("[model]\nregistry_dir = \"{registry}\"\n"))
        .replace("[kafka]\n", no_topic)
        .replace(
            "[training]\nenabled = false",
            &format!(
                "[training]\ndir = \"s3://{BUCKET}/reg/training\"\nlabel_wait_ms = 20000\nevery = \"\"\nafter_examples = 12\nmax_examples = 48\nholdout = 0.25\ntolerance = 1.0\nmin_examples = 12"
            ),
        );
    let text = format!("{text}\n[pipeline]\nrole = \"trainer\"\n");
    let trainer = Config::parse("trainer", &text).expect("trainer config parses");

    let mut scorer = spawn_child(&scorer_path, &dir.join("scorer.log"));
    let (d, stop) = spawn_daemon(trainer);
    let test = load("GunPoint_TEST.csv");
    let p = producer(&bootstrap);
    let out = moto.store("reg/out");
    let reg = milstream::stream::lifecycle::registry::Registry::open_with(
        Path::new(&registry),
        &moto.options(),
    )
    .unwrap();
    let mut r = 0;
    // The version the scorer started with (it and the trainer may both publish a first
    // version when they start together on an empty registry); done when it has swapped to
    // another and written predictions with it.
    let scorer_log = || std::fs::read_to_string(dir.join("scorer.log")).unwrap_or_default();
    // The banner's series line: `  model series (...): <version>`.
    let started_with = |log: &str| {
        log.lines()
            .find_map(|l| l.trim_start().strip_prefix("model series ("))
            .and_then(|rest| rest.rsplit("): ").next())
            .map(str::to_string)
    };
    let swapped = wait_until(Duration::from_secs(150), || {
        if r < 30 {
            produce_all(&p, &labeled_round(&test, r, 4));
            r += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
        let log = scorer_log();
        let Some(first) = started_with(&log) else {
            return false;
        };
        let written: BTreeSet<String> = read_store_predictions(&out)
            .into_iter()
            .map(|row| row.model_version)
            .filter(|v| v.starts_with('v') && *v != first)
            .collect();
        // A version the trainer fitted (its card says so), not a start-up model.
        log.contains("swapping to the registry's current model")
            && written
                .iter()
                .any(|v| reg.load(v).is_ok_and(|(_, card)| card.source == "trainer"))
    });
    unsafe { libc::kill(scorer.id() as i32, libc::SIGTERM) };
    let status = scorer.wait().unwrap();
    stop.send(true).unwrap();
    d.join().unwrap().expect("the trainer stops cleanly");
    let log = std::fs::read_to_string(dir.join("scorer.log")).unwrap_or_default();
    let versions = reg.versions().unwrap();
    assert!(
        swapped,
        "the scorer never wrote with a trained version; registry {versions:?}; scorer log:\n{log}"
    );
    assert!(status.success(), "scorer exit {status:?}");
    assert!(
        log.contains("swapping to the registry's current model"),
        "{log}"
    );
    let current = reg.current().unwrap().unwrap();
    assert!(versions.contains(&current), "{current} in {versions:?}");
    // The registry's layout in the bucket, listed through the S3 endpoint.
    let listed = moto.python(&format!(
        "for o in s3.list_objects_v2(Bucket='{BUCKET}', Prefix='reg/models/')['Contents']: print(o['Key'])"
    ));
    for v in &versions {
        for f in ["model.json", "card.json"] {
            assert!(listed.contains(&format!("reg/models/{v}/{f}")), "{listed}");
        }
    }
    assert!(listed.contains("reg/models/current"), "{listed}");
}

#[test]
fn the_store_stopped_for_10_s_pauses_the_stream_and_loses_nothing() {
    let moto = Moto::start();
    let dir = scratch("s3-outage");
    let bootstrap = cluster(2);
    let (mut cfg, _) = s3_config(&moto, &dir, &bootstrap, "outage", "s3outage", "", "");
    // Requests to a stopped store time out fast, so the outage shows within seconds.
    cfg.object_store.0.insert("timeout".into(), "1s".into());
    cfg.object_store
        .0
        .insert("connect_timeout".into(), "1s".into());
    let port = free_port();
    cfg.http.listen = format!("127.0.0.1:{port}");
    let stream = known_stream(4, 8, 1_700_000_001_500);
    let want: BTreeSet<_> = expected_windows(&stream).keys().cloned().collect();
    let msgs = point_messages(&stream);
    let (daemon, stop) = spawn_daemon(cfg);
    let p = producer(&bootstrap);
    let store = moto.store("outage");
    let (first, rest) = msgs.split_at(msgs.len() / 3);
    produce_all(&p, first);
    let ready = |port: u16| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        use std::io::{Read, Write};
        s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        Some(body)
    };
    assert!(
        wait_until(Duration::from_secs(60), || {
            !read_store_predictions(&store).is_empty()
                && ready(port).is_some_and(|b| b.contains(" 200 "))
        }),
        "no output before the outage"
    );

    moto.pause();
    let paused = Instant::now();
    produce_all(&p, rest);
    let mut saw_503 = None;
    while paused.elapsed() < Duration::from_secs(10) {
        if let Some(b) = ready(port).filter(|b| b.contains(" 503 ")) {
            saw_503.get_or_insert(b);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let errors = sample(
        &scrape(port),
        "milstream_sink_errors_total{sink=\"parquet\"}",
    );
    moto.resume();
    let recovered = wait_until(Duration::from_secs(90), || {
        window_keys(&read_store_predictions(&store)).is_superset(&want)
            && ready(port).is_some_and(|b| b.contains(" 200 "))
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    let b = saw_503.expect("/readyz answered 503 during the outage");
    assert!(b.contains("sink"), "the reason names the sink: {b}");
    assert!(
        errors >= 1.0,
        "milstream_sink_errors_total counted the failures"
    );
    assert!(
        recovered,
        "after the outage: every window and /readyz 200 again"
    );
    let rows = read_store_predictions(&store);
    assert_eq!(window_keys(&rows), want, "no loss");
    assert_eq!(rows.len(), want.len(), "no duplicates");
}

/// SIGTERM while the store does not answer (moto stopped: requests hang): the daemon exits
/// within `shutdown.grace_ms` (2 s here; the bound of 30 s only detects a hang, it is no
/// speed figure), says in one line which offsets it left unwritten, and commits nothing
/// that is not durable: a restart once the store is back writes every window exactly once.
/// Before, the writer retried the segment forever and shutdown joined it: no exit at all.
#[test]
fn sigterm_while_the_store_does_not_answer_exits_within_the_grace_period() {
    let moto = Moto::start();
    let dir = scratch("s3-sigterm");
    let bootstrap = cluster(2);
    let port = free_port();
    let (cfg, cfg_path) = s3_config(&moto, &dir, &bootstrap, "sigterm", "s3sigterm", "", "");
    let text = std::fs::read_to_string(&cfg_path)
        .unwrap()
        .replace(
            "listen = \"127.0.0.1:0\"",
            &format!("listen = \"127.0.0.1:{port}\""),
        )
        .replace("grace_ms = 10000", "grace_ms = 2000");
    assert!(text.contains("grace_ms = 2000"), "{text}");
    std::fs::write(&cfg_path, text).unwrap();
    let stream = known_stream(4, 8, 1_700_000_001_500);
    let want: BTreeSet<_> = expected_windows(&stream).keys().cloned().collect();
    let msgs = point_messages(&stream);
    let (first, rest) = msgs.split_at(msgs.len() / 3);
    let p = producer(&bootstrap);
    let store = moto.store("sigterm");
    produce_all(&p, first);
    let log = dir.join("child.log");
    let mut child = spawn_child(&cfg_path, &log);
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let before = wait_until(Duration::from_secs(90), || {
        !read_store_predictions(&store).is_empty()
            && !committed_offsets(&bootstrap, "s3sigterm", POINTS, 2).is_empty()
    });
    if !before {
        let _ = child.kill();
        panic!("no output before the outage; log:\n{}", read_log());
    }

    // The store stops answering; the rest of the stream is consumed and its segments sealed,
    // and their writes hang.
    moto.pause();
    produce_all(&p, rest);
    let consumed = wait_until(Duration::from_secs(60), || {
        sample(
            &scrape(port),
            &format!("milstream_messages_consumed_total{{topic=\"{POINTS}\"}}"),
        ) >= msgs.len() as f64
    });
    std::thread::sleep(Duration::from_secs(1));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut exited = None;
    let hang = wait_until(Duration::from_secs(30), || {
        exited = child.try_wait().unwrap();
        exited.is_some()
    });
    if !hang {
        let _ = child.kill();
        let _ = child.wait();
    }
    moto.resume();
    let text = read_log();
    assert!(consumed, "the stream was not consumed; log:\n{text}");
    assert!(
        hang,
        "still running 30 s after SIGTERM with shutdown.grace_ms = 2000; log:\n{text}"
    );
    assert!(exited.unwrap().success(), "exit {exited:?}; log:\n{text}");
    let line = text
        .lines()
        .find(|l| l.contains("shutdown grace period over"))
        .unwrap_or_else(|| panic!("no line names what was left unwritten; log:\n{text}"));
    assert!(line.contains(&format!("{POINTS}/")), "{line}");

    // Nothing committed is missing: a restart replays from the commit and every window is
    // written exactly once.
    let (daemon, stop) = spawn_daemon(cfg);
    let done = wait_until(Duration::from_secs(120), || {
        window_keys(&read_store_predictions(&store)).is_superset(&want)
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(
        done,
        "windows missing after the restart: committed past the durable output"
    );
    let rows = read_store_predictions(&store);
    assert_eq!(window_keys(&rows), want, "no loss");
    assert_eq!(rows.len(), want.len(), "no duplicates");
}

/// A store that cannot be listed at assignment is not a store without output: with bare
/// commits (the replay point only in the output files), a restart whose store refuses every
/// connection does not start its partitions (no replay point is guessed: before, the
/// listing error read as "no file" and both partitions replayed from offset 0, counted as
/// source `earliest`), consumes nothing, and `/readyz` answers 503 naming the store.
#[test]
fn an_unlistable_store_at_assignment_leaves_the_partitions_unstarted_and_not_ready() {
    let moto = Moto::start();
    let dir = scratch("s3-unlistable");
    let bootstrap = cluster(2);
    let (mut cfg, _) = s3_config(&moto, &dir, &bootstrap, "unlistable", "s3unlist", "", "");
    cfg.commit.metadata = false;
    let stream = known_stream(4, 4, 1_700_000_001_500);
    produce_all(&producer(&bootstrap), &point_messages(&stream));
    let store = moto.store("unlistable");
    let port = free_port();
    cfg.http.listen = format!("127.0.0.1:{port}");
    let (daemon, stop) = spawn_daemon(cfg.clone());
    let written = wait_until(Duration::from_secs(90), || {
        !committed_offsets(&bootstrap, "s3unlist", POINTS, 2).is_empty()
            && !read_store_predictions(&store).is_empty()
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(
        written,
        "output committed: {:?}",
        committed_offsets(&bootstrap, "s3unlist", POINTS, 2)
    );

    // The same group again, its store now an endpoint where nothing listens.
    let closed = free_port();
    cfg.object_store
        .0
        .insert("aws_endpoint".into(), format!("http://127.0.0.1:{closed}"));
    let port = free_port();
    cfg.http.listen = format!("127.0.0.1:{port}");
    let (daemon, stop) = spawn_daemon(cfg);
    let body = |port: u16| {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        Some(text)
    };
    let replay_sources = |text: &str| {
        ["commit_metadata", "output_file", "earliest"].map(|s| {
            sample(
                text,
                &format!("milstream_replay_point_source_total{{source=\"{s}\"}}"),
            )
        })
    };
    // Settled: a committed partition got a replay point (the old guess) or the partitions
    // were refused (readyz says so).
    let mut seen = String::new();
    let settled = wait_until(Duration::from_secs(90), || {
        let text = scrape(port);
        let guessed: f64 = replay_sources(&text).iter().filter(|v| !v.is_nan()).sum();
        seen = body(port).unwrap_or_default();
        guessed >= 1.0 || seen.contains("could not be listed")
    });
    // A moment more, for anything consumed after the assignment to show.
    std::thread::sleep(Duration::from_secs(2));
    let text = scrape(port);
    let ready = body(port).unwrap_or_default();
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(
        settled,
        "neither a replay point nor a refusal; readyz: {seen}"
    );
    let [_, _, earliest] = replay_sources(&text);
    assert!(
        earliest.is_nan() || earliest == 0.0,
        "a partition replayed from offset 0 on a listing error ({earliest})"
    );
    assert!(
        ready.contains(" 503 ") && ready.contains("could not be listed"),
        "readyz: {ready}"
    );
    assert_eq!(
        sample(&text, "milstream_assigned_partitions"),
        0.0,
        "{text}"
    );
    let consumed = sample(
        &text,
        &format!("milstream_messages_consumed_total{{topic=\"{POINTS}\"}}"),
    );
    assert!(
        consumed.is_nan() || consumed == 0.0,
        "{consumed} messages consumed"
    );
}

/// A TCP forwarder to `target` that drops every connection while `down` is set (the store
/// refuses at once, as a cut network does) and forwards them afterwards.
fn flaky_proxy(target: std::net::SocketAddr) -> (u16, Arc<AtomicBool>) {
    use std::net::{Shutdown, TcpListener, TcpStream};
    fn pipe(mut from: TcpStream, mut to: TcpStream) {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let down = Arc::new(AtomicBool::new(true));
    let cut = down.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            if cut.load(Ordering::SeqCst) {
                continue;
            }
            let Ok(server) = TcpStream::connect(target) else {
                continue;
            };
            let (c, s) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || pipe(client, server));
            std::thread::spawn(move || pipe(s, c));
        }
    });
    (port, down)
}

/// The store cut off while the partitions are assigned, then back: the partitions start by
/// themselves (retried with backoff, seeking to their replay points) and every window is
/// in the store once. Before, a partition that failed to start stayed unstarted until the
/// next rebalance or a restart: `/readyz` 503 for good, nothing consumed.
#[test]
fn a_partition_that_could_not_start_starts_when_the_store_is_back() {
    let moto = Moto::start();
    let dir = scratch("s3-retry-start");
    let bootstrap = cluster(2);
    let (mut cfg, _) = s3_config(&moto, &dir, &bootstrap, "retry", "s3retry", "", "");
    cfg.commit.metadata = false;
    let stream = known_stream(4, 6, 1_700_000_001_500);
    let points = point_messages(&stream);
    let p = producer(&bootstrap);
    produce_all(&p, &points[..points.len() / 2]);
    let store = moto.store("retry");
    cfg.http.listen = "127.0.0.1:0".into();
    let (daemon, stop) = spawn_daemon(cfg.clone());
    let written = wait_until(Duration::from_secs(90), || {
        !committed_offsets(&bootstrap, "s3retry", POINTS, 2).is_empty()
            && !read_store_predictions(&store).is_empty()
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(written, "output committed");

    // The same group again, through a link to the store that is cut at first.
    let target: std::net::SocketAddr = moto
        .endpoint()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let (proxy, down) = flaky_proxy(target);
    cfg.object_store
        .0
        .insert("aws_endpoint".into(), format!("http://127.0.0.1:{proxy}"));
    let port = free_port();
    cfg.http.listen = format!("127.0.0.1:{port}");
    let (daemon, stop) = spawn_daemon(cfg);
    let readyz_text = || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        Some(text)
    };
    let refused = wait_until(Duration::from_secs(90), || {
        readyz_text().is_some_and(|t| t.contains(" 503 ") && t.contains("could not be listed"))
    });
    produce_all(&p, &points[points.len() / 2..]);
    std::thread::sleep(Duration::from_secs(2));
    down.store(false, Ordering::SeqCst);
    let want: BTreeSet<_> = expected_windows(&stream).keys().cloned().collect();
    let done = wait_until(Duration::from_secs(120), || {
        window_keys(&read_store_predictions(&store)) == want && readyz(port) == 200
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(
        refused,
        "the partitions started while the store was cut off"
    );
    assert!(done, "the partitions did not start once the store was back");
    let rows = read_store_predictions(&store);
    assert_eq!(rows.len(), want.len(), "no duplicates");
}

/// A restart finds a partition's replay point in the newest object's footer, read with two
/// ranged GETs (its last 8 bytes, then the footer) rather than the whole object: here a
/// 12 MB object (uploaded in parts) costs a few KiB.
#[test]
fn the_replay_point_is_read_from_the_footer_of_the_newest_object_by_ranged_gets() {
    use milstream::stream::output::arrow::examples::{example_batch, Example};
    use milstream::stream::output::sink::parquet::{encode_parquet, read_footer_metadata};
    use milstream::stream::output::sink::{replay_point_from_files, Segment};
    let moto = Moto::start();
    let store = moto.store("footer");
    // Incompressible values (an LCG's), 1.5 M doubles: about 12 MB of Parquet.
    let mut x: u64 = 42;
    let values: Vec<f64> = (0..1_500_000)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 11) as f64
        })
        .collect();
    let put = |first: i64, last: i64, replay_from: i64, values: Vec<f64>| {
        let mut seg = Segment::new("labels", 2, first, 1_732_550_400_000);
        seg.last_offset = last;
        seg.replay_from = replay_from;
        let ex = Example {
            key: "s".into(),
            segment: None,
            label: "x".into(),
            dim: 1,
            values,
            source_topic: "labels".into(),
            source_partition: 2,
            source_offset: first,
            labeled_at_ms: 1_732_550_400_000,
            model: None,
        };
        let bytes = encode_parquet(&example_batch(&[ex]), &seg.file_metadata()).unwrap();
        let rel = format!("predictions/date=2024-11-25/{}.parquet", seg.file_stem());
        store.put(&rel, bytes).unwrap()
    };
    put(0, 99, 60, vec![1.0]);
    let size = put(100, 199, 150, values);
    assert!(size > 10_000_000, "{size} bytes");
    // The newest file below the committed offset 200 holds the replay point 150 (the
    // partition's folders as its folder log has them, rebuilt from a listing).
    let log = milstream::stream::output::sink::folders::FolderLog::rebuild(
        &[(&store, &["predictions"][..])],
        "labels",
        2,
    )
    .unwrap();
    let (replay_from, next, rel) =
        replay_point_from_files(&store, &["predictions"], &log, ("labels", 2), 200)
            .unwrap()
            .unwrap();
    assert_eq!((replay_from, next), (150, 200), "{rel}");
    let (meta, fetched) = read_footer_metadata(&store, &rel).unwrap();
    assert_eq!(meta["milstream.replay_from"], "150");
    assert!(
        fetched < 64 << 10,
        "{fetched} bytes fetched for the footer of a {size}-byte object"
    );
    // Below offset 100 only the older file counts.
    let (replay_from, next, _) =
        replay_point_from_files(&store, &["predictions"], &log, ("labels", 2), 100)
            .unwrap()
            .unwrap();
    assert_eq!((replay_from, next), (60, 100));
}

/// A tiny bag model, different for each `shift`.
fn tiny_model(shift: f64) -> milstream::mil::Model {
    use milstream::mil::{Bag, Dataset, FitParams, Model};
    let mut ds = Dataset::default();
    for i in 0..8 {
        let pos = i % 2 == 0;
        let x = if pos { 2.0 + shift } else { -2.0 } + i as f64 * 0.01;
        ds.ids.push(format!("b{i}"));
        ds.labels.push(if pos { "pos" } else { "neg" }.into());
        ds.samples
            .push(Sample::Bag(Bag::new(1, vec![x, 0.0]).unwrap()));
    }
    let params = FitParams {
        k: Some(4),
        ..FitParams::default()
    };
    Model::fit(&ds, &params).unwrap()
}

/// The registry's `current` on S3 moves by compare-and-swap (If-None-Match / If-Match,
/// which moto honours): of publishers racing from the same `current`, those that succeed
/// form one chain, each having replaced the version the one before it published, so no two
/// won from the same state; the others get an error naming the race and leave no version. A reader polling all
/// the while loads a whole model each time, whose card names the version `current` named.
#[test]
fn concurrent_publishers_to_an_s3_registry_cannot_both_win() {
    use milstream::stream::lifecycle::registry::{ModelCard, Registry};
    let moto = Moto::start();
    let url = PathBuf::from(format!("s3://{BUCKET}/race-registry"));
    let options = moto.options();
    let open = || Registry::open_with(&url, &options).unwrap();
    // A model per publisher and round: publishing the model `current` already names adds
    // no version (and would return it to a second "winner").
    let models: Vec<Vec<_>> = (0..3)
        .map(|round| {
            (0..6)
                .map(|i| tiny_model((round * 6 + i) as f64 * 0.5))
                .collect()
        })
        .collect();
    let done = AtomicBool::new(false);
    let (results, reads) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let reg = open();
            let mut reads = 0;
            while !done.load(Ordering::SeqCst) {
                if let Some(v) = reg.current().unwrap() {
                    let (_, card) = reg.load(&v).expect("current names a whole model");
                    assert_eq!(card.version, v);
                    reads += 1;
                }
            }
            reads
        });
        let mut results = Vec::new();
        for (round, models) in models.iter().enumerate() {
            // Each round: every publisher starts together from the same `current`.
            let barrier = Arc::new(std::sync::Barrier::new(models.len()));
            let handles: Vec<_> = models
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let (open, barrier) = (&open, barrier.clone());
                    s.spawn(move || {
                        let reg = open();
                        let card = ModelCard::describe(m, &format!("publisher {round}.{i}"));
                        barrier.wait();
                        reg.publish(m, &card).map_err(|e| e.to_string())
                    })
                })
                .collect();
            results.extend(handles.into_iter().map(|h| h.join().unwrap()));
        }
        done.store(true, Ordering::SeqCst);
        (results, reader.join().unwrap())
    });
    let reg = open();
    let won: Vec<&String> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    let lost: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(!won.is_empty(), "{results:?}");
    assert!(
        !lost.is_empty(),
        "six publishers starting together never raced: {results:?}"
    );
    assert!(
        lost.iter()
            .all(|e| e.contains("while") && e.contains("another publisher")),
        "{lost:?}"
    );
    // The winners' previous versions are all different: no two moved `current` from the
    // same state. And they chain from nothing to what `current` names now.
    let previous: Vec<Option<String>> = won
        .iter()
        .map(|v| reg.load(v).unwrap().1.previous)
        .collect();
    let distinct: BTreeSet<_> = previous.iter().collect();
    assert_eq!(
        distinct.len(),
        won.len(),
        "two publishers won from one state: {previous:?}"
    );
    let mut tip = None;
    for _ in 0..won.len() {
        tip = won
            .iter()
            .find(|v| reg.load(v).unwrap().1.previous == tip)
            .map(|v| v.to_string());
        assert!(
            tip.is_some(),
            "the winners do not chain: {won:?} {previous:?}"
        );
    }
    assert_eq!(reg.current().unwrap(), tip);
    assert!(reads > 0, "the reader never saw a current model");
    // A loser leaves no version behind: what is listed is what won, the chain above.
    let listed: BTreeSet<String> = reg.versions().unwrap().into_iter().collect();
    let winners: BTreeSet<String> = won.iter().map(|v| v.to_string()).collect();
    assert_eq!(
        listed, winners,
        "versions that never became current are listed"
    );
}

/// A store configured without conditional puts (`aws_conditional_put = "disabled"`, for
/// S3-compatible stores that lack them) still publishes: versions are created after a look
/// and `current` falls back to a plain PUT (write-new-then-point, the last publisher wins).
#[test]
fn an_s3_registry_without_conditional_puts_falls_back_to_write_new_then_point() {
    use milstream::stream::lifecycle::registry::{ModelCard, Registry};
    let moto = Moto::start();
    let mut options = moto.options();
    options.insert("aws_conditional_put".into(), "disabled".into());
    let url = PathBuf::from(format!("s3://{BUCKET}/plain-registry"));
    let reg = Registry::open_with(&url, &options).unwrap();
    let (m1, m2) = (tiny_model(0.0), tiny_model(1.0));
    let v1 = reg.publish(&m1, &ModelCard::describe(&m1, "one")).unwrap();
    let v2 = reg.publish(&m2, &ModelCard::describe(&m2, "two")).unwrap();
    assert_ne!(v1, v2);
    assert_eq!(reg.current().unwrap().as_deref(), Some(v2.as_str()));
    let (model, card) = reg.load_current().unwrap().unwrap();
    assert_eq!((model, card.previous), (m2, Some(v1.clone())));
    reg.set_current(&v1).unwrap();
    assert_eq!(reg.current().unwrap(), Some(v1));
}

//! README's first command, as a new user runs it: from a fresh clone of the repository, with
//! the working folder a user has (issue 24). The daemon once served a model registry that a
//! run had left in the repository, and every test passed because each ran in a scratch
//! folder; these run in a clone of the committed tree.
//!
//! Both reuse the built binary (`CARGO_BIN_EXE_milstream`): the point is the checkout, not
//! the build. The output is read back with pyarrow, an independent Parquet reader.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::stream::{free_port, read_predictions, wait_until};

/// A fresh clone of this repository's committed tree (what `git clone` gives a user).
fn clone_repo(name: &str) -> PathBuf {
    let dir = common::scratch(name);
    let _ = std::fs::remove_dir_all(&dir);
    let repo = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks", repo])
        .arg(&dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git clone {repo}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// `milstream run [args]` with `dir` as its working folder, logging at info to `log`.
fn spawn_in(dir: &Path, args: &[&str], log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_milstream"))
        .arg("run")
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .env_remove("MILSTREAM_CONFIG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("milstream run starts")
}

/// SIGTERM, then the exit status (a daemon still alive after 60 s is a hang, and fails).
fn terminate(mut child: Child, log: &Path) -> std::process::ExitStatus {
    // SAFETY: kill(2) on our own child's pid; no memory is shared.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut status = None;
    wait_until(Duration::from_secs(60), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    match status {
        Some(s) => s,
        None => {
            let _ = child.kill();
            panic!(
                "still running 60 s after SIGTERM; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            )
        }
    }
}

fn log_text(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// The predictions' row count per kind and the dead letters' count per reason, as pyarrow
/// reads the files under `out`.
fn read_with_pyarrow(out: &Path) -> serde_json::Value {
    let script = r#"
import json, os, sys, collections
import pyarrow.parquet as pq
root = sys.argv[1]
def files(sub):
    for d, _, fs in os.walk(os.path.join(root, sub)):
        for f in fs:
            if f.endswith('.parquet') and not f.startswith('.'):
                yield os.path.join(d, f)
kinds = collections.Counter()
for f in files('predictions'):
    kinds.update(pq.read_table(f, columns=['kind']).column('kind').to_pylist())
reasons = collections.Counter()
for f in files('dead_letters'):
    reasons.update(pq.read_table(f, columns=['reason']).column('reason').to_pylist())
print(json.dumps({'kinds': kinds, 'reasons': reasons}))
"#;
    let out = common::tools::python_with("pyarrow", "pyarrow")
        .args(["-c", script])
        .arg(out)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "pyarrow reader: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the reader prints JSON")
}

/// README: `cargo run --release -- run` from a fresh clone scores series windows and bags,
/// with no dead letter (the demo feed sends none on purpose: every point fits the model,
/// every label joins), exits 0 on SIGTERM, and leaves the clone's tracked files as they were.
///
/// It uses README's defaults, so the ops endpoint listens on 127.0.0.1:9464: nothing else
/// in the test suite binds that port.
#[test]
fn readme_first_command_scores_series_and_bags_from_a_clean_clone() {
    let dir = clone_repo("clean-clone-run");
    let log = dir.join("../clean-clone-run.log");
    let child = spawn_in(&dir, &[], &log);
    let out = dir.join("milstream-out");
    let scored = wait_until(Duration::from_secs(120), || {
        let rows = read_predictions(&out);
        rows.iter().any(|r| r.kind == "window") && rows.iter().any(|r| r.kind == "bag")
    });
    let status = terminate(child, &log);
    let log = log_text(&log);
    assert!(
        scored,
        "no series window and bag predictions within 120 s; log:\n{log}"
    );
    assert!(status.success(), "exit {status} after SIGTERM; log:\n{log}");
    assert!(
        !log.contains("does not fit its input"),
        "a start-up model does not fit the demo feed; log:\n{log}"
    );

    let read = read_with_pyarrow(&out);
    let kinds = &read["kinds"];
    assert!(kinds["window"].as_u64() > Some(0), "{read}");
    assert!(kinds["bag"].as_u64() > Some(0), "{read}");
    let reasons = read["reasons"].as_object().unwrap();
    assert!(
        reasons.is_empty(),
        "dead letters from the demo feed, which sends none on purpose: {read}; log:\n{log}"
    );

    // Everything the daemon wrote is ignored, and nothing tracked changed or went missing.
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.trim().is_empty(),
        "the run changed the clone's tracked or unignored files:\n{status}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A registry left by a run with other data (six-channel BasicMotions, while the default
/// demo feed sends one-channel GunPoint points) is served, since the registry wins, but
/// loudly: one start-up line naming both, and `/readyz` answers 503 saying so.
#[test]
fn a_registry_that_does_not_fit_the_demo_feed_is_loud() {
    use milstream::config::DemoDataset;
    use milstream::stream::lifecycle::registry::{ModelCard, Registry};

    let dir = clone_repo("clean-clone-stale-registry");
    let six = milstream::stream::embedded::train_demo_model(
        DemoDataset::Basicmotions,
        Default::default(),
    )
    .unwrap();
    let reg = Registry::open(&dir.join("milstream-data/models")).unwrap();
    let version = reg
        .publish(&six, &ModelCard::describe(&six, "embedded basicmotions"))
        .unwrap();

    let port = free_port();
    let config = dir.join("ops.toml");
    std::fs::write(&config, format!("[http]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    let log = dir.join("../clean-clone-stale-registry.log");
    let child = spawn_in(&dir, &["--config", config.to_str().unwrap()], &log);

    let mut body = String::new();
    let answered = wait_until(Duration::from_secs(120), || {
        body = readyz_body(port);
        body.starts_with("HTTP/1.1 503") && body.contains("does not fit")
    });
    let status = terminate(child, &log);
    let log = log_text(&log);
    assert!(answered, "/readyz: {body}; log:\n{log}");
    assert!(status.success(), "exit {status}; log:\n{log}");
    let line = log
        .lines()
        .find(|l| l.contains("does not fit its input"))
        .unwrap_or_else(|| panic!("no start-up line on the mismatch; log:\n{log}"));
    for part in [
        version.as_str(),
        "6-channel series",
        "1-channel gunpoint",
        "milstream-data/models",
    ] {
        assert!(line.contains(part), "{part:?} missing from: {line}");
        assert!(body.contains(part), "{part:?} missing from /readyz: {body}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The whole answer of `GET /readyz` (status line and body), empty when nothing answers.
fn readyz_body(port: u16) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text
}

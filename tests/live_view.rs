//! The live view (issue 70) in a real browser: the release binary on the embedded demo,
//! with a drift soon after start, and `tests/live_view.py` driving Debian's chromium through
//! Playwright against the page it serves. The script waits for conditions, never for a
//! time, so a slow machine only takes longer. Its screenshot lands in
//! `target/live-view.png` (docs/live-view.png is one of them).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::stream::{free_port, wait_until};

/// Where the browser is (Debian's `chromium`; scripts/test.sh installs it).
const CHROMIUM: &str = "/usr/bin/chromium";

/// `milstream run --config <dir>/milstream.toml` in `dir`, logging to `log`.
fn spawn_demo(dir: &Path, port: u16, log: &Path) -> Child {
    // A drift 25 s in: the labels flip, the errors' detector fires, a retrain is promoted.
    let cfg = format!("[http]\nlisten = \"127.0.0.1:{port}\"\n[demo]\ndrift_after = \"25s\"\n");
    std::fs::write(dir.join("milstream.toml"), cfg).unwrap();
    Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["run", "--config", "milstream.toml"])
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .env_remove("MILSTREAM_CONFIG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("milstream run starts")
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child's pid; no memory is shared.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    if !wait_until(Duration::from_secs(60), || {
        child.try_wait().unwrap().is_some()
    }) {
        let _ = child.kill();
    }
}

#[test]
fn the_live_view_shows_streams_explanations_drift_and_promotion_in_a_browser() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} not found: `apt-get install chromium` (scripts/test.sh does)"
    );
    let dir = common::scratch("live-view");
    let log = dir.join("daemon.log");
    let port = free_port();
    let child = spawn_demo(&dir, port, &log);
    let url = format!("http://127.0.0.1:{port}/");
    // The banner names the page's address once the daemon serves it.
    let printed = wait_until(Duration::from_secs(180), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains(&format!("live view:        {url}")))
    });
    assert!(
        printed,
        "no live view address in the log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let shot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/live-view.png");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/live_view.py");
    let out = common::tools::python_with("playwright", "playwright")
        .arg(&script)
        .arg(&url)
        .arg(&shot)
        .output()
        .expect("python runs");
    stop(child);
    assert!(
        out.status.success(),
        "the browser check failed: {}\n{}\ndaemon log (tail):\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout),
        tail(&log)
    );
    println!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(shot.exists(), "no screenshot at {}", shot.display());
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

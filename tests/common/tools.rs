//! Outside tools the tests use as independent peers. `scripts/test.sh` installs them (Python
//! packages into the project's `.venv`); a test that needs a missing one fails with the
//! install hint instead of skipping.

use std::path::PathBuf;
use std::process::Command;

const HINT: &str = "run the tests with `scripts/test.sh`, which installs it";

/// The Python interpreter with the test packages: `MILSTREAM_PYTHON` (set by
/// scripts/test.sh), else the project's `.venv`, else `python3` on PATH.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("MILSTREAM_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// A Python command whose interpreter imports `module` (pip package `package`), or a panic
/// naming the fix.
pub fn python_with(module: &str, package: &str) -> Command {
    let py = python();
    let ok = Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import {module}: {HINT} (or `pip install {package}`)",
        py.display()
    );
    Command::new(py)
}

/// `promtool`, or a panic naming the fix.
pub fn promtool() -> Command {
    assert!(
        Command::new("promtool").arg("--version").output().is_ok(),
        "promtool not found: {HINT} (Debian: apt-get install prometheus)"
    );
    Command::new("promtool")
}

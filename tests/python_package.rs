//! A model fitted in Python (the `milstream` package of python/, which scripts/test.sh
//! installs into .venv) is an artifact like any other: the daemon serves it from
//! `model.series_path` on the mock cluster, and every window's prediction equals the
//! package's offline scores of that window, bit for bit.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::scratch;
use common::stream::*;

/// Fits `ShapeletClassifier()` on a UCR CSV (argv[1]) and saves the artifact (argv[2]).
const FIT: &str = r#"
import sys
import numpy as np
from milstream import ShapeletClassifier
d = np.loadtxt(sys.argv[1], delimiter=",")
ShapeletClassifier().fit(d[:, 1:], d[:, 0].astype(int)).save(sys.argv[2])
"#;

/// Loads the artifact (argv[1]) and prints, per window of the JSON list on stdin, the
/// predicted label and the class scores (in the artifact's class order, as the daemon
/// writes them).
const SCORE: &str = r#"
import json, sys
import numpy as np
import milstream
clf = milstream.load(sys.argv[1])
windows = np.array(json.load(sys.stdin), dtype=float)[:, None, :]
labels = clf.predict(windows)
scores = clf.class_scores(windows)
print(json.dumps([[str(l), s] for l, s in zip(labels, scores.tolist())]))
"#;

fn python(script: &str, args: &[&Path], stdin: Option<String>) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = common::tools::python_with("milstream", "./python")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    let input = stdin.unwrap_or_default();
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())
        .expect("python reads stdin");
    let out = child.wait_with_output().expect("python finishes");
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn a_model_fitted_in_python_is_served_with_its_offline_scores() {
    let dir = scratch("python-model");
    let out = dir.join("out");
    let model_path = dir.join("python-gunpoint.json");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/GunPoint_TRAIN.csv");
    python(FIT, &[&data, &model_path], None);

    let bootstrap = cluster(2);
    let stream = known_stream(4, 3, 1_700_000_001_500);
    let expected = expected_windows(&stream);
    produce_all(&producer(&bootstrap), &point_messages(&stream));
    let (daemon, stop) = spawn_daemon(config(&bootstrap, &out, &model_path, "python-model", ""));
    let want: BTreeSet<_> = expected.keys().cloned().collect();
    let done = wait_until(Duration::from_secs(90), || {
        window_keys(&read_predictions(&out)).is_superset(&want)
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(done, "not every expected window was written in time");

    let rows = read_predictions(&out);
    assert_eq!(window_keys(&rows), want, "exactly the expected windows");
    let windows: Vec<&Vec<f64>> = rows
        .iter()
        .map(|r| &expected[&(r.key.clone(), r.start.unwrap(), r.end.unwrap())])
        .collect();
    let offline: Vec<(String, Vec<f64>)> = serde_json::from_str(&python(
        SCORE,
        &[&model_path],
        Some(serde_json::to_string(&windows).unwrap()),
    ))
    .expect("the scorer prints JSON");
    assert_eq!(offline.len(), rows.len());
    for (r, (label, scores)) in rows.iter().zip(&offline) {
        assert_eq!(&r.label, label, "{r:?}");
        assert_eq!(&r.scores, scores, "served = Python's offline scores: {r:?}");
    }
}

//! Well-formed but hostile input against the daemon on librdkafka's mock cluster (issue 68):
//! device clocks ahead of the arrival and ids past the bound are dead letters with their
//! reasons, and the well-behaved series lose no window to them.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::scratch;
use common::stream::*;

/// Findings 2 and 3 end to end: in the middle of a known stream (points of 2023, produced
/// now), a point two days past its message's Kafka timestamp (`future`), a point whose
/// `series_id` is 300 bytes (`too_large`), and a device 30 minutes ahead (accepted, within
/// `limits.max_future_skew_ms`). Segments seal every 300 ms, each an idle eviction. Every
/// window of the known stream is scored once; the dead letters are those two. At 593c8e9
/// both clock points were accepted, the watermark went to their clocks, the known series
/// were evicted as idle at each seal and lost their windows, and no dead letter was written.
#[test]
fn clocks_ahead_and_long_ids_are_dead_letters_and_cost_no_window() {
    let dir = scratch("hostile");
    let out = dir.join("out");
    let bootstrap = cluster(1);
    let (model_path, _) = model_file(&dir);
    let stream = known_stream(1, 3, 1_700_000_001_500);
    let good = point_messages(&stream);
    let now = chrono::Utc::now().timestamp_millis();
    let point = |id: &str, ts: i64| {
        let body = format!(r#"{{"series_id":"{id}","ts":{ts},"value":0.5}}"#);
        (POINTS.to_string(), id.to_string(), body.into_bytes())
    };
    let long_id = "x".repeat(300);
    let hostile = [
        (point("clock-2099", now + 2 * 86_400_000), Some("future")),
        (point(&long_id, now), Some("too_large")),
        (point("clock-ahead", now + 1_800_000), None),
    ];
    let mut msgs = good[..200].to_vec();
    let mut want_dlq = BTreeSet::new();
    for (m, reason) in &hostile {
        if let Some(r) = reason {
            want_dlq.insert((msgs.len() as i64, r.to_string()));
        }
        msgs.push(m.clone());
    }
    msgs.extend_from_slice(&good[200..]);
    produce_all(&producer(&bootstrap), &msgs);

    let cfg = config(&bootstrap, &out, &model_path, "hostile", "");
    let (daemon, stop) = spawn_daemon(cfg);
    let want: BTreeSet<_> = expected_windows(&stream).keys().cloned().collect();
    let done = wait_until(Duration::from_secs(90), || {
        read_dead_letters(&out).len() >= want_dlq.len()
            && window_keys(&read_predictions(&out)).is_superset(&want)
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    let got: BTreeSet<(i64, String)> = read_dead_letters(&out)
        .into_iter()
        .map(|(_, _, offset, reason, _)| (offset, reason))
        .collect();
    assert!(done, "timed out: dead letters {got:?}");
    assert_eq!(got, want_dlq);
    let rows = read_predictions(&out);
    assert_eq!(window_keys(&rows), want, "each window once, none lost");
    assert_eq!(rows.len(), want.len(), "no window twice");
}

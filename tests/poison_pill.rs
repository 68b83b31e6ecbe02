//! A row a sink can never accept is not retried for ever. Here the dead-letter topic takes
//! records of at most 1,000 bytes (the producer's `message.max.bytes`, which librdkafka
//! enforces before sending, as a broker's `max.message.bytes` does after): a malformed
//! record of 2,000 bytes makes a dead letter larger than that. Before, the writer retried
//! that segment for ever, every partition paused behind it and a restart replayed it; now
//! the dead letter goes to the topic shrunk (its identity, no payload), counted, and the
//! stream goes on: every window of the points after it is written.

mod common;

use std::time::Duration;

use common::stream::*;
use milstream::stream::embedded::start_mock_cluster;

const DEAD_TOPIC: &str = "milstream.dead-letters";

#[test]
fn a_dead_letter_too_large_for_its_topic_goes_shrunk_and_the_stream_goes_on() {
    let dir = common::scratch("poison-pill");
    let bootstrap = start_mock_cluster(
        vec![POINTS.into(), BAGS.into(), LABELS.into(), DEAD_TOPIC.into()],
        1,
    )
    .unwrap();
    let (model, _) = model_file(&dir);
    let out = dir.join("out");
    let mut cfg = config(&bootstrap, &out, &model, "pill", "");
    cfg.output.dead_letter_topic = DEAD_TOPIC.into();
    cfg.kafka
        .properties
        .insert("message.max.bytes".into(), "1000".into());
    let port = free_port();
    cfg.http.listen = format!("127.0.0.1:{port}");

    let stream = known_stream(2, 4, 1_700_000_001_500);
    let mut msgs = vec![(
        POINTS.to_string(),
        "pill".to_string(),
        format!("{{\"series_id\":\"{}\",\"ts\":", "p".repeat(2_000)).into_bytes(),
    )];
    msgs.extend(point_messages(&stream));
    produce_all(&producer(&bootstrap), &msgs);
    let (daemon, stop) = spawn_daemon(cfg);
    let want = window_keys_of_expected(&stream);
    // Written and committed: a segment retried for ever has its Parquet files on disk, but
    // its offsets are never committed.
    let n = msgs.len() as i64;
    let done = wait_until(Duration::from_secs(120), || {
        window_keys(&read_predictions(&out)) == want
            && committed_offsets(&bootstrap, "pill", POINTS, 1).get(&0) == Some(&n)
    });
    let shrunk = sample(
        &scrape(port),
        "milstream_sink_rows_refused_total{outcome=\"shrunk\",sink=\"kafka\"}",
    );
    let dead = consume_dead_letters(&bootstrap, 1);
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(
        done,
        "the windows after the pill were not all written and committed: {:?}",
        committed_offsets(&bootstrap, "pill", POINTS, 1)
    );
    assert_eq!(shrunk, 1.0);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0]["reason"], "parse");
    assert_eq!(dead[0]["raw_prefix"], "");
    assert!(dead[0]["detail"]
        .as_str()
        .unwrap()
        .contains("truncated: too large for the topic"));
}

fn window_keys_of_expected(
    stream: &[KnownSeries],
) -> std::collections::BTreeSet<(String, i64, i64)> {
    expected_windows(stream).keys().cloned().collect()
}

/// Up to `expect` records of the dead-letter topic, as JSON.
fn consume_dead_letters(bootstrap: &str, expect: usize) -> Vec<serde_json::Value> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::Message;
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "dead-letter-reader")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    c.subscribe(&[DEAD_TOPIC]).unwrap();
    let mut out = Vec::new();
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while out.len() < expect && std::time::Instant::now() < end {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(200)) {
            out.push(serde_json::from_slice(m.payload().unwrap()).unwrap());
        }
    }
    out
}

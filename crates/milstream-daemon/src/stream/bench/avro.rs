//! `bench-stream --format avro`: the bench's feed also as Avro in the Confluent wire format,
//! measured beside JSON in the same run: the two decoders alone over the same messages (one
//! thread; they must give the same records), and a daemon pass over each topic (the Avro
//! one with its schema served by a registry in process).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, Producer};
use serde_json::{json, Value};

use super::{timed_pass, BenchProducer, Feed};
use crate::config::{Config, InputFormat};
use crate::stream::ingest::avro::encode::{double, long, string};
use crate::stream::ingest::avro::{self, SchemaRegistry, POINT_AVSC};
use crate::stream::ingest::record::{decode, DecodeLimits, RecordKind};
use crate::stream::score::window::ScoringModel;

/// The id the bench's writer schema has in its registry.
const SCHEMA_ID: u32 = 1;
/// Messages the decoders alone are timed over, at most.
const DECODE_MESSAGES: usize = 200_000;

/// The writer schema: an array of `schemas/point.avsc` records (one message, many points).
fn writer_schema() -> String {
    format!(r#"{{"type":"array","items":{POINT_AVSC}}}"#)
}

/// One point record of `schemas/point.avsc` from its JSON form.
fn point(out: &mut Vec<u8>, p: &Value) {
    string(out, p["series_id"].as_str().unwrap_or(""));
    long(out, p["ts"].as_i64().unwrap_or(0));
    match p.get("value").and_then(Value::as_f64) {
        Some(v) => {
            long(out, 1);
            double(out, v);
        }
        None => long(out, 0),
    }
    match p.get("values").and_then(Value::as_array) {
        Some(vs) => {
            long(out, 1);
            long(out, vs.len() as i64);
            for v in vs {
                double(out, v.as_f64().unwrap_or(f64::NAN));
            }
            long(out, 0);
        }
        None => long(out, 0),
    }
    match p.get("model").and_then(Value::as_str) {
        Some(m) => {
            long(out, 1);
            string(out, m);
        }
        None => long(out, 0),
    }
}

/// A JSON message of the feed (a point or an array of them) as the same points in Avro.
fn encode(json: &str) -> Vec<u8> {
    let points = match serde_json::from_str(json).expect("the feed writes JSON") {
        Value::Array(a) => a,
        one => vec![one],
    };
    let mut datum = Vec::with_capacity(json.len() / 2);
    if !points.is_empty() {
        long(&mut datum, points.len() as i64);
        points.iter().for_each(|p| point(&mut datum, p));
    }
    long(&mut datum, 0);
    avro::frame(SCHEMA_ID, &datum)
}

/// The decoders alone over the feed's first messages: their points/s and bytes per point,
/// after checking that they decode every message to the same records.
fn decode_cost(feed: &Feed, n_msgs: usize) -> anyhow::Result<Value> {
    let limits = DecodeLimits::from(&Config::default().limits);
    let registry = SchemaRegistry::offline(1);
    registry
        .insert(SCHEMA_ID, &writer_schema())
        .map_err(|e| anyhow::anyhow!("the bench's Avro schema: {e}"))?;
    let n = n_msgs.min(DECODE_MESSAGES);
    let json: Vec<String> = (0..n).map(|i| feed.message(i).1).collect();
    let avro: Vec<Vec<u8>> = json.iter().map(|j| encode(j)).collect();
    for (j, a) in json.iter().zip(&avro) {
        let (from_json, from_avro) = (
            decode(RecordKind::Point, j.as_bytes(), &limits),
            avro::decode(RecordKind::Point, a, &limits, &registry),
        );
        anyhow::ensure!(
            from_json == from_avro,
            "Avro and JSON decode differently: {j}"
        );
    }
    let time = |f: &dyn Fn(usize) -> usize| {
        let start = Instant::now();
        let points: usize = (0..n).map(f).sum();
        (points, start.elapsed().as_secs_f64())
    };
    let (points, json_secs) =
        time(&|i| decode(RecordKind::Point, json[i].as_bytes(), &limits).len());
    let (_, avro_secs) =
        time(&|i| avro::decode(RecordKind::Point, &avro[i], &limits, &registry).len());
    let bytes = |total: usize| total as f64 / points.max(1) as f64;
    Ok(json!({
        "messages": n,
        "points": points,
        "json": {"points_per_second": points as f64 / json_secs,
                 "ns_per_point": json_secs * 1e9 / points.max(1) as f64,
                 "bytes_per_point": bytes(json.iter().map(String::len).sum())},
        "avro": {"points_per_second": points as f64 / avro_secs,
                 "ns_per_point": avro_secs * 1e9 / points.max(1) as f64,
                 "bytes_per_point": bytes(avro.iter().map(Vec::len).sum())},
        "avro_to_json": json_secs / avro_secs,
    }))
}

/// A registry that serves the bench's one schema, on a free port until `stop` is sent.
async fn serve_registry() -> anyhow::Result<(String, tokio::sync::oneshot::Sender<()>)> {
    let body = json!({"schema": writer_schema()}).to_string();
    let app = axum::Router::new().route(
        "/schemas/ids/{id}",
        axum::routing::get(move || std::future::ready(body.clone())),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await;
    });
    Ok((url, stop))
}

/// JSON against Avro: the decoders alone, then a daemon pass over the JSON topic and one over
/// `<topic>.avro` (the same messages in Avro), each in its own group. None unless asked for
/// (`compare_avro`) in a throughput run.
pub(super) async fn compare_inputs(
    opts: &super::BenchOptions,
    base: &Config,
    (bootstrap, feed): (&str, &Feed),
    scoring: &Arc<ScoringModel>,
    n_points: usize,
) -> anyhow::Result<Option<Value>> {
    if !opts.compare_avro || opts.rate.is_some() {
        return Ok(None);
    }
    let n_msgs = feed.messages();
    let decoders = decode_cost(feed, n_msgs)?;
    let avro_topic = avro_topic(&base.kafka.points_topic);
    let producer: BenchProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "1000000")
        .create()?;
    for i in 0..n_msgs {
        let (k, v) = feed.message(i);
        let payload = encode(&v);
        while producer
            .send(BaseRecord::to(&avro_topic).key(&k).payload(&payload))
            .is_err()
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    producer.flush(Duration::from_secs(60))?;
    let (url, stop) = serve_registry().await?;
    let mut report = serde_json::Map::new();
    let mut secs = Vec::new();
    for format in [InputFormat::Json, InputFormat::Avro] {
        let mut c = base.clone();
        let name = if format == InputFormat::Avro {
            "avro"
        } else {
            "json"
        };
        c.drift.evaluate = false;
        c.kafka.group_id = format!("{}.input-{name}", base.kafka.group_id);
        c.output.dir = base.output.dir.join(format!("input-{name}"));
        if format == InputFormat::Avro {
            c.kafka.points_topic = avro_topic.clone();
            c.input.points_format = InputFormat::Avro;
            c.schema_registry.url = url.clone();
        }
        let topic = c.kafka.points_topic.clone();
        let (s, _) = timed_pass(c, bootstrap, scoring.clone(), &topic, n_points, None).await?;
        secs.push(s);
        report.insert(
            format!("{name}_pass"),
            json!({"points_per_second": n_points as f64 / s, "seconds": s}),
        );
    }
    let _ = stop.send(());
    report.insert("avro_to_json_pass".into(), json!(secs[0] / secs[1]));
    report.insert("decoders".into(), decoders);
    Ok(Some(Value::Object(report)))
}

/// The topic of the Avro copy of the feed (created with the points topic).
fn avro_topic(points_topic: &str) -> String {
    format!("{points_topic}.avro")
}

/// The bench's topics: the points topic and its Avro copy.
pub(super) fn with_avro_copy(points_topic: &str) -> Vec<String> {
    vec![points_topic.to_owned(), avro_topic(points_topic)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's encoder writes what the decoder reads: the same points as the JSON.
    #[test]
    fn encoded_feed_messages_decode_to_their_json_points() {
        let limits = DecodeLimits::from(&Config::default().limits);
        let registry = SchemaRegistry::offline(1);
        registry.insert(SCHEMA_ID, &writer_schema()).unwrap();
        for json in [
            r#"{"series_id":"a","ts":1,"value":0.25}"#,
            r#"[{"series_id":"a","ts":1,"value":0.25},{"series_id":"b","ts":-2,"values":[1,2.5],"model":"m"}]"#,
            "[]",
        ] {
            let want = decode(RecordKind::Point, json.as_bytes(), &limits);
            let got = avro::decode(RecordKind::Point, &encode(json), &limits, &registry);
            assert_eq!(got, want, "{json}");
        }
    }
}

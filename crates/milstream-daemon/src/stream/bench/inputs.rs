//! `bench-stream --format avro|protobuf`: the bench's feed also as Avro and as Protobuf in
//! the Confluent wire format, measured beside JSON in the same run: the three decoders alone
//! over the same messages (one thread; they must give the same records), and a daemon pass
//! over the JSON topic and one over the format's (its schema served by a registry in
//! process).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, Producer};
use serde_json::{json, Value};

use super::{timed_pass, BenchProducer, Feed};
use crate::config::{Config, InputFormat};
use crate::stream::ingest::avro::encode::{double, long, string};
use crate::stream::ingest::avro::{self, POINT_AVSC};
use crate::stream::ingest::protobuf::{self, POINT_PROTO};
use crate::stream::ingest::record::{decode, DecodeLimits, RecordKind};
use crate::stream::ingest::registry::wire::frame;
use crate::stream::ingest::registry::{SchemaRegistry, SchemaType};
use crate::stream::score::window::ScoringModel;

/// The ids the bench's writer schemas have in its registry.
const AVRO_ID: u32 = 1;
const PROTOBUF_ID: u32 = 2;
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
    frame(AVRO_ID, &datum)
}

/// A JSON message of the feed as the same points in Protobuf (a `Points` batch).
fn encode_protobuf(json: &str) -> Vec<u8> {
    let value: Value = serde_json::from_str(json).expect("the feed writes JSON");
    let batch = match value {
        Value::Array(_) => value,
        one => Value::Array(vec![one]),
    };
    frame(
        PROTOBUF_ID,
        &protobuf::encode::body(RecordKind::Point, &batch),
    )
}

/// The bench's registry: its Avro and Protobuf writer schemas.
fn bench_registry() -> anyhow::Result<SchemaRegistry> {
    let registry = SchemaRegistry::offline(2);
    registry
        .insert(AVRO_ID, SchemaType::Avro, &writer_schema())
        .map_err(|e| anyhow::anyhow!("the bench's Avro schema: {e}"))?;
    registry
        .insert(PROTOBUF_ID, SchemaType::Protobuf, POINT_PROTO)
        .map_err(|e| anyhow::anyhow!("the bench's Protobuf schema: {e}"))?;
    Ok(registry)
}

/// The decoders alone over the feed's first messages: their points/s and bytes per point,
/// after checking that they decode every message to the same records.
fn decode_cost(feed: &Feed, n_msgs: usize) -> anyhow::Result<Value> {
    let limits = DecodeLimits::from(&Config::default().limits);
    let registry = bench_registry()?;
    let n = n_msgs.min(DECODE_MESSAGES);
    let json: Vec<String> = (0..n).map(|i| feed.message(i).1).collect();
    let avro: Vec<Vec<u8>> = json.iter().map(|j| encode(j)).collect();
    let proto: Vec<Vec<u8>> = json.iter().map(|j| encode_protobuf(j)).collect();
    for ((j, a), p) in json.iter().zip(&avro).zip(&proto) {
        let from_json = decode(RecordKind::Point, j.as_bytes(), &limits);
        anyhow::ensure!(
            from_json == avro::decode(RecordKind::Point, a, &limits, &registry),
            "Avro and JSON decode differently: {j}"
        );
        anyhow::ensure!(
            from_json == protobuf::decode(RecordKind::Point, p, &limits, &registry),
            "Protobuf and JSON decode differently: {j}"
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
    let (_, proto_secs) =
        time(&|i| protobuf::decode(RecordKind::Point, &proto[i], &limits, &registry).len());
    let per_point = |secs: f64, bytes: usize| {
        json!({"points_per_second": points as f64 / secs,
               "ns_per_point": secs * 1e9 / points.max(1) as f64,
               "bytes_per_point": bytes as f64 / points.max(1) as f64})
    };
    Ok(json!({
        "messages": n,
        "points": points,
        "json": per_point(json_secs, json.iter().map(String::len).sum()),
        "avro": per_point(avro_secs, avro.iter().map(Vec::len).sum()),
        "protobuf": per_point(proto_secs, proto.iter().map(Vec::len).sum()),
        "avro_to_json": json_secs / avro_secs,
        "protobuf_to_json": json_secs / proto_secs,
    }))
}

/// A registry that serves the bench's one schema, on a free port until `stop` is sent.
async fn serve_registry(
    format: InputFormat,
) -> anyhow::Result<(String, tokio::sync::oneshot::Sender<()>)> {
    let body = match format {
        InputFormat::Protobuf => json!({"schema": POINT_PROTO, "schemaType": "PROTOBUF"}),
        _ => json!({"schema": writer_schema()}),
    }
    .to_string();
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

/// JSON against Avro or Protobuf: the decoders alone, then a daemon pass over the JSON topic
/// and one over `<topic>.<format>` (the same messages in that format), each in its own
/// group. None unless asked for (`compare_input`) in a throughput run.
pub(super) async fn compare_inputs(
    opts: &super::BenchOptions,
    base: &Config,
    (bootstrap, feed): (&str, &Feed),
    scoring: &Arc<ScoringModel>,
    n_points: usize,
) -> anyhow::Result<Option<Value>> {
    let format = match opts.compare_input {
        Some(f) if f.uses_registry() && opts.rate.is_none() => f,
        _ => return Ok(None),
    };
    let name = format_name(format);
    let n_msgs = feed.messages();
    let decoders = decode_cost(feed, n_msgs)?;
    let copy_topic = copy_topic(&base.kafka.points_topic, format);
    let producer: BenchProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "1000000")
        .create()?;
    for i in 0..n_msgs {
        let (k, v) = feed.message(i);
        let payload = match format {
            InputFormat::Protobuf => encode_protobuf(&v),
            _ => encode(&v),
        };
        while producer
            .send(BaseRecord::to(&copy_topic).key(&k).payload(&payload))
            .is_err()
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    producer.flush(Duration::from_secs(60))?;
    let (url, stop) = serve_registry(format).await?;
    let mut report = serde_json::Map::new();
    let mut secs = Vec::new();
    for pass in [InputFormat::Json, format] {
        let mut c = base.clone();
        let name = format_name(pass);
        c.drift.evaluate = false;
        c.kafka.group_id = format!("{}.input-{name}", base.kafka.group_id);
        c.output.dir = base.output.dir.join(format!("input-{name}"));
        if pass != InputFormat::Json {
            c.kafka.points_topic = copy_topic.clone();
            c.input.points_format = pass;
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
    report.insert(format!("{name}_to_json_pass"), json!(secs[0] / secs[1]));
    report.insert("decoders".into(), decoders);
    Ok(Some(Value::Object(report)))
}

fn format_name(format: InputFormat) -> &'static str {
    match format {
        InputFormat::Json => "json",
        InputFormat::Avro => "avro",
        InputFormat::Protobuf => "protobuf",
    }
}

/// The topic of the feed's copy in `format` (created with the points topic).
fn copy_topic(points_topic: &str, format: InputFormat) -> String {
    format!("{points_topic}.{}", format_name(format))
}

/// The bench's topics: the points topic and its Avro and Protobuf copies.
pub(super) fn with_copies(points_topic: &str) -> Vec<String> {
    vec![
        points_topic.to_owned(),
        copy_topic(points_topic, InputFormat::Avro),
        copy_topic(points_topic, InputFormat::Protobuf),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's encoders write what the decoders read: the same points as the JSON.
    #[test]
    fn encoded_feed_messages_decode_to_their_json_points() {
        let limits = DecodeLimits::from(&Config::default().limits);
        let registry = bench_registry().unwrap();
        for json in [
            r#"{"series_id":"a","ts":1,"value":0.25}"#,
            r#"[{"series_id":"a","ts":1,"value":0.25},{"series_id":"b","ts":-2,"values":[1,2.5],"model":"m"}]"#,
            "[]",
        ] {
            let want = decode(RecordKind::Point, json.as_bytes(), &limits);
            let got = avro::decode(RecordKind::Point, &encode(json), &limits, &registry);
            assert_eq!(got, want, "{json}");
            let got = protobuf::decode(
                RecordKind::Point,
                &encode_protobuf(json),
                &limits,
                &registry,
            );
            assert_eq!(got, want, "{json}");
        }
    }
}

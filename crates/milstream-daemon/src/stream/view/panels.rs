//! The models and pipeline panels, read from what the daemon already measures. In: the
//! [`Metrics`] families and [`Health`], once a second. Out: the panels' JSON, and the
//! events seen between two reads (a promotion: a model's version changed; a drift signal or
//! a retraining run: its counter moved). Owns: the previous reading, the newest events, and
//! the consume-to-durable buckets of the last ten seconds.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use prometheus::core::Collector;
use prometheus::proto::{Metric, MetricFamily};
use serde_json::{json, Value};

use crate::http::Health;
use crate::metrics::Metrics;

/// Events listed at most.
const EVENTS_KEPT: usize = 40;
/// Readings the p99 and the rates span (one a second).
const SPAN: usize = 10;

/// The value of label `name` of `m` ("" when absent).
fn label<'a>(m: &'a Metric, name: &str) -> &'a str {
    m.get_label()
        .iter()
        .find(|l| l.name() == name)
        .map_or("", |l| l.value())
}

fn metrics_of(c: &dyn Collector) -> Vec<Metric> {
    c.collect()
        .into_iter()
        .flat_map(|f: MetricFamily| f.get_metric().to_vec())
        .collect()
}

/// Counter values by their labels (joined by `/`).
fn counters(c: &dyn Collector, names: &[&str]) -> BTreeMap<String, f64> {
    metrics_of(c)
        .iter()
        .map(|m| {
            let k: Vec<&str> = names.iter().map(|n| label(m, n)).collect();
            (k.join("/"), m.get_counter().get_value())
        })
        .collect()
}

/// What one reading keeps for the next.
#[derive(Default)]
struct Reading {
    versions: BTreeMap<String, String>,
    drift: BTreeMap<String, f64>,
    runs: BTreeMap<String, f64>,
    consumed: f64,
    predictions: f64,
    /// Consume-to-durable: (upper bound, cumulative count) per bucket.
    durable: Vec<(f64, u64)>,
}

/// The panels' state between readings.
pub struct Panels {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    /// The last `SPAN` readings, oldest first.
    readings: VecDeque<(i64, Reading)>,
    /// Per model: since when it serves its version, and the version before.
    serving: BTreeMap<String, (i64, Option<String>)>,
    events: VecDeque<Value>,
}

impl Panels {
    pub fn new(metrics: Arc<Metrics>, health: Arc<Health>) -> Self {
        Self {
            metrics,
            health,
            readings: VecDeque::new(),
            serving: BTreeMap::new(),
            events: VecDeque::new(),
        }
    }

    fn event(&mut self, e: Value) {
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_back();
        }
        self.events.push_front(e);
    }

    /// Reads the metrics now (`now_ms`); returns the models panel and the pipeline panel.
    pub fn read(&mut self, now_ms: i64) -> (Value, Value) {
        let m = &self.metrics;
        let mut r = Reading {
            versions: metrics_of(&m.model_info)
                .iter()
                .map(|x| {
                    (
                        label(x, "model").to_string(),
                        label(x, "model_version").to_string(),
                    )
                })
                .collect(),
            drift: counters(&m.drift_events, &["model", "detector", "signal"]),
            runs: counters(&m.training_runs, &["model", "outcome"]),
            ..Reading::default()
        };
        r.consumed = counters(&m.records_consumed, &["topic", "partition"])
            .values()
            .sum();
        r.predictions = (m.windows_scored.get() + m.bags_scored.get()) as f64;
        let h = &m.consume_to_durable_seconds;
        r.durable = metrics_of(h)
            .first()
            .map(|x| {
                let h = x.get_histogram();
                h.get_bucket()
                    .iter()
                    .map(|b| (b.upper_bound(), b.cumulative_count()))
                    .collect()
            })
            .unwrap_or_default();
        self.note_changes(&r, now_ms);
        let models = self.models(&r);
        if self.readings.len() == SPAN {
            self.readings.pop_front();
        }
        self.readings.push_back((now_ms, r));
        let pipeline = self.pipeline(now_ms);
        (models, pipeline)
    }

    /// Promotions, drift signals and retraining runs since the last reading.
    fn note_changes(&mut self, r: &Reading, now_ms: i64) {
        for e in self.changes(r, now_ms) {
            self.event(e);
        }
    }

    fn changes(&mut self, r: &Reading, now_ms: i64) -> Vec<Value> {
        let mut out = Vec::new();
        let prev = self.readings.back().map(|(_, p)| p);
        for (model, version) in &r.versions {
            let before = prev.and_then(|p| p.versions.get(model));
            match (self.serving.get(model), before) {
                (None, _) => {
                    self.serving.insert(model.clone(), (now_ms, None));
                }
                (Some(_), Some(b)) if b != version => {
                    self.serving
                        .insert(model.clone(), (now_ms, Some(b.clone())));
                    let e = json!({"at_ms": now_ms, "model": model, "what": "promoted",
                        "detail": format!("{b} -> {version}")});
                    out.push(e);
                }
                _ => {}
            }
        }
        let Some(prev) = prev else { return out };
        let moved = |now: &BTreeMap<String, f64>, before: &BTreeMap<String, f64>| {
            now.iter()
                .filter(|(k, v)| **v > before.get(*k).copied().unwrap_or(0.0))
                .map(|(k, _)| k.clone())
                .collect::<Vec<_>>()
        };
        for k in moved(&r.drift, &prev.drift) {
            let p: Vec<&str> = k.split('/').collect();
            let what = if p[2] == "drift" { "drift" } else { "warning" };
            let e = json!({"at_ms": now_ms, "model": p[0], "what": what, "detector": p[1],
                "detail": format!("{} detector", p[1])});
            out.push(e);
        }
        for k in moved(&r.runs, &prev.runs) {
            let p: Vec<&str> = k.split('/').collect();
            let e = json!({"at_ms": now_ms, "model": p[0], "what": "retrain",
                "detail": p.get(1).copied().unwrap_or("")});
            out.push(e);
        }
        out
    }

    fn models(&self, r: &Reading) -> Value {
        let m = &self.metrics;
        let accuracy = metrics_of(&m.model_accuracy);
        let labeled = metrics_of(&m.labeled_predictions);
        let confusion = metrics_of(&m.confusion);
        let gauge = |c: &dyn Collector, model: &str| {
            metrics_of(c)
                .iter()
                .find(|x| label(x, "model") == model)
                .map(|x| x.get_gauge().get_value())
        };
        let models: Vec<Value> = r
            .versions
            .iter()
            .map(|(model, version)| {
                let mine = |x: &&Metric| {
                    label(x, "model") == model && label(x, "model_version") == version
                };
                let (since, from) = self.serving.get(model).cloned().unwrap_or((0, None));
                let cells: Vec<Value> = confusion
                    .iter()
                    .filter(mine)
                    .map(|x| {
                        json!([
                            label(x, "label"),
                            label(x, "predicted"),
                            x.get_counter().get_value()
                        ])
                    })
                    .collect();
                json!({
                    "model": model, "version": version, "since_ms": since, "from": from,
                    "accuracy": accuracy.iter().find(mine).map(|x| x.get_gauge().get_value()),
                    "labeled": labeled.iter().find(mine).map(|x| x.get_counter().get_value()),
                    "confusion": cells,
                    "drift_state": gauge(&m.drift_state, model),
                    "candidate_held": gauge(&m.candidate_held, model),
                    "psi": gauge(&m.score_psi, model),
                })
            })
            .collect();
        json!({"models": models, "events": self.events})
    }

    fn pipeline(&self, now_ms: i64) -> Value {
        let m = &self.metrics;
        let lag: Vec<Value> = metrics_of(&m.consumer_lag)
            .iter()
            .map(|x| json!({"topic": label(x, "topic"), "partition": label(x, "partition"), "lag": x.get_gauge().get_value()}))
            .collect();
        let dead: BTreeMap<String, f64> = counters(&m.dead_letters, &["reason"])
            .into_iter()
            .filter(|(_, v)| *v > 0.0)
            .collect();
        let (rate, predictions, p99) = match (self.readings.front(), self.readings.back()) {
            (Some((t0, a)), Some((t1, b))) if t1 > t0 => {
                let secs = (t1 - t0) as f64 / 1e3;
                let p99 = quantile(&a.durable, &b.durable, 0.99);
                (
                    (b.consumed - a.consumed) / secs,
                    (b.predictions - a.predictions) / secs,
                    p99,
                )
            }
            _ => (0.0, 0.0, None),
        };
        json!({
            "at_ms": now_ms, "lag": lag, "records_per_second": rate,
            "predictions_per_second": predictions, "consume_to_durable_p99_seconds": p99,
            "dead_letters": dead, "live_series": m.live_series.get(),
            "partitions": m.partitions_assigned.get(),
            "ready": self.health.not_ready_reason().map(|r| r.into_owned()),
            "alive": self.health.not_alive_reason(),
        })
    }
}

/// The `q` quantile of what was observed between two readings of a histogram's cumulative
/// buckets (the upper bound of the bucket it falls in); None when nothing was.
fn quantile(before: &[(f64, u64)], now: &[(f64, u64)], q: f64) -> Option<f64> {
    let count = |b: &[(f64, u64)], i: usize| b.get(i).map_or(0, |x| x.1);
    let total = now
        .last()
        .map_or(0, |x| x.1)
        .saturating_sub(before.last().map_or(0, |x| x.1));
    if total == 0 {
        return None;
    }
    let want = (q * total as f64).ceil() as u64;
    now.iter()
        .enumerate()
        .find(|(i, x)| x.1.saturating_sub(count(before, *i)) >= want)
        .map(|(_, x)| x.0)
        .filter(|b| b.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_of_the_difference_of_two_readings() {
        let before = [(0.1, 5), (1.0, 5)];
        let now = [(0.1, 6), (1.0, 105)];
        assert_eq!(quantile(&before, &now, 0.99), Some(1.0));
        assert_eq!(quantile(&before, &now, 0.005), Some(0.1));
        assert_eq!(quantile(&now, &now, 0.99), None);
    }

    /// A version change is a promotion event, a moved drift counter a drift event.
    #[test]
    fn promotions_and_drifts_become_events() {
        let metrics = Metrics::new();
        metrics.register_model("series");
        metrics.set_model_version("series", "v1", "lpboost");
        let mut p = Panels::new(metrics.clone(), Arc::new(Health::default()));
        p.read(1_000);
        metrics.set_model_version("series", "v2", "lpboost");
        metrics
            .drift_events
            .with_label_values(&["series", "errors", "drift"])
            .inc();
        let (models, _) = p.read(2_000);
        let events = models["events"].as_array().unwrap();
        let what: Vec<&str> = events.iter().map(|e| e["what"].as_str().unwrap()).collect();
        assert!(
            what.contains(&"promoted") && what.contains(&"drift"),
            "{what:?}"
        );
        assert_eq!(models["models"][0]["from"], "v1");
    }
}

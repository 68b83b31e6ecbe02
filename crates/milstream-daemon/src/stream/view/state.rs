//! What the live view knows of the streams. In: the workers' [`FeedItem`]s. Out: the pages'
//! JSON: a page of the streams table, one series with its strip and drawing, the counts per
//! class, the rows changed since the last tick. Owns: per series its latest prediction and
//! its last `view.recent_predictions` (the least recently scored series leaves past
//! `view.max_series`), the latest drawing of each watched series, the newest dead letters.
//!
//! Memory is bounded by the configuration alone: keys are cut (`feed::display_key`), names
//! (models, versions, labels) are shared, and every collection has a cap.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::num::NonZeroUsize;
use std::sync::Arc;

use lru::LruCache;
use serde_json::{json, Value};

use super::feed::{DeadNote, FeedItem, ViewRow};
use super::legend::Explained;
use crate::config::ViewConfig;

/// Rows sent as changed in one tick at most (a page refetches its page when more changed).
pub const CHANGED_MAX: usize = 500;
/// Dead letters listed.
const DEAD_KEPT: usize = 8;
/// Distinct names (models, versions, labels) shared; past it a name is held per series.
const NAMES_MAX: usize = 4096;
/// Rows of one page of the streams table at most.
pub const PAGE_MAX: usize = 200;

/// One prediction of a series' strip.
struct Recent {
    label: Arc<str>,
    margin: f64,
    at_ms: i64,
}

/// A series (or bag) and its latest predictions, newest last.
struct SeriesEntry {
    model: Arc<str>,
    version: Arc<str>,
    kind: &'static str,
    recent: VecDeque<Recent>,
}

impl SeriesEntry {
    fn latest(&self) -> &Recent {
        self.recent.back().expect("an entry has a prediction")
    }
}

/// The view's state; one mutex, taken by the aggregator once per item and by requests.
pub struct ViewState {
    recent_cap: usize,
    series: LruCache<Arc<str>, SeriesEntry>,
    names: HashMap<String, Arc<str>>,
    /// Series whose latest prediction is (model, label).
    counts: BTreeMap<(Arc<str>, Arc<str>), u64>,
    changed: HashSet<Arc<str>>,
    /// Pages watching each series (a page watches one at a time).
    watch: HashMap<String, usize>,
    explained: HashMap<String, Arc<Explained>>,
    dead: VecDeque<DeadNote>,
    /// Predictions seen, and series that left for the bound.
    pub scored: u64,
    pub evicted: u64,
}

impl ViewState {
    pub fn new(cfg: &ViewConfig) -> Self {
        Self {
            recent_cap: cfg.recent_predictions.max(1),
            series: LruCache::new(NonZeroUsize::new(cfg.max_series.max(1)).expect(">= 1")),
            names: HashMap::new(),
            counts: BTreeMap::new(),
            changed: HashSet::new(),
            watch: HashMap::new(),
            explained: HashMap::new(),
            dead: VecDeque::new(),
            scored: 0,
            evicted: 0,
        }
    }

    /// Takes one item of the feed; a drawing is returned for the pages watching it.
    pub fn apply(&mut self, item: FeedItem) -> Option<Arc<Explained>> {
        match item {
            FeedItem::Rows(rows) => {
                for r in rows {
                    self.row(r);
                }
                None
            }
            FeedItem::Explained(e) => {
                if !self.watch.contains_key(&e.key) {
                    return None;
                }
                let e: Arc<Explained> = Arc::from(e);
                self.explained.insert(e.key.clone(), e.clone());
                Some(e)
            }
            FeedItem::Dead(notes) => {
                for n in notes {
                    if self.dead.len() == DEAD_KEPT {
                        self.dead.pop_front();
                    }
                    self.dead.push_back(n);
                }
                None
            }
        }
    }

    fn name(&mut self, s: &str) -> Arc<str> {
        if let Some(n) = self.names.get(s) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(s);
        if self.names.len() < NAMES_MAX {
            self.names.insert(s.to_string(), n.clone());
        }
        n
    }

    fn count(&mut self, model: &Arc<str>, label: &Arc<str>, up: bool) {
        let c = self
            .counts
            .entry((model.clone(), label.clone()))
            .or_insert(0);
        if up {
            *c += 1;
        } else {
            *c = c.saturating_sub(1);
        }
    }

    fn row(&mut self, r: ViewRow) {
        self.scored += 1;
        let (model, version, label) = (
            self.name(&r.model),
            self.name(&r.version),
            self.name(&r.label),
        );
        let recent = Recent {
            label: label.clone(),
            margin: r.margin,
            at_ms: r.at_ms,
        };
        let key: Arc<str> = Arc::from(r.key.as_str());
        let old = match self.series.get_mut(r.key.as_str()) {
            Some(e) => {
                let old = (e.model.clone(), e.latest().label.clone());
                if e.recent.len() == self.recent_cap {
                    e.recent.pop_front();
                }
                e.recent.push_back(recent);
                (e.model, e.version) = (model.clone(), version);
                Some(old)
            }
            None => {
                let entry = SeriesEntry {
                    model: model.clone(),
                    version,
                    kind: r.kind,
                    recent: VecDeque::from([recent]),
                };
                if let Some((k, gone)) = self.series.push(key.clone(), entry) {
                    if k != key {
                        self.evicted += 1;
                        let l = gone.latest().label.clone();
                        self.count(&gone.model, &l, false);
                        self.changed.remove(&k);
                    }
                }
                None
            }
        };
        if let Some((m, l)) = old {
            self.count(&m, &l, false);
        }
        self.count(&model, &label, true);
        if self.changed.len() < CHANGED_MAX {
            self.changed.insert(key);
        }
    }

    /// A page now watches `key` (None: no series); returns the watched set when it changed.
    pub fn watch(&mut self, key: &str) -> HashSet<String> {
        *self.watch.entry(key.to_string()).or_insert(0) += 1;
        self.watched()
    }

    /// A page stopped watching `key`.
    pub fn unwatch(&mut self, key: &str) -> HashSet<String> {
        if let Some(n) = self.watch.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                self.watch.remove(key);
                self.explained.remove(key);
            }
        }
        self.watched()
    }

    fn watched(&self) -> HashSet<String> {
        self.watch.keys().cloned().collect()
    }

    fn row_json(key: &str, e: &SeriesEntry) -> Value {
        let l = e.latest();
        json!({
            "key": key, "model": &*e.model, "version": &*e.version, "kind": e.kind,
            "label": &*l.label, "margin": finite(l.margin), "at_ms": l.at_ms,
        })
    }

    /// A page of the streams table: the series whose key contains `q`, most recently scored
    /// first, from `offset`, at most `limit` (up to [`PAGE_MAX`]).
    pub fn page(&self, q: &str, offset: usize, limit: usize) -> Value {
        let limit = limit.clamp(1, PAGE_MAX);
        let mut matched = 0usize;
        let mut rows = Vec::new();
        for (k, e) in self.series.iter() {
            if !q.is_empty() && !k.contains(q) {
                continue;
            }
            if matched >= offset && rows.len() < limit {
                rows.push(Self::row_json(k, e));
            }
            matched += 1;
        }
        json!({"total": self.series.len(), "matched": matched, "offset": offset, "rows": rows})
    }

    /// One series: its latest prediction, its strip (oldest first) and its drawing.
    pub fn one(&self, key: &str) -> Value {
        let Some(e) = self.series.peek(key) else {
            return json!({"key": key, "found": false});
        };
        let strip: Vec<Value> = e
            .recent
            .iter()
            .map(|r| json!({"label": &*r.label, "margin": finite(r.margin), "at_ms": r.at_ms}))
            .collect();
        json!({
            "key": key, "found": true, "row": Self::row_json(key, e), "strip": strip,
            "explained": self.explained.get(key).map(|x| &**x),
        })
    }

    /// The rows changed since the last call.
    pub fn take_changed(&mut self) -> Vec<Value> {
        let keys: Vec<Arc<str>> = self.changed.drain().collect();
        keys.iter()
            .filter_map(|k| self.series.peek(k).map(|e| Self::row_json(k, e)))
            .collect()
    }

    /// The counts per class and the table's size.
    pub fn summary(&self) -> Value {
        let counts: Vec<Value> = self
            .counts
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|((m, l), n)| json!({"model": &**m, "label": &**l, "series": n}))
            .collect();
        json!({
            "series": self.series.len(), "scored": self.scored, "evicted": self.evicted,
            "counts": counts,
        })
    }

    /// The newest dead letters, newest first.
    pub fn dead(&self) -> Value {
        let notes: Vec<Value> = self
            .dead
            .iter()
            .rev()
            .map(|d| json!({"reason": d.reason, "detail": d.detail, "source": d.source, "at_ms": d.at_ms}))
            .collect();
        Value::Array(notes)
    }
}

/// JSON has no NaN or infinity.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, label: &str) -> ViewRow {
        ViewRow {
            key: key.into(),
            model: "series".into(),
            version: "v1".into(),
            kind: "window",
            label: label.into(),
            margin: 0.5,
            at_ms: 1,
        }
    }

    /// The table keeps `max_series` series and `recent_predictions` a series, and the counts
    /// per class follow each series' latest prediction, evictions included.
    #[test]
    fn bounded_by_configuration_and_counted_per_class() {
        let cfg = ViewConfig {
            max_series: 3,
            recent_predictions: 2,
            ..ViewConfig::default()
        };
        let mut s = ViewState::new(&cfg);
        for i in 0..10 {
            let rows = vec![row(
                &format!("s{}", i % 5),
                if i % 2 == 0 { "1" } else { "2" },
            )];
            s.apply(FeedItem::Rows(rows));
        }
        assert_eq!(s.series.len(), 3);
        assert!(s.series.iter().all(|(_, e)| e.recent.len() <= 2));
        let total: u64 = s.counts.values().sum();
        assert_eq!(total, 3, "{:?}", s.summary());
        let page = s.page("s", 0, 2);
        assert_eq!(page["matched"], 3);
        assert_eq!(page["rows"].as_array().unwrap().len(), 2);
        assert_eq!(s.page("s9", 0, 10)["matched"], 0);
    }

    /// Only watched series keep a drawing, and only while watched.
    #[test]
    fn drawings_only_for_watched_series() {
        let mut s = ViewState::new(&ViewConfig::default());
        let e = |key: &str| {
            FeedItem::Explained(Box::new(Explained {
                key: key.into(),
                model: "m".into(),
                version: "v".into(),
                kind: "window".into(),
                label: "1".into(),
                classes: vec![],
                scores: vec![],
                window_start_ms: None,
                window_end_ms: None,
                emitted_at_ms: 0,
                values: vec![1.0],
                legend: None,
            }))
        };
        assert!(s.apply(e("a")).is_none());
        assert_eq!(s.watch("a").len(), 1);
        assert!(s.apply(e("a")).is_some());
        assert!(s.unwatch("a").is_empty());
        assert!(s.explained.is_empty());
    }
}

//! What the scoring workers hand the live view. In: each message's prediction rows (with the
//! window's explanation and values when a page watches the series), its dead letters. Out:
//! [`FeedItem`]s on a bounded queue for the view's aggregator (`state.rs`). Owns: the queue's
//! sending side and the set of series the open pages watch.
//!
//! A worker never waits here: a full queue drops the item and counts it (the view is a
//! picture of the stream, not a sink), one batch per message keeps the queue's traffic to
//! one send a message, and only a watched series pays for its drawing.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::mpsc;

use super::legend::Explained;
use crate::mil::{Explanation, Model};
use crate::stream::ingest::record::{DeadLetterRecord, PredictionRecord};

/// One prediction as the streams table shows it.
#[derive(Debug, Clone)]
pub struct ViewRow {
    /// The id as shown: cut to `view.max_id_bytes` (see [`display_key`]).
    pub key: String,
    pub model: String,
    pub version: String,
    /// `window` or `bag`.
    pub kind: &'static str,
    pub label: String,
    /// The top score minus the next (a single score as is), as the label-free detector
    /// reads it.
    pub margin: f64,
    /// The window's end (event time); a bag's: when it was scored.
    pub at_ms: i64,
}

/// A dead letter as the pipeline panel lists it.
#[derive(Debug, Clone)]
pub struct DeadNote {
    pub reason: String,
    /// Cut to a line's worth.
    pub detail: String,
    pub source: String,
    pub at_ms: i64,
}

/// What the aggregator receives.
pub enum FeedItem {
    Rows(Vec<ViewRow>),
    Explained(Box<Explained>),
    Dead(Vec<DeadNote>),
}

/// The workers' side of the view.
pub struct ViewFeed {
    tx: mpsc::Sender<FeedItem>,
    /// Display keys of the series some open page has chosen: only those are explained.
    watched: ArcSwap<HashSet<String>>,
    max_id_bytes: usize,
    /// Items dropped on a full queue.
    pub dropped: AtomicU64,
}

/// How much of a dead letter's detail is kept.
const DETAIL_BYTES: usize = 240;
/// Dead letters of one message handed over at most (the panel shows the newest few).
const DEAD_PER_MESSAGE: usize = 4;

impl ViewFeed {
    pub fn new(tx: mpsc::Sender<FeedItem>, max_id_bytes: usize) -> Self {
        Self {
            tx,
            watched: ArcSwap::from_pointee(HashSet::new()),
            max_id_bytes,
            dropped: AtomicU64::new(0),
        }
    }

    /// Replaces the set of watched series (a page opened, closed or chose another).
    pub fn set_watched(&self, keys: HashSet<String>) {
        self.watched.store(Arc::new(keys));
    }

    /// A batch for one message's predictions.
    pub fn batch(&self) -> ViewBatch<'_> {
        ViewBatch {
            feed: self,
            rows: Vec::new(),
            watched: None,
        }
    }

    /// The newest few of a message's dead letters.
    pub fn dead_letters(&self, dead: &[DeadLetterRecord]) {
        if dead.is_empty() {
            return;
        }
        let notes = dead[dead.len().saturating_sub(DEAD_PER_MESSAGE)..]
            .iter()
            .map(|d| DeadNote {
                reason: d.reason.clone(),
                detail: cut(&d.detail, DETAIL_BYTES).into_owned(),
                source: format!("{}-{}@{}", d.topic, d.partition, d.offset),
                at_ms: d.at_ms,
            })
            .collect();
        self.send(FeedItem::Dead(notes));
    }

    fn send(&self, item: FeedItem) {
        if self.tx.try_send(item).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One message's predictions on their way to the view.
pub struct ViewBatch<'a> {
    feed: &'a ViewFeed,
    rows: Vec<ViewRow>,
    /// Loaded at the first row: one atomic load a message.
    watched: Option<arc_swap::Guard<Arc<HashSet<String>>>>,
}

impl ViewBatch<'_> {
    /// A scored window (`values`, `e` its explanation) or bag (no values) and its row.
    pub fn scored(
        &mut self,
        row: &PredictionRecord,
        e: &Explanation,
        values: &[f64],
        model: &Model,
    ) {
        let key = display_key(&row.key, self.feed.max_id_bytes);
        let watched = self.watched.get_or_insert_with(|| self.feed.watched.load());
        if !watched.is_empty() && watched.contains(key.as_ref()) {
            let explained = Explained::of(&key, row, e, values, model);
            self.feed.send(FeedItem::Explained(Box::new(explained)));
        }
        self.rows.push(ViewRow {
            key: key.into_owned(),
            model: row.model_name.clone(),
            version: row.model_version.clone(),
            kind: if row.kind == "bag" { "bag" } else { "window" },
            label: row.label.clone(),
            margin: margin(&row.scores),
            at_ms: row.window_end_ms.unwrap_or(row.emitted_at_ms),
        });
    }

    /// Hands the batch over (nothing when it is empty).
    pub fn send(self) {
        if !self.rows.is_empty() {
            self.feed.send(FeedItem::Rows(self.rows));
        }
    }
}

/// The top score minus the next; a single score as is.
pub fn margin(scores: &[f64]) -> f64 {
    let (mut top, mut next) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for &s in scores {
        if s > top {
            (top, next) = (s, top);
        } else if s > next {
            next = s;
        }
    }
    if scores.len() > 1 {
        top - next
    } else {
        top
    }
}

/// `id` as the view shows and finds it: as is up to `max` bytes; longer, its first bytes
/// (to a character boundary), an ellipsis and a hash of the whole id, so ids of megabytes
/// cost the view a bounded key and two long ids with one prefix stay apart.
pub fn display_key(id: &str, max: usize) -> Cow<'_, str> {
    if id.len() <= max {
        return Cow::Borrowed(id);
    }
    let hash = fnv_hash(id.as_bytes());
    let keep = max.saturating_sub(20);
    Cow::Owned(format!("{}…#{hash:016x}", cut(id, keep)))
}

/// `text` cut to at most `max` bytes at a character boundary.
pub fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Borrowed(&text[..end])
}

fn fnv_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(bytes);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_ids_are_cut_with_a_hash_and_stay_apart() {
        let a = format!("{}a", "x".repeat(1 << 20));
        let b = format!("{}b", "x".repeat(1 << 20));
        let (ka, kb) = (display_key(&a, 96), display_key(&b, 96));
        assert!(ka.len() <= 96 + 3 && kb.len() <= 96 + 3, "{}", ka.len());
        assert_ne!(ka, kb);
        assert_eq!(display_key("sensor-1", 96), "sensor-1");
        // A cut never splits a character.
        assert_eq!(cut("ééé", 3), "é");
    }

    #[test]
    fn margin_is_top_minus_next() {
        assert_eq!(margin(&[0.1, 0.7, 0.3]), 0.7 - 0.3);
        assert_eq!(margin(&[-0.5]), -0.5);
    }
}

//! `[training]`: retraining from labels on the stream, and the label-join history it joins
//! them with.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Retraining from labels on the stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainingConfig {
    /// Join labels, keep the training store and retrain. Off: labels are validated only.
    pub enabled: bool,
    /// The training store: labeled examples as Parquet under `date=YYYY-MM-DD/`, named by
    /// the label topic, partition and offsets like the predictions.
    pub dir: PathBuf,
    /// Raw points kept per series for label joins: this far back from its newest point; a
    /// series none of whose points arrived for this long (wall clock) leaves the history,
    /// and a later label for it is `unjoined` ...
    /// Joins honour both bounds exactly; space is released a closed block (128 points,
    /// Gorilla-encoded, about 1-11 bytes a point) at a time, so a series holds up to one
    /// block more than these bounds let a join see.
    pub history_ms: i64,
    /// ... and at most this many.
    pub history_points: usize,
    /// Series the label-join history keeps at most (a new series id on every point must
    /// not grow it for `history_ms`): past it the series whose last point arrived longest
    /// ago leaves (`milstream_label_join_evicted_total{kind="series"}`); a later label for
    /// it is `unjoined`.
    pub history_max_series: usize,
    /// Keep the history's closed blocks on local disk (in `history_dir`), with only their
    /// index in memory (32 bytes a block of 128 points), plus each series' newest, open
    /// block (up to 128 points, encoded as they come: about 1-11 bytes each); a join reads
    /// the blocks it overlaps.
    /// Off: the closed blocks stay in memory too.
    pub history_on_disk: bool,
    /// The local folder of those blocks: a cache of the stream, cleared at start and never
    /// read across restarts (unset: `history/` beside `dir` when that is a local path, else
    /// `milstream-data/history`). It holds at most about twice the encoded history (1-11
    /// bytes a kept point) plus one `history_segment_bytes` segment per each of 16 shards.
    /// A block that cannot be written stays in memory; one that cannot be read sends its
    /// label to the dead-letter sink (`unjoined`); both count in
    /// `milstream_history_io_errors_total`.
    pub history_dir: Option<PathBuf>,
    /// The history's log files rotate at this size (4 KiB .. 1 GiB); sealed ones less than
    /// half live are compacted, dead ones deleted.
    pub history_segment_bytes: u64,
    /// Bags kept by id for labels that name a bag ...
    pub bag_cache: usize,
    /// ... and at most this many bytes of them (8 a value, plus the id and about 100 bytes
    /// each): the oldest go first (`milstream_label_join_evicted_total{kind="bag"}`); a
    /// bag larger than this is not kept, and its labels go `unjoined`.
    pub bag_cache_bytes: usize,
    /// How long a label whose segment's points have not all arrived yet waits (wall
    /// clock) before it goes to the dead-letter sink as `unjoined`. A label whose points are
    /// here waits for a commit that keeps them replayable (one `commit.interval_ms`; see
    /// `holds.rs`) at most this long, then joins.
    pub label_wait_ms: u64,
    /// Only the model's classes are accepted (others: dead letter `unknown_class`).
    pub freeze_classes: bool,
    /// Retrain every this long ("15m", "1h", "30s"; "" = no schedule) ...
    pub every: String,
    /// ... and/or after this many new labeled examples (0 = off).
    pub after_examples: u64,
    /// Retention of the store: the newest `max_examples` examples ...
    pub max_examples: usize,
    /// ... no older than this ("7d"; "" = no age limit).
    pub max_age: String,
    /// Fraction of the newest examples held out to compare candidate and champion.
    pub holdout: f64,
    /// A candidate is promoted unless its held-out accuracy is lower than the champion's
    /// by more than this.
    pub tolerance: f64,
    /// Fewer examples (or fewer than two per class) and a run fails without training.
    pub min_examples: usize,
    /// Pick the candidate's hyperparameters by cross-validation on the training slice (the
    /// learning core's default grid) instead of reusing the champion's.
    pub search: bool,
    /// Time budget of that search ("5m"): grid points not reached by then are skipped.
    pub search_budget: String,
}

impl Default for TrainingConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: PathBuf::from("milstream-data/training"),
            history_ms: 3_600_000,
            history_points: 20_000,
            history_max_series: 100_000,
            history_on_disk: true,
            history_dir: None,
            history_segment_bytes: 32 << 20,
            bag_cache: 10_000,
            bag_cache_bytes: 256 << 20,
            label_wait_ms: 30_000,
            freeze_classes: false,
            every: "15m".into(),
            after_examples: 0,
            max_examples: 5_000,
            max_age: "7d".into(),
            holdout: 0.2,
            tolerance: 0.02,
            min_examples: 10,
            search: false,
            search_budget: "5m".into(),
        }
    }
}

impl TrainingConfig {
    /// The label-join history's folder on disk: `history_dir`, else `history/` beside a
    /// local `dir`, else `milstream-data/history`.
    pub fn history_dir(&self) -> PathBuf {
        self.history_dir.clone().unwrap_or_else(|| {
            let local = !super::is_url(&self.dir.to_string_lossy());
            match self.dir.parent() {
                Some(p) if local => p.join("history"),
                _ => PathBuf::from("milstream-data/history"),
            }
        })
    }

    /// The history's keys, checked at start-up.
    pub(super) fn validate_history(&self) -> Result<(), (&'static str, String)> {
        if self.history_max_series == 0 {
            return Err(("training.history_max_series", "must be >= 1".into()));
        }
        if !(4096..=1 << 30).contains(&self.history_segment_bytes) {
            return Err((
                "training.history_segment_bytes",
                format!(
                    "must be in 4096 ..= 1073741824, got {}",
                    self.history_segment_bytes
                ),
            ));
        }
        let url = |d: &PathBuf| super::is_url(&d.to_string_lossy());
        if self.history_dir.as_ref().is_some_and(url) {
            return Err((
                "training.history_dir",
                "must be a local folder (a cache), not a URL".into(),
            ));
        }
        Ok(())
    }
}

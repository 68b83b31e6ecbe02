//! The training store: labeled examples (a series segment's points, or a bag) as Parquet
//! files under `<dir>/date=YYYY-MM-DD/`, written by the segment writer (with
//! `sink::parquet::write_examples`) next to the predictions and named the same way (label
//! topic, partition, offset range), so they are durable before the label's offset is
//! committed. A replay can write an example twice (and a label that waited for its points
//! lands in a later file); readers keep one row per example key, the newest.
//!
//! Each row names the model whose example it is (`model`), so a model's trainer reads its
//! own examples only, whatever routed the label; files from before the column load with no
//! model, and are attributed by the id routes.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::mil::Dataset;
use crate::stream::ingest::position::PartitionKey;
use crate::stream::join::history::{BagCache, SeriesHistory};
use crate::stream::join::holds::ReplayHolds;
use crate::stream::output::arrow::examples::{read_examples, Example, ExampleId};
use crate::stream::output::store::Store;

/// Label joins and the training store, when `training.enabled`: the workers record points
/// and bags and join labels against them, the writers write examples under `dir`, and the
/// trainer reads them back.
pub struct TrainingRuntime {
    pub history: SeriesHistory,
    pub bags: BagCache,
    /// What the labels in flight need of `history` and `bags`, kept replayable.
    pub holds: ReplayHolds,
    /// The store's location: `training.dir`, a folder or an object-store prefix.
    pub store: Arc<Store>,
    /// Examples made durable in the store, per model (the trainer's "after N examples"
    /// trigger counts its model's only).
    pub examples_durable: DurableCounts,
}

impl TrainingRuntime {
    /// Per points or bags partition, the oldest offset labels in flight still read from.
    pub fn held(&self) -> HashMap<PartitionKey, i64> {
        self.holds.held(&self.history, &self.bags)
    }
}

/// Examples made durable, per model name.
#[derive(Default)]
pub struct DurableCounts(Mutex<HashMap<String, u64>>);

impl DurableCounts {
    /// Counts `examples` (as the writer makes them durable) under their models.
    pub fn add(&self, examples: &[Example]) {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for e in examples {
            *counts
                .entry(e.model.clone().unwrap_or_default())
                .or_default() += 1;
        }
    }

    /// How many examples of `model` were made durable since start.
    pub fn of(&self, model: &str) -> u64 {
        let counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(model).copied().unwrap_or(0)
    }
}

/// Every visible store file, relative to the store (temp files of an interrupted local
/// write are skipped), sorted.
pub fn store_files(store: &Store) -> Vec<String> {
    store
        .list("")
        .unwrap_or_default()
        .into_iter()
        .filter(|rel| {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            rel.contains('/') && !name.starts_with('.') && name.ends_with(".parquet")
        })
        .collect()
}

/// [`load_store_in`] of a local folder (the command line's `train --data DIR`).
pub fn load_store(
    dir: &Path,
    max_examples: usize,
    not_before_ms: Option<i64>,
) -> anyhow::Result<Vec<Example>> {
    load_store_in(
        &Store::Local(dir.to_path_buf()),
        max_examples,
        not_before_ms,
    )
}

/// The store's examples, one per key (the newest label wins), oldest first; at most the
/// newest `max_examples`, none labeled before `not_before_ms`.
pub fn load_store_in(
    store: &Store,
    max_examples: usize,
    not_before_ms: Option<i64>,
) -> anyhow::Result<Vec<Example>> {
    load_store_where(store, max_examples, not_before_ms, &|_| true)
}

/// [`load_store_in`] of the examples `keep` takes (one model's), so that another model's
/// examples never count against `max_examples`. Trimmed while the files are read (see
/// [`Newest`]): memory for `max_examples` examples, however many the store holds.
pub fn load_store_where(
    store: &Store,
    max_examples: usize,
    not_before_ms: Option<i64>,
    keep: &dyn Fn(&Example) -> bool,
) -> anyhow::Result<Vec<Example>> {
    let now = chrono::Utc::now().timestamp_millis();
    let mut newest = Newest::new(max_examples);
    for f in store_files(store) {
        let rows = read_examples(store, &f).map_err(|e| anyhow::anyhow!("{f}: {e}"))?;
        for mut e in rows {
            e.labeled_at_ms = judged_at(e.labeled_at_ms, now);
            if not_before_ms.is_some_and(|t| e.labeled_at_ms < t) || !keep(&e) {
                continue;
            }
            newest.offer(e);
        }
    }
    Ok(newest.into_oldest_first())
}

/// How far past the reader's clock a label time may be and still count (clocks of two
/// machines sharing a store): the label joins stamp no time past their own clock.
const CLOCK_SLACK_MS: i64 = 60_000;

/// The label time an example counts with: its own, or for one labeled past the clock (a
/// producer's Kafka timestamp in 2099, written before the joins capped it) the earliest
/// time there is, so it ranks oldest, ages out and never holds back `trained_through`.
fn judged_at(labeled_at_ms: i64, now_ms: i64) -> i64 {
    if labeled_at_ms > now_ms.saturating_add(CLOCK_SLACK_MS) {
        crate::stream::ingest::record::MIN_TS_MS
    } else {
        labeled_at_ms
    }
}

/// Where an example ranks, oldest first: label time, source partition and offset, then key,
/// segment and model. A total order: of one example's rows the highest wins, and the
/// newest `max_examples` examples are the highest.
type Rank = (
    i64,
    String,
    i32,
    i64,
    String,
    Option<(i64, i64)>,
    Option<String>,
);

fn rank(e: &Example) -> Rank {
    (
        e.labeled_at_ms,
        e.source_topic.clone(),
        e.source_partition,
        e.source_offset,
        e.key.clone(),
        e.segment,
        e.model.clone(),
    )
}

/// The newest `max` examples, one per identity, kept as rows stream in. Exact: a row evicted
/// (or skipped) at rank r had `max` other examples above it, whose best rows only rise, so
/// no row at or below the highest rank evicted (`floor`) can be among the newest `max`.
struct Newest {
    max: usize,
    best: HashMap<ExampleId, Rank>,
    kept: std::collections::BTreeMap<Rank, Example>,
    floor: Option<Rank>,
}

impl Newest {
    fn new(max: usize) -> Self {
        Self {
            max,
            best: HashMap::new(),
            kept: Default::default(),
            floor: None,
        }
    }

    fn offer(&mut self, e: Example) {
        let r = rank(&e);
        if self.floor.as_ref().is_some_and(|f| r <= *f) {
            return;
        }
        let id = e.identity();
        if let Some(old) = self.best.get(&id) {
            if *old >= r {
                return;
            }
            self.kept.remove(old);
        }
        self.best.insert(id, r.clone());
        self.kept.insert(r, e);
        if self.kept.len() > self.max {
            let (r0, e0) = self.kept.pop_first().expect("more than max >= 0 kept");
            self.best.remove(&e0.identity());
            self.floor = Some(r0);
        }
    }

    fn into_oldest_first(self) -> Vec<Example> {
        self.kept.into_values().collect()
    }
}

/// Deletes store files whose every example is older than `not_before_ms` (by the date folder
/// of the file and its newest label). Returns how many went.
pub fn apply_retention(store: &Store, not_before_ms: i64) -> usize {
    apply_retention_where(store, not_before_ms, &|_| true)
}

/// [`apply_retention`] of the files whose every example `keep` takes (one model's: its
/// retention by count never removes another model's examples).
pub fn apply_retention_where(
    store: &Store,
    not_before_ms: i64,
    keep: &dyn Fn(&Example) -> bool,
) -> usize {
    let mut removed = 0;
    let now = chrono::Utc::now().timestamp_millis();
    for f in store_files(store) {
        let newest = read_examples(store, &f)
            .ok()
            .filter(|rows| rows.iter().all(keep))
            .and_then(|rows| rows.iter().map(|e| judged_at(e.labeled_at_ms, now)).max());
        if newest.is_some_and(|n| n < not_before_ms) && store.delete(&f).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The examples as a dataset (ids `<key>@<start>` for segments).
pub fn to_dataset(examples: &[Example]) -> Dataset {
    let mut ds = Dataset::default();
    for e in examples {
        if let Some(sample) = e.sample() {
            ds.ids.push(match e.segment {
                Some((s, _)) => format!("{}@{s}", e.key),
                None => e.key.clone(),
            });
            ds.labels.push(e.label.clone());
            ds.samples.push(sample);
        }
    }
    ds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::output::arrow::examples::{example_batch, EXAMPLE_SCHEMA};
    use crate::stream::output::sink::parquet::write_examples;
    use crate::stream::output::sink::Segment;
    use arrow_array::{ArrayRef, RecordBatch, TimestampMillisecondArray};
    use arrow_schema::{DataType, Field, Schema, TimeUnit};

    fn ex(key: &str, start: i64, label: &str, at: i64, off: i64) -> Example {
        Example {
            key: key.into(),
            segment: Some((start, start + 20)),
            label: label.into(),
            dim: 1,
            values: vec![start as f64, 1.0, 2.0],
            source_topic: "labels".into(),
            source_partition: 0,
            source_offset: off,
            labeled_at_ms: at,
            model: Some("m".into()),
        }
    }

    #[test]
    fn store_round_trips_keeps_the_newest_label_per_example_and_retains_by_count() {
        let dir = std::env::temp_dir().join(format!("milstream-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = vec![ex("s1", 0, "x", 100, 1), ex("s1", 100, "y", 110, 2)];
        let b = vec![ex("s1", 0, "z", 120, 3), ex("s2", 0, "x", 130, 4)];
        let seg = |first: i64, last: i64, rows: &[Example]| {
            let mut s = Segment::new("labels", 0, first, 1_795_651_200_000);
            s.last_offset = last;
            s.examples = rows.to_vec();
            s
        };
        let store = Store::Local(dir.clone());
        write_examples(&store, &seg(1, 2, &a), false).unwrap();
        write_examples(&store, &seg(3, 4, &b), false).unwrap();
        assert_eq!(read_examples(&store, &store_files(&store)[0]).unwrap(), a);
        let all = load_store(&dir, 100, None).unwrap();
        let labels: Vec<&str> = all.iter().map(|e| e.label.as_str()).collect();
        // s1@0 relabeled "z" replaces "x"; oldest first.
        assert_eq!(labels, vec!["y", "z", "x"]);
        assert_eq!(load_store(&dir, 2, None).unwrap().len(), 2);
        assert_eq!(load_store(&dir, 100, Some(125)).unwrap().len(), 1);
        assert_eq!(apply_retention(&store, 115), 1);
        assert_eq!(store_files(&store).len(), 1);
        let ds = to_dataset(&all);
        assert_eq!(ds.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Finding 2 (future Kafka timestamps): an example whose label time is past the clock
    /// (a producer's Kafka timestamp a day ahead, as written before the joins capped it)
    /// ranks oldest: `max_age` excludes it, retention deletes its file, and it neither
    /// takes a slot of `max_examples` nor is the newest. At 593c8e9 it was always kept as
    /// the newest and its file never went.
    #[test]
    fn examples_labeled_in_the_future_age_out() {
        let dir = std::env::temp_dir().join(format!("milstream-future-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let now = chrono::Utc::now().timestamp_millis();
        let store = Store::Local(dir.clone());
        let seg = |first: i64, rows: Vec<Example>| {
            let mut s = Segment::new("labels", 0, first, now);
            s.last_offset = first;
            s.examples = rows;
            s
        };
        let future = ex("s9", 0, "x", now + 86_400_000, 1);
        write_examples(&store, &seg(1, vec![future]), false).unwrap();
        let fresh: Vec<Example> = (0..3)
            .map(|i| ex("s1", i, "y", now - 1_000 + i, 2 + i))
            .collect();
        write_examples(&store, &seg(2, fresh.clone()), false).unwrap();
        let week_ago = now - 7 * 86_400_000;
        let kept = load_store(&dir, 10, Some(week_ago)).unwrap();
        assert_eq!(kept, fresh, "max_age excludes the future example");
        let newest = load_store(&dir, 3, None).unwrap();
        assert_eq!(newest, fresh, "the newest three are the fresh ones");
        assert_eq!(apply_retention(&store, week_ago), 1, "its file goes");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Finding 1 (loading keeps every example): the trimmed load equals sorting all rows
    /// and keeping the newest `max`, one row per example (the highest), for every `max`,
    /// over rows with relabels, replays (equal rows) and ties in label time.
    #[test]
    fn trimming_while_loading_keeps_the_newest_examples() {
        let mut rows = Vec::new();
        for i in 0..60i64 {
            let mut e = ex(
                &format!("s{}", i % 7),
                (i % 5) * 100,
                "x",
                1_000 + (i * 37) % 23,
                i,
            );
            e.source_partition = (i % 2) as i32;
            rows.push(e.clone());
            if i % 4 == 0 {
                rows.push(e);
            }
        }
        let mut best: HashMap<ExampleId, Example> = HashMap::new();
        for e in &rows {
            if best.get(&e.identity()).is_none_or(|o| rank(o) < rank(e)) {
                best.insert(e.identity(), e.clone());
            }
        }
        let mut all: Vec<Example> = best.into_values().collect();
        all.sort_by_key(rank);
        for max in [0, 1, 2, 5, 17, all.len(), all.len() + 3] {
            let mut n = Newest::new(max);
            for e in &rows {
                n.offer(e.clone());
            }
            assert!(n.kept.len() <= max);
            let skip = all.len().saturating_sub(max);
            assert_eq!(n.into_oldest_first(), all[skip..], "max {max}");
        }
    }

    #[test]
    fn the_store_writes_microseconds_and_still_reads_files_written_in_milliseconds() {
        use crate::stream::output::sink::parquet::encode_parquet;
        let rows = vec![ex("s1", 1_700_000_000_123, "x", 1_700_000_000_456, 1)];
        // New files: every timestamp column in microseconds, UTC.
        let batch = example_batch(&rows);
        for c in ["segment_start", "segment_end", "labeled_at"] {
            assert_eq!(
                batch.schema().field_with_name(c).unwrap().data_type(),
                &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            );
        }
        // An older file: the same columns in milliseconds.
        let ms = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
        let fields: Vec<Field> = EXAMPLE_SCHEMA
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Timestamp(..) => f.as_ref().clone().with_data_type(ms.clone()),
                _ => f.as_ref().clone(),
            })
            .collect();
        let ms_col = |v: Option<i64>| -> ArrayRef {
            Arc::new(TimestampMillisecondArray::from(vec![v]).with_timezone("UTC"))
        };
        let mut cols = batch.columns().to_vec();
        cols[2] = ms_col(Some(1_700_000_000_123));
        cols[3] = ms_col(Some(1_700_000_000_143));
        cols[10] = ms_col(Some(1_700_000_000_456));
        let old = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
        let store = Store::from_object_store(Arc::new(object_store::memory::InMemory::new()), "t");
        store
            .put("new.parquet", encode_parquet(&batch, &[]).unwrap())
            .unwrap();
        store
            .put("old.parquet", encode_parquet(&old, &[]).unwrap())
            .unwrap();
        assert_eq!(read_examples(&store, "new.parquet").unwrap(), rows);
        assert_eq!(read_examples(&store, "old.parquet").unwrap(), rows);
    }

    /// A store file from before examples named their model (no `model` column) loads, its
    /// rows attributed to no model (the trainer then goes by the id routes).
    #[test]
    fn store_files_without_the_model_column_still_load() {
        let dir = std::env::temp_dir().join(format!("milstream-store-old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::Local(dir.clone());
        let rows = vec![ex("s1", 0, "x", 100, 1)];
        let batch = example_batch(&rows);
        let old_columns: Vec<usize> = (0..batch.num_columns() - 1).collect();
        let old = batch.project(&old_columns).unwrap();
        assert!(old.column_by_name("model").is_none());
        crate::stream::output::sink::parquet::write_parquet(&store, "0/old.parquet", &old, &[])
            .unwrap();
        let loaded = read_examples(&store, "0/old.parquet").unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].model, None);
        assert_eq!(
            Example {
                model: Some("m".into()),
                ..loaded[0].clone()
            },
            rows[0]
        );
        // Only the rows a model takes count against its max_examples.
        let mine = |e: &Example| e.model.is_none();
        assert_eq!(load_store_where(&store, 10, None, &mine).unwrap().len(), 1);
        assert_eq!(
            load_store_where(&store, 10, None, &|e| !mine(e))
                .unwrap()
                .len(),
            0
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

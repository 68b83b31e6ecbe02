//! Sinks. The unit of durability is a *segment*: the outputs of one source partition over a
//! contiguous offset range. A segment becomes one Parquet file (plus a dead-letter file, an
//! Arrow IPC file and Kafka records where configured) whose name carries the topic,
//! partition and offset range, so a replay after a crash rewrites the same name.

pub mod folders;
pub mod ipc;
pub mod kafka;
pub mod parquet;
pub mod roll;

use std::time::Instant;

use chrono::{DateTime, Utc};

use self::folders::{FolderLog, PartitionFiles};
use crate::config::{DriftConfig, Role};
use crate::stream::ingest::commit::Generation;
use crate::stream::ingest::record::RecordKind;
use crate::stream::ingest::record::{DeadLetterRecord, PredictionRecord};
use crate::stream::output::arrow::examples::Example;
use crate::stream::output::arrow::{bad_data, column, read_batches, timestamps_ms, ReadError};
use crate::stream::output::store::Store;
use crate::stream::quality::{PartitionQuality, QualityRows};

/// The outputs of `topic`/`partition` for source offsets `first_offset..=last_offset`.
#[derive(Debug, Clone)]
pub struct Segment {
    pub topic: String,
    pub partition: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// Event time of the first message (its first point's `ts`), or its Kafka timestamp
    /// when it carries none (bags, labels, undecodable input): names the date folder. A
    /// function of the message at `first_offset` alone, so a replay names the same folder.
    pub event_time_ms: i64,
    pub predictions: Vec<PredictionRecord>,
    pub dead_letters: Vec<DeadLetterRecord>,
    /// Labeled examples for the training store.
    pub examples: Vec<Example>,
    /// Graded labels and drift events (`evaluations/`, `drift_events/`).
    pub quality: QualityRows,
    /// When each prediction's source message was consumed (latency metric).
    pub consumed_at: Vec<Instant>,
    /// The oldest offset a replay must start from to rebuild the partition's windows as they
    /// were after `last_offset`: stored in the commit's metadata.
    pub replay_from: i64,
    pub opened_at: Instant,
    /// What the rows hold in memory (estimated): `output.max_open_bytes` bounds its sum.
    pub approx_bytes: usize,
    /// Rolls when `approx_bytes` reaches this: where the files measured so far predict
    /// `output.roll_bytes` of Parquet (see [`roll::FileSizes`]); set when the segment opens.
    pub roll_at_bytes: usize,
    /// Holds only the examples and dead letters of labels that joined (or timed out) after
    /// the segment of their own offsets was sealed, on a partition with no message since:
    /// `first_offset..=last_offset` spans those labels, and the name ends in `-late` so it
    /// never takes the name of the sealed segment that covered the same offsets.
    pub late_labels: bool,
    /// Set when the segment is sealed with predictions: the partition's label-free
    /// detectors after its last one (JSON), written into the `predictions` file's metadata
    /// for [`served_checkpoint`].
    pub served_checkpoint: Option<String>,
    /// The ownership of the partition it was made under (stamped when sealed): a writer
    /// drops it once the partition was assigned again (see `DurableOffsets::fence`).
    pub generation: Generation,
}

impl Segment {
    pub fn new(topic: &str, partition: i32, first_offset: i64, event_time_ms: i64) -> Self {
        Self {
            topic: topic.to_string(),
            partition,
            first_offset,
            last_offset: first_offset - 1,
            event_time_ms,
            predictions: Vec::new(),
            dead_letters: Vec::new(),
            examples: Vec::new(),
            quality: QualityRows::default(),
            consumed_at: Vec::new(),
            replay_from: first_offset,
            opened_at: Instant::now(),
            approx_bytes: 0,
            roll_at_bytes: usize::MAX,
            late_labels: false,
            served_checkpoint: None,
            generation: 0,
        }
    }

    /// A [`Segment::late_labels`] segment for labels at offsets `first..=last`, dated by the
    /// first one's Kafka timestamp (so a replay that joins them the same way rewrites it).
    pub fn late_labels(topic: &str, partition: i32, (first, last): (i64, i64), ts_ms: i64) -> Self {
        let mut s = Self::new(topic, partition, first, ts_ms);
        s.last_offset = last;
        s.late_labels = true;
        s
    }

    pub fn rows(&self) -> usize {
        self.predictions.len() + self.dead_letters.len() + self.examples.len() + self.quality.len()
    }

    /// Base file name (no extension): `<topic>-<partition>-<first>-<last>`, zero-padded so
    /// names sort by offset.
    pub fn file_stem(&self) -> String {
        format!(
            "{}-{:05}-{:020}-{:020}{}",
            self.topic,
            self.partition,
            self.first_offset,
            self.last_offset,
            if self.late_labels { LATE_SUFFIX } else { "" }
        )
    }

    /// The key-value metadata every file of the segment carries (Parquet footer, Arrow IPC
    /// schema): where it comes from and the partition's replay point after it, so a restart
    /// can recover the replay point from the output when the broker kept no commit metadata.
    pub fn file_metadata(&self) -> Vec<(String, String)> {
        vec![
            (META_TOPIC.into(), self.topic.clone()),
            (META_PARTITION.into(), self.partition.to_string()),
            (META_FIRST_OFFSET.into(), self.first_offset.to_string()),
            (META_LAST_OFFSET.into(), self.last_offset.to_string()),
            (META_REPLAY_FROM.into(), self.replay_from.to_string()),
        ]
    }

    /// `date=YYYY-MM-DD` of the segment's event time (UTC; see [`Segment::event_time_ms`]).
    pub fn date_folder(&self) -> String {
        let dt: DateTime<Utc> =
            DateTime::from_timestamp_millis(self.event_time_ms).unwrap_or_default();
        format!("date={}", dt.format("%Y-%m-%d"))
    }

    /// The Hive partition folder of the segment's files: `date=YYYY-MM-DD`, and
    /// `/hour=HH` under it when `by_hour` (`output.partition_by = "hour"`); from the event
    /// time of the first message, so a replay names the same folder.
    pub fn partition_folder(&self, by_hour: bool) -> String {
        if !by_hour {
            return self.date_folder();
        }
        let dt: DateTime<Utc> =
            DateTime::from_timestamp_millis(self.event_time_ms).unwrap_or_default();
        format!("{}/hour={}", self.date_folder(), dt.format("%H"))
    }
}

/// Output sub-folders.
pub const PREDICTIONS_DIR: &str = "predictions";
pub const DEAD_LETTERS_DIR: &str = "dead_letters";
pub const EVALUATIONS_DIR: &str = "evaluations";
pub const DRIFT_EVENTS_DIR: &str = "drift_events";
/// Arrow IPC copies live in their own tree, so a Parquet dataset reader of `predictions/`
/// sees only Parquet files.
pub const ARROW_DIR: &str = "arrow";

/// Ends the name of a [`Segment::late_labels`] segment's files.
const LATE_SUFFIX: &str = "-late";

/// Key-value metadata keys of every output file (see [`Segment::file_metadata`]).
pub const META_TOPIC: &str = "milstream.topic";
pub const META_PARTITION: &str = "milstream.partition";
pub const META_FIRST_OFFSET: &str = "milstream.first_offset";
pub const META_LAST_OFFSET: &str = "milstream.last_offset";
/// The oldest offset still inside a live window (or holding a waiting label) after the
/// file's last offset: a replay from it rebuilds the partition's state as it was.
pub const META_REPLAY_FROM: &str = "milstream.replay_from";

/// A parsed output file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputName {
    pub topic: String,
    pub partition: i32,
    pub first_offset: i64,
    pub last_offset: i64,
}

/// Parses `<topic>-<partition>-<first>-<last>.<ext>` (topics may contain '-').
pub fn parse_output_name(file_name: &str) -> Option<OutputName> {
    let stem = file_name.rsplit_once('.').map(|(s, _)| s)?;
    let stem = stem.strip_suffix(LATE_SUFFIX).unwrap_or(stem);
    let mut parts = stem.rsplitn(4, '-');
    let last_offset = parts.next()?.parse().ok()?;
    let first_offset = parts.next()?.parse().ok()?;
    let partition = parts.next()?.parse().ok()?;
    let topic = parts.next()?.to_string();
    Some(OutputName {
        topic,
        partition,
        first_offset,
        last_offset,
    })
}

/// The output trees a process of `role` writes for a partition of `kind`: the only ones it
/// sweeps or reads a replay point from. Scorers and a trainer share `output.dir` (as the
/// shipped deployment does), each in its own consumer group with its own commits; a tree
/// swept by a role that does not write it loses the other role's committed files.
pub fn owned_trees(role: Role, kind: RecordKind) -> &'static [&'static str] {
    const ALL: &[&str] = &[
        PREDICTIONS_DIR,
        DEAD_LETTERS_DIR,
        EVALUATIONS_DIR,
        DRIFT_EVENTS_DIR,
        ARROW_DIR,
    ];
    // Scored partitions: predictions, their dead letters and label-free drift alerts.
    const SCORED: &[&str] = &[
        PREDICTIONS_DIR,
        DEAD_LETTERS_DIR,
        DRIFT_EVENTS_DIR,
        ARROW_DIR,
    ];
    // Label partitions: graded labels, the labels' dead letters and the errors' drift events.
    const GRADED: &[&str] = &[DEAD_LETTERS_DIR, EVALUATIONS_DIR, DRIFT_EVENTS_DIR];
    match (role, kind) {
        (Role::All, _) => ALL,
        (Role::Scorer, RecordKind::Label)
        | (Role::Trainer, RecordKind::Point | RecordKind::Bag) => &[],
        (Role::Scorer, _) => SCORED,
        (Role::Trainer, RecordKind::Label) => GRADED,
    }
}

/// Deletes the outputs of `topic`/`partition` in `trees` that a replay from `from_offset`
/// rewrites (files whose range starts at or after it) and any temp file of that partition
/// left by a crash, in the folders of its `log` that may hold them. Files before the
/// committed offset stay: they are exactly the committed output. Returns how many files
/// went.
pub fn sweep_partition(
    store: &Store,
    trees: &[&str],
    log: &FolderLog,
    (topic, partition): (&str, i32),
    from_offset: i64,
) -> std::io::Result<usize> {
    let mut removed = 0;
    for sub in trees {
        removed += sweep_tree(store, sub, log, (topic, partition), from_offset)?;
    }
    Ok(removed)
}

/// [`sweep_partition`] for one tree of `date=.../` folders under `rel_dir` of `store` (also
/// the training store, with `rel_dir` ""): listed by prefix, so it works on object stores.
pub fn sweep_tree(
    store: &Store,
    rel_dir: &str,
    log: &FolderLog,
    (topic, partition): (&str, i32),
    from_offset: i64,
) -> std::io::Result<usize> {
    let mut removed = 0;
    for folder in log.folders_from(from_offset) {
        for rel in store.list(&join(rel_dir, &folder))? {
            let name = rel.rsplit('/').next().unwrap_or(&rel);
            let (hidden, visible) = match name.strip_prefix('.') {
                Some(rest) => (true, rest.trim_end_matches(".tmp").to_string()),
                None => (false, name.to_string()),
            };
            let Some(parsed) = parse_output_name(&visible) else {
                continue;
            };
            if parsed.topic != topic || parsed.partition != partition {
                continue;
            }
            if hidden || parsed.first_offset >= from_offset {
                store.delete(&rel)?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// The newest Parquet file of `topic`/`partition` under the `date=.../` trees `dirs`
/// (relative to `store`) whose range ends below `below` (the committed offset): the newest
/// durable output, as its path relative to the store. Bounded: the folders of the
/// partition's `log` are read newest first, down to the first holding such a file. Should
/// an older folder hold a newer file (it cannot, but for late labels), an older file is
/// found, whose replay point is older: a longer replay, never a wrong one.
///
/// A listing that fails is an error, not "no file": None would send the replay back to the
/// partition's earliest offset (see [`replay_point_from_files`]).
pub fn newest_durable_file(
    store: &Store,
    dirs: &[&str],
    log: &dyn PartitionFiles,
    (topic, partition): (&str, i32),
    below: i64,
) -> std::io::Result<Option<(String, OutputName)>> {
    let mut best: Option<(String, OutputName)> = None;
    for dir in dirs {
        for (rel, parsed) in log.files_down_to(store, dir, (topic, partition), below)? {
            let newer = best
                .as_ref()
                .is_none_or(|(_, b)| parsed.last_offset > b.last_offset);
            if parsed.last_offset < below && newer {
                best = Some((rel, parsed));
            }
        }
    }
    Ok(best)
}

/// `dir/name`, or `name` when `dir` is the root.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The replay point recorded in the newest durable file of `topic`/`partition` below
/// `below` (see [`newest_durable_file`]), with that file; None when there is no such file or
/// it carries no (consistent) replay point, as files written before this metadata existed,
/// or is not Parquet. Returns the replay point, the offset after the file's last, and the
/// file. An error when the store cannot be listed or read (unreachable, refused): then the
/// caller cannot tell, and must not guess "no file".
pub fn replay_point_from_files(
    store: &Store,
    dirs: &[&str],
    log: &FolderLog,
    (topic, partition): (&str, i32),
    below: i64,
) -> std::io::Result<Option<(i64, i64, String)>> {
    let found = newest_durable_file(store, dirs, log, (topic, partition), below)?;
    let Some((rel, name)) = found else {
        return Ok(None);
    };
    let meta = match parquet::read_key_value_metadata(store, &rel) {
        Ok(meta) => meta,
        // Gone since the listing, or not a Parquet footer: no replay point in it.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let get = |k: &str| meta.get(k).and_then(|v| v.parse::<i64>().ok());
    let Some(replay_from) = get(META_REPLAY_FROM) else {
        return Ok(None);
    };
    let consistent = get(META_LAST_OFFSET) == Some(name.last_offset)
        && meta.get(META_TOPIC).map(String::as_str) == Some(topic)
        && replay_from <= name.last_offset + 1;
    Ok(consistent.then_some((replay_from, name.last_offset + 1, rel)))
}

/// Keys of an `evaluations` file's checkpoint (see [`QualityRows::checkpoint`]).
pub const META_QUALITY_THROUGH: &str = "milstream.quality_through";
pub const META_QUALITY_STATE: &str = "milstream.quality_state";

/// Key of a `predictions` file's checkpoint of the label-free detectors (see
/// `label_free::ServedWatch::checkpoint`).
pub const META_SERVED_STATE: &str = "milstream.served_state";

/// The label-free detectors' checkpoint of a scored partition committed at `committed`: the
/// one in its newest durable `predictions` file (every file at or beyond the commit has been
/// swept, and the replay emits predictions from the commit on, so this is the state an
/// uninterrupted run had there). None without such a file or checkpoint (the detectors
/// start over); an error when the store cannot be listed or read.
pub fn served_checkpoint(
    store: &Store,
    log: &dyn PartitionFiles,
    (topic, partition): (&str, i32),
    committed: i64,
) -> std::io::Result<Option<String>> {
    let newest = newest_durable_file(
        store,
        &[PREDICTIONS_DIR],
        log,
        (topic, partition),
        committed,
    )?;
    let Some((rel, _)) = newest else {
        return Ok(None);
    };
    match parquet::read_key_value_metadata(store, &rel) {
        Ok(mut meta) => Ok(meta.remove(META_SERVED_STATE)),
        // Gone since the listing, or not a Parquet footer: no checkpoint in it.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// A label partition's figures as its durable evaluations leave them for a replay from
/// `replay_from`, and the highest label offset durable in them (after the sweep; the caller
/// raises it to the one found before the sweep, see `newest_quality_through`).
pub struct Restored {
    pub state: PartitionQuality,
    pub durable_through: Option<i64>,
    /// Why the figures start clean although files were there: one could not be decoded (a
    /// footer, a checkpoint, its rows). The caller logs and counts it.
    pub unreadable: Option<String>,
}

/// Rebuilds a label partition's [`PartitionQuality`] on assignment, exactly as an
/// uninterrupted run had it before the label at `replay_from` (the partition's replay
/// point: the replay grades every label from there on again, and none below it).
///
/// Why this is exact: a partition's labels are graded in offset order (waiting labels
/// resolve in order, see `labels.rs`), and its state is a pure function of those grades
/// (`PartitionQuality::grade`). Each `evaluations` file carries the state after its last
/// label (its checkpoint); the sweep has removed every file at or beyond the committed
/// offset. So the newest remaining file whose checkpoint lies below `replay_from` holds the
/// state of the labels up to it, and the rows of the newer files below `replay_from`
/// (labels a replay does not grade again; normally there are none) are graded on top, once
/// each. Files are read newest first, footers only, down to that checkpoint. A file
/// without a checkpoint (written before there were any) ends the search: the state starts
/// over after it. Without a commit (`replay_from` None) the whole partition is replayed and
/// the state starts empty.
///
/// A file that cannot be decoded (a corrupt footer, a checkpoint that does not parse or does
/// not fit its detectors, unreadable rows) makes the figures start clean, with `unreadable`
/// saying why: the partition must start, and its detectors' history is worth less than its
/// stream. A store that cannot be read (I/O) is still an error: the caller retries, and the
/// partition waits rather than lose figures that are there.
pub fn restore_quality(
    store: &Store,
    cfg: &DriftConfig,
    log: &dyn PartitionFiles,
    (topic, partition): (&str, i32),
    replay_from: Option<i64>,
) -> std::io::Result<Restored> {
    let Some(replay_from) = replay_from else {
        return Ok(Restored {
            state: PartitionQuality::default(),
            durable_through: None,
            unreadable: None,
        });
    };
    match restore_from_files(store, cfg, log, (topic, partition), replay_from) {
        Ok(restored) => Ok(restored),
        Err(Unreadable::Io(e)) => Err(e),
        Err(Unreadable::Data(why)) => Ok(Restored {
            state: PartitionQuality::default(),
            durable_through: None,
            unreadable: Some(why),
        }),
    }
}

/// Why durable files could not be restored from.
enum Unreadable {
    /// The store could not be read: retry.
    Io(std::io::Error),
    /// The bytes were read and cannot be decoded: retrying reads the same.
    Data(String),
}

impl Unreadable {
    /// An I/O error of reading `rel`, sorted: InvalidData (what the footer reader and the
    /// checkpoint's parse say of bad bytes) is data.
    fn of_io(rel: &str, e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::InvalidData => Unreadable::Data(format!("{rel}: {e}")),
            _ => Unreadable::Io(e),
        }
    }

    /// An error of reading `rel`'s rows back: the store's is I/O, anything else (Parquet,
    /// Arrow, a missing column) is data.
    fn of_rows(rel: &str, e: ReadError) -> Self {
        match e {
            ReadError::Store(io) => Self::of_io(rel, io),
            ReadError::Data(e) => Unreadable::Data(format!("{rel}: {e}")),
        }
    }
}

/// [`restore_quality`] from the partition's files (with a commit).
fn restore_from_files(
    store: &Store,
    cfg: &DriftConfig,
    log: &dyn PartitionFiles,
    (topic, partition): (&str, i32),
    replay_from: i64,
) -> Result<Restored, Unreadable> {
    let mut out = Restored {
        state: PartitionQuality::default(),
        durable_through: None,
        unreadable: None,
    };
    let mut files = log
        .files_down_to(store, EVALUATIONS_DIR, (topic, partition), replay_from)
        .map_err(Unreadable::Io)?;
    files.sort_by_key(|(_, n)| std::cmp::Reverse((n.first_offset, n.last_offset)));
    let mut newer = Vec::new();
    let mut base = i64::MIN;
    for (rel, _) in files {
        let meta = parquet::read_key_value_metadata(store, &rel)
            .map_err(|e| Unreadable::of_io(&rel, e))?;
        let through = meta
            .get(META_QUALITY_THROUGH)
            .and_then(|v| v.parse::<i64>().ok());
        out.durable_through = out.durable_through.max(through);
        match (through, meta.get(META_QUALITY_STATE)) {
            (Some(t), Some(state)) if t < replay_from => {
                // The detectors check their own invariants as they are read (`drift::*`).
                out.state = serde_json::from_str(state)
                    .map_err(|e| Unreadable::Data(format!("{rel}: {META_QUALITY_STATE}: {e}")))?;
                base = t;
                break;
            }
            (Some(_), Some(_)) => newer.push(rel),
            _ => break,
        }
    }
    let mut rows = Vec::new();
    for rel in newer.iter().rev() {
        rows.extend(
            read_grades(store, rel)
                .map_err(|e| Unreadable::of_rows(rel, e))?
                .into_iter()
                .filter(|g| g.offset > base && g.offset < replay_from),
        );
    }
    // Offset order (stable: the older file's row first), one grade per label and model.
    rows.sort_by_key(|g| g.offset);
    rows.dedup_by(|b, a| a.offset == b.offset && a.model == b.model);
    for g in rows {
        let version = (g.model.as_str(), g.version.as_str());
        out.state.grade(cfg, version, g.correct, g.labeled_at_ms);
    }
    Ok(out)
}

/// The offset of the last graded label of the newest `evaluations` file of
/// `topic`/`partition` (its checkpoint's): read before the sweep on assignment, it is the
/// highest label whose row some owner made durable, and so counted (a partition grades in
/// offset order, so the newest file holds the highest). None without such a file.
pub fn newest_quality_through(
    store: &Store,
    log: &dyn PartitionFiles,
    (topic, partition): (&str, i32),
) -> std::io::Result<Option<i64>> {
    let mut files = log.files_down_to(store, EVALUATIONS_DIR, (topic, partition), i64::MAX)?;
    files.sort_by_key(|(_, n)| std::cmp::Reverse((n.first_offset, n.last_offset)));
    for (rel, _) in files {
        // A footer that cannot be decoded says nothing: the next newest does (a lower mark,
        // so some labels may be counted again; the partition starts all the same).
        match parquet::read_key_value_metadata(store, &rel) {
            Ok(meta) => {
                return Ok(meta
                    .get(META_QUALITY_THROUGH)
                    .and_then(|v| v.parse::<i64>().ok()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// What [`restore_quality`] needs of an evaluation row.
struct Grade {
    model: String,
    version: String,
    correct: bool,
    labeled_at_ms: i64,
    offset: i64,
}

fn read_grades(store: &Store, rel: &str) -> Result<Vec<Grade>, ReadError> {
    use arrow_array::{BooleanArray, Int64Array, StringArray};
    let reader = read_batches(store, rel)?;
    let mut out = Vec::new();
    for batch in reader {
        let b = batch?;
        let model: &StringArray = column(&b, "model_name")?;
        let version: &StringArray = column(&b, "model_version")?;
        let correct: &BooleanArray = column(&b, "correct")?;
        let offset: &Int64Array = column(&b, "source_offset")?;
        let at = timestamps_ms(&b, "labeled_at")?;
        for (i, at) in at.into_iter().enumerate() {
            out.push(Grade {
                model: model.value(i).to_string(),
                version: version.value(i).to_string(),
                correct: correct.value(i),
                labeled_at_ms: at.ok_or_else(|| bad_data("`labeled_at` is null"))?,
                offset: offset.value(i),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log of `topic`/`partition` as a listing of `trees` rebuilds it.
    fn log_of(store: &Store, trees: &[&str], (topic, partition): (&str, i32)) -> FolderLog {
        FolderLog::rebuild(&[(store, trees)], topic, partition).unwrap()
    }

    /// A label partition graded over segments (the labels' error rate jumps at label 150, so
    /// ADWIN drifts): restoring from the written files at any replay point gives the state of
    /// grading the labels below it once each, whether the replay point is a file boundary or
    /// falls inside a file; the counters count a rewritten segment once.
    #[test]
    fn quality_restored_from_checkpoints_equals_grading_the_labels_below_the_replay_point() {
        use crate::metrics::Metrics;
        use crate::stream::quality::{EvaluationRecord, Quality};
        let root = std::env::temp_dir().join(format!("milstream-restore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let store = Store::Local(root.clone());
        let cfg = DriftConfig::default();
        let label = |o: i64| {
            // Right 9 times in 10 before label 150, wrong 7 times in 10 after.
            let correct = if o < 150 { o % 10 != 3 } else { o % 10 > 6 };
            EvaluationRecord {
                key: format!("s-{}", o % 4),
                segment: Some((o * 10, o * 10 + 5)),
                label: "1".into(),
                predicted: if correct { "1" } else { "2" }.into(),
                correct,
                classes: vec!["1".into(), "2".into()],
                scores: vec![0.5, -0.5],
                model_name: "series".into(),
                model_version: "v1".into(),
                source_topic: "labels".into(),
                source_partition: 0,
                source_offset: o,
                labeled_at_ms: 1_700_000_000_000 + o,
            }
        };
        let quality = Quality::new(cfg.clone(), Metrics::new());
        let mut state = PartitionQuality::default();
        let mut drifts = 0;
        for first in (0..300).step_by(40) {
            let mut seg = Segment::new("labels", 0, first, 1_700_000_000_000);
            for o in first..(first + 40).min(300) {
                let e = label(o);
                let event = quality.record(&mut state, &e);
                drifts += usize::from(event.is_some_and(|e| e.signal == "drift"));
                seg.quality.evaluations.push(e);
                seg.last_offset = o;
            }
            seg.quality.checkpoint = Some((seg.last_offset, state.checkpoint()));
            parquet::write_segment(&store, &seg, false).unwrap();
            quality.count_durable("labels", 0, &seg.quality);
            // Written again (a replay within the process): not counted again.
            quality.count_durable("labels", 0, &seg.quality);
        }
        assert!(drifts >= 1, "the test's labels must drift");
        let labeled = |q: &Quality| {
            q.metrics()
                .labeled_predictions
                .with_label_values(&["series", "v1"])
                .get()
        };
        assert_eq!(labeled(&quality), 300);
        for replay_from in [0, 40, 121, 160, 299, 300] {
            let mut expected = PartitionQuality::default();
            for o in 0..replay_from {
                expected.grade(
                    &cfg,
                    ("series", "v1"),
                    label(o).correct,
                    label(o).labeled_at_ms,
                );
            }
            let r = restore_quality(
                &store,
                &cfg,
                &log_of(&store, &[EVALUATIONS_DIR], ("labels", 0)),
                ("labels", 0),
                Some(replay_from),
            )
            .unwrap();
            assert_eq!(
                r.state.checkpoint(),
                expected.checkpoint(),
                "restored at {replay_from}"
            );
            assert_eq!(r.durable_through, Some(299));
            // A new owner counts on from the durable labels: none again.
            let owner = Quality::new(cfg.clone(), Metrics::new());
            owner.assigned(&("labels".into(), 0), &r.state, r.durable_through);
            let mut seg = Segment::new("labels", 0, 280, 1_700_000_000_000);
            seg.quality.evaluations = (280..300).map(label).collect();
            owner.count_durable("labels", 0, &seg.quality);
            assert_eq!(labeled(&owner), 0);
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// One `evaluations` file whose footer is not Parquet, or whose checkpoint does not parse:
    /// the partition's detectors start clean, saying why (before, the error left the label
    /// partition unstarted for good: every attempt read the same bytes). A store that cannot
    /// be read is still an error (the caller retries).
    #[test]
    fn an_undecodable_evaluations_file_starts_the_detectors_clean_and_io_stays_an_error() {
        use crate::stream::quality::EvaluationRecord;
        let root =
            std::env::temp_dir().join(format!("milstream-unreadable-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let store = Store::Local(root.clone());
        let cfg = DriftConfig::default();
        let graded = |first: i64, checkpoint: &str| {
            let mut seg = Segment::new("labels", 0, first, 1_700_000_000_000);
            seg.quality.evaluations.push(EvaluationRecord {
                key: "s".into(),
                segment: Some((0, 5)),
                label: "1".into(),
                predicted: "1".into(),
                correct: true,
                classes: vec!["1".into(), "2".into()],
                scores: vec![0.5, -0.5],
                model_name: "series".into(),
                model_version: "v1".into(),
                source_topic: "labels".into(),
                source_partition: 0,
                source_offset: first,
                labeled_at_ms: 1_700_000_000_000,
            });
            seg.last_offset = first;
            seg.quality.checkpoint = Some((first, checkpoint.to_string()));
            parquet::write_segment(&store, &seg, false).unwrap();
        };
        let mut state = PartitionQuality::default();
        state.grade(&cfg, ("series", "v1"), true, 1_700_000_000_000);
        graded(0, &state.checkpoint());
        assert!(restore_quality(
            &store,
            &cfg,
            &log_of(&store, &[EVALUATIONS_DIR], ("labels", 0)),
            ("labels", 0),
            Some(5)
        )
        .unwrap()
        .unreadable
        .is_none());
        // A checkpoint that does not parse.
        graded(1, "{not json");
        let r = restore_quality(
            &store,
            &cfg,
            &log_of(&store, &[EVALUATIONS_DIR], ("labels", 0)),
            ("labels", 0),
            Some(5),
        )
        .unwrap();
        let why = r.unreadable.expect("the bad checkpoint is reported");
        assert!(why.contains(META_QUALITY_STATE), "{why}");
        assert_eq!(
            r.state.checkpoint(),
            PartitionQuality::default().checkpoint()
        );
        // A file that is not Parquet at all, newest.
        let good = store.list(EVALUATIONS_DIR).unwrap().remove(0);
        let folder = good.rsplit_once('/').unwrap().0;
        let mut bad = Segment::new("labels", 0, 2, 1_700_000_000_000);
        bad.last_offset = 3;
        let bad = format!("{folder}/{}.parquet", bad.file_stem());
        store.put(&bad, b"not a parquet file".to_vec()).unwrap();
        let r = restore_quality(
            &store,
            &cfg,
            &log_of(&store, &[EVALUATIONS_DIR], ("labels", 0)),
            ("labels", 0),
            Some(5),
        )
        .unwrap();
        assert!(r.unreadable.unwrap().contains(&bad));
        // The mark of what was counted skips the undecodable footer.
        assert_eq!(
            newest_quality_through(
                &store,
                &log_of(&store, &[EVALUATIONS_DIR], ("labels", 0)),
                ("labels", 0)
            )
            .unwrap(),
            Some(1)
        );
        // A store that cannot be listed (its folder is a file): I/O, still an error.
        let io = Store::Local(root.join(&good));
        assert!(restore_quality(
            &io,
            &cfg,
            &log_of(&store, &[EVALUATIONS_DIR], ("labels", 0)),
            ("labels", 0),
            Some(5)
        )
        .is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_late_labels_segment_never_takes_the_name_of_the_segment_of_its_offsets() {
        let mut sealed = Segment::new("milstream.labels", 1, 40, 1_732_550_400_123);
        sealed.last_offset = 45;
        let late = Segment::late_labels("milstream.labels", 1, (40, 45), 1_732_550_400_123);
        assert_ne!(late.file_stem(), sealed.file_stem());
        let name = format!("{}.parquet", late.file_stem());
        assert!(name.ends_with("-late.parquet"), "{name}");
        // Still parsed, so a replay from below its offsets sweeps it like any output.
        let p = parse_output_name(&name).unwrap();
        assert_eq!((p.topic.as_str(), p.partition), ("milstream.labels", 1));
        assert_eq!((p.first_offset, p.last_offset), (40, 45));
    }

    #[test]
    fn names_round_trip_with_dashes_in_topics() {
        let mut s = Segment::new("milstream.points-v2", 3, 120, 1_732_550_400_123);
        s.last_offset = 4_567;
        let name = format!("{}.parquet", s.file_stem());
        assert_eq!(
            name,
            "milstream.points-v2-00003-00000000000000000120-00000000000000004567.parquet"
        );
        let p = parse_output_name(&name).unwrap();
        assert_eq!(
            p,
            OutputName {
                topic: "milstream.points-v2".into(),
                partition: 3,
                first_offset: 120,
                last_offset: 4_567
            }
        );
        assert_eq!(s.date_folder(), "date=2024-11-25");
        assert_eq!(s.partition_folder(false), "date=2024-11-25");
        assert_eq!(s.partition_folder(true), "date=2024-11-25/hour=16");
    }

    #[test]
    fn sweep_removes_files_beyond_the_commit_and_temp_files() {
        let root = std::env::temp_dir().join(format!("milstream-sweep-{}", std::process::id()));
        let dir = root.join(PREDICTIONS_DIR).join("date=2024-11-25");
        std::fs::create_dir_all(&dir).unwrap();
        for n in [
            "t-00000-00000000000000000000-00000000000000000009.parquet",
            "t-00000-00000000000000000010-00000000000000000019.parquet",
            ".t-00000-00000000000000000020-00000000000000000029.parquet.tmp",
            "t-00001-00000000000000000010-00000000000000000019.parquet",
        ] {
            std::fs::write(dir.join(n), b"x").unwrap();
        }
        let store = Store::Local(root.clone());
        let trees = owned_trees(Role::All, RecordKind::Point);
        // A trainer writes nothing of a points partition: it sweeps none of its files.
        let trainer = owned_trees(Role::Trainer, RecordKind::Point);
        let log = log_of(&store, trees, ("t", 0));
        assert_eq!(
            sweep_partition(&store, trainer, &log, ("t", 0), 0).unwrap(),
            0
        );
        assert_eq!(
            sweep_partition(&store, trees, &log, ("t", 0), 10).unwrap(),
            2
        );
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![
                "t-00000-00000000000000000000-00000000000000000009.parquet",
                "t-00001-00000000000000000010-00000000000000000019.parquet"
            ]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// One file dated by a clock in 9999 must not stand for the partition's newest durable
    /// output for good: the newest by offset wins (before, the newest date folder holding a
    /// file of the partition ended the search, and every restart replayed from its point).
    #[test]
    fn a_file_from_a_future_clock_does_not_hide_the_newest_by_offset() {
        let root = std::env::temp_dir().join(format!("milstream-future-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let put = |date: &str, name: &str| {
            let dir = root.join(PREDICTIONS_DIR).join(date);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), b"x").unwrap();
        };
        put(
            "date=9999-12-31",
            "t-00000-00000000000000000000-00000000000000000005.parquet",
        );
        put(
            "date=2024-11-25",
            "t-00000-00000000000000000006-00000000000000000050.parquet",
        );
        let store = Store::Local(root.clone());
        let log = log_of(&store, &[PREDICTIONS_DIR], ("t", 0));
        let (rel, name) = newest_durable_file(&store, &[PREDICTIONS_DIR], &log, ("t", 0), 100)
            .unwrap()
            .unwrap();
        assert_eq!(name.last_offset, 50, "{rel}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Scorers and a trainer share `output.dir`: what one role writes, the other never
    /// sweeps, and no tree is written by both for one kind of partition.
    #[test]
    fn each_role_owns_what_it_writes() {
        use RecordKind::*;
        for kind in [Point, Bag, Label] {
            let scorer = owned_trees(Role::Scorer, kind);
            let trainer = owned_trees(Role::Trainer, kind);
            assert!(scorer.iter().all(|t| !trainer.contains(t)), "{kind:?}");
            assert!(owned_trees(Role::All, kind).len() >= scorer.len() + trainer.len());
        }
        assert!(owned_trees(Role::Trainer, Point).is_empty());
        assert!(owned_trees(Role::Scorer, Label).is_empty());
        assert!(owned_trees(Role::Scorer, Point).contains(&PREDICTIONS_DIR));
        assert!(owned_trees(Role::Trainer, Label).contains(&EVALUATIONS_DIR));
    }
}

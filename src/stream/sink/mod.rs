//! Sinks. The unit of durability is a *segment*: the outputs of one source partition over a
//! contiguous offset range. A segment becomes one Parquet file (plus a dead-letter file, an
//! Arrow IPC file and Kafka records where configured) whose name carries the topic,
//! partition and offset range, so a replay after a crash rewrites the same name.

pub mod ipc;
pub mod kafka;
pub mod parquet;
pub mod roll;

use std::time::Instant;

use chrono::{DateTime, Utc};

use super::quality::QualityRows;
use super::record::{DeadLetterRecord, PredictionRecord};
use super::store::Store;
use super::training::Example;

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

/// Deletes the outputs of `topic`/`partition` that a replay from `from_offset` rewrites
/// (files whose range starts at or after it) and any temp file of that partition left by a
/// crash. Files before the committed offset stay: they are exactly the committed output.
/// Returns how many files went.
pub fn sweep_partition(
    store: &Store,
    topic: &str,
    partition: i32,
    from_offset: i64,
) -> std::io::Result<usize> {
    let mut removed = 0;
    for sub in [
        PREDICTIONS_DIR,
        DEAD_LETTERS_DIR,
        EVALUATIONS_DIR,
        DRIFT_EVENTS_DIR,
        ARROW_DIR,
    ] {
        removed += sweep_tree(store, sub, topic, partition, from_offset)?;
    }
    Ok(removed)
}

/// [`sweep_partition`] for one tree of `date=.../` folders under `rel_dir` of `store` (also
/// the training store, with `rel_dir` ""): listed by prefix, so it works on object stores.
pub fn sweep_tree(
    store: &Store,
    rel_dir: &str,
    topic: &str,
    partition: i32,
    from_offset: i64,
) -> std::io::Result<usize> {
    let mut removed = 0;
    for rel in store.list(rel_dir)? {
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
    Ok(removed)
}

/// The newest Parquet file of `topic`/`partition` under the `date=.../` trees `dirs`
/// (relative to `store`) whose range ends below `below` (the committed offset): the newest
/// durable output, as its path relative to the store. Bounded: in each tree, date folders
/// are listed newest first and the search stops at the first folder holding such a file.
/// Should the producer's timestamps run backwards across a day, an older file is found,
/// whose replay point is older: a longer replay, never a wrong one.
///
/// A listing that fails is an error, not "no file": None would send the replay back to the
/// partition's earliest offset (see [`replay_point_from_files`]).
pub fn newest_durable_file(
    store: &Store,
    dirs: &[&str],
    topic: &str,
    partition: i32,
    below: i64,
) -> std::io::Result<Option<(String, OutputName)>> {
    let mut best: Option<(String, OutputName)> = None;
    for dir in dirs {
        let mut dates = store.list_dirs(dir)?;
        dates.sort_unstable_by(|a, b| b.cmp(a));
        for date in dates {
            let files = store.list(&join(dir, &date))?;
            let mut found = false;
            for rel in files {
                let name = rel.rsplit('/').next().unwrap_or(&rel);
                if name.starts_with('.') || !name.ends_with(".parquet") {
                    continue;
                }
                let Some(parsed) = parse_output_name(name) else {
                    continue;
                };
                if parsed.topic != topic
                    || parsed.partition != partition
                    || parsed.last_offset >= below
                {
                    continue;
                }
                found = true;
                if best
                    .as_ref()
                    .is_none_or(|(_, b)| parsed.last_offset > b.last_offset)
                {
                    best = Some((rel.clone(), parsed));
                }
            }
            if found {
                break;
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
    topic: &str,
    partition: i32,
    below: i64,
) -> std::io::Result<Option<(i64, i64, String)>> {
    let Some((rel, name)) = newest_durable_file(store, dirs, topic, partition, below)? else {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(sweep_partition(&store, "t", 0, 10).unwrap(), 2);
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
}

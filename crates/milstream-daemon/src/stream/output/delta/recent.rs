//! The newest data files of each source partition in one table, known from the log's `add`
//! and `remove` actions and the offsets the daemon's file names carry: what an assignment
//! restores the partition's detectors from (their checkpoints ride in the files' footers)
//! without listing the data files. Bounded per partition: a replay reaches back a few
//! segments, never hundreds. Files another writer made (an `optimize`'s compacted files)
//! carry no offsets in their names and are not kept: after a compaction the detectors of
//! the partitions it touched start over.

use std::collections::{BTreeSet, HashMap};

use crate::stream::output::sink::{parse_output_name, OutputName};

/// Files kept per partition, the newest by their last offset.
pub const KEPT_PER_PARTITION: usize = 256;

/// A file by (last offset, first offset, path relative to the table): newest last.
type ByOffsets = BTreeSet<(i64, i64, String)>;

#[derive(Debug, Default)]
pub struct RecentFiles {
    by_partition: HashMap<(String, i32), ByOffsets>,
}

impl RecentFiles {
    /// A commit added the data file at `uri_path` (as the log writes it: URI-encoded).
    pub fn added(&mut self, uri_path: &str) {
        let Some((path, name)) = data_file(uri_path) else {
            return;
        };
        let files = self
            .by_partition
            .entry((name.topic, name.partition))
            .or_default();
        files.insert((name.last_offset, name.first_offset, path));
        while files.len() > KEPT_PER_PARTITION {
            files.pop_first();
        }
    }

    /// A commit removed the data file at `uri_path`.
    pub fn removed(&mut self, uri_path: &str) {
        let Some((path, name)) = data_file(uri_path) else {
            return;
        };
        if let Some(files) = self.by_partition.get_mut(&(name.topic, name.partition)) {
            files.retain(|f| f.2 != path);
        }
    }

    /// The kept files of `topic`/`partition` (paths relative to the table), newest first.
    pub fn of(&self, topic: &str, partition: i32) -> Vec<(String, OutputName)> {
        let Some(files) = self.by_partition.get(&(topic.to_string(), partition)) else {
            return Vec::new();
        };
        files
            .iter()
            .rev()
            .map(|(last, first, path)| {
                let name = OutputName {
                    topic: topic.to_string(),
                    partition,
                    first_offset: *first,
                    last_offset: *last,
                };
                (path.clone(), name)
            })
            .collect()
    }
}

/// A data file the daemon wrote, from its `add` path: the path decoded, and the source
/// range its name carries (`<topic>-<partition>-<first>-<last>[-late]-<16 hex>.parquet`).
fn data_file(uri_path: &str) -> Option<(String, OutputName)> {
    let path = percent_decoded(uri_path)?;
    let file = path.rsplit('/').next()?;
    let (stem, random) = file.strip_suffix(".parquet")?.rsplit_once('-')?;
    if random.len() != 16 || !random.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let name = parse_output_name(&format!("{stem}.parquet"))?;
    Some((path, name))
}

/// `%XX` escapes decoded; None when they do not make UTF-8 (not a name this writer made).
fn percent_decoded(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "date=2023-11-14/milstream.points-00001-00000000000000000040-00000000000000000079-8b46790792c2ba5c.parquet";
    const B: &str = "date=2023-11-14/milstream.points-00001-00000000000000000080-00000000000000000119-a6d440ae52cc4577.parquet";

    #[test]
    fn the_newest_files_of_a_partition_come_first_and_removed_ones_go() {
        let mut r = RecentFiles::default();
        r.added(A);
        r.added(B);
        r.added("part-00001-0b5b6c4f-c000.zstd.parquet");
        let files = r.of("milstream.points", 1);
        assert_eq!(files.len(), 2);
        assert_eq!((files[0].0.as_str(), files[0].1.first_offset), (B, 80));
        assert_eq!(files[1].1.last_offset, 79);
        r.removed(B);
        assert_eq!(r.of("milstream.points", 1).len(), 1);
        assert!(r.of("milstream.points", 0).is_empty());
    }

    #[test]
    fn escaped_topics_and_late_segments_are_read() {
        let late = "date=2023-11-14/lab%20els-00000-00000000000000000003-00000000000000000005-late-00000000000000ff.parquet";
        let (path, name) = data_file(late).unwrap();
        assert!(path.contains("lab els-00000"));
        assert_eq!(
            (name.topic.as_str(), name.first_offset, name.last_offset),
            ("lab els", 3, 5)
        );
    }

    #[test]
    fn a_partition_keeps_a_bounded_number_of_files() {
        let mut r = RecentFiles::default();
        for i in 0..(KEPT_PER_PARTITION as i64 + 10) {
            r.added(&format!(
                "t-00000-{:020}-{:020}-00000000000000aa.parquet",
                i * 10,
                i * 10 + 9
            ));
        }
        let files = r.of("t", 0);
        assert_eq!(files.len(), KEPT_PER_PARTITION);
        assert_eq!(
            files[0].1.first_offset,
            (KEPT_PER_PARTITION as i64 + 9) * 10
        );
    }
}

//! The label-join history's closed blocks on local disk: one append-only log per history
//! shard, in segment files, so the history's size in memory is its index, not its points.
//!
//! The history is a cache rebuilt from the stream (a restart replays what labels in flight
//! need, `holds.rs`), so the log is never read across restarts: its folder is cleared when
//! the daemon starts, and nothing is fsynced. A block is appended once and never changed; a
//! late point writes its block anew and the old bytes become garbage. Space comes back
//! log-structured: a sealed segment no live block points into is deleted, and once a sealed
//! segment is less than half live its live blocks are copied forward (`SeriesHistory`
//! repoints its index) and it goes. So every sealed segment is at least half live, and a
//! shard's files hold at most twice its live blocks plus the segment being written.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use prometheus::IntCounter;
use tracing::warn;

use super::history_blocks::{Block, Corrupt, Points};

/// Where a block's bytes are: its segment, offset and length, and their CRC-32 (a damaged
/// read is an error, not a wrong join).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub segment: u32,
    at: u32,
    len: u32,
    crc: u32,
}

/// Largest segment: offsets in a [`Loc`] are 32-bit.
pub const MAX_SEGMENT_BYTES: u64 = 1 << 30;

/// Appended bytes held before one write: a block is ~1.3 KB, and a write per block was
/// 4 % of a scoring thread's time with 1,000-point arrays (`perf`, `bench-stream`).
const WRITE_BEHIND_BYTES: usize = 64 << 10;

struct Segment {
    file: File,
    /// Bytes written.
    len: u64,
    /// Bytes and blocks the index still points to.
    live_bytes: u64,
    live_blocks: u64,
}

/// One shard's log: segment files `<n>.blocks` in its folder, the newest open for appends.
pub struct BlockLog {
    dir: PathBuf,
    segment_bytes: u64,
    segments: BTreeMap<u32, Segment>,
    current: u32,
    /// The current segment's last bytes, not written yet: they start at `len -
    /// tail.len()`. Reads of them come from here.
    tail: Vec<u8>,
    /// A sealed segment fell below half live since
    /// [`take_compact_due`](Self::take_compact_due) last said so.
    compact_due: bool,
}

impl BlockLog {
    /// A new, empty log in `dir`, whatever `dir` held before (an earlier run's cache) is
    /// removed. Segments rotate past `segment_bytes` (at most [`MAX_SEGMENT_BYTES`]).
    pub fn create(dir: &Path, segment_bytes: u64) -> io::Result<BlockLog> {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::create_dir_all(dir)?;
        let mut log = BlockLog {
            dir: dir.to_path_buf(),
            segment_bytes: segment_bytes.clamp(1, MAX_SEGMENT_BYTES),
            segments: BTreeMap::new(),
            current: 0,
            tail: Vec::new(),
            compact_due: false,
        };
        log.open_segment(0)?;
        Ok(log)
    }

    fn path(&self, segment: u32) -> PathBuf {
        self.dir.join(format!("{segment:08}.blocks"))
    }

    fn open_segment(&mut self, id: u32) -> io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.path(id))?;
        self.segments.insert(
            id,
            Segment {
                file,
                len: 0,
                live_bytes: 0,
                live_blocks: 0,
            },
        );
        self.current = id;
        Ok(())
    }

    /// Appends a block's bytes to the current segment, first rotating to a new one when
    /// they would take it past `segment_bytes`. The bytes are written once
    /// `WRITE_BEHIND_BYTES` have gathered (or at the rotation); an error writing them
    /// fails this append, and they stay buffered (and readable) for the next.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<Loc> {
        let len = u32::try_from(bytes.len())
            .ok()
            .filter(|&l| u64::from(l) <= MAX_SEGMENT_BYTES)
            .ok_or_else(|| io::Error::other("a history block larger than a segment"))?;
        let cur = &self.segments[&self.current];
        if cur.len > 0 && cur.len + u64::from(len) > self.segment_bytes {
            self.flush()?;
            self.open_segment(self.current + 1)?;
            // The one sealed just now may be sparse, or empty of live blocks, already.
            self.check_sealed(self.current - 1);
        } else if self.tail.len() + bytes.len() > WRITE_BEHIND_BYTES {
            self.flush()?;
        }
        let cur = self
            .segments
            .get_mut(&self.current)
            .expect("the current segment is open");
        let at = cur.len;
        self.tail.extend_from_slice(bytes);
        cur.len += u64::from(len);
        cur.live_bytes += u64::from(len);
        cur.live_blocks += 1;
        Ok(Loc {
            segment: self.current,
            at: at as u32,
            len,
            crc: crc32fast::hash(bytes),
        })
    }

    /// Writes the buffered bytes of the current segment.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.tail.is_empty() {
            return Ok(());
        }
        let cur = &self.segments[&self.current];
        cur.file
            .write_all_at(&self.tail, cur.len - self.tail.len() as u64)?;
        self.tail.clear();
        Ok(())
    }

    /// Reads the bytes at `loc` into `out` (replacing what it held), checked against their
    /// CRC.
    pub fn read(&self, loc: Loc, out: &mut Vec<u8>) -> io::Result<()> {
        let seg = self
            .segments
            .get(&loc.segment)
            .ok_or_else(|| io::Error::other(format!("history segment {} is gone", loc.segment)))?;
        out.clear();
        let buffered = (loc.segment == self.current)
            .then(|| seg.len - self.tail.len() as u64)
            .filter(|&written| u64::from(loc.at) >= written);
        if let Some(written) = buffered {
            let from = (u64::from(loc.at) - written) as usize;
            out.extend_from_slice(&self.tail[from..from + loc.len as usize]);
        } else {
            out.resize(loc.len as usize, 0);
            seg.file.read_exact_at(out, u64::from(loc.at))?;
        }
        if crc32fast::hash(out) != loc.crc {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "history block at {}:{} fails its CRC",
                    self.path(loc.segment).display(),
                    loc.at
                ),
            ));
        }
        Ok(())
    }

    /// The index no longer points to `loc`: a sealed segment left without live blocks is
    /// deleted.
    pub fn release(&mut self, loc: Loc) {
        if let Some(seg) = self.segments.get_mut(&loc.segment) {
            seg.live_bytes -= u64::from(loc.len);
            seg.live_blocks -= 1;
            self.check_sealed(loc.segment);
        }
    }

    /// A sealed segment without live blocks is deleted; one less than half live is due for
    /// compaction.
    fn check_sealed(&mut self, id: u32) {
        let Some(seg) = self.segments.get(&id).filter(|_| id != self.current) else {
            return;
        };
        if seg.live_blocks == 0 {
            self.segments.remove(&id);
            // A file that stays behind costs disk until the next start, nothing else.
            let _ = std::fs::remove_file(self.path(id));
        } else if 2 * seg.live_bytes < seg.len {
            self.compact_due = true;
        }
    }

    /// Whether a sealed segment fell below half live since the last call (then the caller
    /// copies the live blocks of [`sparse`](Self::sparse) segments forward).
    pub fn take_compact_due(&mut self) -> bool {
        std::mem::take(&mut self.compact_due)
    }

    /// Sealed segments less than half live: their live blocks are worth copying forward.
    pub fn sparse(&self) -> Vec<u32> {
        self.segments
            .iter()
            .filter(|(&id, s)| id != self.current && 2 * s.live_bytes < s.len)
            .map(|(&id, _)| id)
            .collect()
    }

    /// Bytes in segment files now.
    pub fn disk_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.len).sum()
    }

    /// Bytes the index points to.
    #[cfg(test)]
    pub fn live_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.live_bytes).sum()
    }

    /// Segment files now.
    #[cfg(test)]
    pub fn segment_files(&self) -> usize {
        std::fs::read_dir(&self.dir).map_or(0, |d| d.count())
    }
}

// What the history (`history.rs`) reads and writes blocks through: where a block's bytes
// are, and the failed reads and writes counted as they happen.

/// Where a closed block's encoded bytes are.
pub enum Bytes {
    /// In the shard's log on disk.
    Disk(Loc),
    /// In memory: no log, or its write failed.
    Memory(Box<[u8]>),
}

/// A closed block: its header (what the index keeps) and its bytes.
pub struct Closed {
    pub block: Block,
    pub bytes: Bytes,
}

impl std::ops::Deref for Closed {
    type Target = Block;
    fn deref(&self) -> &Block {
        &self.block
    }
}

/// A block whose bytes could not be read back (or decoded): what went wrong, for the
/// dead letter's detail.
#[derive(Debug)]
pub struct Unreadable(pub String);

/// What reading a shard's blocks needs: its log (None: every block is in memory), a buffer,
/// and the counter of failed reads.
pub struct Reader<'a> {
    log: Option<&'a BlockLog>,
    buf: std::cell::RefCell<Vec<u8>>,
    errors: &'a IntCounter,
}

impl<'a> Reader<'a> {
    pub fn new(log: Option<&'a BlockLog>, errors: &'a IntCounter) -> Self {
        Self {
            log,
            buf: Default::default(),
            errors,
        }
    }

    /// Runs `f` on the block's bytes.
    fn with<T>(
        &self,
        c: &Closed,
        f: impl FnOnce(&Block, &[u8]) -> Result<T, Corrupt>,
    ) -> Result<T, Unreadable> {
        let out = match &c.bytes {
            Bytes::Memory(b) => f(&c.block, b).map_err(|e| e.to_string()),
            Bytes::Disk(loc) => {
                let mut buf = self.buf.borrow_mut();
                match self.log.map(|log| log.read(*loc, &mut buf)) {
                    Some(Ok(())) => f(&c.block, &buf[..]).map_err(|e| e.to_string()),
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("no history log".to_string()),
                }
            }
        };
        out.map_err(|e| {
            self.errors.inc();
            if self.errors.get().is_power_of_two() {
                warn!(error = %e, count = self.errors.get(), "Reading a label-join history block failed.");
            }
            Unreadable(format!(
                "a history block of ts {}..{} is unreadable: {e}",
                c.first_ts, c.last_ts
            ))
        })
    }

    /// A block's event times (its values and offsets stay encoded).
    pub fn times(&self, c: &Closed) -> Result<Vec<i64>, Unreadable> {
        let mut ts = Vec::with_capacity(c.len());
        self.with(c, |b, bits| b.decode_ts_into(bits, &mut ts))?;
        Ok(ts)
    }

    /// Appends a block's points to `out` (offsets only if asked).
    pub fn decode_into(
        &self,
        c: &Closed,
        channels: usize,
        out: &mut Points,
        offsets: bool,
    ) -> Result<(), Unreadable> {
        let before = (out.ts.len(), out.values.len(), out.offsets.len());
        let len = out.source_of.len();
        self.with(c, |b, bits| b.decode_into(bits, channels, out, offsets))
            .inspect_err(|_| {
                // Nothing half-decoded stays in `out`.
                out.ts.truncate(before.0);
                out.values.truncate(before.1);
                out.offsets.truncate(before.2);
                out.source_of.truncate(len);
            })
    }
}

/// Where new closed blocks' bytes go: the shard's log, or memory; and the counter of failed
/// writes.
pub struct Writer<'a> {
    pub log: Option<&'a mut BlockLog>,
    pub errors: &'a IntCounter,
}

impl Writer<'_> {
    pub fn store(&mut self, bits: Vec<u8>) -> Bytes {
        let Some(log) = self.log.as_deref_mut() else {
            return Bytes::Memory(bits.into_boxed_slice());
        };
        match log.append(&bits) {
            Ok(loc) => Bytes::Disk(loc),
            Err(e) => {
                // Kept in memory instead: nothing is lost, the memory bound is.
                self.errors.inc();
                if self.errors.get().is_power_of_two() {
                    warn!(error = %e, count = self.errors.get(), "Writing a label-join history block failed; it stays in memory.");
                }
                Bytes::Memory(bits.into_boxed_slice())
            }
        }
    }

    pub fn release(&mut self, bytes: &Bytes) {
        if let (Some(log), Bytes::Disk(loc)) = (self.log.as_deref_mut(), bytes) {
            log.release(*loc);
        }
    }

    pub fn reader<'b>(&'b self, errors: &'b IntCounter) -> Reader<'b> {
        Reader::new(self.log.as_deref(), errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_read_back_rotate_and_dead_segments_go() {
        let dir = std::env::temp_dir().join(format!("milstream-log-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("stale")).unwrap();
        let mut log = BlockLog::create(&dir, 100).unwrap();
        assert!(
            !dir.join("stale").exists(),
            "an earlier run's cache is cleared"
        );
        let a = log.append(&[1; 50]).unwrap();
        let a2 = log.append(&[4; 30]).unwrap();
        let b = log.append(&[2; 60]).unwrap();
        assert_ne!(a.segment, b.segment, "rotated past 100 bytes");
        assert!(!log.take_compact_due());
        let mut out = Vec::new();
        log.read(a, &mut out).unwrap();
        assert_eq!(out, vec![1; 50]);
        assert_eq!(log.segment_files(), 2);
        log.release(a);
        assert!(log.take_compact_due() && !log.take_compact_due());
        assert_eq!(log.sparse(), vec![a.segment], "30 of 80 bytes live");
        log.release(a2);
        assert_eq!(
            log.segment_files(),
            1,
            "a sealed segment without live blocks is deleted"
        );
        assert!(log.read(a, &mut out).is_err());
        // Damaged bytes fail their CRC.
        let c = log.append(&[3; 30]).unwrap();
        log.read(c, &mut out).unwrap();
        assert_eq!(out, vec![3; 30], "read back from the write-behind buffer");
        log.flush().unwrap();
        log.segments[&c.segment]
            .file
            .write_all_at(&[9], u64::from(c.at))
            .unwrap();
        let e = log.read(c, &mut out).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        log.read(b, &mut out).unwrap();
        assert_eq!(out, vec![2; 60]);
        assert_eq!(log.live_bytes(), 90);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

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

use crate::stream::join::history_blocks::{Block, Corrupt, Points};

/// Where a block's bytes are in the log: its segment, offset and length, in 12 bytes (a
/// block's CRC-32 is on disk after its bytes: a damaged read is an error, not a wrong
/// join). The index keeps one per block of every live series, so it is kept small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub segment: u32,
    at: u32,
    len: u32,
}

/// Bytes on disk after a block's: its CRC-32.
const CRC_BYTES: u32 = 4;

/// Largest segment: offsets in a [`Loc`] are 32-bit.
pub const MAX_SEGMENT_BYTES: u64 = 1 << 30;

/// Appended bytes held before one write: a block is ~1.3 KB, and a write per block was
/// 4 % of a scoring thread's time with 1,000-point arrays (`perf`, `bench-stream`).
const WRITE_BEHIND_BYTES: usize = 64 << 10;

struct SegmentFile {
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
    segments: BTreeMap<u32, SegmentFile>,
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
        if id == MEMORY_SEGMENT {
            return Err(io::Error::other(
                "the history log ran out of segment numbers",
            ));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.path(id))?;
        self.segments.insert(
            id,
            SegmentFile {
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
            .filter(|&l| u64::from(l + CRC_BYTES) <= MAX_SEGMENT_BYTES)
            .ok_or_else(|| io::Error::other("a history block larger than a segment"))?;
        let stored = u64::from(len + CRC_BYTES);
        let cur = &self.segments[&self.current];
        if cur.len > 0 && cur.len + stored > self.segment_bytes {
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
        self.tail
            .extend_from_slice(&crc32fast::hash(bytes).to_le_bytes());
        cur.len += stored;
        cur.live_bytes += stored;
        cur.live_blocks += 1;
        Ok(Loc {
            segment: self.current,
            at: at as u32,
            len,
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
        let stored = (loc.len + CRC_BYTES) as usize;
        let buffered = (loc.segment == self.current)
            .then(|| seg.len - self.tail.len() as u64)
            .filter(|&written| u64::from(loc.at) >= written);
        if let Some(written) = buffered {
            let from = (u64::from(loc.at) - written) as usize;
            out.extend_from_slice(&self.tail[from..from + stored]);
        } else {
            out.resize(stored, 0);
            seg.file.read_exact_at(out, u64::from(loc.at))?;
        }
        let crc = out.split_off(loc.len as usize);
        if crc32fast::hash(out).to_le_bytes()[..] != crc[..] {
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
            seg.live_bytes -= u64::from(loc.len + CRC_BYTES);
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

// What the history (`history.rs`) reads and writes blocks through: a shard's store (its log
// and the blocks held in memory), the index's entries, and the failed reads and writes
// counted as they happen.

/// The segment number of a [`Loc`] that names a slot of [`MemoryBlocks`], not the log.
const MEMORY_SEGMENT: u32 = u32::MAX;

/// Blocks whose bytes stay in memory (no log, or its write failed), in numbered slots: a
/// slot's number fits where a location on disk does, so the index entry is the same size.
#[derive(Default)]
pub struct MemoryBlocks {
    slots: Vec<Option<Box<[u8]>>>,
    free: Vec<u32>,
}

impl MemoryBlocks {
    fn put(&mut self, bytes: Box<[u8]>) -> Loc {
        let len = bytes.len() as u32;
        let at = match self.free.pop() {
            Some(at) => {
                self.slots[at as usize] = Some(bytes);
                at
            }
            None => {
                self.slots.push(Some(bytes));
                (self.slots.len() - 1) as u32
            }
        };
        Loc {
            segment: MEMORY_SEGMENT,
            at,
            len,
        }
    }

    fn get(&self, loc: Loc) -> Option<&[u8]> {
        self.slots.get(loc.at as usize)?.as_deref()
    }

    fn take(&mut self, loc: Loc) {
        if let Some(slot) = self.slots.get_mut(loc.at as usize) {
            if slot.take().is_some() {
                self.free.push(loc.at);
            }
        }
    }

    /// Bytes of the blocks held.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.slots.iter().flatten().map(|b| b.len()).sum()
    }
}

/// A shard's closed blocks: its log on disk (None: all in memory) and those in memory.
#[derive(Default)]
pub struct BlockStore {
    pub log: Option<BlockLog>,
    pub memory: MemoryBlocks,
}

/// A closed block in the index: its header and where its bytes are, in 32 bytes (every
/// live series keeps one per 128 points: at the default cap of 20,000 points, 157).
#[derive(Debug, Clone, Copy)]
pub struct Closed {
    pub first_ts: i64,
    pub last_ts: i64,
    n: u16,
    sourced: bool,
    loc: Loc,
}

impl Closed {
    pub fn len(&self) -> usize {
        self.n as usize
    }

    fn block(&self) -> Block {
        Block {
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            n: self.n,
            sourced: self.sourced,
        }
    }

    /// Where its bytes are in the log (None: in memory).
    pub fn on_disk(&self) -> Option<Loc> {
        (self.loc.segment != MEMORY_SEGMENT).then_some(self.loc)
    }

    /// An entry of `n` points from `first_ts` to `last_ts` (tests of the index).
    #[cfg(test)]
    pub fn for_test(first_ts: i64, last_ts: i64, n: u16) -> Closed {
        Closed {
            first_ts,
            last_ts,
            n,
            sourced: false,
            loc: Loc {
                segment: MEMORY_SEGMENT,
                at: 0,
                len: 0,
            },
        }
    }

    /// Its bytes were copied to `loc` in the log (compaction).
    pub fn moved_to(&mut self, loc: Loc) {
        self.loc = loc;
    }
}

/// A block whose bytes could not be read back (or decoded): what went wrong, for the
/// dead letter's detail.
#[derive(Debug)]
pub struct Unreadable(pub String);

/// What reading a shard's blocks needs: its store, a buffer, and the counter of failed
/// reads.
pub struct Reader<'a> {
    store: &'a BlockStore,
    buf: std::cell::RefCell<Vec<u8>>,
    errors: &'a IntCounter,
}

impl<'a> Reader<'a> {
    pub fn new(store: &'a BlockStore, errors: &'a IntCounter) -> Self {
        Self {
            store,
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
        let block = c.block();
        let out = match c.on_disk() {
            None => match self.store.memory.get(c.loc) {
                Some(bytes) => f(&block, bytes).map_err(|e| e.to_string()),
                None => Err("a block held in memory is gone".to_string()),
            },
            Some(loc) => {
                let mut buf = self.buf.borrow_mut();
                match self.store.log.as_ref().map(|log| log.read(loc, &mut buf)) {
                    Some(Ok(())) => f(&block, &buf[..]).map_err(|e| e.to_string()),
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
    pub store: &'a mut BlockStore,
    pub errors: &'a IntCounter,
}

impl Writer<'_> {
    /// Stores a block's bytes: its index entry.
    pub fn store(&mut self, block: Block, bits: Vec<u8>) -> Closed {
        let loc = match self.store.log.as_mut().map(|log| log.append(&bits)) {
            None => self.store.memory.put(bits.into_boxed_slice()),
            Some(Ok(loc)) => loc,
            Some(Err(e)) => {
                // Kept in memory instead: nothing is lost, the memory bound is.
                self.errors.inc();
                if self.errors.get().is_power_of_two() {
                    warn!(error = %e, count = self.errors.get(), "Writing a label-join history block failed; it stays in memory.");
                }
                self.store.memory.put(bits.into_boxed_slice())
            }
        };
        Closed {
            first_ts: block.first_ts,
            last_ts: block.last_ts,
            n: block.n,
            sourced: block.sourced,
            loc,
        }
    }

    /// The index no longer points to `c`'s bytes.
    pub fn release(&mut self, c: &Closed) {
        match (c.on_disk(), self.store.log.as_mut()) {
            (Some(loc), Some(log)) => log.release(loc),
            (Some(_), None) => {}
            (None, _) => self.store.memory.take(c.loc),
        }
    }

    pub fn reader<'b>(&'b self, errors: &'b IntCounter) -> Reader<'b> {
        Reader::new(self.store, errors)
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
        assert_eq!(log.live_bytes(), 90 + 2 * u64::from(CRC_BYTES));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

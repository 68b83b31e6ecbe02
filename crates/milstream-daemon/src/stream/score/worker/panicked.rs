//! What a panic while handling one message leaves of its partition (the boundary itself is
//! `worker_pool::contained`): the message becomes a dead letter, the state it may have left
//! half-updated is cleared, the rest goes on.

use super::{now_ms, Message, Worker};
use crate::stream::ingest::record::{DeadLetterRecord, DeadReason, Rejected};
use crate::stream::output::sink::Segment;
use crate::stream::quality::label_free::ServedWatch;
use crate::stream::score::window::PartitionWindows;

impl Worker {
    /// After [`process`](Self::process) panicked on `msg` (caught by the worker loop,
    /// `worker_pool.rs`): the message becomes one dead letter (`internal`, with the panic's
    /// text) and its partition goes on from the next offset. Returns a segment if sealed.
    ///
    /// What the panic may have left half-updated, and why going on is safe:
    /// - the open segment: `process` collects a message's outputs in locals and appends them
    ///   only after every step that computes on the data, so it holds whole messages' outputs;
    /// - the windows (part of the message's points pushed, a scorer mid-update) and the
    ///   label-free detectors (a window's counts mid-update): not trusted, cleared. Their series
    ///   start over from their next point (as after an idle eviction) and the detectors take a
    ///   new reference, as after a drift. A cleared window holds no offset, so the replay point
    ///   moves on: a restart does not rebuild them either, it replays the same panic;
    /// - waiting labels, the label-join history and the holds: a queue push or pop, or state
    ///   behind a mutex. A panic holding a lock poisons it, so every later message panics too:
    ///   the worker loop then stops catching (see `worker_pool::PANICS_IN_A_ROW`) and the dead
    ///   thread fails liveness;
    /// - the errors' detectors (`quality`): one label's grade at a time, kept.
    pub fn panicked(&mut self, msg: &Message, why: &str) -> Option<Segment> {
        let key = (msg.topic.to_string(), msg.partition);
        let p = self.parts.get_mut(&key)?;
        p.next_offset = p.next_offset.max(msg.offset + 1);
        p.windows = p.windows.as_ref().map(PartitionWindows::cleared);
        if p.served.is_some() {
            p.served = self.env.quality.as_ref().and_then(ServedWatch::new);
        }
        if msg.offset < p.emit_from {
            // A replayed message: its dead letter was written before (or never will be).
            return None;
        }
        let rejected = Rejected {
            reason: DeadReason::Internal,
            detail: format!("handling the message panicked: {why}"),
        };
        let dead = DeadLetterRecord::new(
            &msg.topic,
            msg.partition,
            msg.offset,
            &rejected,
            &msg.payload,
            now_ms(),
        );
        self.env
            .metrics
            .dead_letters
            .with_label_values(&[DeadReason::Internal.as_str()])
            .inc();
        let env = &self.env;
        let seg = p.segment.get_or_insert_with(|| {
            env.open_segment(&msg.topic, msg.partition, msg.offset, msg.timestamp_ms)
        });
        seg.last_offset = msg.offset;
        seg.approx_bytes += 128 + dead.raw_prefix.len() + dead.detail.len();
        seg.dead_letters.push(dead);
        if seg.rows() >= env.cfg.output.roll_rows || seg.approx_bytes >= seg.roll_at_bytes {
            return env.seal(p);
        }
        None
    }
}

//! Label joins. In: a partition's label records (with their offset and raw bytes) and the
//! points and bags the worker saw. Out: training examples and the dead letters of labels
//! that can never join. Owns: the order in which a partition's waiting labels resolve; the
//! waiting labels themselves live in the partition's state ([`WaitingLabels`]) and the kept
//! points and bags in the shared [`TrainingRuntime`].
//!
//! A label that waits holds its partition's replay point back (see
//! [`WaitingLabels::oldest_offset`]), so a crash replays it and the join is made again; and
//! from the moment it is queued until its partition commits past it, it holds the replay
//! point of the partition its points (or bag) came from ([`ReplayHolds`]), so the replay
//! finds them again.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::ModelInput;
use crate::config::TrainingConfig;
use crate::stream::ingest::position::PartitionKey;
use crate::stream::ingest::position::Position;
use crate::stream::ingest::record::{
    BagRecord, DeadLetterRecord, DeadReason, LabelRecord, Point, Rejected, RAW_PREFIX_BYTES,
};
use crate::stream::join::history::SegmentJoin;
use crate::stream::join::holds::{LabelAt, Need, ReplayHolds};
use crate::stream::lifecycle::training::TrainingRuntime;
use crate::stream::output::arrow::examples::Example;
use crate::stream::quality::{self, PartitionQuality, Quality, QualityRows};
use crate::stream::score::models::Models;

/// What a label keeps of its message for a dead letter: the prefix a dead letter shows.
pub fn raw_prefix(payload: &[u8]) -> Arc<[u8]> {
    Arc::from(&payload[..payload.len().min(RAW_PREFIX_BYTES)])
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A label whose example could not be made yet.
pub struct PendingLabel {
    offset: i64,
    /// Its index among its message's labels: with the offset, its hold's key.
    index: u32,
    label: LabelRecord,
    labeled_at_ms: i64,
    since: Instant,
    /// The start of its message, for its dead letter: one copy shared by every label of
    /// the message, so a message of thousands of labels keeps one bounded prefix.
    raw_prefix: Arc<[u8]>,
}

/// One partition's waiting labels, oldest offset first.
#[derive(Default)]
pub struct WaitingLabels {
    queue: VecDeque<PendingLabel>,
}

impl WaitingLabels {
    /// Queues the label `at` (Kafka timestamp `labeled_at_ms`).
    fn push(&mut self, at: LabelAt, label: LabelRecord, labeled_at_ms: i64, raw: Arc<[u8]>) {
        self.queue.push_back(PendingLabel {
            offset: at.0,
            index: at.1,
            label,
            labeled_at_ms,
            since: Instant::now(),
            raw_prefix: raw,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The offset a replay must start from to see every waiting label again.
    pub fn oldest_offset(&self) -> Option<i64> {
        self.queue.front().map(|l| l.offset)
    }
}

/// What became of a label.
enum LabelJoin {
    /// The example, and the serving model's prediction for it (when evaluation is on).
    Joined(Example, Option<Box<quality::EvaluationRecord>>),
    /// Its points (or bag) have not all arrived.
    Wait,
    /// They have, but a partition they came from has not committed a replay point that
    /// covers them yet ([`ReplayHolds::covered`]).
    Held,
    Dead(Rejected),
}

/// What a label needs from the history.
fn need_of(label: &LabelRecord) -> Need {
    match label {
        LabelRecord::Segment {
            series_id,
            start_ms,
            end_ms,
            ..
        } => Need::Segment {
            series: series_id.clone(),
            start: *start_ms,
            end: *end_ms,
        },
        LabelRecord::Bag { bag_id, .. } => Need::Bag { id: bag_id.clone() },
    }
}

/// Where a partition's labels come from, and from which offset on its outputs are emitted.
pub struct LabelSource<'a> {
    pub topic: &'a str,
    pub partition: i32,
    /// Dead letters of labels below this offset were written before the last commit.
    pub emit_from: i64,
}

/// Joins labels with the kept points and bags, when training is on.
pub struct LabelJoiner {
    training: Arc<TrainingRuntime>,
    cfg: TrainingConfig,
    models: Arc<Models>,
    /// Prequential evaluation and the errors' drift detectors (`drift.evaluate`).
    quality: Option<Arc<Quality>>,
}

impl LabelJoiner {
    pub fn new(
        training: Arc<TrainingRuntime>,
        cfg: TrainingConfig,
        models: Arc<Models>,
        quality: Option<Arc<Quality>>,
    ) -> Self {
        Self {
            training,
            cfg,
            models,
            quality,
        }
    }

    /// Keeps an accepted point (its value per channel, and the message it came in) for
    /// labels that name its series.
    pub fn record_point(&self, pt: &Point, source: Position) {
        self.training
            .history
            .record_parts(&pt.series_id, source, pt.ts_ms, pt.value, &pt.rest);
    }

    /// [`record_point`](Self::record_point) of points of the series `series_id` from one
    /// message, under one lock.
    pub fn record_points<'p>(
        &self,
        series_id: &str,
        points: impl IntoIterator<Item = &'p Point>,
        source: Position,
    ) {
        let points = points
            .into_iter()
            .map(|pt| (pt.ts_ms, pt.value, pt.rest.as_slice()));
        self.training.history.record_run(series_id, source, points);
    }

    /// Queues the label `at` of `partition` (Kafka timestamp `labeled_at_ms`; `raw`, the
    /// start of its message, see [`raw_prefix`]) and holds what it needs from the history
    /// until its partition commits past it.
    pub fn queue(
        &self,
        waiting: &mut WaitingLabels,
        partition: &PartitionKey,
        (at, labeled_at_ms): (LabelAt, i64),
        label: LabelRecord,
        raw: Arc<[u8]>,
    ) {
        self.holds().need(partition, at, need_of(&label));
        waiting.push(at, label, labeled_at_ms, raw);
    }

    fn holds(&self) -> &ReplayHolds {
        &self.training.holds
    }

    /// Keeps a bag for labels that name it, and its inline label as an example of `model`
    /// (the bag's model; None: it has none, and its inline label no model to teach).
    pub fn keep_bag(
        &self,
        b: &BagRecord,
        model: Option<&str>,
        src: Position,
        labeled_at_ms: i64,
        examples: &mut Vec<Example>,
    ) {
        self.training
            .bags
            .insert(&b.bag_id, b.dim, &b.instances, src);
        if let (Some(label), Some(model)) = (&b.label, model) {
            examples.push(Example {
                key: b.bag_id.clone(),
                segment: None,
                label: label.clone(),
                dim: b.dim,
                values: b.instances.clone(),
                source_topic: src.topic.to_string(),
                source_partition: src.partition,
                source_offset: src.offset,
                labeled_at_ms,
                model: Some(model.to_string()),
            });
        }
    }

    /// Joins the partition's waiting labels that can join now, in order; a label that waited
    /// longer than `training.label_wait_ms` (or can never join) becomes a dead letter.
    /// Stops at the first that must keep waiting, so the replay point stays exact. Each
    /// joined label is graded (`graded`, into the partition's figures `state`) like its
    /// example, replays included: a label joins once per durable commit (see `quality.rs`). Returns the offsets of the first and last
    /// label taken off the queue, and the first's Kafka timestamp.
    pub fn resolve(
        &self,
        waiting: &mut WaitingLabels,
        src: &LabelSource,
        examples: &mut Vec<Example>,
        dead: &mut Vec<DeadLetterRecord>,
        (graded, state): (&mut QualityRows, &mut PartitionQuality),
    ) -> Option<((i64, i64), i64)> {
        let mut taken: Option<((i64, i64), i64)> = None;
        let wait = Duration::from_millis(self.cfg.label_wait_ms);
        while let Some(front) = waiting.queue.front() {
            // A message's labels leave the queue together. The replay point is an offset: a
            // replay from a message joins all of its labels again, so had some of them left
            // (and become durable) while a sibling waited, they would be written twice.
            let offset = front.offset;
            let mut outcomes = Vec::new();
            for l in waiting.queue.iter().take_while(|l| l.offset == offset) {
                match self.outcome(l, wait) {
                    Some(o) => outcomes.push(o),
                    None => return taken,
                }
            }
            for outcome in outcomes {
                self.take_front(
                    waiting,
                    outcome,
                    src,
                    examples,
                    dead,
                    (graded, state),
                    &mut taken,
                );
            }
        }
        taken
    }

    /// What becomes of a waiting label now; None while it must keep waiting.
    fn outcome(&self, l: &PendingLabel, wait: Duration) -> Option<LabelJoin> {
        let unjoined = || {
            LabelJoin::Dead(Rejected {
                reason: DeadReason::Unjoined,
                detail: match &l.label {
                    LabelRecord::Segment { .. } => format!(
                        "the labeled segment's points did not all arrive within training.label_wait_ms = {} ms",
                        wait.as_millis()
                    ),
                    LabelRecord::Bag { bag_id, .. } => format!(
                        "bag '{bag_id}' did not arrive within training.label_wait_ms = {} ms, or is no longer among the last {} bags (training.bag_cache)",
                        wait.as_millis(),
                        self.cfg.bag_cache
                    ),
                },
            })
        };
        Some(match self.join(l, true) {
            LabelJoin::Wait | LabelJoin::Held if l.since.elapsed() < wait => return None,
            LabelJoin::Wait => unjoined(),
            // Its points are here, but their partition's commit never came to cover
            // them (commits failing): joined anyway, as before the holds.
            LabelJoin::Held => match self.join(l, false) {
                LabelJoin::Wait | LabelJoin::Held => unjoined(),
                other => other,
            },
            other => other,
        })
    }

    /// Takes the queue's front label off with its `outcome`: its example and grade, or its
    /// dead letter (from `emit_from` on); `taken` spans the labels taken.
    #[allow(clippy::too_many_arguments)]
    fn take_front(
        &self,
        waiting: &mut WaitingLabels,
        outcome: LabelJoin,
        src: &LabelSource,
        examples: &mut Vec<Example>,
        dead: &mut Vec<DeadLetterRecord>,
        (graded, state): (&mut QualityRows, &mut PartitionQuality),
        taken: &mut Option<((i64, i64), i64)>,
    ) {
        let l = waiting.queue.pop_front().expect("front seen");
        *taken = Some(match *taken {
            None => ((l.offset, l.offset), l.labeled_at_ms),
            Some(((first, _), ts)) => ((first, l.offset), ts),
        });
        match outcome {
            LabelJoin::Joined(mut e, eval) => {
                e.source_topic = src.topic.to_string();
                e.source_partition = src.partition;
                if let (Some(q), Some(mut eval)) = (&self.quality, eval) {
                    eval.source_topic = src.topic.to_string();
                    eval.source_partition = src.partition;
                    graded.drift_events.extend(q.record(state, &eval));
                    graded.evaluations.push(*eval);
                }
                examples.push(e);
            }
            LabelJoin::Dead(rej) => {
                // A replay dead-letters it again: nothing to hold for it.
                self.holds()
                    .release(&(src.topic.to_string(), src.partition), (l.offset, l.index));
                if l.offset >= src.emit_from {
                    dead.push(DeadLetterRecord::new(
                        src.topic,
                        src.partition,
                        l.offset,
                        &rej,
                        &l.raw_prefix,
                        now_ms(),
                    ));
                }
            }
            LabelJoin::Wait | LabelJoin::Held => {
                unreachable!("a waiting label stays queued")
            }
        }
    }

    /// Joins a label; with `covered`, only once its points' (or bag's) partitions have
    /// committed replay points that cover them.
    fn join(&self, l: &PendingLabel, covered: bool) -> LabelJoin {
        let t = &self.training;
        let (key, label, segment) = match &l.label {
            LabelRecord::Segment {
                series_id,
                start_ms,
                end_ms,
                label,
                ..
            } => (series_id, label, Some((*start_ms, *end_ms))),
            LabelRecord::Bag { bag_id, label, .. } => (bag_id, label, None),
        };
        // A label goes to the model its `model` field names, else to the one that scores its
        // id, and only there: its example carries that model's name, and another model's
        // trainer never reads it.
        let input = match segment {
            Some(_) => ModelInput::Series,
            None => ModelInput::Bags,
        };
        let served = match self.models.route_record(input, key, l.label.model()) {
            Ok(m) => m,
            Err(detail) => {
                return LabelJoin::Dead(Rejected {
                    reason: DeadReason::NoModel,
                    detail,
                })
            }
        };
        if self.cfg.freeze_classes {
            let m = served.serving.load_full();
            if !m.model.classes().iter().any(|c| c == label) {
                return LabelJoin::Dead(Rejected {
                    reason: DeadReason::UnknownClass,
                    detail: format!(
                        "class '{label}' is not one of the model's classes {:?} and training.freeze_classes is set",
                        m.model.classes()
                    ),
                });
            }
        }
        let (dim, values) = match segment {
            Some((start, end)) => match t.history.segment(key, start, end) {
                SegmentJoin::Ready { channels, values } => (channels, values),
                SegmentJoin::NotYet => return LabelJoin::Wait,
                SegmentJoin::Gone(detail) => {
                    return LabelJoin::Dead(Rejected {
                        reason: DeadReason::Unjoined,
                        detail,
                    })
                }
            },
            // The bag and its label travel on different topics, so the label may be read
            // first: it waits for the bag as a segment's label waits for its points.
            None => match t.bags.get(key) {
                Some(b) => b,
                None => return LabelJoin::Wait,
            },
        };
        // Rule 2 of `holds.rs`: joined only once a restart would find them again.
        if covered && !t.holds.covered(&need_of(&l.label), &t.history, &t.bags) {
            return LabelJoin::Held;
        }
        let example = Example {
            key: key.clone(),
            segment,
            label: label.clone(),
            dim,
            values,
            source_topic: String::new(),
            source_partition: 0,
            source_offset: l.offset,
            labeled_at_ms: l.labeled_at_ms,
            model: Some(served.spec.name.clone()),
        };
        // Graded against the model serving now, before any retrain has seen the label.
        let eval = self.quality.as_ref().and_then(|_| {
            quality::evaluate(&served.serving.load_full(), &served.spec.name, &example)
                .map(Box::new)
        });
        LabelJoin::Joined(example, eval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::metrics::Metrics;
    use crate::stream::join::history::{BagCache, SeriesHistory};
    use crate::stream::output::store::Store;
    use crate::stream::score::models::specs;
    use crate::stream::score::window::ScoringModel;

    fn joiner() -> LabelJoiner {
        let metrics = Metrics::new();
        let cfg = Config::default();
        let spec = specs(&cfg).swap_remove(1);
        assert_eq!(spec.input, ModelInput::Bags);
        let model = crate::stream::embedded::train_embedded_bag_model(cfg.model.kind).unwrap();
        let served = Arc::new(ScoringModel {
            model,
            version: "v1".into(),
            generation: 0,
        });
        let training = Arc::new(TrainingRuntime {
            history: SeriesHistory::new(1_000, 1_000),
            bags: BagCache::new(16),
            holds: Default::default(),
            store: Arc::new(Store::Local(
                std::env::temp_dir().join("milstream-labels-unused"),
            )),
            examples_durable: Default::default(),
        });
        let models = Arc::new(Models::new(vec![(spec, served)], &metrics));
        LabelJoiner::new(training, cfg.training.clone(), models, None)
    }

    fn bag_label(id: &str) -> LabelRecord {
        LabelRecord::Bag {
            bag_id: id.into(),
            label: "1".into(),
            model: None,
        }
    }

    /// Labels of one message leave the queue together: the replay point is an offset, and a
    /// replay from it joins every label of the message again. (Were the first label's
    /// example written while its sibling waited, a crash before the sibling joined would
    /// write it a second time, under another file name: the cluster soak found two.)
    #[test]
    fn labels_of_one_message_join_together() {
        let j = joiner();
        let labels: PartitionKey = ("labels".into(), 0);
        let mut waiting = WaitingLabels::default();
        let raw: Arc<[u8]> = Arc::from(&b"[...]"[..]);
        j.queue(
            &mut waiting,
            &labels,
            ((7, 0), 1),
            bag_label("a"),
            raw.clone(),
        );
        j.queue(
            &mut waiting,
            &labels,
            ((7, 1), 1),
            bag_label("b"),
            raw.clone(),
        );
        j.queue(&mut waiting, &labels, ((8, 0), 1), bag_label("a"), raw);
        let src = LabelSource {
            topic: "labels",
            partition: 0,
            emit_from: 0,
        };
        let resolve = |waiting: &mut WaitingLabels| {
            let (mut examples, mut dead) = (Vec::new(), Vec::new());
            let (mut graded, mut state) = (QualityRows::default(), PartitionQuality::default());
            let taken = j.resolve(
                waiting,
                &src,
                &mut examples,
                &mut dead,
                (&mut graded, &mut state),
            );
            (taken, examples.len(), dead.len())
        };
        j.training
            .bags
            .insert("a", 1, &[1.0], Position::on("bags", 0, 10));
        // "a" is here, "b" is not: neither label of offset 7 leaves, nor the one after.
        assert_eq!(resolve(&mut waiting), (None, 0, 0));
        assert_eq!(waiting.oldest_offset(), Some(7));
        j.training
            .bags
            .insert("b", 1, &[1.0], Position::on("bags", 0, 11));
        assert_eq!(resolve(&mut waiting), (Some(((7, 8), 1)), 3, 0));
        assert_eq!(waiting.oldest_offset(), None);
    }
}

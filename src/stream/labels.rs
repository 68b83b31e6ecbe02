//! Label joins. In: a partition's label records (with their offset and raw bytes) and the
//! points and bags the worker saw. Out: training examples and the dead letters of labels
//! that can never join. Owns: the order in which a partition's waiting labels resolve; the
//! waiting labels themselves live in the partition's state ([`WaitingLabels`]) and the kept
//! points and bags in the shared [`TrainingRuntime`].
//!
//! A label that waits holds its partition's replay point back (see
//! [`WaitingLabels::oldest_offset`]), so a crash replays it and the join is made again.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::history::SegmentJoin;
use super::record::{BagRecord, DeadLetterRecord, DeadReason, LabelRecord, Point, Rejected};
use super::serving::ServingModel;
use super::training::{Example, TrainingRuntime};
use super::window::ScoringModel;
use crate::config::TrainingConfig;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A label whose example could not be made yet.
pub struct PendingLabel {
    offset: i64,
    label: LabelRecord,
    labeled_at_ms: i64,
    since: Instant,
    raw: Vec<u8>,
}

/// One partition's waiting labels, oldest offset first.
#[derive(Default)]
pub struct WaitingLabels {
    queue: VecDeque<PendingLabel>,
}

impl WaitingLabels {
    /// Queues a label from the message at `offset` (Kafka timestamp `labeled_at_ms`).
    pub fn push(&mut self, offset: i64, label: LabelRecord, labeled_at_ms: i64, raw: &[u8]) {
        self.queue.push_back(PendingLabel {
            offset,
            label,
            labeled_at_ms,
            since: Instant::now(),
            raw: raw.to_vec(),
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
    Joined(Example),
    Wait,
    Dead(Rejected),
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
    serving: Arc<ServingModel>,
    bag_model: Option<Arc<ScoringModel>>,
}

impl LabelJoiner {
    pub fn new(
        training: Arc<TrainingRuntime>,
        cfg: TrainingConfig,
        serving: Arc<ServingModel>,
        bag_model: Option<Arc<ScoringModel>>,
    ) -> Self {
        Self {
            training,
            cfg,
            serving,
            bag_model,
        }
    }

    /// Keeps an accepted point (its value per channel) for labels that name its series.
    pub fn record_point(&self, pt: &Point) {
        let h = &self.training.history;
        if pt.rest.is_empty() {
            h.record(&pt.series_id, pt.ts_ms, &[pt.value]);
        } else {
            let values: Vec<f64> = std::iter::once(pt.value)
                .chain(pt.rest.iter().copied())
                .collect();
            h.record(&pt.series_id, pt.ts_ms, &values);
        }
    }

    /// Keeps a bag for labels that name it, and its inline label as an example.
    pub fn keep_bag(
        &self,
        b: &BagRecord,
        src: (&str, i32, i64),
        labeled_at_ms: i64,
        examples: &mut Vec<Example>,
    ) {
        self.training.bags.insert(&b.bag_id, b.dim, &b.instances);
        if let Some(label) = &b.label {
            examples.push(Example {
                key: b.bag_id.clone(),
                segment: None,
                label: label.clone(),
                dim: b.dim,
                values: b.instances.clone(),
                source_topic: src.0.to_string(),
                source_partition: src.1,
                source_offset: src.2,
                labeled_at_ms,
            });
        }
    }

    /// Joins the partition's waiting labels that can join now, in order; a label that waited
    /// longer than `training.label_wait_ms` (or can never join) becomes a dead letter.
    /// Stops at the first that must keep waiting, so the replay point stays exact.
    pub fn resolve(
        &self,
        waiting: &mut WaitingLabels,
        src: &LabelSource,
        examples: &mut Vec<Example>,
        dead: &mut Vec<DeadLetterRecord>,
    ) {
        let wait = Duration::from_millis(self.cfg.label_wait_ms);
        while let Some(l) = waiting.queue.front() {
            let outcome = match self.join(l) {
                LabelJoin::Wait if l.since.elapsed() < wait => break,
                LabelJoin::Wait => LabelJoin::Dead(Rejected {
                    reason: DeadReason::Unjoined,
                    detail: format!(
                        "the labeled segment's points did not all arrive within training.label_wait_ms = {} ms",
                        wait.as_millis()
                    ),
                }),
                other => other,
            };
            let l = waiting.queue.pop_front().expect("front seen");
            match outcome {
                LabelJoin::Joined(mut e) => {
                    e.source_topic = src.topic.to_string();
                    e.source_partition = src.partition;
                    examples.push(e);
                }
                LabelJoin::Dead(rej) => {
                    if l.offset >= src.emit_from {
                        dead.push(DeadLetterRecord::new(
                            src.topic,
                            src.partition,
                            l.offset,
                            &rej,
                            &l.raw,
                            now_ms(),
                        ));
                    }
                }
                LabelJoin::Wait => unreachable!("a waiting label stays queued"),
            }
        }
    }

    fn join(&self, l: &PendingLabel) -> LabelJoin {
        let t = &self.training;
        let (key, label, segment) = match &l.label {
            LabelRecord::Segment {
                series_id,
                start_ms,
                end_ms,
                label,
            } => (series_id, label, Some((*start_ms, *end_ms))),
            LabelRecord::Bag { bag_id, label } => (bag_id, label, None),
        };
        if self.cfg.freeze_classes {
            let model = match segment {
                Some(_) => Some(self.serving.load_full()),
                None => self.bag_model.clone(),
            };
            if let Some(m) = model {
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
            None => match t.bags.get(key) {
                Some(b) => b,
                None => {
                    return LabelJoin::Dead(Rejected {
                        reason: DeadReason::Unjoined,
                        detail: format!(
                            "bag '{key}' is not among the last {} bags (training.bag_cache)",
                            self.cfg.bag_cache
                        ),
                    })
                }
            },
        };
        LabelJoin::Joined(Example {
            key: key.clone(),
            segment,
            label: label.clone(),
            dim,
            values,
            source_topic: String::new(),
            source_partition: 0,
            source_offset: l.offset,
            labeled_at_ms: l.labeled_at_ms,
        })
    }
}

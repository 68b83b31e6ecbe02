//! The models' life: the training store of joined examples (`training`), retraining and
//! promotion (`trainer`), the versions on a registry (`registry`) that scorers follow
//! (`registry_poll`), and the compacted models topic (`models_topic`).

pub mod models_topic;
pub mod registry;
pub mod registry_poll;
pub mod trainer;
pub mod training;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A background thread of the model lifecycle (the trainer, the registry poller, the models
/// topic follower) that runs until its `stop` flag is set.
pub struct StoppableThread {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StoppableThread {
    pub fn new(stop: Arc<AtomicBool>, thread: JoinHandle<()>) -> Self {
        Self {
            stop,
            thread: Some(thread),
        }
    }

    /// Sets the flag and waits for the thread (a trainer finishes a run in progress).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Whether the thread has ended (before `stop`: it died, see `pipeline::watch_threads`).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }
}

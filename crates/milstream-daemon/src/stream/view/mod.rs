//! The live view (issue 70): a read-only page at `/`, where `/metrics` listens, that shows
//! the streams being classified and explained as it happens, the models' quality and the
//! pipeline's health, updated by server-sent events.
//!
//! ```text
//! worker --ViewBatch/dead letters--> feed.rs (bounded queue, dropped when full)
//!    --> aggregator task (here): state.rs (series, strips, drawings of watched series)
//!                                panels.rs (models and pipeline, from Metrics + Health, 1/s)
//!    --> events.rs (broadcast, bounded per page) --SSE--> the page (page/, assets.rs)
//! routes.rs: /, /view/app.js, /view/style.css, /view/api/series, /view/api/one, /view/events
//! ```
//!
//! In: the workers' predictions and dead letters, the metrics, readiness. Out: HTTP.
//! Owns: the view's state; it writes nothing the pipeline reads.

pub mod assets;
pub mod events;
pub mod feed;
pub mod legend;
pub mod load;
pub mod panels;
pub mod routes;
pub mod state;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use self::events::{Event, Events};
use self::feed::{FeedItem, ViewFeed};
use self::panels::Panels;
use self::state::ViewState;
use crate::config::ViewConfig;
use crate::http::Health;
use crate::metrics::Metrics;

/// Items the workers may queue ahead of the aggregator (one per message at most).
const FEED_QUEUE: usize = 4096;
/// How often changed rows and the summary go to the pages.
const TICK: Duration = Duration::from_millis(500);

/// The live view of one daemon: what the routes and the aggregator share.
pub struct ViewHub {
    pub cfg: ViewConfig,
    pub feed: Arc<ViewFeed>,
    state: Mutex<ViewState>,
    pub events: Arc<Events>,
    /// The newest models and pipeline panels, for a page that opens now.
    panels: Mutex<(Value, Value)>,
}

impl ViewHub {
    /// Starts the aggregator (a tokio task, until `stop`); the workers publish to
    /// [`ViewHub::feed`], the routes read the rest.
    pub fn start(
        cfg: &ViewConfig,
        metrics: Arc<Metrics>,
        health: Arc<Health>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Arc<Self> {
        let (tx, rx) = mpsc::channel(FEED_QUEUE);
        let hub = Arc::new(ViewHub {
            cfg: cfg.clone(),
            feed: Arc::new(ViewFeed::new(tx, cfg.max_id_bytes)),
            state: Mutex::new(ViewState::new(cfg)),
            events: Events::new(cfg.client_buffer, cfg.max_clients),
            panels: Mutex::new((Value::Null, Value::Null)),
        });
        tokio::spawn(aggregate(
            hub.clone(),
            rx,
            Panels::new(metrics, health),
            stop,
        ));
        hub
    }

    pub fn state(&self) -> MutexGuard<'_, ViewState> {
        // A panic while holding it left plain data behind: still readable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The events a page starts with: the summary, the panels, its series (if any).
    pub fn first_events(&self, key: Option<&str>) -> Vec<Event> {
        let mut out = vec![self.summary_event()];
        let (models, pipeline) = self
            .panels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if !models.is_null() {
            out.push(event("models", &models));
            out.push(event("pipeline", &pipeline));
        }
        if let Some(k) = key {
            out.push(event("series", &self.state().one(k)));
        }
        out
    }

    fn summary_event(&self) -> Event {
        let mut s = self.state().summary();
        s["clients"] = self.events.clients().into();
        s["clients_dropped"] = self
            .events
            .dropped
            .load(std::sync::atomic::Ordering::Relaxed)
            .into();
        s["feed_dropped"] = self
            .feed
            .dropped
            .load(std::sync::atomic::Ordering::Relaxed)
            .into();
        event("summary", &s)
    }

    /// Publishes the rows changed since the last tick and the summary.
    fn tick(&self) {
        let rows = self.state().take_changed();
        if !rows.is_empty() {
            self.events
                .publish("rows", Value::Array(rows).to_string(), None);
        }
        let s = self.summary_event();
        self.events.publish(s.name, s.data, None);
    }

    /// Reads and publishes the models and pipeline panels.
    fn read_panels(&self, panels: &mut Panels) {
        let (models, mut pipeline) = panels.read(chrono::Utc::now().timestamp_millis());
        pipeline["dead_latest"] = self.state().dead();
        self.events.publish("models", models.to_string(), None);
        self.events.publish("pipeline", pipeline.to_string(), None);
        *self.panels.lock().unwrap_or_else(|e| e.into_inner()) = (models, pipeline);
    }
}

fn event(name: &'static str, v: &Value) -> Event {
    Event {
        name,
        data: v.to_string(),
        key: None,
    }
}

/// The aggregator: applies the feed to the state, publishes drawings as they come, the
/// changed rows every tick and the panels every other tick, until `stop`.
async fn aggregate(
    hub: Arc<ViewHub>,
    mut rx: mpsc::Receiver<FeedItem>,
    mut panels: Panels,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(TICK);
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            item = rx.recv() => {
                let Some(item) = item else { return };
                let drawn = hub.state().apply(item);
                if let Some(e) = drawn {
                    let data = serde_json::to_string(&*e).unwrap_or_default();
                    hub.events.publish("explained", data, Some(e.key.clone()));
                }
            }
            _ = tick.tick() => {
                hub.tick();
                if ticks.is_multiple_of(2) {
                    hub.read_panels(&mut panels);
                }
                ticks += 1;
            }
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

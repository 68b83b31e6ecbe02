//! `[view]`: the live view served beside `/metrics` (`src/stream/view/`).

use serde::{Deserialize, Serialize};

/// The live view: a read-only page at `/` on `http.listen`, updated by server-sent events.
/// Everything it keeps is bounded here, whatever the input.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ViewConfig {
    /// Serve the page at `/` (with its events at `/view/events`) where `/metrics` listens;
    /// off: the scoring workers publish nothing to it.
    pub enabled: bool,
    /// Series and bags the page lists at most: past it the least recently scored leaves.
    pub max_series: usize,
    /// Predictions kept per series for its strip.
    pub recent_predictions: usize,
    /// Events queued per open page: a page that falls this far behind is disconnected (its
    /// browser reconnects and starts from the current state), never buffered further.
    pub client_buffer: usize,
    /// Pages open at once; more are refused (503).
    pub max_clients: usize,
    /// Bytes of an id shown: a longer id is cut at a character boundary and ends in a hash
    /// of the whole id, so two long ids stay apart.
    pub max_id_bytes: usize,
}

impl Default for ViewConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_series: 100_000,
            recent_predictions: 32,
            client_buffer: 256,
            max_clients: 32,
            max_id_bytes: 96,
        }
    }
}

impl ViewConfig {
    /// Every bound must hold something.
    pub(super) fn validate(&self) -> Result<(), (&'static str, String)> {
        let at_least = |key, v: usize, min: usize| {
            if v < min {
                Err((key, format!("must be >= {min}, got {v}")))
            } else {
                Ok(())
            }
        };
        at_least("view.max_series", self.max_series, 1)?;
        at_least("view.recent_predictions", self.recent_predictions, 1)?;
        at_least("view.client_buffer", self.client_buffer, 8)?;
        at_least("view.max_clients", self.max_clients, 1)?;
        at_least("view.max_id_bytes", self.max_id_bytes, 16)
    }
}

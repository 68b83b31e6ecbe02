//! The server-sent events of the live view. In: events the aggregator publishes once for
//! every page. Out: one SSE stream per open page, which starts with the current state.
//! Owns: the broadcast channel, the count of open pages.
//!
//! Bounded per page: each page's receiver holds `view.client_buffer` events; a page that
//! falls further behind (a slow or suspended browser) is disconnected at once instead of
//! being buffered for (its `EventSource` reconnects and starts from the current state).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use axum::response::sse;
use futures::Stream;
use tokio::sync::broadcast;

/// One event, serialised once for every page.
#[derive(Debug)]
pub struct Event {
    /// The SSE event name: `rows`, `summary`, `models`, `pipeline`, `series`, `explained`.
    pub name: &'static str,
    pub data: String,
    /// For one series' pages only (a drawing); None: for every page.
    pub key: Option<String>,
}

/// The pages' channel.
pub struct Events {
    tx: broadcast::Sender<Arc<Event>>,
    clients: AtomicUsize,
    max_clients: usize,
    /// Pages disconnected for falling behind.
    pub dropped: AtomicU64,
}

/// An open page's place among the clients: given back when its stream ends.
pub struct Seat {
    events: Arc<Events>,
    on_close: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.events.clients.fetch_sub(1, Ordering::Relaxed);
        if let Some(f) = self.on_close.take() {
            f();
        }
    }
}

impl Events {
    pub fn new(buffer: usize, max_clients: usize) -> Arc<Self> {
        Arc::new(Self {
            tx: broadcast::channel(buffer.max(1)).0,
            clients: AtomicUsize::new(0),
            max_clients,
            dropped: AtomicU64::new(0),
        })
    }

    /// Pages open now.
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// Sends `data` as event `name` to every page (or to `key`'s).
    pub fn publish(&self, name: &'static str, data: String, key: Option<String>) {
        // No page open: nothing to do (the error says only that).
        let _ = self.tx.send(Arc::new(Event { name, data, key }));
    }

    /// A seat and a receiver for a new page, or None when `view.max_clients` are open.
    pub fn join(self: &Arc<Self>) -> Option<(Seat, broadcast::Receiver<Arc<Event>>)> {
        let taken = self.clients.fetch_add(1, Ordering::Relaxed);
        let seat = Seat {
            events: self.clone(),
            on_close: None,
        };
        if taken >= self.max_clients {
            return None;
        }
        Some((seat, self.tx.subscribe()))
    }
}

impl Seat {
    /// Runs `f` when the page's stream ends.
    pub fn on_close(&mut self, f: impl FnOnce() + Send + 'static) {
        self.on_close = Some(Box::new(f));
    }
}

/// A page's stream: `first` (the current state), then every event for all pages or for
/// its series `key`, until it falls behind.
pub fn page_stream(
    seat: Seat,
    rx: broadcast::Receiver<Arc<Event>>,
    first: Vec<Event>,
    key: Option<String>,
) -> impl Stream<Item = Result<sse::Event, Infallible>> {
    let first: VecDeque<Arc<Event>> = first.into_iter().map(Arc::new).collect();
    futures::stream::unfold(
        (seat, rx, first, key),
        |(seat, mut rx, mut first, key)| async move {
            let e = loop {
                if let Some(e) = first.pop_front() {
                    break e;
                }
                match rx.recv().await {
                    Ok(e) if e.key.is_none() || e.key == key => break e,
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        seat.events.dropped.fetch_add(1, Ordering::Relaxed);
                        return None;
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            };
            let out = sse::Event::default().event(e.name).data(&e.data);
            Some((Ok(out), (seat, rx, first, key)))
        },
    )
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    /// A page that does not read is disconnected once it is `buffer` events behind, and
    /// its seat is given back; pages past `max_clients` are refused.
    #[tokio::test]
    async fn a_slow_page_is_dropped_not_buffered() {
        let events = Events::new(8, 1);
        let (seat, rx) = events.join().expect("a seat");
        assert!(events.join().is_none(), "one page at most");
        let stream = page_stream(seat, rx, vec![], None);
        for i in 0..100 {
            events.publish("rows", i.to_string(), None);
        }
        let got: Vec<_> = stream.collect().await;
        assert!(got.is_empty(), "{} events after falling behind", got.len());
        assert_eq!(events.dropped.load(Ordering::Relaxed), 1);
        assert_eq!(events.clients(), 0);
        assert!(events.join().is_some());
    }
}

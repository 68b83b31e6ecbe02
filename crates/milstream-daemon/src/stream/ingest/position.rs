//! Where a record came from, the one type every stage passes it as.

use std::sync::Arc;

/// A partition of a topic, by name and number.
pub type PartitionKey = (String, i32);

/// Where a record came from: its topic (the consumer's interned name), partition and
/// offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position<'a> {
    pub topic: &'a Arc<str>,
    pub partition: i32,
    pub offset: i64,
}

impl<'a> Position<'a> {
    pub fn new(topic: &'a Arc<str>, partition: i32, offset: i64) -> Self {
        Position {
            topic,
            partition,
            offset,
        }
    }

    /// A position on a topic named by a literal, for tests (the name is interned once).
    #[cfg(test)]
    pub fn on(topic: &'static str, partition: i32, offset: i64) -> Position<'static> {
        use std::collections::HashMap;
        use std::sync::{Mutex, OnceLock};
        static NAMES: OnceLock<Mutex<HashMap<&'static str, &'static Arc<str>>>> = OnceLock::new();
        let mut names = NAMES.get_or_init(Default::default).lock().unwrap();
        let name = names
            .entry(topic)
            .or_insert_with(|| Box::leak(Box::new(Arc::from(topic))));
        Position::new(name, partition, offset)
    }
}

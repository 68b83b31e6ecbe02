//! The label join: labels matched to the points or bag they describe (`labels`), from a
//! recent raw history of every series and bag (`history`, its closed blocks encoded,
//! indexed and logged to local disk: `history_blocks`, `history_index`, `history_log`),
//! kept replayable while a label still needs them (`holds`).

pub mod history;
pub(crate) mod history_blocks;
pub(crate) mod history_index;
pub(crate) mod history_log;
pub(crate) mod holds;
pub(crate) mod labels;

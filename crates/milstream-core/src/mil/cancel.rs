//! Cancelling fits in progress. A fit takes a [`Cancel`] token when it starts; `cancel_all`
//! ends every fit that started before it at its next check (a boosting round, a search's
//! grid point) with [`MilError::Cancelled`]. Process-wide, as the Ctrl-C that calls it
//! (the Python package's KeyboardInterrupt) is; fits started afterwards run.

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::{MilError, Result};

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Ends every fit in progress at its next check.
pub fn cancel_all() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// The generation a fit started in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancel(u64);

impl Cancel {
    /// A token for a fit starting now.
    pub fn now() -> Self {
        Self(GENERATION.load(Ordering::SeqCst))
    }

    /// Err once `cancel_all` has run since the token was taken.
    pub fn check(self) -> Result<()> {
        if GENERATION.load(Ordering::SeqCst) == self.0 {
            Ok(())
        } else {
            Err(MilError::Cancelled)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_cancelled_by_a_later_cancel_only() {
        let before = Cancel::now();
        assert!(before.check().is_ok());
        cancel_all();
        assert!(matches!(before.check(), Err(MilError::Cancelled)));
        assert!(Cancel::now().check().is_ok());
    }
}

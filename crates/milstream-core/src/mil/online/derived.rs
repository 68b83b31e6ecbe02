//! Data derived once from a fitted model and kept beside it (the incremental scorer's plan),
//! typed by its user: this module knows neither, so the model can own the cache without
//! importing the module that fills it.

use std::any::Any;
use std::sync::OnceLock;

/// A value computed on first use from the model that holds it. Derived data: two models
/// compare equal whatever their caches hold, and a clone starts empty (it recomputes).
#[derive(Default)]
pub struct Derived(OnceLock<Box<dyn Any + Send + Sync>>);

impl Derived {
    /// The cached `T`, made by `make` on first use. Each model keeps one kind of derived
    /// value here; asking for another type is a bug in the caller.
    pub fn get_or_init<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> &T {
        self.0
            .get_or_init(|| Box::new(make()))
            .downcast_ref::<T>()
            .expect("a model's derived cache holds one type")
    }
}

impl Clone for Derived {
    fn clone(&self) -> Self {
        Derived::default()
    }
}

impl PartialEq for Derived {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Derived(made)"
        } else {
            "Derived(empty)"
        })
    }
}

//! Memory bounded by configuration, not by input (issue 68): what loading the training store
//! holds at its peak, measured by a counting allocator. The allocator is this binary's and
//! this is its one test, so no other test's allocations mix into the figure.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use milstream::stream::lifecycle::training::load_store_in;
use milstream::stream::output::arrow::examples::Example;
use milstream::stream::output::sink::parquet::write_examples;
use milstream::stream::output::sink::Segment;
use milstream::stream::output::store::Store;

/// The system allocator, counting the bytes live now and their peak since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn example(i: i64, values: usize) -> Example {
    Example {
        key: format!("s{i}"),
        segment: Some((i, i + 10)),
        label: "x".into(),
        dim: 1,
        values: vec![i as f64; values],
        source_topic: "labels".into(),
        source_partition: 0,
        source_offset: i,
        labeled_at_ms: 1_700_000_000_000 + i,
        model: None,
    }
}

/// Finding 1 (loading the training store): 200 files of 10 examples of 1,000 values each
/// (16 MB of examples) load into the newest 10 holding a small multiple of one file's
/// examples at the peak, not the whole store; the result is the newest 10. At 593c8e9
/// every example within `max_age` was held before the trim: the peak passed 16 MB.
#[test]
fn loading_the_store_holds_max_examples_not_the_store() {
    const FILES: i64 = 200;
    const PER_FILE: i64 = 10;
    const VALUES: usize = 1_000;
    let dir = std::env::temp_dir().join(format!("milstream-bounds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::Local(dir.clone());
    for f in 0..FILES {
        let first = f * PER_FILE;
        let mut seg = Segment::new("labels", 0, first, 1_700_000_000_000);
        seg.last_offset = first + PER_FILE - 1;
        seg.examples = (first..first + PER_FILE)
            .map(|i| example(i, VALUES))
            .collect();
        write_examples(&store, &seg, false).unwrap();
    }
    let store_bytes = (FILES * PER_FILE) as usize * VALUES * 8;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let loaded = load_store_in(&store, 10, None).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let keys: Vec<String> = loaded.iter().map(|e| e.key.clone()).collect();
    let newest: Vec<String> = (FILES * PER_FILE - 10..FILES * PER_FILE)
        .map(|i| format!("s{i}"))
        .collect();
    assert_eq!(keys, newest);
    assert!(
        peak < store_bytes / 4,
        "loading held {peak} bytes at its peak for a store of {store_bytes} bytes of examples"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

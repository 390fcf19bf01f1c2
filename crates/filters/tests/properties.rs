//! Properties of the stored form (RDB) and the dump (SCANDUMP/LOADCHUNK), over generated inputs:
//! any filter loads back bit-identically, and any input that is not a valid one is refused
//! without panicking and without allocating more than its own length justifies.

use filters::bloom::dump::{chunk_offset, header, next_iterator, Header};
use filters::bloom::stored::{from_bytes, to_bytes};
use filters::bloom::window::{Window, Windowed, WindowedShape};
use filters::bloom::{Chain, Filter, Growth};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the bytes each thread allocates, to measure the peak of one decode. Per thread: proptest
/// generates the next inputs of other tests on other threads meanwhile.
struct Counting;

thread_local! {
    /// Bytes this thread holds (allocated minus freed; negative once it frees what it had
    /// before), and the most it held since the last `peak_of` began.
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(bytes: isize) {
    // try_with: the thread's counters may already be gone while it exits.
    let _ = CURRENT.try_with(|current| {
        let now = current.get() + bytes;
        current.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: forwards to the system allocator unchanged; the counters are plain thread-locals that
// never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes `run` had allocated at once, beyond what its thread held before it.
fn peak_of<T>(run: impl FnOnce() -> T) -> (T, usize) {
    let before = CURRENT.with(Cell::get);
    PEAK.with(|peak| peak.set(before));
    let result = run();
    (result, (PEAK.with(Cell::get) - before).max(0) as usize)
}

/// A filter of any shape, with some items in it.
fn any_chain() -> impl Strategy<Value = Chain> {
    (
        1u64..3000,
        prop_oneof![Just(0.5), Just(0.1), Just(0.01), 1e-6f64..0.9],
        prop_oneof![
            Just(Growth::Fixed),
            (1u16..6).prop_map(|e| Growth::Scaling { expansion: e })
        ],
        0u32..4000,
    )
        .prop_map(|(capacity, error, growth, items)| {
            let mut chain = Chain::new(capacity, error, growth, u64::MAX).unwrap();
            for i in 0..items {
                if chain.add(&i.to_le_bytes(), u64::MAX).is_err() {
                    break;
                }
            }
            chain
        })
}

/// A windowed filter of any shape, with items added over a few windows.
fn any_windowed() -> impl Strategy<Value = Windowed> {
    (
        1u64..2000,
        prop_oneof![Just(0.1), Just(0.01), 1e-5f64..0.5],
        prop_oneof![
            Just(Growth::Fixed),
            (1u16..6).prop_map(|e| Growth::Scaling { expansion: e })
        ],
        1u64..1000,
        0u32..3000,
        1u64..20,
    )
        .prop_map(|(capacity, error, growth, window, items, step)| {
            let window = Window::seconds(window).unwrap();
            let shape = WindowedShape::new(capacity, error, growth, window).unwrap();
            let mut windowed = Windowed::new(shape);
            let start = 1_800_000_000_000;
            for i in 0..items {
                let now = start + u64::from(i) * step * window.slot_millis() / 16;
                if windowed.add(&i.to_le_bytes(), now, u64::MAX).is_err() {
                    break;
                }
            }
            windowed
        })
}

/// A filter of any kind.
fn any_filter() -> impl Strategy<Value = Filter> {
    prop_oneof![
        any_chain().prop_map(Filter::Chain),
        any_windowed().prop_map(Filter::from)
    ]
}

/// A filter's dump, rebuilt the way BF.LOADCHUNK rebuilds it.
fn through_dump(filter: &Filter) -> Filter {
    let mut loaded = Header::parse(&header(filter))
        .unwrap()
        .into_filter()
        .unwrap();
    for (offset, chunk) in filter.loaded_chunks() {
        let iterator = next_iterator(offset, chunk.len());
        loaded
            .load_chunk(chunk_offset(iterator, chunk.len()).unwrap(), &chunk)
            .unwrap();
    }
    loaded
}

/// Damage to a valid input: a flipped byte, a cut, a duplicated or dropped slice.
fn damaged(input: Vec<u8>, kind: u8, at: usize, value: u8) -> Vec<u8> {
    let mut bytes = input;
    if bytes.is_empty() {
        return bytes;
    }
    let at = at % bytes.len();
    match kind % 4 {
        0 => bytes[at] ^= value | 1,
        1 => bytes.truncate(at),
        2 => {
            let slice = bytes[at..].iter().take(16).copied().collect::<Vec<_>>();
            bytes.splice(at..at, slice);
        }
        _ => {
            let end = (at + 1 + usize::from(value)).min(bytes.len());
            bytes.drain(at..end);
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_filter_round_trips_through_rdb_and_dump_bit_identically(filter in any_filter()) {
        let stored = from_bytes(&to_bytes(&filter));
        prop_assert_eq!(stored.as_ref(), Ok(&filter));
        prop_assert_eq!(&through_dump(&filter), &filter);
    }

    #[test]
    fn garbage_is_refused_within_its_size(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let (stored, peak) = peak_of(|| from_bytes(&bytes).is_ok());
        prop_assert!(peak <= 8 * bytes.len() + 4096, "stored: {} bytes for {}", peak, bytes.len());
        let (parsed, peak) = peak_of(|| Header::parse(&bytes).is_ok());
        prop_assert!(peak <= 2 * bytes.len() + 1024, "header: {} bytes for {}", peak, bytes.len());
        // Random bytes are never a valid filter.
        prop_assert!(!stored && !parsed);
    }

    #[test]
    fn damaged_filters_are_refused_or_still_canonical_within_their_size(
        filter in any_filter(),
        kind in any::<u8>(),
        at in any::<usize>(),
        value in any::<u8>(),
    ) {
        let bytes = damaged(to_bytes(&filter), kind, at, value);
        let (loaded, peak) = peak_of(|| from_bytes(&bytes));
        // What a load allocates is the filter its input carries: at most a few times its size.
        prop_assert!(peak <= 8 * bytes.len() + 4096, "{} bytes for {}", peak, bytes.len());
        if let Ok(loaded) = loaded {
            // A flipped bit-array byte is still a valid filter, and re-encodes to the same input.
            prop_assert_eq!(to_bytes(&loaded), bytes);
        }
        let head = damaged(header(&filter), kind, at, value);
        let (parsed, peak) = peak_of(|| Header::parse(&head));
        prop_assert!(peak <= 2 * head.len() + 1024, "{} bytes for {}", peak, head.len());
        if let Ok(parsed) = parsed {
            // A damage that still describes a valid filter (a byte of an item count, say):
            // that filter's header is the damaged input, byte for byte.
            if parsed.planned_bytes() < 64 << 20 {
                prop_assert_eq!(header(&parsed.into_filter().unwrap()), head);
            }
        }
    }
}

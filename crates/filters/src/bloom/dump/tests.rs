//! Dumps: round trips, chunk boundaries, the restoring state, header checks, iterator tags.
use super::*;
use crate::bloom::window::{Rule, Window};

const NOW: u64 = 1_800_000_000_000;

fn filled(capacity: u64, growth: Growth, items: u32) -> Filter {
    let mut chain = Chain::new(capacity, 0.01, growth, u64::MAX).unwrap();
    for i in 0..items {
        chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
    }
    Filter::Chain(chain)
}

/// A windowed filter with items in `slots` slots.
fn windowed(slots: u64) -> Filter {
    let window = Window::seconds(100).unwrap();
    let shape = WindowedShape::new(400, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
    let mut filter = Filter::from(Windowed::new(shape));
    for i in 0..slots * 150 {
        let now = NOW + i * window.slot_millis() / 150;
        filter.add(&i.to_le_bytes(), now, u64::MAX).unwrap();
    }
    filter
}

/// Dumps a filter the way SCANDUMP would and loads it the way LOADCHUNK would.
fn round_trip(chain: &Filter) -> Filter {
    let mut loaded = Header::parse(&header(chain))
        .unwrap()
        .into_filter()
        .unwrap();
    let mut iterator = 1;
    let mut chunks = 0;
    while let Some(chunk) = chain.chunk(iterator - 1) {
        if chunk.is_empty() {
            break;
        }
        let next = next_iterator(iterator - 1, chunk.len());
        let offset = chunk_offset(next, chunk.len()).unwrap();
        loaded.load_chunk(offset, &chunk).unwrap();
        iterator = next;
        chunks += 1;
    }
    assert_eq!(iterator - 1, chain.dump_len());
    assert!(chunks >= chain.dumped_sub_filters().count());
    loaded
}

#[test]
fn dumps_load_back_bit_identically() {
    for chain in [
        filled(100, Growth::Scaling { expansion: 2 }, 0),
        filled(10, Growth::Scaling { expansion: 2 }, 300),
        filled(10, Growth::Scaling { expansion: 1 }, 60),
        filled(1000, Growth::Fixed, 1000),
        windowed(0),
        windowed(1),
        windowed(7),
    ] {
        assert_eq!(round_trip(&chain), chain);
    }
}

#[test]
fn chunks_never_pass_16_mib_or_span_two_sub_filters() {
    // 20 million items at 1%: a first sub-filter of 27.6 MB, cut into 16 MiB and the rest.
    let mut chain = Filter::Chain(
        Chain::new(20_000_000, 0.01, Growth::Scaling { expansion: 2 }, u64::MAX).unwrap(),
    );
    let first = chain
        .dumped_sub_filters()
        .next()
        .unwrap()
        .shape()
        .bit_bytes();
    assert_eq!(chain.chunk(0).unwrap().len() as u64, CHUNK_BYTES);
    assert_eq!(
        chain.chunk(CHUNK_BYTES).unwrap().len() as u64,
        first - CHUNK_BYTES
    );
    assert!(chain.chunk(1).is_none());
    assert!(chain.chunk(first).is_none());
    chain.add(b"x", NOW, u64::MAX).unwrap();
    assert_eq!(round_trip(&chain), chain);
}

#[test]
fn chunks_must_fill_their_slot_exactly() {
    let source = filled(100, Growth::Scaling { expansion: 2 }, 10);
    let mut chain = Header::parse(&header(&source))
        .unwrap()
        .into_filter()
        .unwrap();
    let before = chain.clone();
    let len = chain.dump_len() as usize;
    assert!(chain.load_chunk(0, &vec![0xff; len - 1]).is_err());
    assert!(chain.load_chunk(0, &vec![0xff; len + 1]).is_err());
    assert!(chain.load_chunk(0, &[]).is_err());
    assert_eq!(
        chain.load_chunk(8, &vec![0xff; len - 8]),
        Err(FilterError::ChunkOutOfOrder { expected: 0 })
    );
    assert!(chain.load_chunk(u64::MAX, &[0xff]).is_err());
    assert_eq!(chain, before);
    assert_eq!(chunk_offset(5, 10), None);
    assert_eq!(chunk_offset(11, 10), Some(0));
}

#[test]
fn only_a_chain_being_restored_takes_data_chunks_in_order_each_once() {
    // 20 million items at 1%: one sub-filter of 27.6 MB, two chunks.
    let mut source = Filter::Chain(
        Chain::new(20_000_000, 0.01, Growth::Scaling { expansion: 2 }, u64::MAX).unwrap(),
    );
    source.add(b"x", NOW, u64::MAX).unwrap();
    let chunks: Vec<(u64, Vec<u8>)> = source
        .loaded_chunks()
        .map(|(offset, bytes)| (offset, bytes.into_owned()))
        .collect();
    assert_eq!(chunks.len(), 2);
    // A chain in use takes none, not even its own.
    let mut in_use = source.clone();
    assert_eq!(
        in_use.load_chunk(0, &chunks[0].1),
        Err(FilterError::NotRestoring)
    );
    assert_eq!(in_use, source);
    let mut restored = Header::parse(&header(&source))
        .unwrap()
        .into_filter()
        .unwrap();
    assert_eq!(restored.restoring(), Some(0));
    // Out of order, then in order, then the same chunk again.
    assert_eq!(
        restored.load_chunk(chunks[1].0, &chunks[1].1),
        Err(FilterError::ChunkOutOfOrder { expected: 0 })
    );
    restored.load_chunk(0, &chunks[0].1).unwrap();
    assert_eq!(restored.restoring(), Some(CHUNK_BYTES));
    assert_eq!(
        restored.load_chunk(0, &chunks[0].1),
        Err(FilterError::ChunkOutOfOrder {
            expected: CHUNK_BYTES
        })
    );
    // Half restored: its own chunks rebuild exactly this state.
    let mut half = Header::parse(&header(&restored))
        .unwrap()
        .into_filter()
        .unwrap();
    for (offset, bytes) in restored.loaded_chunks() {
        half.load_chunk(offset, &bytes).unwrap();
    }
    assert_eq!(half, restored);
    // The last chunk ends the restore; then no chunk is taken any more.
    restored.load_chunk(chunks[1].0, &chunks[1].1).unwrap();
    assert_eq!(restored.restoring(), None);
    assert_eq!(restored, source);
    assert_eq!(
        restored.load_chunk(chunks[1].0, &chunks[1].1),
        Err(FilterError::NotRestoring)
    );
}

#[test]
fn headers_are_checked_field_by_field() {
    let chain = filled(10, Growth::Scaling { expansion: 2 }, 100);
    let good = header(&chain);
    assert!(Header::parse(&good).is_ok());
    assert_eq!(
        Header::parse(&good).unwrap().planned_bytes(),
        chain.planned_size()
    );
    let patched = |at: usize, bytes: &[u8]| {
        let mut forged = good.clone();
        forged[at..at + bytes.len()].copy_from_slice(bytes);
        Header::parse(&forged)
    };
    let entry = |i: usize, field: usize| 24 + i * ENTRY_LEN + field;
    let cases: Vec<(&str, Result<Header, FilterError>)> = vec![
        ("magic", patched(0, b"RedisBF!")),
        ("version", patched(8, &2u32.to_le_bytes())),
        ("family", patched(12, &2u32.to_le_bytes())),
        (
            "family without its options",
            patched(12, &1u32.to_le_bytes()),
        ),
        (
            "expansion over the bound",
            patched(16, &40000u32.to_le_bytes()),
        ),
        (
            "expansion not the one used",
            patched(16, &3u32.to_le_bytes()),
        ),
        ("nonscaling with several", patched(16, &0u32.to_le_bytes())),
        ("count zero", patched(20, &0u32.to_le_bytes())),
        ("count too high", patched(20, &9u32.to_le_bytes())),
        ("capacity", patched(entry(0, 0), &11u64.to_le_bytes())),
        (
            "error",
            patched(entry(0, 8), &0.02f64.to_bits().to_le_bytes()),
        ),
        (
            "error nan",
            patched(entry(0, 8), &f64::NAN.to_bits().to_le_bytes()),
        ),
        ("hashes", patched(entry(0, 16), &9u32.to_le_bytes())),
        ("bits", patched(entry(0, 20), &192u64.to_le_bytes())),
        (
            "items over capacity",
            patched(entry(0, 28), &11u64.to_le_bytes()),
        ),
        ("older not full", patched(entry(0, 28), &9u64.to_le_bytes())),
        ("truncated", Header::parse(&good[..good.len() - 1])),
        ("empty", Header::parse(&[])),
    ];
    for (what, parsed) in cases {
        assert!(parsed.is_err(), "{what} was accepted");
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(Header::parse(&longer).is_err());
}

/// A windowed filter's header, and the same with `bytes` written at `at`, parsed.
fn windowed_forgery() -> (Filter, impl Fn(usize, &[u8]) -> Result<Header, FilterError>) {
    let filter = windowed(3);
    let good = header(&filter);
    assert_eq!(
        Header::parse(&good).unwrap().planned_bytes(),
        filter.planned_size()
    );
    let patched = move |at: usize, bytes: &[u8]| {
        let mut forged = good.clone();
        forged[at..at + bytes.len()].copy_from_slice(bytes);
        Header::parse(&forged)
    };
    (filter, patched)
}

fn corrupt(what: &'static str) -> Result<Header, FilterError> {
    Err(FilterError::Corrupt(what))
}

// Offsets: magic 8, version 4, window 8 (12), capacity 8 (20), error 8 (28), expansion 4 (36),
// count 4 (40) = 44; then per generation: slot 8, rule 4, budget 8, first 4, count 4 = 28, and 44
// bytes a part (capacity 8, error 8, hashes 4, bits 8, items 8, expiry 8).
const FIRST_GENERATION: usize = 44;
const FIRST_PART: usize = FIRST_GENERATION + 28;

#[test]
fn windowed_header_parameters_are_checked_field_by_field() {
    let (_, patched) = windowed_forgery();
    let cases = [
        (
            "window zero",
            12,
            0u64.to_le_bytes().to_vec(),
            "window out of range",
        ),
        (
            "window too long",
            12,
            (u64::MAX / 2).to_le_bytes().to_vec(),
            "window out of range",
        ),
        (
            "capacity",
            20,
            401u64.to_le_bytes().to_vec(),
            "a part not sized as its generation sizes it",
        ),
        (
            "error",
            28,
            0.02f64.to_bits().to_le_bytes().to_vec(),
            "a part not sized as its generation sizes it",
        ),
        (
            "generation count over five",
            40,
            20_000u32.to_le_bytes().to_vec(),
            "more generations than a windowed filter keeps (5)",
        ),
    ];
    for (what, at, bytes, expected) in cases {
        assert_eq!(patched(at, &bytes), corrupt(expected), "{what}");
    }
}

#[test]
fn a_windowed_part_sized_at_the_optimum_is_refused() {
    // Parts are lean (fewer hashes): one stored with the optimal hash count, as builds before
    // it wrote them, is refused (this small part has the same bit count either way).
    let (filter, patched) = windowed_forgery();
    let Filter::Windowed(inner) = &filter else {
        unreachable!()
    };
    let lean = *inner.generations()[0].parts()[0].filter().shape();
    let optimal = Shape::new(lean.capacity, lean.error).unwrap();
    assert_eq!((lean.hash_count, optimal.hash_count), (7, 10));
    assert_eq!(
        patched(FIRST_PART + 16, &optimal.hash_count.to_le_bytes()),
        corrupt("a part not sized as its generation sizes it")
    );
}

#[test]
fn windowed_header_generations_are_checked_field_by_field() {
    let (filter, patched) = windowed_forgery();
    let Filter::Windowed(inner) = &filter else {
        unreachable!()
    };
    let later = inner.generations()[1].slot() + 1;
    let expiry = inner.generations()[0].parts()[0].expires_at();
    let (generation, part) = (FIRST_GENERATION, FIRST_PART);
    let cases = [
        (
            "slot out of order",
            generation,
            later.to_le_bytes().to_vec(),
            "generations out of order",
        ),
        (
            "slot at the end of time",
            generation,
            u64::MAX.to_le_bytes().to_vec(),
            "generations out of order",
        ),
        (
            "rule",
            generation + 8,
            7u32.to_le_bytes().to_vec(),
            "unknown generation rule",
        ),
        (
            "budget over the capacity",
            generation + 12,
            401u64.to_le_bytes().to_vec(),
            "a generation's budget over the capacity",
        ),
        (
            "no parts",
            generation + 24,
            0u32.to_le_bytes().to_vec(),
            "a generation without sub-filters",
        ),
        (
            "part capacity",
            part,
            1000u64.to_le_bytes().to_vec(),
            "a part not sized as its generation sizes it",
        ),
        (
            "items over capacity",
            part + 28,
            1000u64.to_le_bytes().to_vec(),
            "more items than capacity",
        ),
        (
            "expiry a slot late",
            part + 36,
            (expiry + 25_000).to_le_bytes().to_vec(),
            "a part's expiry outside its generation's slot",
        ),
        (
            "expiry before its slot",
            part + 36,
            (expiry - 100_000).to_le_bytes().to_vec(),
            "a part's expiry outside its generation's slot",
        ),
    ];
    for (what, at, bytes, expected) in cases {
        assert_eq!(patched(at, &bytes), corrupt(expected), "{what}");
    }
    let good = header(&filter);
    assert_eq!(
        Header::parse(&good[..good.len() - 1]),
        corrupt("header length does not match its parts")
    );
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(
        Header::parse(&longer),
        corrupt("header length does not match its generations")
    );
}

/// Five generations over five slots, the oldest taking its items at the end of its slot.
fn spanning() -> Windowed {
    let window = Window::seconds(100).unwrap();
    let shape = WindowedShape::new(400, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
    let slot = window.slot_millis();
    let start = NOW / slot * slot;
    let mut filter = Windowed::new(shape);
    for k in 0..5u64 {
        let at = start + (k + 1) * slot - 1;
        filter
            .add(&k.to_le_bytes(), at.min(start + 4 * slot), u64::MAX)
            .unwrap();
    }
    assert_eq!(filter.generations().len(), 5);
    filter
}

#[test]
fn a_header_with_more_generations_than_a_filter_keeps_is_refused() {
    // Six generations of one part each, in six consecutive slots: the count, and then the span.
    let filter = Filter::from(spanning());
    let good = header(&filter);
    let mut forged = good.clone();
    forged[40..44].copy_from_slice(&6u32.to_le_bytes());
    let generation_len = (good.len() - 44) / 5;
    let last = good[good.len() - generation_len..].to_vec();
    let mut sixth = last.clone();
    let slot = u64::from_le_bytes(last[..8].try_into().unwrap()) + 1;
    sixth[..8].copy_from_slice(&slot.to_le_bytes());
    forged.extend_from_slice(&sixth);
    assert_eq!(
        Header::parse(&forged),
        Err(FilterError::Corrupt(
            "more generations than a windowed filter keeps (5)"
        ))
    );
    // Five generations that span six slots.
    let mut spread = good.clone();
    let newest = good.len() - generation_len;
    spread[newest..newest + 8].copy_from_slice(&slot.to_le_bytes());
    assert_eq!(
        Header::parse(&spread),
        Err(FilterError::Corrupt(
            "generations span more than a window and its slack"
        ))
    );
}

/// The first release's dump header (version 2) of a windowed filter whose generations are
/// `chains`, each a slot and its sub-filters.
fn first_release_header(shape: &WindowedShape, chains: &[(u64, Vec<SubFilter>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&shape.window.as_seconds().to_le_bytes());
    out.extend_from_slice(&shape.capacity.to_le_bytes());
    out.extend_from_slice(&shape.error.to_bits().to_le_bytes());
    out.extend_from_slice(&expansion_field(shape.growth).to_le_bytes());
    out.extend_from_slice(&(chains.len() as u32).to_le_bytes());
    for (slot, filters) in chains {
        out.extend_from_slice(&slot.to_le_bytes());
        out.extend_from_slice(&(filters.len() as u32).to_le_bytes());
        push_entries(&mut out, filters);
    }
    out
}

#[test]
fn the_first_releases_windowed_headers_still_load_as_generations_that_expire_whole() {
    let window = Window::seconds(100).unwrap();
    let shape = WindowedShape::new(16, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
    let first = shape.part_shape(Rule::Legacy, 0).unwrap();
    let second = shape.part_shape(Rule::Legacy, 1).unwrap();
    let slot = NOW / window.slot_millis();
    let full = SubFilter::new(first).unwrap().with_items(first.capacity);
    let chains = vec![(
        slot,
        vec![full, SubFilter::new(second).unwrap().with_items(3)],
    )];
    let bytes = first_release_header(&shape, &chains);
    let loaded = Header::parse(&bytes).unwrap().into_filter().unwrap();
    let Filter::Windowed(windowed) = &loaded else {
        panic!("not windowed")
    };
    let generation = &windowed.generations()[0];
    assert_eq!(generation.rule(), Rule::Legacy);
    assert_eq!(generation.parts().len(), 2);
    for part in generation.parts() {
        assert_eq!(part.expires_at(), shape.expiry(slot));
    }
    // Written back as version 3, and read again the same.
    let again = Header::parse(&header(&loaded))
        .unwrap()
        .into_filter()
        .unwrap();
    assert_eq!(again, loaded);
    // One at an error rate the first release took and this one does not make (below today's
    // floor): it loads, and loads again from the header it is saved as.
    let tiny = WindowedShape::stored(16, 3.4e-307, Growth::Scaling { expansion: 16 }, window);
    let tiny = tiny.unwrap();
    assert!(WindowedShape::new(16, 3.4e-307, Growth::Scaling { expansion: 16 }, window).is_err());
    let first = tiny.part_shape(Rule::Legacy, 0).unwrap();
    let old = vec![(slot, vec![SubFilter::new(first).unwrap().with_items(1)])];
    let loaded = Header::parse(&first_release_header(&tiny, &old))
        .unwrap()
        .into_filter()
        .unwrap();
    let again = Header::parse(&header(&loaded))
        .unwrap()
        .into_filter()
        .unwrap();
    assert_eq!(again, loaded);
    assert_eq!(
        crate::bloom::stored::from_bytes(&crate::bloom::stored::to_bytes(&loaded)),
        Ok(loaded)
    );
    // The first release's checks hold: no chain that does not follow its growth rule.
    let mut wrong = chains.clone();
    wrong[0].1.swap(0, 1);
    assert!(Header::parse(&first_release_header(&shape, &wrong)).is_err());
}

#[test]
fn a_windowed_dump_is_tagged_by_its_oldest_part_and_a_chains_is_not() {
    let chain = filled(100, Growth::Scaling { expansion: 2 }, 10);
    assert_eq!(dump_tag(&chain), 0);
    assert_eq!(split_iterator(tagged(0, 12345)), (0, 12345));
    let mut filter = Filter::from(spanning());
    let tag = dump_tag(&filter);
    assert!((1..=32767).contains(&tag));
    assert_eq!(split_iterator(tagged(tag, 12345)), (tag, 12345));
    assert!(tagged(tag, 1) < 1 << 53);
    assert!(tagged(32767, (1 << 38) - 1) < 1 << 53);
    // A header-built copy has the same tag; new parts at the end leave it; the oldest part's
    // expiry changes it.
    let copy = Header::parse(&header(&filter))
        .unwrap()
        .into_filter()
        .unwrap();
    assert_eq!(dump_tag(&copy), tag);
    let Filter::Windowed(inner) = &filter else {
        unreachable!()
    };
    let newest = inner.generations()[4].slot() * inner.shape().window.slot_millis();
    let oldest_expiry = inner.next_expiry().unwrap();
    let empty = Filter::from(Windowed::new(*inner.shape()));
    for i in 0..200u64 {
        filter
            .add(&(1000 + i).to_le_bytes(), newest, u64::MAX)
            .unwrap();
    }
    assert_eq!(dump_tag(&filter), tag);
    filter.expire(oldest_expiry);
    assert_ne!(dump_tag(&filter), tag);
    assert_ne!(dump_tag(&empty), tag);
}

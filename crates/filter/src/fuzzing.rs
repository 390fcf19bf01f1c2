//! Entry points for the fuzzers (`fuzz/`) and for the test that replays their corpora in
//! `make test`: each takes arbitrary bytes and must never panic.

use crate::dump::{chunk_offset, header, split_iterator, Header};
use crate::redisbloom::load_rdb;
use crate::stored::{from_bytes, load, to_bytes, ByteFields, Revision};

/// The time the fuzzed filters are asked at (a windowed filter's generations may be live or not).
const NOW: u64 = 1_800_000_000_000;

/// Headers describing more than this are refused here, as BF.LOADCHUNK refuses them past
/// bf.max-filter-bytes (the fuzzer's memory is not the point).
const LIMIT: u64 = 64 << 20;

/// BF.LOADCHUNK's decoding. Input: a little-endian u16 header length, the header, then repeated
/// (u64 iterator, u16 length, bytes) data chunks, the iterators tagged as a windowed filter's
/// (see `crate::dump`) or not. A filter that loads must answer lookups and adds, and check its
/// clock.
pub fn chunks(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (header, mut rest) = rest.split_at(len);
    let Ok(header) = Header::parse(header) else {
        return;
    };
    if header.planned_bytes() > LIMIT {
        return;
    }
    let Ok(mut filter) = header.into_filter() else {
        return;
    };
    // Whatever header made it (ours or RedisBloom's), the filter's own header reads back.
    assert!(Header::parse(&crate::dump::header(&filter)).is_ok());
    let _ = (filter.capacity(), filter.items(NOW));
    while let Some((iterator, tail)) = rest.split_first_chunk::<8>() {
        let Some((len, tail)) = tail.split_first_chunk::<2>() else {
            break;
        };
        let len = usize::from(u16::from_le_bytes(*len)).min(tail.len());
        let (chunk, tail) = tail.split_at(len);
        let (_, position) = split_iterator(u64::from_le_bytes(*iterator));
        if let Some(offset) = chunk_offset(position, chunk.len()) {
            let _ = filter.load_chunk(offset, chunk);
        }
        rest = tail;
    }
    if let crate::Filter::Windowed(windowed) = &filter {
        let _ = windowed.check_clock(NOW);
    }
    let _ = filter.contains(b"probe", NOW);
    let _ = filter.add(b"probe", NOW, LIMIT);
}

/// The stored form of older revisions (100 to 103: chains before the restoring state, the first
/// release's windowed filters, and filters before layouts): the first byte picks the revision,
/// the rest are fields. A
/// filter that loads must answer, and come back unchanged through the newest revision.
pub fn older_stored(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let revision = match pick % 4 {
        0 => Revision::Chain,
        1 => Revision::Restoring,
        2 => Revision::Windowed,
        _ => Revision::Parts,
    };
    let mut fields = ByteFields::new(rest);
    let Ok(filter) = load(&mut fields, revision) else {
        return;
    };
    assert_eq!(from_bytes(&to_bytes(&filter)).as_ref(), Ok(&filter));
    let _ = (
        filter.capacity(),
        filter.items(NOW),
        filter.contains(b"probe", NOW),
    );
    if filter.planned_size() < LIMIT {
        let mut filter = filter;
        let _ = filter.add(b"probe", NOW, LIMIT);
    }
}

/// The RDB decoder fed from bytes: a chain or an error, and a chain that loads saves back to the
/// same bytes (the stored form is canonical).
pub fn stored(data: &[u8]) {
    if let Ok(filter) = from_bytes(data) {
        assert_eq!(to_bytes(&filter), data, "the stored form is canonical");
        let _ = (
            filter.capacity(),
            filter.items(NOW),
            filter.contains(b"probe", NOW),
        );
    }
}

/// RedisBloom's RDB layouts fed from bytes: the first byte picks the encoding version (0 to 4),
/// the rest are fields as [`ByteFields`] reads them. A chain that loads must answer, and come
/// back unchanged through this module's own stored form and dump header.
pub fn redisbloom(data: &[u8]) {
    let Some((&encver, rest)) = data.split_first() else {
        return;
    };
    let mut fields = ByteFields::new(rest);
    let Ok(chain) = load_rdb(&mut fields, u32::from(encver % 5)) else {
        return;
    };
    let filter = crate::Filter::Chain(chain.clone());
    assert_eq!(from_bytes(&to_bytes(&filter)).as_ref(), Ok(&filter));
    let parsed = Header::parse(&header(&filter)).expect("a loaded chain's header parses");
    let mut chain = chain;
    assert_eq!(parsed.planned_bytes(), chain.planned_size());
    let _ = (chain.capacity(), chain.items(), chain.contains(b"probe"));
    if chain.planned_size() < LIMIT {
        let _ = chain.add(b"probe", LIMIT);
    }
}

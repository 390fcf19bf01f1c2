//! Entry points for the fuzzers (`fuzz/`) and for the test that replays their corpora in
//! `make test`: each takes arbitrary bytes and must never panic. The Bloom filter's loaders first,
//! then the cuckoo filter's ([`cuckoo_stored`], [`cuckoo_header`], [`cuckoo_chunks`]), whose
//! filters must also come back unchanged through their stored form and their dump, and take adds,
//! deletes and a compaction without losing an item or becoming a filter that no longer loads.

use crate::bloom::dump::{chunk_offset, header, split_iterator, Header};
use crate::bloom::redisbloom::load_rdb;
use crate::bloom::stored::{from_bytes, load, to_bytes, ByteFields, Revision};
use crate::chunks::next_iterator;
use crate::cuckoo;

/// The time the fuzzed filters are asked at (a windowed filter's generations may be live or not).
const NOW: u64 = 1_800_000_000_000;

/// Headers describing more than this are refused here, as BF.LOADCHUNK refuses them past
/// bf.max-filter-bytes (the fuzzer's memory is not the point).
const LIMIT: u64 = 64 << 20;

/// BF.LOADCHUNK's decoding. Input: a little-endian u16 header length, the header, then repeated
/// (u64 iterator, u16 length, bytes) data chunks, the iterators tagged as a windowed filter's
/// (see `crate::bloom::dump`) or not. A filter that loads must answer lookups and adds, and check its
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
    assert!(Header::parse(&crate::bloom::dump::header(&filter)).is_ok());
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
    if let crate::bloom::Filter::Windowed(windowed) = &filter {
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
    let filter = crate::bloom::Filter::Chain(chain.clone());
    assert_eq!(from_bytes(&to_bytes(&filter)).as_ref(), Ok(&filter));
    let parsed = Header::parse(&header(&filter)).expect("a loaded chain's header parses");
    let mut chain = chain;
    assert_eq!(parsed.planned_bytes(), chain.planned_size());
    let _ = (chain.capacity(), chain.items(), chain.contains(b"probe"));
    if chain.planned_size() < LIMIT {
        let _ = chain.add(b"probe", LIMIT);
    }
}

/// The cuckoo filters the fuzzers build are held to this many bytes (a small
/// `bf.max-filter-bytes`: each input's round trips copy and count its buckets a dozen times, which
/// at a few megabytes would slow the fuzzers a hundredfold for no new path).
const CUCKOO_LIMIT: u64 = 256 << 10;

/// The limits the cuckoo fuzzers' adds work within.
const CUCKOO_LIMITS: cuckoo::Limits = cuckoo::Limits {
    max_tables: cuckoo::shape::MAX_TABLES,
    max_bytes: CUCKOO_LIMIT,
};

/// The cuckoo filter's RDB decoder (`cuckoo::stored`, encoding version 4: RedisBloom's form and
/// this module's) fed fields as [`ByteFields`] reads them. A filter that loads from the whole
/// input saves back to the same bytes (the stored form is canonical), comes back through its dump,
/// and survives adds, deletes and a compaction (see [`cuckoo_exercise`]).
pub fn cuckoo_stored(data: &[u8]) {
    let mut fields = ByteFields::new(data);
    let Ok(filter) = cuckoo::stored::load(&mut fields, cuckoo::stored::ENCODING_VERSION) else {
        return;
    };
    if fields.remaining() == 0 {
        assert_eq!(cuckoo_saved(&filter), data, "the stored form is canonical");
    }
    cuckoo_round_trips(&filter);
    cuckoo_exercise(filter);
}

/// CF.LOADCHUNK's header chunk (RedisBloom's 38 bytes, this module's 58): the whole input. A
/// header that parses and describes at most [`CUCKOO_LIMIT`] bytes makes an empty filter waiting
/// for its first data chunk, whose own header is the same and which comes back through its stored
/// form.
pub fn cuckoo_header(data: &[u8]) {
    let Ok(parsed) = cuckoo::dump::Header::parse(data) else {
        return;
    };
    if parsed.planned_bytes() > CUCKOO_LIMIT {
        return;
    }
    let planned = parsed.planned_bytes();
    let Ok(filter) = parsed.clone().into_filter() else {
        return;
    };
    assert_eq!(filter.restoring(), Some(0));
    assert!(filter.dump_len() > 0);
    let again = cuckoo::dump::header(&filter);
    assert_eq!(again, data, "a header reads back to the same bytes");
    assert_eq!(cuckoo::dump::Header::parse(&again).as_ref(), Ok(&parsed));
    assert_eq!(
        filter.planned_size(),
        planned + crate::restoring::Restoring::charged()
    );
    cuckoo_round_trips(&filter);
}

/// CF.LOADCHUNK's decoding: a little-endian u16 header length, the header, then repeated (u64
/// iterator, u16 length, bytes) data chunks (the framing of [`chunks`]). A chunk the filter
/// refuses changes nothing; one it takes moves its restore on by the chunk's length; a filter in
/// use takes no chunk. Whatever state it ends in comes back through its stored form and, once
/// complete, survives adds, deletes and a compaction.
pub fn cuckoo_chunks(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (head, mut rest) = rest.split_at(len);
    let Ok(parsed) = cuckoo::dump::Header::parse(head) else {
        return;
    };
    if parsed.planned_bytes() > CUCKOO_LIMIT {
        return;
    }
    let Ok(mut filter) = parsed.into_filter() else {
        return;
    };
    while let Some((iterator, tail)) = rest.split_first_chunk::<8>() {
        let Some((len, tail)) = tail.split_first_chunk::<2>() else {
            break;
        };
        let len = usize::from(u16::from_le_bytes(*len)).min(tail.len());
        let (chunk, tail) = tail.split_at(len);
        rest = tail;
        let Some(offset) = chunk_offset(u64::from_le_bytes(*iterator), chunk.len()) else {
            continue;
        };
        let was_restoring = filter.restoring().is_some();
        let before = cuckoo_copy(&filter);
        match filter.load_chunk(offset, chunk) {
            Ok(()) => {
                let next = offset + chunk.len() as u64;
                match filter.restoring() {
                    Some(at) => assert_eq!(at, next),
                    None => assert_eq!(next, filter.dump_len()),
                }
            }
            Err(err) => {
                if let Some(before) = before {
                    assert_eq!(filter, before, "a refused chunk changes nothing");
                }
                if !was_restoring {
                    assert_eq!(err, crate::error::FilterError::NotRestoring);
                }
            }
        }
    }
    cuckoo_round_trips(&filter);
    if filter.restoring().is_none() {
        cuckoo_exercise(filter);
    }
}

/// A copy of a filter of at most 64 KiB of buckets, to compare it with after a refused change
/// (bigger ones would slow the fuzzers down for no new path).
fn cuckoo_copy(filter: &cuckoo::Cuckoo) -> Option<cuckoo::Cuckoo> {
    (filter.dump_len() <= 1 << 16).then(|| filter.clone())
}

/// A cuckoo filter's stored form, as [`ByteFields`] reads it.
fn cuckoo_saved(filter: &cuckoo::Cuckoo) -> Vec<u8> {
    let mut sink = crate::fields::ByteSink::default();
    cuckoo::stored::save(filter, &mut sink);
    sink.bytes
}

/// A cuckoo filter comes back unchanged through its stored form (all of it read), and through its
/// header and the chunks it holds (CF.SCANDUMP's for a filter in use, an AOF rewrite's for one
/// being restored, with the rest of its dump). Its header parses, and describes what it takes.
fn cuckoo_round_trips(filter: &cuckoo::Cuckoo) {
    let saved = cuckoo_saved(filter);
    let mut fields = ByteFields::new(&saved);
    let loaded = cuckoo::stored::load(&mut fields, cuckoo::stored::ENCODING_VERSION);
    assert_eq!(loaded.as_ref(), Ok(filter), "the stored form loads back");
    assert_eq!(fields.remaining(), 0);
    let head = cuckoo::dump::header(filter);
    let parsed = cuckoo::dump::Header::parse(&head).expect("a filter's own header parses");
    let restoring = crate::restoring::Restoring::charged();
    assert_eq!(
        parsed.planned_bytes(),
        filter.planned_size() - filter.restoring().map_or(0, |_| restoring)
    );
    let mut copy = parsed
        .into_filter()
        .expect("a filter's own header makes a filter");
    match filter.restoring() {
        // CF.SCANDUMP's sequence: the chunk at each iterator, up to the end.
        None => {
            let mut offset = 0;
            while let Some(chunk) = filter.chunk(offset) {
                let iterator = next_iterator(offset, chunk.len());
                assert_eq!(chunk_offset(iterator, chunk.len()), Some(offset));
                copy.load_chunk(offset, chunk)
                    .expect("a dump's chunk loads");
                offset = iterator - 1;
            }
            assert_eq!(offset, filter.dump_len());
            assert_eq!(&copy, filter, "the dump rebuilds the filter");
        }
        // The AOF rewrite's: the chunks that arrived. What lies past them in the buckets is
        // whatever the stored form held (zeros, unless forged), which the rest of the dump
        // overwrites before the filter answers: with the same rest, both end the same.
        Some(next) => {
            for (offset, chunk) in filter.loaded_chunks() {
                copy.load_chunk(offset, &chunk)
                    .expect("a loaded chunk loads again");
            }
            assert_eq!(copy.restoring(), Some(next));
            let mut whole = filter.clone();
            let mut start = 0u64;
            for table in filter.tables() {
                let bytes = table.bytes();
                let end = start + bytes.len() as u64;
                if next < end {
                    let from = next.saturating_sub(start);
                    let rest = &bytes[from as usize..];
                    copy.load_chunk(start + from, rest).expect("the rest loads");
                    whole
                        .load_chunk(start + from, rest)
                        .expect("the rest loads");
                }
                start = end;
            }
            assert_eq!(whole.restoring(), None);
            assert_eq!(
                whole.tables(),
                filter.tables(),
                "its own rest changes nothing"
            );
            assert_eq!(
                copy, whole,
                "the chunks that arrived and the rest rebuild the filter"
            );
        }
    }
}

/// Adds, lookups, deletes and a compaction on a cuckoo filter in use (of at most
/// [`CUCKOO_LIMIT`] bytes): an add that fails changes nothing, an item added is found until it is
/// deleted (other items' deletes and compactions included), and the filter still round-trips.
fn cuckoo_exercise(mut filter: cuckoo::Cuckoo) {
    if filter.restoring().is_some() || filter.planned_size() > CUCKOO_LIMIT {
        return;
    }
    let probes: [&[u8]; 3] = [b"probe", b"", b"other"];
    let mut answers = Vec::new();
    filter.contains_many(probes, |found| answers.push(found));
    let each: Vec<bool> = probes.iter().map(|item| filter.contains(item)).collect();
    assert_eq!(answers, each);
    for item in probes {
        assert_eq!(filter.contains(item), filter.count(item) > 0);
    }
    let mut added = Vec::new();
    for item in (0u8..6).map(|i| [b'i', i]) {
        let before = cuckoo_copy(&filter);
        match filter.add(&item, &CUCKOO_LIMITS) {
            Ok(()) => added.push(item),
            Err(_) => {
                if let Some(before) = before {
                    assert_eq!(filter, before, "a refused add changes nothing");
                }
            }
        }
        for item in &added {
            assert!(filter.contains(item), "an added item is found");
        }
    }
    let before = cuckoo_copy(&filter);
    let was_there = filter.contains(b"probe");
    match filter.add_unique(b"probe", &CUCKOO_LIMITS) {
        Ok(true) => assert!(!was_there && filter.contains(b"probe")),
        Ok(false) => assert!(was_there && before.is_none_or(|before| filter == before)),
        Err(_) => {
            if let Some(before) = before {
                assert_eq!(filter, before, "a refused add changes nothing");
            }
        }
    }
    cuckoo_round_trips(&filter);
    if let Some((first, kept)) = added.split_first() {
        assert!(filter.delete(first), "an added item can be deleted");
        for item in kept {
            assert!(filter.contains(item), "another item's delete loses nothing");
        }
        filter.compact(true);
        for item in kept {
            assert!(filter.contains(item), "a compaction loses nothing");
        }
    }
    // An item never added may share a fingerprint and a bucket with one that was: whatever it
    // removes, the filter stays one that loads.
    filter.delete(b"never added");
    cuckoo_round_trips(&filter);
}

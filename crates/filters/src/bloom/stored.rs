//! The stored form of a Bloom filter: the sequence of fields an RDB file (and so DUMP/RESTORE and
//! replication) holds for one filter, written and read through a field stream so that the same
//! code serves the server's RDB reader and plain bytes (tests and fuzzing).
//!
//! ```text
//! unsigned  kind                   0 = a chain, 1 = a windowed filter     (since revision 102)
//!                                  2 = a windowed filter in the blocked layout
//! a chain:
//! unsigned  hash family            0 = xxh3-128 with the probe sequence of `hash`
//!                                  1 = RedisBloom's, kept by a filter imported from it
//!                                  2 = xxh3-128 in the blocked layout
//! unsigned  RedisBloom's option flags        (family 1 only)
//! unsigned  expansion              0 = NONSCALING
//! unsigned  number of sub-filters  at least 1
//! per sub-filter, oldest first:
//!   unsigned capacity, double error, unsigned hash count, unsigned bits, unsigned items
//!   the bit array as string fields, one per piece (`bits::piece_lengths` of the bits rounded
//!   up to whole 64-bit words)
//! a windowed filter (`crate::bloom::window`):
//! unsigned  window, seconds
//! unsigned  capacity (items per window)
//! double    error rate
//! unsigned  expansion              0 = NONSCALING
//! unsigned  number of generations  0 to 5
//! per generation, oldest first:
//!   unsigned slot
//!   unsigned rule                  0 = sized by its budget, 1 = the first release's sizing
//!   unsigned budget                (0 for rule 1)
//!   unsigned number of its first part
//!   unsigned number of parts       at least 1
//!   per part, oldest first: unsigned capacity, double error, unsigned hash count, unsigned
//!     bits, unsigned items, unsigned expiry (milliseconds since the epoch), the bit array as
//!     string fields as above
//! (revision 102 stored each generation as `unsigned slot` and a chain's sub-filters: the first
//! release's generations, which expire whole)
//! then, for either:
//! unsigned  restoring              0 = in use; n = being restored, the next data chunk starts at
//!                                  dump offset n - 1 (see `crate::bloom::dump`)   (since revision 101)
//! ```
//!
//! A blocked filter's sub-filters are stored with the same fields: the sizing gives each one's
//! block from its capacity and error rate (`sizing::blocked`).
//!
//! The module stores it as encoding version 103 of its data type; versions 100 to 102 are still
//! read ([`Revision`]). Blocked filters (kind 2, family 2) came later within 103: a server's data
//! type has one encoding version for every key, and a new one would have made every file, classic
//! filters only included, unreadable to the releases before it; as it is, an older release reads
//! any file without blocked filters, and refuses a blocked one by its unknown kind or family.
//!
//! Reading checks every field against what was actually read, before anything is allocated for
//! it: the hash count and bit count must be the ones the sizing gives for the capacity and error,
//! the sub-filters must follow the chain's growth rule, and each piece must have exactly its
//! expected length. Memory is taken one piece at a time, after that piece was read, so a forged
//! header cannot make a reader allocate more than its input holds.

use crate::bits::BitStore;
use crate::bloom::chain::{check_successor, Format};
use crate::bloom::growth::{check_imported_successor, check_stored_link, RedisBloomOptions};
use crate::bloom::sizing::Layout;
use crate::bloom::sub_filter::{storage_bits, stored_shape};
use crate::bloom::window::{
    Generation, Part, Rule, Window, Windowed, WindowedShape, MAX_GENERATIONS,
};
use crate::bloom::{Chain, Filter, Growth, Shape, SubFilter};
use crate::error::FilterError;
use crate::fields::read_pieces;
pub use crate::fields::{ByteFields, ByteSink, FieldSink, FieldSource, LoadError};

/// Hash family 0: xxh3-128 and the probe sequence of `crate::hash`.
pub const HASH_FAMILY_XXH3: u64 = 0;
/// Hash family 1: RedisBloom's, as an imported filter keeps it.
pub const HASH_FAMILY_REDISBLOOM: u64 = 1;
/// Hash family 2: xxh3-128 in the blocked layout.
pub const HASH_FAMILY_BLOCKED: u64 = 2;

/// The revisions of the stored form, oldest first; the module writes the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Revision {
    /// Encoding version 100: a chain alone.
    Chain = 100,
    /// Encoding version 101: and its restoring state.
    Restoring = 101,
    /// Encoding version 102: a kind first, and windowed filters.
    Windowed = 102,
    /// Encoding version 103: a windowed filter's generations made of parts that expire one by
    /// one.
    Parts = 103,
}

impl Revision {
    /// The revision this code writes.
    pub const NEWEST: Revision = Revision::Parts;

    /// The revision stored under an RDB encoding version, if it is one of this module's.
    pub fn of_encoding(encver: i32) -> Option<Revision> {
        match encver {
            100 => Some(Revision::Chain),
            101 => Some(Revision::Restoring),
            102 => Some(Revision::Windowed),
            103 => Some(Revision::Parts),
            _ => None,
        }
    }
}

/// Kind 0: a chain.
const KIND_CHAIN: u64 = 0;
/// Kind 1: a windowed filter.
const KIND_WINDOWED: u64 = 1;
/// Kind 2: a windowed filter in the blocked layout.
const KIND_WINDOWED_BLOCKED: u64 = 2;

/// Writes a filter's fields.
pub fn save(filter: &Filter, sink: &mut impl FieldSink) {
    match filter {
        Filter::Chain(chain) => {
            sink.unsigned(KIND_CHAIN);
            save_chain(chain, sink);
        }
        Filter::Windowed(windowed) => {
            let shape = windowed.shape();
            sink.unsigned(match shape.layout {
                Layout::Classic => KIND_WINDOWED,
                Layout::Blocked => KIND_WINDOWED_BLOCKED,
            });
            sink.unsigned(shape.window.as_seconds());
            sink.unsigned(shape.capacity);
            sink.double(shape.error);
            sink.unsigned(expansion_field(shape.growth));
            sink.unsigned(windowed.generations().len() as u64);
            for generation in windowed.generations() {
                sink.unsigned(generation.slot());
                let (rule, budget) = rule_fields(generation.rule());
                sink.unsigned(rule);
                sink.unsigned(budget);
                sink.unsigned(u64::from(generation.first()));
                sink.unsigned(generation.parts().len() as u64);
                for part in generation.parts() {
                    save_sub_filter(part.filter(), Some(part.expires_at()), sink);
                }
            }
        }
    }
    sink.unsigned(filter.restoring().map_or(0, |next| next + 1));
}

fn expansion_field(growth: Growth) -> u64 {
    match growth {
        Growth::Scaling { expansion } => u64::from(expansion),
        Growth::Fixed => 0,
    }
}

fn save_chain(chain: &Chain, sink: &mut impl FieldSink) {
    match chain.format() {
        Format::Native => sink.unsigned(HASH_FAMILY_XXH3),
        Format::Blocked => sink.unsigned(HASH_FAMILY_BLOCKED),
        Format::RedisBloom(options) => {
            sink.unsigned(HASH_FAMILY_REDISBLOOM);
            sink.unsigned(u64::from(options.flags()));
        }
    }
    sink.unsigned(expansion_field(chain.growth()));
    save_sub_filters(chain, sink);
}

/// Rule 0 (sized by its budget) and 1 (the first release's sizing), and the budget field.
fn rule_fields(rule: Rule) -> (u64, u64) {
    match rule {
        Rule::Budget(budget) => (RULE_BUDGET, budget),
        Rule::Legacy => (RULE_LEGACY, 0),
    }
}

/// Rule 0: a generation sized by its budget.
const RULE_BUDGET: u64 = 0;
/// Rule 1: a generation of the first release.
const RULE_LEGACY: u64 = 1;

/// The sub-filter count, then each sub-filter.
fn save_sub_filters(chain: &Chain, sink: &mut impl FieldSink) {
    sink.unsigned(chain.filters().len() as u64);
    for filter in chain.filters() {
        save_sub_filter(filter, None, sink);
    }
}

/// One sub-filter's fields (with a part's expiry after them), then its bits.
fn save_sub_filter(filter: &SubFilter, expiry: Option<u64>, sink: &mut impl FieldSink) {
    let shape = filter.shape();
    sink.unsigned(shape.capacity);
    sink.double(shape.error);
    sink.unsigned(u64::from(shape.hash_count));
    sink.unsigned(shape.bits);
    sink.unsigned(filter.items());
    if let Some(expiry) = expiry {
        sink.unsigned(expiry);
    }
    for piece in filter.bits().pieces() {
        sink.buffer(piece);
    }
}

/// Reads a filter's fields as `revision` wrote them, checking every one (see the module
/// documentation).
pub fn load(source: &mut impl FieldSource, revision: Revision) -> Result<Filter, LoadError> {
    let kind = if revision >= Revision::Windowed {
        source.unsigned().ok_or(LoadError::Truncated)?
    } else {
        KIND_CHAIN
    };
    let mut filter = match kind {
        KIND_CHAIN => {
            let family = source.unsigned().ok_or(LoadError::Truncated)?;
            Filter::Chain(match family {
                HASH_FAMILY_XXH3 => load_native(source, Layout::Classic),
                HASH_FAMILY_REDISBLOOM => load_imported(source),
                HASH_FAMILY_BLOCKED if revision >= Revision::Parts => {
                    load_native(source, Layout::Blocked)
                }
                _ => Err(LoadError::Corrupt(format!("unknown hash family {family}"))),
            }?)
        }
        KIND_WINDOWED if revision >= Revision::Parts => {
            Filter::from(load_windowed(source, Layout::Classic)?)
        }
        KIND_WINDOWED_BLOCKED if revision >= Revision::Parts => {
            Filter::from(load_windowed(source, Layout::Blocked)?)
        }
        KIND_WINDOWED => Filter::from(load_first_windowed(source)?),
        _ => return Err(LoadError::Corrupt(format!("unknown filter kind {kind}"))),
    };
    if revision >= Revision::Restoring {
        // 0: in use; n: the next data chunk starts at dump offset n - 1.
        let stored = source.unsigned().ok_or(LoadError::Truncated)?;
        filter.set_restoring(stored.checked_sub(1))?;
        filter.check_restoring()?;
    }
    Ok(filter)
}

/// Reads a windowed filter's parameters (kind 1) and its generation count, at most five.
fn windowed_fields(
    source: &mut impl FieldSource,
    make: fn(u64, f64, Growth, Window) -> Result<WindowedShape, FilterError>,
) -> Result<(WindowedShape, u64), LoadError> {
    let window = Window::seconds(source.unsigned().ok_or(LoadError::Truncated)?)
        .map_err(|_| LoadError::Corrupt("window out of range".into()))?;
    let capacity = source.unsigned().ok_or(LoadError::Truncated)?;
    let error = source.double().ok_or(LoadError::Truncated)?;
    let growth = read_growth(source)?;
    let shape = make(capacity, error, growth, window)
        .map_err(|_| LoadError::Corrupt("windowed filter's capacity or error rate".into()))?;
    let count = source.unsigned().ok_or(LoadError::Truncated)?;
    if count > MAX_GENERATIONS as u64 {
        return Err(LoadError::Corrupt(format!(
            "{count} generations: a windowed filter keeps at most {MAX_GENERATIONS}"
        )));
    }
    Ok((shape, count))
}

/// Reads a windowed filter (kind 1, revision 103): its parameters, then its generations, each
/// part checked against its generation's sizing before its bits are read, and the whole against
/// what a windowed filter can hold (`window::check_generations`).
fn load_windowed(source: &mut impl FieldSource, layout: Layout) -> Result<Windowed, LoadError> {
    let (shape, count) = windowed_fields(source, WindowedShape::stored)?;
    let shape = shape.with_layout(layout);
    let mut generations = Vec::new();
    for _ in 0..count {
        let slot = source.unsigned().ok_or(LoadError::Truncated)?;
        let rule = match (
            source.unsigned().ok_or(LoadError::Truncated)?,
            source.unsigned().ok_or(LoadError::Truncated)?,
        ) {
            (RULE_BUDGET, budget) => Rule::Budget(budget),
            (RULE_LEGACY, 0) => Rule::Legacy,
            _ => return Err(LoadError::Corrupt("unknown generation rule".into())),
        };
        let first = u32::try_from(source.unsigned().ok_or(LoadError::Truncated)?)
            .map_err(|_| LoadError::Corrupt("a part number out of range".into()))?;
        let count = source.unsigned().ok_or(LoadError::Truncated)?;
        if count == 0 {
            return Err(LoadError::Corrupt(
                "a generation without sub-filters".into(),
            ));
        }
        // Grown as parts arrive: the count alone justifies no allocation.
        let mut parts = Vec::new();
        for position in 0..count {
            let index = u64::from(first)
                .checked_add(position)
                .and_then(|index| u32::try_from(index).ok())
                .ok_or_else(|| LoadError::Corrupt("a part number out of range".into()))?;
            let expected = shape.part_shape(rule, index).map_err(|_| {
                LoadError::Corrupt("a part past what its generation can grow".into())
            })?;
            let link = read_link(source)?;
            let expiry = source.unsigned().ok_or(LoadError::Truncated)?;
            if link.capacity != expected.capacity
                || link.error.to_bits() != expected.error.to_bits()
                || link.hash_count != u64::from(expected.hash_count)
                || link.bits != expected.bits
            {
                return Err(LoadError::Corrupt(
                    "a part not sized as its generation sizes it".into(),
                ));
            }
            let store = read_pieces(source, expected.bits)?;
            let filter = SubFilter::from_part(expected, link.items, store)?;
            parts.push(Part::new(filter, expiry));
        }
        generations.push(Generation::from_parts(slot, rule, first, parts));
    }
    Ok(Windowed::from_parts(shape, generations)?)
}

/// Reads a windowed filter of revision 102 (the first release's): each generation a slot and a
/// chain, which becomes a generation of [`Rule::Legacy`] expiring whole, as it did.
fn load_first_windowed(source: &mut impl FieldSource) -> Result<Windowed, LoadError> {
    let (shape, count) = windowed_fields(source, WindowedShape::stored)?;
    let mut generations = Vec::new();
    for _ in 0..count {
        let slot = source.unsigned().ok_or(LoadError::Truncated)?;
        let chain = load_native_sub_filters(source, shape.growth, Layout::Classic)?;
        let filters = chain.filters().to_vec();
        generations.push(Generation::legacy(&shape, slot, filters));
    }
    Ok(Windowed::from_parts(shape, generations)?)
}

/// Reads an imported chain (family 1): RedisBloom's hashing and sizing, in this module's layout.
fn load_imported(source: &mut impl FieldSource) -> Result<Chain, LoadError> {
    let options = RedisBloomOptions::new(source.unsigned().ok_or(LoadError::Truncated)?)?;
    let growth = read_growth(source)?;
    if options.fixed() != (growth == Growth::Fixed) {
        return Err(LoadError::Corrupt(
            "expansion does not match RedisBloom's options".into(),
        ));
    }
    let filters = read_sub_filters(source, |link, older| {
        let shape = check_stored_link(
            options,
            link.capacity,
            link.error,
            link.hash_count,
            link.bits,
            link.items,
        )?;
        // Checked as they arrive: the halving rule stops a forged chain within 1,100 links.
        if let Some((older, _)) = older {
            check_imported_successor(older, &shape)?;
        }
        // RedisBloom's bit counts need not be whole words; the array is kept in whole words.
        Ok((shape, storage_bits(shape.bits)))
    })?;
    let filters = filters
        .into_iter()
        .map(|(shape, items, store)| SubFilter::imported(shape, items, store))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Chain::imported(options, growth, filters)?)
}

/// Reads a chain of this module's own (family 0, or 2 in the blocked layout).
fn load_native(source: &mut impl FieldSource, layout: Layout) -> Result<Chain, LoadError> {
    let growth = read_growth(source)?;
    load_native_sub_filters(source, growth, layout)
}

/// Reads the sub-filters of a chain of this module's own in `layout` that grows by `growth`.
fn load_native_sub_filters(
    source: &mut impl FieldSource,
    growth: Growth,
    layout: Layout,
) -> Result<Chain, LoadError> {
    let filters = read_sub_filters(source, |link, older| {
        let read = Shape {
            capacity: link.capacity,
            error: link.error,
            hash_count: u32::try_from(link.hash_count)
                .map_err(|_| LoadError::Corrupt("hash count out of range".into()))?,
            bits: link.bits,
            lines: 0,
        };
        let shape = stored_shape(&read, link.items, layout)?;
        if let Some((older_shape, older_items)) = older {
            check_successor(growth, older_shape, older_items, &shape)?;
        }
        Ok((shape, shape.bits))
    })?;
    let filters = filters
        .into_iter()
        .map(|(shape, items, store)| SubFilter::from_parts(shape, items, store))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Chain::from_parts_in(layout, growth, filters)?)
}

/// The expansion field: 0 for NONSCALING.
fn read_growth(source: &mut impl FieldSource) -> Result<Growth, LoadError> {
    match source.unsigned().ok_or(LoadError::Truncated)? {
        0 => Ok(Growth::Fixed),
        expansion => Growth::scaling(expansion)
            .map_err(|_| LoadError::Corrupt(format!("bad expansion {expansion}"))),
    }
}

/// A sub-filter's fields as stored, before they are checked.
struct StoredLink {
    capacity: u64,
    error: f64,
    hash_count: u64,
    bits: u64,
    items: u64,
}

/// Reads the sub-filter count, then each sub-filter: its fields, which `check` turns into its
/// shape and the length in bits of its stored array (given the shape and items of the sub-filter
/// before it, if any), then the pieces of that array. Nothing is allocated for a sub-filter before
/// its fields passed `check`, and each piece only after it was read.
fn read_sub_filters<S: FieldSource>(
    source: &mut S,
    mut check: impl FnMut(&StoredLink, Option<(&Shape, u64)>) -> Result<(Shape, u64), LoadError>,
) -> Result<Vec<(Shape, u64, BitStore)>, LoadError> {
    let count = source.unsigned().ok_or(LoadError::Truncated)?;
    if count == 0 {
        return Err(LoadError::Corrupt("no sub-filters".into()));
    }
    // Grown as sub-filters arrive: the count alone justifies no allocation.
    let mut filters: Vec<(Shape, u64, BitStore)> = Vec::new();
    for _ in 0..count {
        let link = read_link(source)?;
        let older = filters.last().map(|(shape, items, _)| (shape, *items));
        let (shape, storage) = check(&link, older)?;
        let store = read_pieces(source, storage)?;
        filters.push((shape, link.items, store));
    }
    Ok(filters)
}

/// A sub-filter's five fields.
fn read_link(source: &mut impl FieldSource) -> Result<StoredLink, LoadError> {
    Ok(StoredLink {
        capacity: source.unsigned().ok_or(LoadError::Truncated)?,
        error: source.double().ok_or(LoadError::Truncated)?,
        hash_count: source.unsigned().ok_or(LoadError::Truncated)?,
        bits: source.unsigned().ok_or(LoadError::Truncated)?,
        items: source.unsigned().ok_or(LoadError::Truncated)?,
    })
}

/// A filter as bytes (see [`ByteFields`]).
pub fn to_bytes(filter: &Filter) -> Vec<u8> {
    let mut sink = ByteSink::default();
    save(filter, &mut sink);
    sink.bytes
}

/// A filter from bytes written by [`to_bytes`]; trailing bytes are an error.
pub fn from_bytes(bytes: &[u8]) -> Result<Filter, LoadError> {
    let mut fields = ByteFields::new(bytes);
    let filter = load(&mut fields, Revision::NEWEST)?;
    if fields.remaining() != 0 {
        return Err(LoadError::Corrupt("data after the filter".into()));
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(capacity: u64, growth: Growth, items: u32) -> Filter {
        let mut chain = Chain::new(capacity, 0.01, growth, u64::MAX).unwrap();
        for i in 0..items {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        Filter::Chain(chain)
    }

    fn windowed(items: u64) -> Filter {
        let window = Window::seconds(10).unwrap();
        let shape =
            WindowedShape::new(100, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
        let mut filter = Filter::from(Windowed::new(shape));
        for i in 0..items {
            filter
                .add(&i.to_le_bytes(), 1_800_000_000_000 + i * 100, u64::MAX)
                .unwrap();
        }
        filter
    }

    #[test]
    fn chains_round_trip_through_their_stored_form() {
        for chain in [
            chain(100, Growth::Scaling { expansion: 2 }, 0),
            chain(10, Growth::Scaling { expansion: 3 }, 500),
            chain(2000, Growth::Fixed, 2000),
            windowed(0),
            windowed(500),
        ] {
            assert_eq!(from_bytes(&to_bytes(&chain)), Ok(chain));
        }
    }

    #[test]
    fn a_chain_being_restored_keeps_its_state_through_its_stored_form() {
        let source = chain(10, Growth::Scaling { expansion: 2 }, 40);
        let mut restoring = crate::bloom::dump::Header::parse(&crate::bloom::dump::header(&source))
            .unwrap()
            .into_filter()
            .unwrap();
        let (offset, first) = source.loaded_chunks().next().unwrap();
        restoring.load_chunk(offset, &first).unwrap();
        let next = restoring.restoring().unwrap();
        assert!(next > 0);
        let loaded = from_bytes(&to_bytes(&restoring)).unwrap();
        assert_eq!(loaded.restoring(), Some(next));
        assert_eq!(loaded, restoring);
        // A state that no chunk could continue is refused: past the end, or inside a chunk.
        for forged in [source.dump_len() + 1, next + 2] {
            let mut bytes = to_bytes(&restoring);
            let at = bytes.len() - 8;
            bytes[at..].copy_from_slice(&forged.to_le_bytes());
            assert_eq!(
                from_bytes(&bytes),
                Err(LoadError::Corrupt("restoring state out of range".into())),
                "{forged}"
            );
        }
    }

    #[test]
    fn older_revisions_of_a_chain_are_still_read() {
        let source = chain(10, Growth::Scaling { expansion: 2 }, 40);
        let bytes = to_bytes(&source);
        // Revision 102 starts with the kind (tag and value, 0 for a chain); 101 has none.
        assert_eq!(bytes[..9], [&[1u8][..], &[0; 8]].concat());
        let revision_101 = &bytes[9..];
        let mut fields = ByteFields::new(revision_101);
        assert_eq!(load(&mut fields, Revision::Restoring).as_ref(), Ok(&source));
        assert_eq!(fields.remaining(), 0);
        // Revision 100 ends without the restoring field either (0 for a chain in use).
        let revision_100 = &revision_101[..revision_101.len() - 9];
        assert_eq!(
            revision_101[revision_100.len()..],
            [&[1u8][..], &[0; 8]].concat()
        );
        let mut fields = ByteFields::new(revision_100);
        assert_eq!(load(&mut fields, Revision::Chain), Ok(source));
        assert_eq!(fields.remaining(), 0);
        assert_eq!(Revision::of_encoding(100), Some(Revision::Chain));
        assert_eq!(Revision::of_encoding(101), Some(Revision::Restoring));
        assert_eq!(Revision::of_encoding(102), Some(Revision::Windowed));
        assert_eq!(Revision::of_encoding(103), Some(Revision::NEWEST));
        assert_eq!(Revision::of_encoding(104), None);
        assert_eq!(Revision::of_encoding(4), None);
    }

    #[test]
    fn windowed_filters_of_revision_102_load_as_generations_that_expire_whole() {
        let window = Window::seconds(10).unwrap();
        let shape = WindowedShape::new(16, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
        let first = shape.part_shape(Rule::Legacy, 0).unwrap();
        let mut sub = SubFilter::new(first).unwrap();
        sub.insert(&crate::hash::ItemHash::of(b"old").for_sub_filter(0));
        let slot = 1_800_000_000_000 / window.slot_millis();
        // Revision 102: kind, parameters, then per generation a slot and a chain's sub-filters.
        let mut sink = ByteSink::default();
        sink.unsigned(KIND_WINDOWED);
        sink.unsigned(10);
        sink.unsigned(16);
        sink.double(0.01);
        sink.unsigned(4);
        sink.unsigned(1);
        sink.unsigned(slot);
        sink.unsigned(1);
        save_sub_filter(&sub, None, &mut sink);
        sink.unsigned(0);
        let mut fields = ByteFields::new(&sink.bytes);
        let loaded = load(&mut fields, Revision::Windowed).unwrap();
        assert_eq!(fields.remaining(), 0);
        let Filter::Windowed(windowed) = &loaded else {
            panic!("not windowed")
        };
        let generation = &windowed.generations()[0];
        assert_eq!(generation.rule(), Rule::Legacy);
        assert_eq!(generation.parts()[0].expires_at(), shape.expiry(slot));
        assert!(loaded.contains(b"old", shape.expiry(slot) - 1));
        assert!(!loaded.contains(b"old", shape.expiry(slot)));
        // Saved as revision 103, and read back the same.
        assert_eq!(from_bytes(&to_bytes(&loaded)), Ok(loaded.clone()));
        // More generations than a filter keeps are refused before any is read.
        let mut forged = sink.bytes.clone();
        forged[5 * 9 + 1..6 * 9].copy_from_slice(&6u64.to_le_bytes());
        assert_eq!(
            load(&mut ByteFields::new(&forged), Revision::Windowed),
            Err(LoadError::Corrupt(
                "6 generations: a windowed filter keeps at most 5".into()
            ))
        );
    }

    #[test]
    fn every_truncation_is_refused() {
        for filter in [
            chain(10, Growth::Scaling { expansion: 2 }, 40),
            windowed(300),
        ] {
            let bytes = to_bytes(&filter);
            for len in 0..bytes.len() {
                assert!(from_bytes(&bytes[..len]).is_err(), "cut at {len}");
            }
        }
    }
}

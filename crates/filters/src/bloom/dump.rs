//! The Bloom filter's dump format: how a filter travels as `BF.SCANDUMP` chunks, `BF.LOADCHUNK` arguments and
//! AOF rewrites, in pieces small enough for any bulk string.
//!
//! A dump is a header chunk, then data chunks. The header of a chain (little-endian):
//!
//! ```text
//! 8 bytes  magic "redis-bf"
//! u32      format version 1
//! u32      hash family: 0 this module's (xxh3-128, the probe sequence of `hash`),
//!                       1 RedisBloom's, kept by a filter imported from it,
//!                       2 this module's in the blocked layout
//! u32      expansion (0: NONSCALING)
//! u32      number of sub-filters, n >= 1
//! family 1 only: u32 RedisBloom's option flags
//! n times  u64 capacity, f64 error rate, u32 hash count, u64 bits, u64 items  (36 bytes)
//! ```
//!
//! and of a windowed filter (`crate::bloom::window`), whose parts all use hash family 0 (or 2, in
//! the blocked layout):
//!
//! ```text
//! 8 bytes  magic "redis-bf"
//! u32      format version 3 (4: its parts in the blocked layout)
//! u64      window, seconds
//! u64      capacity (items per window)
//! f64      error rate
//! u32      expansion (0: NONSCALING)
//! u32      number of generations, 0 to 5
//! per generation: u64 slot, u32 rule (0: sized by its budget, 1: the first release's),
//!          u64 budget, u32 number of its first part, u32 number of parts n >= 1,
//!          n times an entry as above and u64 its expiry (milliseconds since the epoch)
//! ```
//!
//! (Version 2, written by the first release of windowed filters, has per generation a u64 slot,
//! a u32 sub-filter count and the entries: generations that expire whole. It is still read.)
//!
//! The data is every sub-filter's bit array, oldest first (a windowed filter's part by part,
//! generation by generation), concatenated: the *dump bytes*. It is cut into chunks that start where a
//! sub-filter starts and every [`CHUNK_BYTES`] after that, so that no chunk spans two sub-filters
//! or passes 16 MiB. Iterators follow RedisBloom's arithmetic: the header comes with iterator 1; a
//! chunk at offset `o` of length `len` comes with `o + len + 1`, and `BF.LOADCHUNK` recovers the
//! offset as `iterator - len - 1`.
//!
//! A windowed filter drops its oldest parts as they expire, and every later offset then moves: a
//! dump of one taken across such a drop would load short. So the iterators of a windowed
//! filter's dump carry a *tag* in bits 38 to 52, drawn from its oldest part (its slot and
//! number): SCANDUMP refuses an iterator whose tag is not the filter's own (it changed since the
//! dump began), and LOADCHUNK one whose tag is not the restoring filter's (a chunk of another
//! dump). Tagged iterators stay below 2^53, so that clients which read integers as doubles
//! (JavaScript, Lua scripts) hand them back unchanged; the positions below the tag reach 256 GiB,
//! and a dump longer than that (far past any filter a server holds) goes untagged. Parts added at the end move no offset: the copy is the filter as the header described
//! it, with the bits set since in the parts it had then. A chain only ever grows at its end, so
//! its iterators are RedisBloom's, untagged (tag 0, which LOADCHUNK also takes for a windowed
//! filter: AOF files of the first release).
//!
//! `BF.LOADCHUNK` also takes RedisBloom's own dumps (`crate::bloom::redisbloom`): its header, then data
//! chunks of any length within one sub-filter (older releases cut at 10 MiB).
//!
//! Everything is checked before anything is allocated: a header must describe exactly what the
//! sizing and the growth rule would have built, and a data chunk must fit its place.
//!
//! A header makes a filter in the *restoring* state ([`Filter::restoring`]): it takes data chunks,
//! in order, each exactly once, and nothing else (the commands refuse adds and lookups), until the
//! last one has arrived. A filter in use takes no data chunk at all, so no chunk can overwrite a
//! live filter's bits. The state is part of the filter: it is stored, copied and replicated with
//! it.

use crate::bloom::chain::{check_successor, Format};
use crate::bloom::filter::Filter;
use crate::bloom::growth::{
    check_imported_successor, check_link_count, check_stored_link, RedisBloomOptions,
};
use crate::bloom::redisbloom::DumpHeader;
use crate::bloom::sizing::Layout;
use crate::bloom::sub_filter::stored_shape;
use crate::bloom::window::{planned_windowed, Generation, Outline, Part, Windowed, WindowedShape};
use crate::bloom::{Chain, Growth, Shape, SubFilter};
pub use crate::chunks::{chunk_offset, next_iterator, CHUNK_BYTES};
use crate::error::FilterError;
use crate::reader::Reader;
use crate::restoring::Restoring;
use std::borrow::Cow;

/// The first bytes of a header.
pub const MAGIC: [u8; 8] = *b"redis-bf";
/// The header layout of a chain.
pub const FORMAT_VERSION: u32 = 1;
/// The header layout of a windowed filter of the first release (still read).
pub const FIRST_WINDOWED_FORMAT_VERSION: u32 = 2;
/// The header layout of a windowed filter.
pub const WINDOWED_FORMAT_VERSION: u32 = 3;
/// The header layout of a windowed filter whose parts are in the blocked layout (the same
/// fields as version 3).
pub const BLOCKED_WINDOWED_FORMAT_VERSION: u32 = 4;
/// Hash family 0: xxh3-128 and the probe sequence of `crate::hash`.
pub const HASH_FAMILY_XXH3: u32 = 0;
/// Hash family 1: RedisBloom's, as an imported filter keeps it.
pub const HASH_FAMILY_REDISBLOOM: u32 = 1;
/// Hash family 2: xxh3-128 in the blocked layout.
pub const HASH_FAMILY_BLOCKED: u32 = 2;

const ENTRY_LEN: usize = 8 + 8 + 4 + 8 + 8;
/// A windowed filter's part: an entry and its expiry.
const PART_LEN: usize = ENTRY_LEN + 8;

/// The bit where the tag of a windowed filter's dump iterators starts: 15 bits of tag above it
/// keep every iterator below 2^53, exact in a double.
const TAG_SHIFT: u32 = 38;
/// The positions an iterator of a tagged dump can name (below the tag).
const POSITION_MASK: u64 = (1 << TAG_SHIFT) - 1;

/// The tag of a filter's dump iterators: 0 for a chain (or a dump whose positions would not fit
/// below the tag); for a windowed filter, 1 to 32767, drawn from its oldest part (see the module
/// documentation).
pub fn dump_tag(filter: &Filter) -> u64 {
    let Filter::Windowed(windowed) = filter else {
        return 0;
    };
    if filter.dump_len() >= POSITION_MASK {
        return 0;
    }
    let identity = match windowed.generations().first() {
        Some(oldest) => oldest
            .slot()
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(u64::from(oldest.first())),
        None => u64::MAX,
    };
    1 + (identity ^ (identity >> 29)) % 32767
}

/// The iterator of a dump tagged `tag` at `position` (a chain's: the position itself).
pub fn tagged(tag: u64, position: u64) -> u64 {
    tag << TAG_SHIFT | position
}

/// An iterator's tag and position. Untagged (a chain's, or a dump of the first release): tag 0
/// and the whole number.
pub fn split_iterator(iterator: u64) -> (u64, u64) {
    if iterator >> TAG_SHIFT == 0 {
        (0, iterator)
    } else {
        (iterator >> TAG_SHIFT, iterator & POSITION_MASK)
    }
}

/// The header chunk of a filter's dump.
pub fn header(filter: &Filter) -> Vec<u8> {
    match filter {
        Filter::Chain(chain) => chain_header(chain),
        Filter::Windowed(windowed) => windowed::windowed_header(windowed),
    }
}

fn expansion_field(growth: Growth) -> u32 {
    match growth {
        Growth::Scaling { expansion } => u32::from(expansion),
        Growth::Fixed => 0,
    }
}

fn growth_field(expansion: u32) -> Result<Growth, FilterError> {
    match expansion {
        0 => Ok(Growth::Fixed),
        expansion => Growth::scaling(u64::from(expansion))
            .map_err(|_| FilterError::Corrupt("expansion out of range")),
    }
}

fn push_entries(out: &mut Vec<u8>, filters: &[SubFilter]) {
    for filter in filters {
        let shape = filter.shape();
        out.extend_from_slice(&shape.capacity.to_le_bytes());
        out.extend_from_slice(&shape.error.to_bits().to_le_bytes());
        out.extend_from_slice(&shape.hash_count.to_le_bytes());
        out.extend_from_slice(&shape.bits.to_le_bytes());
        out.extend_from_slice(&filter.items().to_le_bytes());
    }
}

fn chain_header(chain: &Chain) -> Vec<u8> {
    let mut out = Vec::with_capacity(28 + ENTRY_LEN * chain.filters().len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let family = match chain.format() {
        Format::Native => HASH_FAMILY_XXH3,
        Format::Blocked => HASH_FAMILY_BLOCKED,
        Format::RedisBloom(_) => HASH_FAMILY_REDISBLOOM,
    };
    out.extend_from_slice(&family.to_le_bytes());
    out.extend_from_slice(&expansion_field(chain.growth()).to_le_bytes());
    out.extend_from_slice(&(chain.filters().len() as u32).to_le_bytes());
    if let Format::RedisBloom(options) = chain.format() {
        out.extend_from_slice(&options.flags().to_le_bytes());
    }
    push_entries(&mut out, chain.filters());
    out
}
/// A header that passed every check: the filter it describes, not yet allocated.
#[derive(Debug, Clone, PartialEq)]
pub struct Header(Described);

#[derive(Debug, Clone, PartialEq)]
enum Described {
    Chain {
        format: Format,
        growth: Growth,
        /// Each sub-filter's shape and item count.
        filters: Vec<(Shape, u64)>,
    },
    Windowed {
        shape: WindowedShape,
        generations: Vec<Outline>,
    },
}

impl From<DumpHeader> for Header {
    fn from(header: DumpHeader) -> Header {
        Header(Described::Chain {
            format: Format::RedisBloom(header.options),
            growth: header.growth,
            filters: header.links,
        })
    }
}

/// Reads `count` entries of this module's own sub-filters in `layout`, checked one by one and
/// against the chain's growth rule.
fn native_entries(
    reader: &mut Reader,
    count: usize,
    growth: Growth,
    layout: Layout,
) -> Result<Vec<(Shape, u64)>, FilterError> {
    if reader.remaining() < count.saturating_mul(ENTRY_LEN) {
        return Err(FilterError::Corrupt(
            "header length does not match its sub-filter count",
        ));
    }
    let mut filters: Vec<(Shape, u64)> = Vec::with_capacity(count);
    for _ in 0..count {
        let read = Shape {
            capacity: reader.u64()?,
            error: reader.f64()?,
            hash_count: reader.u32()?,
            bits: reader.u64()?,
            lines: 0,
        };
        let items = reader.u64()?;
        let shape = stored_shape(&read, items, layout)?;
        if let Some((older, older_items)) = filters.last() {
            check_successor(growth, older, *older_items, &shape)?;
        }
        filters.push((shape, items));
    }
    Ok(filters)
}

impl Header {
    /// Parses and checks a header chunk: this module's (by its magic) or RedisBloom's. Allocates
    /// nothing beyond one entry per 36 bytes of input.
    pub fn parse(bytes: &[u8]) -> Result<Header, FilterError> {
        if !bytes.starts_with(&MAGIC) {
            return DumpHeader::parse(bytes).map(Header::from);
        }
        let mut reader = Reader::new(bytes);
        reader.take::<8>()?;
        match reader.u32()? {
            FORMAT_VERSION => Header::parse_chain(reader),
            FIRST_WINDOWED_FORMAT_VERSION => Header::parse_first_windowed(reader),
            WINDOWED_FORMAT_VERSION => Header::parse_windowed(reader, Layout::Classic),
            BLOCKED_WINDOWED_FORMAT_VERSION => Header::parse_windowed(reader, Layout::Blocked),
            _ => Err(FilterError::Corrupt("unknown dump format version")),
        }
    }

    fn parse_chain(mut reader: Reader) -> Result<Header, FilterError> {
        let family = reader.u32()?;
        let growth = growth_field(reader.u32()?)?;
        let count = reader.u32()? as usize;
        if count == 0 {
            return Err(FilterError::Corrupt("no sub-filters"));
        }
        let options = match family {
            HASH_FAMILY_XXH3 | HASH_FAMILY_BLOCKED => None,
            HASH_FAMILY_REDISBLOOM => {
                let options = RedisBloomOptions::new(u64::from(reader.u32()?))?;
                if options.fixed() != (growth == Growth::Fixed) {
                    return Err(FilterError::Corrupt(
                        "expansion does not match RedisBloom's options",
                    ));
                }
                Some(options)
            }
            _ => return Err(FilterError::Corrupt("unknown hash family")),
        };
        if reader.remaining() != count.saturating_mul(ENTRY_LEN) {
            return Err(FilterError::Corrupt(
                "header length does not match its sub-filter count",
            ));
        }
        let layout = if family == HASH_FAMILY_BLOCKED {
            Layout::Blocked
        } else {
            Layout::Classic
        };
        let filters = match options {
            None => native_entries(&mut reader, count, growth, layout)?,
            Some(options) => {
                check_link_count(count as u64)?;
                let mut filters: Vec<(Shape, u64)> = Vec::with_capacity(count);
                for _ in 0..count {
                    let capacity = reader.u64()?;
                    let error = reader.f64()?;
                    let hash_count = reader.u32()?;
                    let bits = reader.u64()?;
                    let items = reader.u64()?;
                    let shape = check_stored_link(
                        options,
                        capacity,
                        error,
                        u64::from(hash_count),
                        bits,
                        items,
                    )?;
                    if let Some((older, _)) = filters.last() {
                        check_imported_successor(older, &shape)?;
                    }
                    filters.push((shape, items));
                }
                if growth == Growth::Fixed && count > 1 {
                    return Err(FilterError::Corrupt(
                        "a non-scaling filter with several sub-filters",
                    ));
                }
                filters
            }
        };
        Ok(Header(Described::Chain {
            format: options.map_or(Format::native(layout), Format::RedisBloom),
            growth,
            filters,
        }))
    }

    /// Bytes the described filter will take once restored (what `bf.max-filter-bytes` bounds;
    /// while its chunks arrive it also holds the state of the restore, [`Restoring::charged`]).
    pub fn planned_bytes(&self) -> u64 {
        match &self.0 {
            Described::Chain { filters, .. } => {
                Chain::planned_bytes(filters.iter().map(|(shape, _)| shape))
            }
            Described::Windowed { generations, .. } => planned_windowed(
                generations
                    .iter()
                    .map(|g| g.parts.iter().map(|(shape, _, _)| shape)),
            ),
        }
    }

    /// The described filter, with its item counts and every bit zero, restoring: ready for its
    /// data chunks, from the first.
    pub fn into_filter(self) -> Result<Filter, FilterError> {
        let sub_filters = |filters: Vec<(Shape, u64)>| -> Result<Vec<SubFilter>, FilterError> {
            filters
                .into_iter()
                .map(|(shape, items)| Ok(SubFilter::new(shape)?.with_items(items)))
                .collect()
        };
        let mut filter = match self.0 {
            Described::Chain {
                format,
                growth,
                filters,
            } => {
                let filters = sub_filters(filters)?;
                Filter::Chain(match format {
                    Format::Native | Format::Blocked => {
                        Chain::from_parts_in(format.layout(), growth, filters)
                    }
                    Format::RedisBloom(options) => Chain::imported(options, growth, filters),
                }?)
            }
            Described::Windowed { shape, generations } => {
                let mut built = Vec::with_capacity(generations.len());
                for generation in generations {
                    let parts = generation
                        .parts
                        .into_iter()
                        .map(|(shape, items, expiry)| {
                            Ok(Part::new(SubFilter::new(shape)?.with_items(items), expiry))
                        })
                        .collect::<Result<Vec<_>, FilterError>>()?;
                    built.push(Generation::from_parts(
                        generation.slot,
                        generation.rule,
                        generation.first,
                        parts,
                    ));
                }
                Filter::from(Windowed::from_parts(shape, built)?)
            }
        };
        // A filter with no bits (a windowed one without generations) has nothing to wait for.
        if filter.dump_len() > 0 {
            filter.set_restoring(Some(0))?;
        }
        Ok(filter)
    }
}

impl Filter {
    /// Length of the dump bytes: every sub-filter's bit array.
    pub fn dump_len(&self) -> u64 {
        self.dumped_sub_filters()
            .map(|f| f.shape().bit_bytes())
            .sum()
    }

    /// The chunk slot at dump offset `offset`: the sub-filter (its index in the dump), the offset
    /// in its bit array and the chunk's length. `None` unless a chunk starts exactly there.
    fn chunk_slot(&self, offset: u64) -> Option<(usize, u64, usize)> {
        let mut start = 0u64;
        for (index, filter) in self.dumped_sub_filters().enumerate() {
            let len = filter.shape().bit_bytes();
            if offset < start + len {
                let within = offset - start;
                if !within.is_multiple_of(CHUNK_BYTES) {
                    return None;
                }
                let chunk = (len - within).min(CHUNK_BYTES) as usize;
                return Some((index, within, chunk));
            }
            start += len;
        }
        None
    }

    /// The data chunk at dump offset `offset`, as BF.SCANDUMP hands it out; `None` unless a chunk
    /// starts there. (The dump's end answers `None` too: SCANDUMP answers it with `[0, ""]`.)
    pub fn chunk(&self, offset: u64) -> Option<Cow<'_, [u8]>> {
        let (index, within, len) = self.chunk_slot(offset)?;
        self.dumped_sub_filters()
            .nth(index)?
            .bits()
            .read_bytes(within, len)
    }

    fn restoring_state(&self) -> Option<&Restoring> {
        match self {
            Filter::Chain(chain) => chain.restoring.as_deref(),
            Filter::Windowed(windowed) => windowed.restoring.as_deref(),
        }
    }

    fn restoring_slot(&mut self) -> &mut Option<Box<Restoring>> {
        match self {
            Filter::Chain(chain) => &mut chain.restoring,
            Filter::Windowed(windowed) => &mut windowed.restoring,
        }
    }

    /// While the filter is being restored from a dump: the dump offset where the next data chunk
    /// must start (how many bytes of [`Filter::dump_len`] have arrived). `None` for a filter in
    /// use.
    pub fn restoring(&self) -> Option<u64> {
        self.restoring_state().map(|state| state.next)
    }

    /// Puts the filter in the restoring state with the next chunk due at dump offset `next`
    /// (found by one walk over the sub-filters), or in use (`None`, or the dump's end).
    pub(crate) fn set_restoring(&mut self, next: Option<u64>) -> Result<(), FilterError> {
        let state = match next {
            None => None,
            Some(next) => Some(Restoring::at(
                next,
                self.dumped_sub_filters()
                    .map(|filter| filter.shape().bit_bytes()),
            )?),
        };
        *self.restoring_slot() = state;
        Ok(())
    }

    /// The data chunks that rebuild what this filter holds, as (dump offset, bytes), in order:
    /// every chunk for a filter in use, the ones that have arrived for one being restored. After
    /// [`header`], they bring a new filter to exactly this state (the AOF rewrite). One walk over
    /// the sub-filters in all.
    pub fn loaded_chunks(&self) -> impl Iterator<Item = (u64, Cow<'_, [u8]>)> {
        let end = self.restoring().unwrap_or_else(|| self.dump_len());
        let mut filters = self.dumped_sub_filters();
        let mut current = filters.next();
        let (mut start, mut within) = (0u64, 0u64);
        std::iter::from_fn(move || loop {
            let filter = current?;
            let len = filter.shape().bit_bytes();
            let offset = start + within;
            if offset >= end {
                return None;
            }
            if within >= len {
                start += len;
                within = 0;
                current = filters.next();
                continue;
            }
            // A chain imported from RedisBloom may have been restored up to any byte of a slot.
            let take = (len - within).min(CHUNK_BYTES).min(end - offset);
            let bytes = filter.bits().read_bytes(within, take as usize)?;
            within += take;
            return Some((offset, bytes));
        })
    }

    /// Takes the next data chunk of a restore, at dump offset `offset`. The filter must be
    /// restoring and `offset` must be where the next chunk starts; the chunk must fill exactly
    /// one chunk slot (for a filter imported from RedisBloom: lie within one sub-filter, as
    /// RedisBloom's own chunks do). Otherwise nothing is written. The last chunk ends the restore.
    /// Its work is the chunk's length, whatever the number of sub-filters.
    pub fn load_chunk(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FilterError> {
        let state = self.restoring_state().ok_or(FilterError::NotRestoring)?;
        let (expected, index, start) = (state.next, state.index, state.start);
        if offset != expected {
            return Err(FilterError::ChunkOutOfOrder { expected });
        }
        if bytes.is_empty() {
            return Err(FilterError::Corrupt("an empty chunk"));
        }
        let within = offset - start;
        let imported =
            matches!(self, Filter::Chain(chain) if matches!(chain.format(), Format::RedisBloom(_)));
        let sub_filter = self.dumped_sub_filter_mut(index);
        let len = sub_filter.shape().bit_bytes();
        let room = len - within;
        let chunk = bytes.len() as u64;
        if imported {
            if chunk > room {
                return Err(FilterError::Corrupt(
                    "chunk passes the end of its sub-filter",
                ));
            }
        } else if chunk != room.min(CHUNK_BYTES) {
            return Err(FilterError::Corrupt("chunk length does not match its slot"));
        }
        if !sub_filter.bits_mut().write_bytes(within, bytes) {
            return Err(FilterError::Corrupt("chunk outside its sub-filter"));
        }
        let next = offset + chunk;
        let done = next == start + len && !self.has_dumped_sub_filter(index + 1);
        if done {
            *self.restoring_slot() = None;
        } else if let Some(state) = self.restoring_slot() {
            state.next = next;
            if next == start + len {
                state.index = index + 1;
                state.start = next;
            }
        }
        Ok(())
    }

    /// Checks that a stored restoring state can continue: the next chunk starts inside the dump,
    /// where a chunk can start.
    pub(crate) fn check_restoring(&self) -> Result<(), FilterError> {
        let Some(next) = self.restoring() else {
            return Ok(());
        };
        let imported =
            matches!(self, Filter::Chain(chain) if matches!(chain.format(), Format::RedisBloom(_)));
        let starts_a_chunk = if imported {
            next < self.dump_len()
        } else {
            self.chunk_slot(next).is_some()
        };
        if !starts_a_chunk {
            return Err(FilterError::Corrupt("restoring state out of range"));
        }
        Ok(())
    }
}

mod windowed;

#[cfg(test)]
mod tests;

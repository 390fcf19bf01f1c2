//! The dump format: how a filter travels as `BF.SCANDUMP` chunks, `BF.LOADCHUNK` arguments and
//! AOF rewrites, in pieces small enough for any bulk string.
//!
//! A dump is a header chunk, then data chunks. The header of a chain (little-endian):
//!
//! ```text
//! 8 bytes  magic "redis-bf"
//! u32      format version 1
//! u32      hash family: 0 this module's (xxh3-128, the probe sequence of `hash`),
//!                       1 RedisBloom's, kept by a filter imported from it
//! u32      expansion (0: NONSCALING)
//! u32      number of sub-filters, n >= 1
//! family 1 only: u32 RedisBloom's option flags
//! n times  u64 capacity, f64 error rate, u32 hash count, u64 bits, u64 items  (36 bytes)
//! ```
//!
//! and of a windowed filter (`crate::window`), whose generations all use hash family 0:
//!
//! ```text
//! 8 bytes  magic "redis-bf"
//! u32      format version 2
//! u64      window, seconds
//! u64      capacity (items per window)
//! f64      error rate
//! u32      expansion (0: NONSCALING)
//! u32      number of generations, g >= 0
//! g times  u64 slot, u32 number of sub-filters n >= 1, n entries as above
//! ```
//!
//! The data is every sub-filter's bit array, oldest first (a windowed filter's generation by
//! generation), concatenated: the *dump bytes*. It is cut into chunks that start where a
//! sub-filter starts and every [`CHUNK_BYTES`] after that, so that no chunk spans two sub-filters
//! or passes 16 MiB. Iterators follow RedisBloom's arithmetic: the header comes with iterator 1; a
//! chunk at offset `o` of length `len` comes with `o + len + 1`, and `BF.LOADCHUNK` recovers the
//! offset as `iterator - len - 1`.
//!
//! `BF.LOADCHUNK` also takes RedisBloom's own dumps (`crate::redisbloom`): its header, then data
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

use crate::bits::MAX_PIECE_BYTES;
use crate::chain::{check_successor, Format};
use crate::filter::Filter;
use crate::reader::Reader;
use crate::redisbloom::{check_stored_link, DumpHeader, RedisBloomOptions};
use crate::sub_filter::check_stored;
use crate::window::{check_generation_shape, Generation, Window, Windowed, WindowedShape};
use crate::{Chain, FilterError, Growth, Shape, SubFilter};
use std::borrow::Cow;
use std::num::NonZeroU64;

/// The first bytes of a header.
pub const MAGIC: [u8; 8] = *b"redis-bf";
/// The header layout of a chain.
pub const FORMAT_VERSION: u32 = 1;
/// The header layout of a windowed filter.
pub const WINDOWED_FORMAT_VERSION: u32 = 2;
/// Hash family 0: xxh3-128 and the probe sequence of `crate::hash`.
pub const HASH_FAMILY_XXH3: u32 = 0;
/// Hash family 1: RedisBloom's, as an imported filter keeps it.
pub const HASH_FAMILY_REDISBLOOM: u32 = 1;
/// The largest data chunk.
pub const CHUNK_BYTES: u64 = MAX_PIECE_BYTES as u64;

const ENTRY_LEN: usize = 8 + 8 + 4 + 8 + 8;

/// The header chunk of a filter's dump.
pub fn header(filter: &Filter) -> Vec<u8> {
    match filter {
        Filter::Chain(chain) => chain_header(chain),
        Filter::Windowed(windowed) => windowed_header(windowed),
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

fn windowed_header(windowed: &Windowed) -> Vec<u8> {
    let shape = windowed.shape();
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&WINDOWED_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&shape.window.as_seconds().to_le_bytes());
    out.extend_from_slice(&shape.capacity.to_le_bytes());
    out.extend_from_slice(&shape.error.to_bits().to_le_bytes());
    out.extend_from_slice(&expansion_field(shape.growth).to_le_bytes());
    out.extend_from_slice(&(windowed.generations().len() as u32).to_le_bytes());
    for generation in windowed.generations() {
        out.extend_from_slice(&generation.slot().to_le_bytes());
        let filters = generation.chain().filters();
        out.extend_from_slice(&(filters.len() as u32).to_le_bytes());
        push_entries(&mut out, filters);
    }
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
        /// Each generation's slot and sub-filters.
        generations: Vec<(u64, Vec<(Shape, u64)>)>,
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

/// Reads `count` entries of this module's own sub-filters, checked one by one and against the
/// chain's growth rule.
fn native_entries(
    reader: &mut Reader,
    count: usize,
    growth: Growth,
) -> Result<Vec<(Shape, u64)>, FilterError> {
    if reader.remaining() < count.saturating_mul(ENTRY_LEN) {
        return Err(FilterError::Corrupt(
            "header length does not match its sub-filter count",
        ));
    }
    let mut filters: Vec<(Shape, u64)> = Vec::with_capacity(count);
    for _ in 0..count {
        let shape = Shape {
            capacity: reader.u64()?,
            error: reader.f64()?,
            hash_count: reader.u32()?,
            bits: reader.u64()?,
        };
        let items = reader.u64()?;
        check_stored(&shape, items)?;
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
            WINDOWED_FORMAT_VERSION => Header::parse_windowed(reader),
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
            HASH_FAMILY_XXH3 => None,
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
        let filters = match options {
            None => native_entries(&mut reader, count, growth)?,
            Some(options) => {
                let mut filters = Vec::with_capacity(count);
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
            format: options.map_or(Format::Native, Format::RedisBloom),
            growth,
            filters,
        }))
    }

    fn parse_windowed(mut reader: Reader) -> Result<Header, FilterError> {
        let window = Window::seconds(reader.u64()?)
            .map_err(|_| FilterError::Corrupt("window out of range"))?;
        let capacity = reader.u64()?;
        let error = reader.f64()?;
        let growth = growth_field(reader.u32()?)?;
        let shape = WindowedShape::new(capacity, error, growth, window)
            .map_err(|_| FilterError::Corrupt("windowed filter's capacity or error rate"))?;
        let count = reader.u32()? as usize;
        // A generation takes at least 12 + 36 bytes: the count justifies no more than that.
        let mut generations: Vec<(u64, Vec<(Shape, u64)>)> =
            Vec::with_capacity(count.min(reader.remaining() / (12 + ENTRY_LEN)));
        for _ in 0..count {
            let slot = reader.u64()?;
            if generations.last().is_some_and(|(older, _)| *older >= slot)
                || shape.expiry(slot) == u64::MAX
            {
                return Err(FilterError::Corrupt("generations out of order"));
            }
            let filters = reader.u32()? as usize;
            if filters == 0 {
                return Err(FilterError::Corrupt("no sub-filters"));
            }
            let filters = native_entries(&mut reader, filters, growth)?;
            check_generation_shape(&shape, &filters[0].0)?;
            generations.push((slot, filters));
        }
        if reader.remaining() != 0 {
            return Err(FilterError::Corrupt(
                "header length does not match its generations",
            ));
        }
        Ok(Header(Described::Windowed { shape, generations }))
    }

    /// Bytes the described filter will take (what `bf.max-filter-bytes` bounds).
    pub fn planned_bytes(&self) -> u64 {
        match &self.0 {
            Described::Chain { filters, .. } => {
                Chain::planned_bytes(filters.iter().map(|(shape, _)| shape))
            }
            Described::Windowed { generations, .. } => generations
                .iter()
                .map(|(_, filters)| {
                    Chain::planned_bytes(filters.iter().map(|(shape, _)| shape)) + 8
                })
                .fold(std::mem::size_of::<Windowed>() as u64, u64::saturating_add),
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
                    Format::Native => Chain::from_parts(growth, filters),
                    Format::RedisBloom(options) => Chain::imported(options, growth, filters),
                }?)
            }
            Described::Windowed { shape, generations } => {
                let mut built = Vec::with_capacity(generations.len());
                for (slot, filters) in generations {
                    let chain = Chain::from_parts(shape.growth, sub_filters(filters)?)?;
                    built.push(Generation::from_parts(slot, chain));
                }
                Filter::from(Windowed::from_parts(shape, built)?)
            }
        };
        // A filter with no bits (a windowed one without generations) has nothing to wait for.
        if filter.dump_len() > 0 {
            filter.set_restoring(NonZeroU64::new(1));
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

    fn restoring_field(&self) -> Option<NonZeroU64> {
        match self {
            Filter::Chain(chain) => chain.restoring,
            Filter::Windowed(windowed) => windowed.restoring,
        }
    }

    pub(crate) fn set_restoring(&mut self, next: Option<NonZeroU64>) {
        match self {
            Filter::Chain(chain) => chain.restoring = next,
            Filter::Windowed(windowed) => windowed.restoring = next,
        }
    }

    /// While the filter is being restored from a dump: the dump offset where the next data chunk
    /// must start (how many bytes of [`Filter::dump_len`] have arrived). `None` for a filter in
    /// use.
    pub fn restoring(&self) -> Option<u64> {
        self.restoring_field().map(|next| next.get() - 1)
    }

    /// The data chunks that rebuild what this filter holds, as (dump offset, bytes), in order:
    /// every chunk for a filter in use, the ones that have arrived for one being restored. After
    /// [`header`], they bring a new filter to exactly this state (the AOF rewrite).
    pub fn loaded_chunks(&self) -> impl Iterator<Item = (u64, Cow<'_, [u8]>)> {
        let end = self.restoring().unwrap_or_else(|| self.dump_len());
        let mut offset = 0;
        std::iter::from_fn(move || {
            if offset >= end {
                return None;
            }
            let (index, within, len) = self.chunk_slot(offset)?;
            // A chain imported from RedisBloom may have been restored up to any byte of a slot.
            let len = len.min((end - offset) as usize);
            let bytes = self
                .dumped_sub_filters()
                .nth(index)?
                .bits()
                .read_bytes(within, len)?;
            let at = offset;
            offset += len as u64;
            Some((at, bytes))
        })
    }

    /// Takes the next data chunk of a restore, at dump offset `offset`. The filter must be
    /// restoring and `offset` must be where the next chunk starts; the chunk must fill exactly
    /// one chunk slot (for a filter imported from RedisBloom: lie within one sub-filter, as
    /// RedisBloom's own chunks do). Otherwise nothing is written. The last chunk ends the restore.
    pub fn load_chunk(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FilterError> {
        let expected = self.restoring().ok_or(FilterError::NotRestoring)?;
        if offset != expected {
            return Err(FilterError::ChunkOutOfOrder { expected });
        }
        if bytes.is_empty() {
            return Err(FilterError::Corrupt("an empty chunk"));
        }
        self.write_chunk(offset, bytes)?;
        let end = offset + bytes.len() as u64;
        let next = if end == self.dump_len() {
            None
        } else {
            NonZeroU64::new(end + 1)
        };
        self.set_restoring(next);
        Ok(())
    }

    /// Checks that a stored restoring state can continue: the next chunk starts inside the dump,
    /// where a chunk can start.
    pub(crate) fn check_restoring(&self) -> Result<(), FilterError> {
        let Some(next) = self.restoring() else {
            return Ok(());
        };
        let imported = matches!(self, Filter::Chain(chain) if chain.format() != Format::Native);
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

    /// Writes a data chunk at dump offset `offset`, if it fits its place (see
    /// [`Filter::load_chunk`]).
    fn write_chunk(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FilterError> {
        if let Filter::Chain(chain) = self {
            if let Format::RedisBloom(_) = chain.format() {
                let mut start = 0u64;
                for index in 0..chain.filters().len() {
                    let len = chain.filters()[index].shape().bit_bytes();
                    if offset < start + len {
                        let within = offset - start;
                        if bytes.len() as u64 > len - within {
                            return Err(FilterError::Corrupt(
                                "chunk passes the end of its sub-filter",
                            ));
                        }
                        chain
                            .filter_mut(index)
                            .bits_mut()
                            .write_bytes(within, bytes);
                        return Ok(());
                    }
                    start += len;
                }
                return Err(FilterError::Corrupt("no sub-filter at this offset"));
            }
        }
        match self.chunk_slot(offset) {
            Some((index, within, len)) if len == bytes.len() => {
                let sub_filter = self.dumped_sub_filter_mut(index);
                if sub_filter.bits_mut().write_bytes(within, bytes) {
                    Ok(())
                } else {
                    Err(FilterError::Corrupt("chunk outside its sub-filter"))
                }
            }
            Some(_) => Err(FilterError::Corrupt("chunk length does not match its slot")),
            None => Err(FilterError::Corrupt("no chunk starts at this offset")),
        }
    }
}

/// The iterator BF.SCANDUMP returns with a data chunk at `offset` of `len` bytes.
pub fn next_iterator(offset: u64, len: usize) -> u64 {
    offset + len as u64 + 1
}

/// The dump offset of a chunk BF.LOADCHUNK receives with `iterator`; `None` if impossible.
pub fn chunk_offset(iterator: u64, len: usize) -> Option<u64> {
    iterator.checked_sub(len as u64)?.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let shape =
            WindowedShape::new(400, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
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

    #[test]
    fn windowed_headers_are_checked_field_by_field() {
        let filter = windowed(3);
        let good = header(&filter);
        assert_eq!(
            Header::parse(&good).unwrap().planned_bytes(),
            filter.planned_size()
        );
        let patched = |at: usize, bytes: &[u8]| {
            let mut forged = good.clone();
            forged[at..at + bytes.len()].copy_from_slice(bytes);
            Header::parse(&forged)
        };
        // magic 8, version 4, window 8, capacity 8, error 8, expansion 4, count 4 = 44; then per
        // generation: slot 8, count 4, entries.
        let first = 44;
        let Filter::Windowed(inner) = &filter else {
            unreachable!()
        };
        let later = inner.generations()[1].slot() + 1;
        let cases: Vec<(&str, Result<Header, FilterError>)> = vec![
            ("window zero", patched(12, &0u64.to_le_bytes())),
            (
                "window too long",
                patched(12, &(u64::MAX / 2).to_le_bytes()),
            ),
            ("capacity", patched(20, &401u64.to_le_bytes())),
            ("error", patched(28, &0.02f64.to_bits().to_le_bytes())),
            ("expansion", patched(36, &2u32.to_le_bytes())),
            ("generation count", patched(40, &4u32.to_le_bytes())),
            ("slot out of order", patched(first, &later.to_le_bytes())),
            (
                "slot at the end of time",
                patched(first, &u64::MAX.to_le_bytes()),
            ),
            ("no sub-filters", patched(first + 8, &0u32.to_le_bytes())),
            (
                "sub-filter capacity",
                patched(first + 12, &1000u64.to_le_bytes()),
            ),
            ("truncated", Header::parse(&good[..good.len() - 1])),
        ];
        for (what, parsed) in cases {
            assert!(parsed.is_err(), "{what} was accepted");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(Header::parse(&longer).is_err());
    }
}

//! The dump format: how a chain travels as `BF.SCANDUMP` chunks, `BF.LOADCHUNK` arguments and AOF
//! rewrites, in pieces small enough for any bulk string.
//!
//! A dump is a header chunk, then data chunks. The header (little-endian):
//!
//! ```text
//! 8 bytes  magic "redis-bf"
//! u32      format version (1)
//! u32      hash family: 0 this module's (xxh3-128, the probe sequence of `hash`),
//!                       1 RedisBloom's, kept by a filter imported from it
//! u32      expansion (0: NONSCALING)
//! u32      number of sub-filters, n >= 1
//! family 1 only: u32 RedisBloom's option flags
//! n times  u64 capacity, f64 error rate, u32 hash count, u64 bits, u64 items  (36 bytes)
//! ```
//!
//! The data is every sub-filter's bit array, oldest first, concatenated: the *dump bytes*. It is cut
//! into chunks that start where a sub-filter starts and every [`CHUNK_BYTES`] after that, so that
//! no chunk spans two sub-filters or passes 16 MiB. Iterators follow RedisBloom's arithmetic: the
//! header comes with iterator 1; a chunk at offset `o` of length `len` comes with `o + len + 1`,
//! and `BF.LOADCHUNK` recovers the offset as `iterator - len - 1`.
//!
//! `BF.LOADCHUNK` also takes RedisBloom's own dumps (`crate::redisbloom`): its header, then data
//! chunks of any length within one sub-filter (older releases cut at 10 MiB).
//!
//! Everything is checked before anything is allocated: a header must describe exactly what the
//! sizing and the growth rule would have built, and a data chunk must fit its place.
//!
//! A header makes a chain in the *restoring* state ([`Chain::restoring`]): it takes data chunks,
//! in order, each exactly once, and nothing else (the commands refuse adds and lookups), until the
//! last one has arrived. A chain in use takes no data chunk at all, so no chunk can overwrite a
//! live filter's bits. The state is part of the chain: it is stored, copied and replicated with
//! it.

use crate::bits::MAX_PIECE_BYTES;
use crate::chain::{check_successor, Format};
use crate::reader::Reader;
use crate::redisbloom::{check_stored_link, DumpHeader, RedisBloomOptions};
use crate::sub_filter::check_stored;
use crate::{Chain, FilterError, Growth, Shape, SubFilter};
use std::borrow::Cow;
use std::num::NonZeroU64;

/// The first bytes of a header.
pub const MAGIC: [u8; 8] = *b"redis-bf";
/// The header layout version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Hash family 0: xxh3-128 and the probe sequence of `crate::hash`.
pub const HASH_FAMILY_XXH3: u32 = 0;
/// Hash family 1: RedisBloom's, as an imported filter keeps it.
pub const HASH_FAMILY_REDISBLOOM: u32 = 1;
/// The largest data chunk.
pub const CHUNK_BYTES: u64 = MAX_PIECE_BYTES as u64;

const FIXED_LEN: usize = 8 + 4 * 4;
const ENTRY_LEN: usize = 8 + 8 + 4 + 8 + 8;

/// The header chunk of a chain's dump.
pub fn header(chain: &Chain) -> Vec<u8> {
    let mut out = Vec::with_capacity(FIXED_LEN + 4 + ENTRY_LEN * chain.filters().len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let family = match chain.format() {
        Format::Native => HASH_FAMILY_XXH3,
        Format::RedisBloom(_) => HASH_FAMILY_REDISBLOOM,
    };
    out.extend_from_slice(&family.to_le_bytes());
    let expansion = match chain.growth() {
        Growth::Scaling { expansion } => expansion,
        Growth::Fixed => 0,
    };
    out.extend_from_slice(&u32::from(expansion).to_le_bytes());
    out.extend_from_slice(&(chain.filters().len() as u32).to_le_bytes());
    if let Format::RedisBloom(options) = chain.format() {
        out.extend_from_slice(&options.flags().to_le_bytes());
    }
    for filter in chain.filters() {
        let shape = filter.shape();
        out.extend_from_slice(&shape.capacity.to_le_bytes());
        out.extend_from_slice(&shape.error.to_bits().to_le_bytes());
        out.extend_from_slice(&shape.hash_count.to_le_bytes());
        out.extend_from_slice(&shape.bits.to_le_bytes());
        out.extend_from_slice(&filter.items().to_le_bytes());
    }
    out
}

/// A header that passed every check: the chain it describes, not yet allocated.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    format: Format,
    growth: Growth,
    /// Each sub-filter's shape and item count.
    filters: Vec<(Shape, u64)>,
}

impl From<DumpHeader> for Header {
    fn from(header: DumpHeader) -> Header {
        Header {
            format: Format::RedisBloom(header.options),
            growth: header.growth,
            filters: header.links,
        }
    }
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
        if reader.u32()? != FORMAT_VERSION {
            return Err(FilterError::Corrupt("unknown dump format version"));
        }
        let family = reader.u32()?;
        let expansion = reader.u32()?;
        let growth = match expansion {
            0 => Growth::Fixed,
            expansion => Growth::scaling(u64::from(expansion))
                .map_err(|_| FilterError::Corrupt("expansion out of range"))?,
        };
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
        let mut filters: Vec<(Shape, u64)> = Vec::with_capacity(count);
        for _ in 0..count {
            let capacity = reader.u64()?;
            let error = reader.f64()?;
            let hash_count = reader.u32()?;
            let bits = reader.u64()?;
            let items = reader.u64()?;
            let shape = match options {
                None => {
                    let shape = Shape {
                        capacity,
                        error,
                        hash_count,
                        bits,
                    };
                    check_stored(&shape, items)?;
                    if let Some((older, older_items)) = filters.last() {
                        check_successor(growth, older, *older_items, &shape)?;
                    }
                    shape
                }
                Some(options) => {
                    check_stored_link(options, capacity, error, u64::from(hash_count), bits, items)?
                }
            };
            filters.push((shape, items));
        }
        let format = options.map_or(Format::Native, Format::RedisBloom);
        if format != Format::Native && growth == Growth::Fixed && count > 1 {
            return Err(FilterError::Corrupt(
                "a non-scaling filter with several sub-filters",
            ));
        }
        Ok(Header {
            format,
            growth,
            filters,
        })
    }

    /// Bytes the described chain will take (what `bf.max-filter-bytes` bounds).
    pub fn planned_bytes(&self) -> u64 {
        Chain::planned_bytes(self.filters.iter().map(|(shape, _)| shape))
    }

    /// The described chain, with its item counts and every bit zero, restoring: ready for its
    /// data chunks, from the first.
    pub fn into_chain(self) -> Result<Chain, FilterError> {
        let mut filters = Vec::with_capacity(self.filters.len());
        for (shape, items) in self.filters {
            filters.push(SubFilter::new(shape)?.with_items(items));
        }
        let mut chain = match self.format {
            Format::Native => Chain::from_parts(self.growth, filters),
            Format::RedisBloom(options) => Chain::imported(options, self.growth, filters),
        }?;
        chain.restoring = NonZeroU64::new(1);
        Ok(chain)
    }
}

impl Chain {
    /// Length of the dump bytes: every sub-filter's bit array.
    pub fn dump_len(&self) -> u64 {
        self.filters().iter().map(|f| f.shape().bit_bytes()).sum()
    }

    /// The chunk slot at dump offset `offset`: the sub-filter, the offset in its bit array and
    /// the chunk's length. `None` unless a chunk starts exactly there.
    fn chunk_slot(&self, offset: u64) -> Option<(usize, u64, usize)> {
        let mut start = 0u64;
        for (index, filter) in self.filters().iter().enumerate() {
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
        self.filters()[index].bits().read_bytes(within, len)
    }

    /// While the chain is being restored from a dump: the dump offset where the next data chunk
    /// must start (how many bytes of [`Chain::dump_len`] have arrived). `None` for a chain in use.
    pub fn restoring(&self) -> Option<u64> {
        self.restoring.map(|next| next.get() - 1)
    }

    /// The data chunks that rebuild what this chain holds, as (dump offset, bytes), in order:
    /// every chunk for a chain in use, the ones that have arrived for a chain being restored.
    /// After [`header`], they bring a new chain to exactly this state (the AOF rewrite).
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
            let bytes = self.filters()[index].bits().read_bytes(within, len)?;
            let at = offset;
            offset += len as u64;
            Some((at, bytes))
        })
    }

    /// Takes the next data chunk of a restore, at dump offset `offset`. The chain must be
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
        self.restoring = if end == self.dump_len() {
            None
        } else {
            NonZeroU64::new(end + 1)
        };
        Ok(())
    }

    /// Checks that a stored restoring state can continue: the next chunk starts inside the dump,
    /// where a chunk can start.
    pub(crate) fn check_restoring(&self) -> Result<(), FilterError> {
        let Some(next) = self.restoring() else {
            return Ok(());
        };
        let starts_a_chunk = match self.format() {
            Format::Native => self.chunk_slot(next).is_some(),
            Format::RedisBloom(_) => next < self.dump_len(),
        };
        if !starts_a_chunk {
            return Err(FilterError::Corrupt("restoring state out of range"));
        }
        Ok(())
    }

    /// Writes a data chunk at dump offset `offset`, if it fits its place (see
    /// [`Chain::load_chunk`]).
    fn write_chunk(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FilterError> {
        if let Format::RedisBloom(_) = self.format() {
            let mut start = 0u64;
            for index in 0..self.filters().len() {
                let len = self.filters()[index].shape().bit_bytes();
                if offset < start + len {
                    let within = offset - start;
                    if bytes.len() as u64 > len - within {
                        return Err(FilterError::Corrupt(
                            "chunk passes the end of its sub-filter",
                        ));
                    }
                    self.filter_mut(index).bits_mut().write_bytes(within, bytes);
                    return Ok(());
                }
                start += len;
            }
            return Err(FilterError::Corrupt("no sub-filter at this offset"));
        }
        match self.chunk_slot(offset) {
            Some((index, within, len)) if len == bytes.len() => {
                if self.filter_mut(index).bits_mut().write_bytes(within, bytes) {
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

    fn filled(capacity: u64, growth: Growth, items: u32) -> Chain {
        let mut chain = Chain::new(capacity, 0.01, growth, u64::MAX).unwrap();
        for i in 0..items {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        chain
    }

    /// Dumps a chain the way SCANDUMP would and loads it the way LOADCHUNK would.
    fn round_trip(chain: &Chain) -> Chain {
        let mut loaded = Header::parse(&header(chain)).unwrap().into_chain().unwrap();
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
        assert!(chunks >= chain.filters().len());
        loaded
    }

    #[test]
    fn dumps_load_back_bit_identically() {
        for chain in [
            filled(100, Growth::Scaling { expansion: 2 }, 0),
            filled(10, Growth::Scaling { expansion: 2 }, 300),
            filled(10, Growth::Scaling { expansion: 1 }, 60),
            filled(1000, Growth::Fixed, 1000),
        ] {
            assert_eq!(round_trip(&chain), chain);
        }
    }

    #[test]
    fn chunks_never_pass_16_mib_or_span_two_sub_filters() {
        // 20 million items at 1%: a first sub-filter of 27.6 MB, cut into 16 MiB and the rest.
        let mut chain =
            Chain::new(20_000_000, 0.01, Growth::Scaling { expansion: 2 }, u64::MAX).unwrap();
        let first = chain.filters()[0].shape().bit_bytes();
        assert_eq!(chain.chunk(0).unwrap().len() as u64, CHUNK_BYTES);
        assert_eq!(
            chain.chunk(CHUNK_BYTES).unwrap().len() as u64,
            first - CHUNK_BYTES
        );
        assert!(chain.chunk(1).is_none());
        assert!(chain.chunk(first).is_none());
        chain.add(b"x", u64::MAX).unwrap();
        assert_eq!(round_trip(&chain), chain);
    }

    #[test]
    fn chunks_must_fill_their_slot_exactly() {
        let source = filled(100, Growth::Scaling { expansion: 2 }, 10);
        let mut chain = Header::parse(&header(&source))
            .unwrap()
            .into_chain()
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
        let mut source =
            Chain::new(20_000_000, 0.01, Growth::Scaling { expansion: 2 }, u64::MAX).unwrap();
        source.add(b"x", u64::MAX).unwrap();
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
            .into_chain()
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
            .into_chain()
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
        let entry = |i: usize, field: usize| FIXED_LEN + i * ENTRY_LEN + field;
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
}

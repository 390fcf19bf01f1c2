//! A cuckoo filter as `CF.SCANDUMP` chunks and `CF.LOADCHUNK` arguments (and AOF rewrites), in
//! RedisBloom's format: a 38-byte header, little-endian and packed,
//!
//! ```text
//! u64 items, u64 buckets (the first sub-filter's), u64 deletes, u64 sub-filters,
//! u16 bucket size, u16 max iterations, u16 expansion
//! ```
//!
//! (a filter with a bounded error rate, this module's, has its own header: the 8 bytes
//! `redis-cf`, a u32 version 1 and the f64 error rate before those 38 bytes, 58 in all), then the
//! sub-filters' bytes, oldest first, concatenated: one chunk per sub-filter, or pieces of 16 MiB of
//! a bigger one, with RedisBloom's iterators (`crate::chunks`).
//!
//! A header makes a filter in the restoring state, which takes the data chunks in order, each
//! once, within one sub-filter (of any length, as RedisBloom's own dumps of any release cut them),
//! and nothing else until the last byte has arrived. A filter in use takes no chunk, so no client
//! can overwrite a live filter's buckets (RedisBloom lets one, at any offset).

use super::filter::Cuckoo;
use super::shape::{check_shape, slot_bits, Bound, Params, MAX_TABLES};
use super::table::Table;
use crate::chunks::CHUNK_BYTES;
use crate::error::FilterError;
use crate::reader::Reader;
use crate::restoring::Restoring;
use std::borrow::Cow;

/// The length of RedisBloom's header.
pub const HEADER_LEN: usize = 38;
/// The first bytes of this module's header (a filter with a bounded error rate).
const MAGIC: [u8; 8] = *b"redis-cf";
/// The length of this module's header.
const BOUNDED_HEADER_LEN: usize = 8 + 4 + 8 + HEADER_LEN;

/// The header chunk of `filter`'s dump.
pub fn header(filter: &Cuckoo) -> Vec<u8> {
    let mut out = Vec::with_capacity(BOUNDED_HEADER_LEN);
    if let Some(bound) = filter.bound() {
        out.extend(MAGIC);
        out.extend(1u32.to_le_bytes());
        out.extend(bound.error().to_le_bytes());
    }
    let params = filter.params();
    out.extend(filter.items().to_le_bytes());
    out.extend(filter.buckets().to_le_bytes());
    out.extend(filter.deletes().to_le_bytes());
    out.extend((filter.tables().len() as u64).to_le_bytes());
    out.extend(u16::from(params.bucket_size).to_le_bytes());
    out.extend(params.max_iterations.to_le_bytes());
    out.extend(params.expansion.to_le_bytes());
    out
}

/// A header that passed every check: the filter it describes, not yet allocated.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    params: Params,
    bound: Option<Bound>,
    buckets: u64,
    tables: u64,
    items: u64,
    deletes: u64,
}

impl Header {
    /// Parses and checks a header chunk: RedisBloom's 38 bytes, or this module's 58.
    pub fn parse(bytes: &[u8]) -> Result<Header, FilterError> {
        let (bound, fields) = match bytes.len() {
            HEADER_LEN => (None, bytes),
            BOUNDED_HEADER_LEN if bytes.starts_with(&MAGIC) => {
                let mut reader = Reader::new(&bytes[MAGIC.len()..]);
                if reader.u32()? != 1 {
                    return Err(FilterError::Corrupt("unknown cuckoo filter header version"));
                }
                let error = f64::from_le_bytes(reader.take()?);
                let fields = &bytes[BOUNDED_HEADER_LEN - HEADER_LEN..];
                (Some(Bound::for_error(error)?), fields)
            }
            _ => {
                return Err(FilterError::Corrupt(
                    "a cuckoo filter header is 38 bytes (58 with a bounded error rate)",
                ))
            }
        };
        let mut reader = Reader::new(fields);
        let items = reader.u64()?;
        let buckets = reader.u64()?;
        let deletes = reader.u64()?;
        let tables = reader.u64()?;
        let bucket_size = u16::from_le_bytes(reader.take()?);
        let max_iterations = u16::from_le_bytes(reader.take()?);
        let expansion = u16::from_le_bytes(reader.take()?);
        let params = Params::new(
            u64::from(bucket_size),
            u64::from(max_iterations),
            u64::from(expansion),
        )?;
        if params.expansion != expansion {
            return Err(FilterError::Corrupt(
                "an expansion that is not a power of two",
            ));
        }
        if tables == 0 || tables > MAX_TABLES {
            return Err(FilterError::Corrupt("sub-filter count out of range"));
        }
        let header = Header {
            params,
            bound,
            buckets,
            tables,
            items,
            deletes,
        };
        check_shape(params, header.table_buckets(), items)?;
        Ok(header)
    }

    /// Each sub-filter's bucket count.
    fn table_buckets(&self) -> impl Iterator<Item = u64> + '_ {
        let expansion = u64::from(self.params.expansion);
        (0..self.tables).scan(self.buckets, move |next, _| {
            let current = *next;
            *next = next.saturating_mul(expansion);
            Some(current)
        })
    }

    /// Each sub-filter's bucket count and slot width.
    fn table_shapes(&self) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.table_buckets()
            .enumerate()
            .map(|(index, buckets)| (buckets, slot_bits(self.bound, index)))
    }

    /// What the described filter will take once restored (what `bf.max-filter-bytes` bounds).
    pub fn planned_bytes(&self) -> u64 {
        Cuckoo::planned_bytes(self.params.bucket_size, self.table_shapes())
    }

    /// The filter, empty and waiting for its data chunks.
    pub fn into_filter(self) -> Result<Cuckoo, FilterError> {
        let mut tables = Vec::new();
        for (buckets, bits) in self.table_shapes() {
            tables.push(Table::new(buckets, self.params.bucket_size, bits)?);
        }
        let mut filter =
            Cuckoo::from_parts(self.params, self.bound, tables, self.items, self.deletes)?;
        filter.set_restoring(Some(0))?;
        Ok(filter)
    }
}

impl Cuckoo {
    /// The length of the dump bytes: every sub-filter's bytes.
    pub fn dump_len(&self) -> u64 {
        self.tables
            .iter()
            .map(|table| table.bytes().len() as u64)
            .sum()
    }

    /// The data chunk at dump offset `offset`, as CF.SCANDUMP hands it out: `None` unless a chunk
    /// starts there (the dump's end included).
    pub fn chunk(&self, offset: u64) -> Option<&[u8]> {
        let mut start = 0u64;
        for table in self.tables.iter() {
            let len = table.bytes().len() as u64;
            if offset < start + len {
                let within = offset - start;
                if !within.is_multiple_of(CHUNK_BYTES) {
                    return None;
                }
                let end = (within + CHUNK_BYTES).min(len);
                return table.bytes().get(within as usize..end as usize);
            }
            start += len;
        }
        None
    }

    /// While the filter is being restored: the dump offset where the next data chunk must start.
    pub fn restoring(&self) -> Option<u64> {
        self.restoring.as_ref().map(|state| state.next)
    }

    /// Puts the filter in the restoring state with the next chunk due at `next` (found by one
    /// walk over the sub-filters), or in use (`None`).
    pub(crate) fn set_restoring(&mut self, next: Option<u64>) -> Result<(), FilterError> {
        self.restoring = match next {
            None => None,
            Some(next) => Some(Restoring::at(
                next,
                self.tables.iter().map(|table| table.bytes().len() as u64),
            )?),
        };
        Ok(())
    }

    /// Takes the next data chunk of a restore, at dump offset `offset`: the filter must be
    /// restoring, `offset` the next one due, and the chunk within one sub-filter. The last byte
    /// puts the filter in use. Its work is the chunk's length.
    pub fn load_chunk(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FilterError> {
        let state = self.restoring.as_deref().ok_or(FilterError::NotRestoring)?;
        let (expected, index, start) = (state.next, state.index, state.start);
        if offset != expected {
            return Err(FilterError::ChunkOutOfOrder { expected });
        }
        if bytes.is_empty() {
            return Err(FilterError::Corrupt("an empty chunk"));
        }
        let table = &mut self.tables[index];
        let len = table.bytes().len() as u64;
        table.write_bytes(offset - start, bytes)?;
        let next = offset + bytes.len() as u64;
        let done = next == start + len && index + 1 == self.tables.len();
        match self.restoring.as_deref_mut() {
            Some(_) if done => self.restoring = None,
            Some(state) => {
                state.next = next;
                if next == start + len {
                    state.index = index + 1;
                    state.start = next;
                }
            }
            None => {}
        }
        Ok(())
    }

    /// The data chunks that rebuild what this filter holds, as (dump offset, bytes): every chunk
    /// of a filter in use, the ones that arrived for one being restored. After [`header`] they
    /// bring a new filter to this state (the AOF rewrite).
    pub fn loaded_chunks(&self) -> impl Iterator<Item = (u64, Cow<'_, [u8]>)> {
        let end = self.restoring().unwrap_or_else(|| self.dump_len());
        let mut start = 0u64;
        self.tables.iter().flat_map(move |table| {
            let bytes = table.bytes();
            let at = start;
            start += bytes.len() as u64;
            let held = end.saturating_sub(at).min(bytes.len() as u64) as usize;
            bytes[..held]
                .chunks(CHUNK_BYTES as usize)
                .enumerate()
                .map(move |(piece, chunk)| (at + piece as u64 * CHUNK_BYTES, Cow::Borrowed(chunk)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunks::{chunk_offset, next_iterator};
    use crate::cuckoo::Limits;

    /// RedisBloom 2.4.23: CF.RESERVE sd 8, then CF.ADD a, b, c (the fact sheet's dump).
    #[test]
    fn a_dump_is_redisbloom_s_to_the_byte() {
        let params = Params::new(2, 20, 1).unwrap();
        let mut filter = Cuckoo::new(4, params, None, u64::MAX).unwrap();
        for item in [b"a", b"b", b"c"] {
            filter.add(item, &Limits::NONE).unwrap();
        }
        let expected = "03000000000000000400000000000000000000000000000001000000000000000200\
                        14000100";
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(&header(&filter)), expected);
        assert_eq!(hex(filter.chunk(0).unwrap()), "0000c4cb00001000");
        assert_eq!(next_iterator(0, 8), 9);
        assert_eq!(filter.chunk(8), None);
    }

    #[test]
    fn chunks_rebuild_the_filter_in_order_and_once() {
        let params = Params::new(2, 3, 2).unwrap();
        let mut filter = Cuckoo::new(2, params, None, u64::MAX).unwrap();
        for i in 0..40u32 {
            filter.add(&i.to_le_bytes(), &Limits::NONE).unwrap();
        }
        let mut copy = Header::parse(&header(&filter))
            .unwrap()
            .into_filter()
            .unwrap();
        assert_eq!(copy.restoring(), Some(0));
        let chunks: Vec<(u64, Vec<u8>)> = filter
            .loaded_chunks()
            .map(|(offset, bytes)| (offset, bytes.into_owned()))
            .collect();
        assert!(chunks.len() > 2);
        assert_eq!(
            copy.load_chunk(chunks[1].0, &chunks[1].1),
            Err(FilterError::ChunkOutOfOrder { expected: 0 })
        );
        for (offset, bytes) in &chunks {
            let iterator = next_iterator(*offset, bytes.len());
            assert_eq!(chunk_offset(iterator, bytes.len()), Some(*offset));
            copy.load_chunk(*offset, bytes).unwrap();
        }
        assert_eq!(copy, filter);
        assert_eq!(
            copy.load_chunk(0, &chunks[0].1),
            Err(FilterError::NotRestoring)
        );
    }

    #[test]
    fn bad_headers_are_refused() {
        let params = Params::new(2, 20, 1).unwrap();
        let filter = Cuckoo::new(4, params, None, u64::MAX).unwrap();
        let good: [u8; HEADER_LEN] = header(&filter).try_into().unwrap();
        assert!(Header::parse(&good).is_ok());
        assert!(Header::parse(&good[..37]).is_err());
        let with = |at: usize, bytes: &[u8]| {
            let mut changed = good;
            changed[at..at + bytes.len()].copy_from_slice(bytes);
            changed
        };
        for bad in [
            with(8, &3u64.to_le_bytes()),
            with(8, &0u64.to_le_bytes()),
            with(24, &0u64.to_le_bytes()),
            with(24, &65_536u64.to_le_bytes()),
            with(32, &0u16.to_le_bytes()),
            with(32, &256u16.to_le_bytes()),
            with(34, &0u16.to_le_bytes()),
            with(36, &3u16.to_le_bytes()),
            with(0, &9u64.to_le_bytes()),
        ] {
            assert!(Header::parse(&bad).is_err(), "{bad:?}");
        }
        // Expansion 0 with two sub-filters.
        let two = with(24, &2u64.to_le_bytes());
        assert!(Header::parse(&with_expansion(two, 0)).is_err());
    }

    fn with_expansion(mut header: [u8; HEADER_LEN], expansion: u16) -> [u8; HEADER_LEN] {
        header[36..38].copy_from_slice(&expansion.to_le_bytes());
        header
    }
}

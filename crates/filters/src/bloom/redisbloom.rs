//! RedisBloom's own formats, read so that its filters move here whole: the RDB layouts of its data
//! type (`MBbloom--`, encoding versions 0 to 4) and the header of its `BF.SCANDUMP` chunks.
//!
//! An imported chain keeps RedisBloom's hashing and sizing ([`crate::bloom::Format::RedisBloom`]), as its
//! option flags say, so that every answer is the one RedisBloom gave, false positives included,
//! and sub-filters added here are the ones RedisBloom would have added. Nothing is re-hashed.
//!
//! The layouts, as RedisBloom writes them:
//!
//! ```text
//! RDB, per chain: unsigned size (items), unsigned nfilters,
//!                 unsigned options   (encoding version >= 2; before: 0)
//!                 unsigned growth    (encoding version >= 4; before: 2)
//!   per sub-filter: unsigned entries (capacity), double error, unsigned hashes, double bpe,
//!                   unsigned bits, unsigned n2   (encoding version >= 1; before: n2 = 0 and
//!                                                 bits = entries * bpe, truncated)
//!                   string (the bit array), unsigned size (items)
//!
//! SCANDUMP header, little-endian, packed: u64 size, u32 nfilters, u32 options, [u32 growth],
//!   per sub-filter: u64 bytes, u64 bits, u64 size, f64 error, f64 bpe, u32 hashes,
//!                   u32 or u64 entries, u8 n2
//!   (three layouts: 16 + 49 n bytes in 1.x/2.0, 20 + 49 n in 2.2, 20 + 53 n since 2.4)
//! ```
//!
//! Option flags: 1 no power-of-two rounding, 2 entries given as bits (no command sets it; not
//! read), 4 64-bit hashing, 8 NONSCALING. Every field is checked as strictly as this module's own
//! formats, and nothing is allocated that the input does not hold.

use crate::bits::BitStore;
use crate::bloom::chain::Chain;
use crate::bloom::growth::{
    check_imported_successor, check_link, check_link_count, Growth, Link, RedisBloomOptions,
    MAX_BITS,
};
use crate::bloom::sizing::Shape;
use crate::bloom::stored::{FieldSource, LoadError};
use crate::bloom::sub_filter::{storage_bits, SubFilter};
use crate::error::FilterError;
use crate::reader::Reader;

/// A sub-filter from a checked link and its bit array as RedisBloom stored it.
fn sub_filter(shape: Shape, items: u64, data: &[u8]) -> Result<SubFilter, FilterError> {
    if data.len() as u64 != shape.bit_bytes() {
        return Err(FilterError::Corrupt(
            "bit array length does not match the bit count",
        ));
    }
    let mut store = BitStore::zeroed(storage_bits(shape.bits))?;
    if !store.write_bytes(0, data) {
        return Err(FilterError::Corrupt("bit array does not fit"));
    }
    SubFilter::imported(shape, items, store)
}

/// Reads a chain that RedisBloom saved in RDB encoding version `encver` (0 to 4).
pub fn load_rdb(source: &mut impl FieldSource, encver: u32) -> Result<Chain, LoadError> {
    if encver > 4 {
        return Err(LoadError::Corrupt(format!(
            "RedisBloom encoding version {encver} is not one this module reads"
        )));
    }
    let size = source.unsigned().ok_or(LoadError::Truncated)?;
    let count = source.unsigned().ok_or(LoadError::Truncated)?;
    let flags = if encver >= 2 {
        source.unsigned().ok_or(LoadError::Truncated)?
    } else {
        0
    };
    let growth = if encver >= 4 {
        source.unsigned().ok_or(LoadError::Truncated)?
    } else {
        2
    };
    let options = RedisBloomOptions::new(flags)?;
    let growth = options.growth(growth)?;
    check_link_count(count)?;
    // Grown as sub-filters arrive: the count alone justifies no allocation.
    let mut filters: Vec<SubFilter> = Vec::new();
    let mut total = 0u64;
    for _ in 0..count {
        let entries = source.unsigned().ok_or(LoadError::Truncated)?;
        let error = source.double().ok_or(LoadError::Truncated)?;
        let hashes = source.unsigned().ok_or(LoadError::Truncated)?;
        let bpe = source.double().ok_or(LoadError::Truncated)?;
        let (bits, n2) = if encver >= 1 {
            let bits = source.unsigned().ok_or(LoadError::Truncated)?;
            (bits, source.unsigned().ok_or(LoadError::Truncated)?)
        } else {
            // RedisBloom 1.0 stored neither: the formula's bit count, not rounded.
            let wanted = entries as f64 * bpe;
            if !(wanted.is_finite() && wanted >= 0.0 && wanted < MAX_BITS as f64) {
                return Err(LoadError::Corrupt("sub-filter too large".into()));
            }
            (wanted as u64, 0)
        };
        let data = source.any_buffer()?;
        let items = source.unsigned().ok_or(LoadError::Truncated)?;
        let link = Link {
            entries,
            error,
            hashes,
            bpe: Some(bpe),
            bits,
            n2,
            items,
        };
        let shape = check_link(options, &link)?;
        if let Some(older) = filters.last() {
            check_imported_successor(older.shape(), &shape)?;
        }
        total = total
            .checked_add(items)
            .ok_or_else(|| LoadError::Corrupt("item count overflows".into()))?;
        filters.push(sub_filter(shape, items, &data)?);
    }
    if total != size {
        return Err(LoadError::Corrupt(
            "sub-filter items do not add up to the filter's".into(),
        ));
    }
    Ok(Chain::imported(options, growth, filters)?)
}

/// A RedisBloom SCANDUMP header that passed every check: the chain it describes, not yet
/// allocated.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpHeader {
    pub(crate) options: RedisBloomOptions,
    pub(crate) growth: Growth,
    /// Each sub-filter's shape and item count.
    pub(crate) links: Vec<(Shape, u64)>,
}

impl DumpHeader {
    /// Parses and checks the header chunk of a RedisBloom SCANDUMP, in any of its three layouts
    /// (told apart by length). Allocates nothing beyond one entry per 49 bytes of input.
    pub fn parse(bytes: &[u8]) -> Result<DumpHeader, FilterError> {
        let (count, layout) = Layout::of(bytes)?;
        let mut reader = Reader::new(bytes);
        let size = reader.u64()?;
        reader.u32()?;
        let options = RedisBloomOptions::new(u64::from(reader.u32()?))?;
        let growth = if layout.has_growth { reader.u32()? } else { 2 };
        let growth = options.growth(u64::from(growth))?;
        if growth == Growth::Fixed && count > 1 {
            return Err(FilterError::Corrupt(
                "a non-scaling filter with several sub-filters",
            ));
        }
        check_link_count(count as u64)?;
        let mut links: Vec<(Shape, u64)> = Vec::with_capacity(count);
        let mut total = 0u64;
        for _ in 0..count {
            let (shape, items) = read_link(&mut reader, options, layout)?;
            if let Some((older, _)) = links.last() {
                check_imported_successor(older, &shape)?;
            }
            total = total
                .checked_add(items)
                .ok_or(FilterError::Corrupt("item count overflows"))?;
            links.push((shape, items));
        }
        if total != size {
            return Err(FilterError::Corrupt(
                "sub-filter items do not add up to the filter's",
            ));
        }
        Ok(DumpHeader {
            options,
            growth,
            links,
        })
    }
}

/// Which of RedisBloom's three header layouts a header is, told by its length.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// The chain's growth follows the options (2.2 and later).
    has_growth: bool,
    /// Each sub-filter's capacity is 64 bits wide (2.4 and later).
    wide_entries: bool,
}

impl Layout {
    /// The sub-filter count a header declares, and its layout.
    fn of(bytes: &[u8]) -> Result<(usize, Layout), FilterError> {
        let neither = FilterError::Corrupt("neither a redis-bf nor a RedisBloom dump header");
        let count = bytes
            .get(8..12)
            .map(|raw| u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize)
            .ok_or(neither)?;
        let len =
            |fixed: usize, link: usize| count.checked_mul(link).and_then(|n| n.checked_add(fixed));
        let layout = |has_growth, wide_entries| Layout {
            has_growth,
            wide_entries,
        };
        let layout = if Some(bytes.len()) == len(20, 53) {
            layout(true, true)
        } else if Some(bytes.len()) == len(20, 49) {
            layout(true, false)
        } else if Some(bytes.len()) == len(16, 49) {
            layout(false, false)
        } else if Some(bytes.len()) == len(36, 53) {
            return Err(FilterError::Corrupt(
                "RedisBloom's configurable hashing is not supported",
            ));
        } else {
            return Err(neither);
        };
        if count == 0 {
            return Err(FilterError::Corrupt("no sub-filters"));
        }
        Ok((count, layout))
    }
}

/// Reads and checks one sub-filter's description: its shape and item count.
fn read_link(
    reader: &mut Reader<'_>,
    options: RedisBloomOptions,
    layout: Layout,
) -> Result<(Shape, u64), FilterError> {
    let bytes = reader.u64()?;
    let bits = reader.u64()?;
    let items = reader.u64()?;
    let error = reader.f64()?;
    let bpe = reader.f64()?;
    let hashes = reader.u32()?;
    let entries = if layout.wide_entries {
        reader.u64()?
    } else {
        u64::from(reader.u32()?)
    };
    let n2 = reader.u8()?;
    let link = Link {
        entries,
        error,
        hashes: u64::from(hashes),
        bpe: Some(bpe),
        bits,
        n2: u64::from(n2),
        items,
    };
    let shape = check_link(options, &link)?;
    if bytes != shape.bit_bytes() {
        return Err(FilterError::Corrupt(
            "byte count does not match the bit count",
        ));
    }
    Ok((shape, items))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::growth::{check_stored_link, next_link, MAX_IMPORTED_LINKS};
    use crate::bloom::probes::Hashing;
    use crate::bloom::sizing::{bits_per_item, hash_count};

    fn options(flags: u64) -> RedisBloomOptions {
        RedisBloomOptions::new(flags).unwrap()
    }

    #[test]
    fn option_flags_choose_hashing_rounding_and_growth() {
        assert_eq!(options(5).hashing(), Hashing::Murmur64);
        assert!(!options(5).rounds());
        assert_eq!(options(5).growth(4), Ok(Growth::Scaling { expansion: 4 }));
        assert_eq!(options(13).growth(2), Ok(Growth::Fixed));
        assert_eq!(options(0).hashing(), Hashing::Murmur32);
        assert!(options(0).rounds());
        assert!(RedisBloomOptions::new(2).is_err());
        assert!(RedisBloomOptions::new(16).is_err());
        assert!(options(5).growth(0).is_err());
    }

    #[test]
    fn links_of_current_releases_have_this_modules_shapes() {
        // RedisBloom 2.4's first sub-filter of BF.RESERVE k 0.001 1000: 15872 bits, 11 hashes.
        let link = Link {
            entries: 1000,
            error: 0.0005,
            hashes: 11,
            bpe: Some(bits_per_item(0.0005)),
            bits: 15872,
            n2: 0,
            items: 500,
        };
        let shape = check_link(options(5), &link).unwrap();
        assert_eq!(shape, Shape::new(1000, 0.0005).unwrap());
        for broken in [
            Link { hashes: 12, ..link },
            Link {
                bits: 15872 + 128,
                ..link
            },
            Link { bits: 64, ..link },
            Link {
                items: 1001,
                ..link
            },
            Link { error: 1.5, ..link },
            Link {
                bpe: Some(3.0),
                ..link
            },
            Link { entries: 0, ..link },
            Link { n2: 63, ..link },
        ] {
            assert!(check_link(options(5), &broken).is_err(), "{broken:?}");
        }
    }

    #[test]
    fn power_of_two_links_grow_as_redisbloom_before_2_2_grew_them() {
        let newest = Shape {
            capacity: 100,
            error: 0.01,
            hash_count: hash_count(0.01),
            bits: 1024,
            lines: 0,
        };
        let shape = next_link(options(4), Growth::Scaling { expansion: 2 }, &newest).unwrap();
        // 200 items at 0.005 want 2205.5 bits: 4096 bits, and room for 171 more items.
        assert_eq!(shape.bits, 4096);
        assert_eq!(shape.error, 0.005);
        assert_eq!(shape.capacity, 371);
        assert_eq!(shape.hash_count, hash_count(0.005));
        let link = Link {
            entries: shape.capacity,
            error: shape.error,
            hashes: u64::from(shape.hash_count),
            bpe: None,
            bits: 0,
            n2: 12,
            items: 0,
        };
        assert_eq!(check_link(options(4), &link), Ok(shape));
        assert!(check_link(options(5), &link).is_err());
        assert_eq!(
            check_stored_link(options(4), 371, 0.005, 8, 4096, 0),
            Ok(shape)
        );
        // Without rounding (flag 1), this module's own sizing.
        let shape = next_link(options(5), Growth::Scaling { expansion: 2 }, &newest).unwrap();
        assert_eq!(shape, Shape::new(200, 0.005).unwrap());
        assert_eq!(
            next_link(options(13), Growth::Fixed, &newest),
            Err(FilterError::Full)
        );
    }

    #[test]
    fn imported_chains_grow_as_far_as_redisbloom_let_them() {
        // RedisBloom 2.4.23, BF.RESERVE k E 1 EXPANSION 1, one distinct item per add: the number
        // of sub-filters when growth first failed (measured), for E = 0.01, 0.5 and 1e-300.
        for (requested, links) in [(0.01, 1067), (0.5, 1073), (1e-300, 78)] {
            let shape = Shape::new(1, requested * 0.5).unwrap();
            let first = SubFilter::new(shape).unwrap();
            let growth = Growth::Scaling { expansion: 1 };
            let mut chain = Chain::imported(options(5), growth, vec![first]).unwrap();
            let mut item = 0u64;
            let refused = loop {
                item += 1;
                match chain.add(&item.to_le_bytes(), u64::MAX) {
                    Ok(_) => {}
                    Err(err) => break err,
                }
            };
            assert_eq!(refused, FilterError::CannotGrow);
            assert_eq!(chain.filters().len(), links, "{requested}");
            // The last one is at the smallest subnormal error, as RedisBloom's BF.DEBUG showed
            // (ratio:4.94066e-324, 1,075 hashes, 1,600 bits).
            let last = chain.filters()[links - 1].shape();
            assert_eq!(last.error, f64::from_bits(1));
            assert_eq!((last.hash_count, last.bits), (1075, 1600));
            // The longest chains RedisBloom makes load back through every loader.
            let filter = crate::bloom::Filter::Chain(chain);
            let stored = crate::bloom::stored::to_bytes(&filter);
            assert_eq!(
                crate::bloom::stored::from_bytes(&stored).as_ref(),
                Ok(&filter)
            );
            let dumped =
                crate::bloom::dump::Header::parse(&crate::bloom::dump::header(&filter)).unwrap();
            assert_eq!(dumped.into_filter().unwrap().dump_len(), filter.dump_len());
        }
    }

    /// RedisBloom's RDB fields (encoding 4, 64-bit hashing, EXPANSION 1) of a chain of `count`
    /// empty one-item sub-filters whose error rates fall by `ratio` from 1%.
    fn chain_rdb(count: usize, ratio: f64) -> Vec<u8> {
        use crate::bloom::stored::{ByteSink, FieldSink};
        let mut sink = ByteSink::default();
        sink.unsigned(0);
        sink.unsigned(count as u64);
        sink.unsigned(5);
        sink.unsigned(1);
        let mut error = 0.01;
        for _ in 0..count {
            let shape = Shape::new(1, error).unwrap();
            sink.unsigned(1);
            sink.double(error);
            sink.unsigned(u64::from(shape.hash_count));
            sink.double(bits_per_item(error));
            sink.unsigned(shape.bits);
            sink.unsigned(0);
            sink.buffer(&vec![0; shape.bit_bytes() as usize]);
            sink.unsigned(0);
            error *= ratio;
        }
        sink.bytes
    }

    #[test]
    fn chains_redisbloom_could_not_have_made_are_refused_before_they_are_read() {
        use crate::bloom::stored::ByteFields;
        // Halving (2.2 and later) and faster (before 2.2) both load.
        assert!(load_rdb(&mut ByteFields::new(&chain_rdb(40, 0.5)), 4).is_ok());
        assert!(load_rdb(&mut ByteFields::new(&chain_rdb(20, 0.125)), 4).is_ok());
        // A sub-filter at more than half its predecessor's rate: a forged chain.
        assert_eq!(
            load_rdb(&mut ByteFields::new(&chain_rdb(3, 0.6)), 4),
            Err(LoadError::Corrupt(
                "a sub-filter not at half the error rate of the one before it or less".into()
            ))
        );
        // More sub-filters than any RedisBloom chain has: refused at the count, before any is read
        // (the fields are not even there).
        let too_many = {
            use crate::bloom::stored::{ByteSink, FieldSink};
            let mut sink = ByteSink::default();
            sink.unsigned(0);
            sink.unsigned(MAX_IMPORTED_LINKS + 1);
            sink.unsigned(5);
            sink.unsigned(1);
            sink.bytes
        };
        let refused =
            LoadError::Corrupt("more sub-filters than RedisBloom ever makes (1,100)".into());
        assert_eq!(load_rdb(&mut ByteFields::new(&too_many), 4), Err(refused));
        // The same in a SCANDUMP header: 1,101 links of 53 bytes are refused by their count.
        let mut header = Vec::new();
        header.extend(0u64.to_le_bytes());
        header.extend(((MAX_IMPORTED_LINKS + 1) as u32).to_le_bytes());
        header.extend(5u32.to_le_bytes());
        header.extend(1u32.to_le_bytes());
        header.resize(20 + 53 * (MAX_IMPORTED_LINKS as usize + 1), 0);
        assert_eq!(
            DumpHeader::parse(&header),
            Err(FilterError::Corrupt(
                "more sub-filters than RedisBloom ever makes (1,100)"
            ))
        );
    }

    /// RDB fields of a one-sub-filter chain, as ByteFields reads them.
    fn rdb(encver: u32, flags: u64, links: &[(u64, f64, u64, u64, usize)]) -> Vec<u8> {
        use crate::bloom::stored::{ByteSink, FieldSink};
        let mut sink = ByteSink::default();
        sink.unsigned(0);
        sink.unsigned(links.len() as u64);
        if encver >= 2 {
            sink.unsigned(flags);
        }
        if encver >= 4 {
            sink.unsigned(2);
        }
        for &(entries, error, bits, n2, bytes) in links {
            sink.unsigned(entries);
            sink.double(error);
            sink.unsigned(u64::from(hash_count(error)));
            sink.double(bits_per_item(error));
            if encver >= 1 {
                sink.unsigned(bits);
                sink.unsigned(n2);
            }
            sink.buffer(&vec![0; bytes]);
            sink.unsigned(0);
        }
        sink.bytes
    }

    #[test]
    fn every_imported_filter_survives_its_own_save_and_load() {
        use crate::bloom::dump::{header, Header};
        use crate::bloom::stored::{from_bytes, to_bytes, ByteFields};
        // A 1.0 sub-filter of 20 items at 90%: 4.39 bits wanted, 4 bits: a power of two by
        // chance, in a chain that rounds.
        let cases = [
            (0, 0, rdb(0, 0, &[(20, 0.9, 0, 0, 1)])),
            (1, 0, rdb(1, 0, &[(20, 0.9, 4, 0, 1)])),
            (4, 4, rdb(4, 4, &[(20, 0.9, 4, 0, 1)])),
            (1, 0, rdb(1, 0, &[(106, 0.01, 0, 10, 128)])),
        ];
        for (encver, _flags, bytes) in cases {
            let chain = load_rdb(&mut ByteFields::new(&bytes), encver).unwrap();
            let filter = crate::bloom::Filter::Chain(chain);
            assert_eq!(from_bytes(&to_bytes(&filter)).as_ref(), Ok(&filter));
            let parsed = Header::parse(&header(&filter)).unwrap();
            assert_eq!(parsed.planned_bytes(), filter.planned_size());
        }
    }

    #[test]
    fn capacities_that_would_add_up_past_what_info_reports_are_refused() {
        use crate::bloom::stored::ByteFields;
        let huge = 1u64 << 62;
        let error = 0.999_999_999_999_999_9;
        let bits = ((huge as f64 * bits_per_item(error)) as u64).next_multiple_of(64);
        let one = rdb(4, 5, &[(huge, error, bits, 0, (bits / 8) as usize)]);
        assert!(load_rdb(&mut ByteFields::new(&one), 4).is_ok());
        // Two such sub-filters would pass i64::MAX, but the second cannot be at the same rate, and
        // at half of it the bits of 2^62 items pass the largest sub-filter: no chain gets there.
        let two = rdb(4, 5, &[(huge, error, bits, 0, (bits / 8) as usize); 2]);
        assert_eq!(
            load_rdb(&mut ByteFields::new(&two), 4),
            Err(LoadError::Corrupt(
                "a sub-filter not at half the error rate of the one before it or less".into()
            ))
        );
    }

    #[test]
    fn dump_headers_of_every_layout_are_read_and_checked() {
        let link = |wide: bool| {
            let mut out = Vec::new();
            out.extend(1984u64.to_le_bytes());
            out.extend(15872u64.to_le_bytes());
            out.extend(500u64.to_le_bytes());
            out.extend(0.0005f64.to_le_bytes());
            out.extend(bits_per_item(0.0005).to_le_bytes());
            out.extend(11u32.to_le_bytes());
            if wide {
                out.extend(1000u64.to_le_bytes());
            } else {
                out.extend(1000u32.to_le_bytes());
            }
            out.push(0);
            out
        };
        let head = |growth: bool| {
            let mut out = Vec::new();
            out.extend(500u64.to_le_bytes());
            out.extend(1u32.to_le_bytes());
            out.extend(5u32.to_le_bytes());
            if growth {
                out.extend(2u32.to_le_bytes());
            }
            out
        };
        for (growth, wide) in [(true, true), (true, false), (false, false)] {
            let mut header = head(growth);
            header.extend(link(wide));
            let parsed = DumpHeader::parse(&header).unwrap();
            let parsed_links = parsed.links.clone();
            assert_eq!(parsed.growth, Growth::Scaling { expansion: 2 });
            assert_eq!(parsed.links.len(), 1);
            let filter = crate::bloom::dump::Header::from(parsed)
                .into_filter()
                .unwrap();
            assert_eq!(filter.capacity(), 1000);
            assert_eq!(filter.items(0), 500);
            for cut in 0..header.len() {
                // A 2.4 header cut before the high half of its 64-bit capacity reads as a 2.2
                // header of the same filter; any other cut is refused.
                if let Ok(shorter) = DumpHeader::parse(&header[..cut]) {
                    assert_eq!((cut, &shorter.links), (69, &parsed_links));
                }
            }
        }
        let mut wrong_total = head(true);
        wrong_total[0] = 99;
        wrong_total.extend(link(true));
        assert!(DumpHeader::parse(&wrong_total).is_err());
    }
}

//! The dump header of a windowed filter (format version 3, and version 2 of the first release,
//! still read): writing it, and parsing it with every check before anything is allocated.

use super::{
    expansion_field, growth_field, native_entries, push_entries, Described, Header,
    BLOCKED_WINDOWED_FORMAT_VERSION, MAGIC, PART_LEN, WINDOWED_FORMAT_VERSION,
};
use crate::bloom::sizing::Layout;
use crate::bloom::sub_filter::check_items;
use crate::bloom::window::{
    check_generations, Outline, Rule, Window, Windowed, WindowedShape, MAX_GENERATIONS,
};
use crate::bloom::{Growth, Shape};
use crate::error::FilterError;
use crate::reader::Reader;

pub(super) fn windowed_header(windowed: &Windowed) -> Vec<u8> {
    let shape = windowed.shape();
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    let version = match shape.layout {
        Layout::Classic => WINDOWED_FORMAT_VERSION,
        Layout::Blocked => BLOCKED_WINDOWED_FORMAT_VERSION,
    };
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&shape.window.as_seconds().to_le_bytes());
    out.extend_from_slice(&shape.capacity.to_le_bytes());
    out.extend_from_slice(&shape.error.to_bits().to_le_bytes());
    out.extend_from_slice(&expansion_field(shape.growth).to_le_bytes());
    out.extend_from_slice(&(windowed.generations().len() as u32).to_le_bytes());
    for generation in windowed.generations() {
        out.extend_from_slice(&generation.slot().to_le_bytes());
        let (rule, budget) = match generation.rule() {
            Rule::Budget(budget) => (0u32, budget),
            Rule::Legacy => (1u32, 0),
        };
        out.extend_from_slice(&rule.to_le_bytes());
        out.extend_from_slice(&budget.to_le_bytes());
        out.extend_from_slice(&generation.first().to_le_bytes());
        out.extend_from_slice(&(generation.parts().len() as u32).to_le_bytes());
        for part in generation.parts() {
            push_entries(&mut out, std::slice::from_ref(part.filter()));
            out.extend_from_slice(&part.expires_at().to_le_bytes());
        }
    }
    out
}

impl Header {
    /// A windowed filter's parameters and generation count (at most five), as `make` checks
    /// them.
    fn windowed_fields(
        reader: &mut Reader,
        make: fn(u64, f64, Growth, Window) -> Result<WindowedShape, FilterError>,
    ) -> Result<(WindowedShape, usize), FilterError> {
        let window = Window::seconds(reader.u64()?)
            .map_err(|_| FilterError::Corrupt("window out of range"))?;
        let capacity = reader.u64()?;
        let error = reader.f64()?;
        let growth = growth_field(reader.u32()?)?;
        let shape = make(capacity, error, growth, window)
            .map_err(|_| FilterError::Corrupt("windowed filter's capacity or error rate"))?;
        let count = reader.u32()? as usize;
        if count > MAX_GENERATIONS {
            return Err(FilterError::Corrupt(
                "more generations than a windowed filter keeps (5)",
            ));
        }
        Ok((shape, count))
    }

    /// Version 3 (4 in the blocked layout): generations of parts, each checked against its
    /// generation's sizing here, and the whole against what a windowed filter can hold
    /// (`window::check_generations`) when it is built.
    pub(super) fn parse_windowed(
        mut reader: Reader,
        layout: Layout,
    ) -> Result<Header, FilterError> {
        let (shape, count) = Header::windowed_fields(&mut reader, WindowedShape::stored)?;
        let shape = shape.with_layout(layout);
        let mut generations = Vec::with_capacity(count);
        for _ in 0..count {
            let slot = reader.u64()?;
            let rule = match (reader.u32()?, reader.u64()?) {
                (0, budget) => Rule::Budget(budget),
                (1, 0) => Rule::Legacy,
                _ => return Err(FilterError::Corrupt("unknown generation rule")),
            };
            let first = reader.u32()?;
            let count = reader.u32()? as usize;
            if count == 0 {
                return Err(FilterError::Corrupt("a generation without sub-filters"));
            }
            if reader.remaining() < count.saturating_mul(PART_LEN) {
                return Err(FilterError::Corrupt(
                    "header length does not match its parts",
                ));
            }
            let mut parts = Vec::with_capacity(count);
            for position in 0..count {
                let index = u32::try_from(first as usize + position)
                    .map_err(|_| FilterError::Corrupt("a part number out of range"))?;
                let expected = shape.part_shape(rule, index).map_err(|_| {
                    FilterError::Corrupt("a part past what its generation can grow")
                })?;
                let stored = Shape {
                    capacity: reader.u64()?,
                    error: reader.f64()?,
                    hash_count: reader.u32()?,
                    bits: reader.u64()?,
                    lines: 0,
                };
                let items = reader.u64()?;
                let expiry = reader.u64()?;
                if stored.capacity != expected.capacity
                    || stored.error.to_bits() != expected.error.to_bits()
                    || stored.hash_count != expected.hash_count
                    || stored.bits != expected.bits
                {
                    return Err(FilterError::Corrupt(
                        "a part not sized as its generation sizes it",
                    ));
                }
                check_items(&expected, items)?;
                parts.push((expected, items, expiry));
            }
            generations.push(Outline {
                slot,
                rule,
                first,
                parts,
            });
        }
        if reader.remaining() != 0 {
            return Err(FilterError::Corrupt(
                "header length does not match its generations",
            ));
        }
        let header = Header(Described::Windowed { shape, generations });
        // Every check but the bits: the order, span and expiry of the generations.
        header.generations_only()?;
        Ok(header)
    }

    /// Version 2 (the first release): a slot and a chain per generation, which becomes a
    /// generation of the first release's sizing that expires whole.
    pub(super) fn parse_first_windowed(mut reader: Reader) -> Result<Header, FilterError> {
        let (shape, count) = Header::windowed_fields(&mut reader, WindowedShape::stored)?;
        let mut generations = Vec::with_capacity(count);
        for _ in 0..count {
            let slot = reader.u64()?;
            let filters = reader.u32()? as usize;
            if filters == 0 {
                return Err(FilterError::Corrupt("no sub-filters"));
            }
            let filters = native_entries(&mut reader, filters, shape.growth, Layout::Classic)?;
            let expiry = shape.expiry(slot);
            generations.push(Outline {
                slot,
                rule: Rule::Legacy,
                first: 0,
                parts: filters
                    .into_iter()
                    .map(|(shape, items)| (shape, items, expiry))
                    .collect(),
            });
        }
        if reader.remaining() != 0 {
            return Err(FilterError::Corrupt(
                "header length does not match its generations",
            ));
        }
        let header = Header(Described::Windowed { shape, generations });
        header.generations_only()?;
        Ok(header)
    }

    /// Checks a windowed header's generations as a filter's (on their outlines: no bits).
    fn generations_only(&self) -> Result<(), FilterError> {
        match &self.0 {
            Described::Windowed { shape, generations } => check_generations(shape, generations),
            Described::Chain { .. } => Ok(()),
        }
    }
}

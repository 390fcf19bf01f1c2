//! What a filter says about itself: `BF.INFO`, `BF.CARD` and `BF.DEBUG`.

use super::{unknown, Args};
use crate::datatype::memory_usage;
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use bf_filter::{Chain, Growth, Hashing};
use std::ffi::CStr;

/// One field of BF.INFO.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
}

impl Field {
    /// Every field, in the order of the whole reply.
    const ALL: [Field; 5] = [
        Field::Capacity,
        Field::Size,
        Field::Filters,
        Field::Items,
        Field::Expansion,
    ];

    /// The field's name in replies (RedisBloom's).
    fn title(self) -> &'static CStr {
        match self {
            Field::Capacity => c"Capacity",
            Field::Size => c"Size",
            Field::Filters => c"Number of filters",
            Field::Items => c"Number of items inserted",
            Field::Expansion => c"Expansion rate",
        }
    }

    /// The field a BF.INFO argument asks for, in any letter case.
    fn named(token: &[u8]) -> Option<Field> {
        let names: [(&str, Field); 5] = [
            ("CAPACITY", Field::Capacity),
            ("SIZE", Field::Size),
            ("FILTERS", Field::Filters),
            ("ITEMS", Field::Items),
            ("EXPANSION", Field::Expansion),
        ];
        names
            .into_iter()
            .find(|(name, _)| token.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, field)| field)
    }

    /// Parses `BF.INFO key [field]`: `None` asks for every field.
    pub fn parse<'a>(args: &impl Args<'a>) -> Result<Option<Field>, BfError> {
        match args.len() {
            2 => Ok(None),
            3 => Field::named(args.get(2))
                .map(Some)
                .ok_or_else(|| unknown(args.get(2))),
            _ => Err(unknown(args.get(3))),
        }
    }

    fn reply(self, call: &Call, chain: &Chain) {
        match self {
            Field::Capacity => call.reply_integer(saturating(chain.capacity())),
            Field::Size => call.reply_integer(saturating(memory_usage(chain) as u64)),
            Field::Filters => call.reply_integer(chain.filters().len() as i64),
            Field::Items => call.reply_integer(saturating(chain.items())),
            Field::Expansion => match chain.growth() {
                Growth::Scaling { expansion } => call.reply_integer(i64::from(expansion)),
                Growth::Fixed => call.reply_null(),
            },
        }
    }
}

fn saturating(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Opens argument 1 for reading; `ERR not found` if it holds no filter.
fn existing(key: &FilterKey) -> Result<&Chain, BfError> {
    key.filter()?.ok_or(BfError::NotFound)
}

/// BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]: every field as name/value pairs (a map in
/// RESP3), or one field: a one-element array in RESP2, a one-pair map in RESP3.
pub fn info(call: &Call) -> Result<(), BfError> {
    let field = Field::parse(&call.args())?;
    let key = FilterKey::open(call, 1, Access::Read);
    let chain = existing(&key)?;
    match field {
        None => {
            call.reply_map(Field::ALL.len());
            for field in Field::ALL {
                call.reply_simple(field.title());
                field.reply(call, chain);
            }
        }
        Some(field) if call.is_resp3() => {
            call.reply_map(1);
            call.reply_simple(field.title());
            field.reply(call, chain);
        }
        Some(field) => {
            call.reply_array(1);
            field.reply(call, chain);
        }
    }
    Ok(())
}

/// BF.CARD key: items added; 0 for a missing key.
pub fn card(call: &Call) -> Result<(), BfError> {
    let key = FilterKey::open(call, 1, Access::Read);
    let items = key.filter()?.map_or(0, Chain::items);
    call.reply_integer(saturating(items));
    Ok(())
}

/// BF.DEBUG key: `size:<items>`, then one line per sub-filter, oldest first.
pub fn debug(call: &Call) -> Result<(), BfError> {
    let key = FilterKey::open(call, 1, Access::Read);
    let chain = existing(&key)?;
    let lines = debug_lines(chain);
    call.reply_array(lines.len());
    for line in &lines {
        call.reply_bulk(line.as_bytes());
    }
    Ok(())
}

/// The lines of BF.DEBUG. A filter imported from RedisBloom names its hashing on the first line.
pub fn debug_lines(chain: &Chain) -> Vec<String> {
    let hashing = match chain.format().hashing() {
        Hashing::Xxh3 => "",
        Hashing::Murmur64 => " hashing:murmur64a",
        Hashing::Murmur32 => " hashing:murmur2",
    };
    let mut lines = vec![format!("size:{}{hashing}", chain.items())];
    lines.extend(chain.filters().iter().map(|filter| {
        let shape = filter.shape();
        format!(
            "bytes:{} bits:{} hashes:{} capacity:{} items:{} error:{:?}",
            shape.bit_bytes(),
            shape.bits,
            shape.hash_count,
            shape.capacity,
            filter.items(),
            shape.error
        )
    }));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_in_any_letter_case() {
        let parse = |args: &[&[u8]]| Field::parse(&args);
        assert_eq!(parse(&[b"BF.INFO", b"k"]), Ok(None));
        assert_eq!(
            parse(&[b"BF.INFO", b"k", b"capacity"]),
            Ok(Some(Field::Capacity))
        );
        assert_eq!(
            parse(&[b"BF.INFO", b"k", b"Expansion"]),
            Ok(Some(Field::Expansion))
        );
        assert_eq!(
            parse(&[b"BF.INFO", b"k", b"CAP"]),
            Err(BfError::UnknownArgument("CAP".into()))
        );
        assert_eq!(
            parse(&[b"BF.INFO", b"k", b"SIZE", b"x"]),
            Err(BfError::UnknownArgument("x".into()))
        );
    }

    #[test]
    fn debug_lines_describe_every_sub_filter() {
        let mut chain = Chain::new(10, 0.01, Growth::Scaling { expansion: 2 }, u64::MAX).unwrap();
        for i in 0..15u32 {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        let lines = debug_lines(&chain);
        assert_eq!(lines[0], format!("size:{}", chain.items()));
        assert_eq!(
            lines[1],
            "bytes:16 bits:128 hashes:8 capacity:10 items:10 error:0.005"
        );
        assert!(lines[2].starts_with("bytes:32 bits:256 hashes:9 capacity:20 items:"));
        assert!(lines[2].ends_with(" error:0.0025"));
    }
}

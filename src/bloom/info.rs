//! What a Bloom filter says about itself: `BF.INFO`, `BF.CARD` and `BF.DEBUG`.

use super::{now, unknown, Args};
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use crate::size::memory_usage;
use filters::bloom::sizing::Layout;
use filters::bloom::{Filter, Growth, Hashing, SubFilter};
use std::ffi::CStr;

/// One field of BF.INFO.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
    Window,
    Layout,
}

impl Field {
    /// Every field of a filter's whole reply, in order: RedisBloom's five, then `Window` for a
    /// windowed filter and `Layout` for a blocked one (so that clients that read the fields by
    /// position keep working).
    fn all(filter: &Filter) -> &'static [Field] {
        const FIVE: [Field; 5] = [
            Field::Capacity,
            Field::Size,
            Field::Filters,
            Field::Items,
            Field::Expansion,
        ];
        const WINDOWED: [Field; 6] = [FIVE[0], FIVE[1], FIVE[2], FIVE[3], FIVE[4], Field::Window];
        const BLOCKED: [Field; 6] = [FIVE[0], FIVE[1], FIVE[2], FIVE[3], FIVE[4], Field::Layout];
        const BOTH: [Field; 7] = [
            FIVE[0],
            FIVE[1],
            FIVE[2],
            FIVE[3],
            FIVE[4],
            Field::Window,
            Field::Layout,
        ];
        match (filter, filter.layout()) {
            (Filter::Chain(_), Layout::Classic) => &FIVE,
            (Filter::Chain(_), Layout::Blocked) => &BLOCKED,
            (Filter::Windowed(_), Layout::Classic) => &WINDOWED,
            (Filter::Windowed(_), Layout::Blocked) => &BOTH,
        }
    }

    /// The field's name in replies (RedisBloom's).
    fn title(self) -> &'static CStr {
        match self {
            Field::Capacity => c"Capacity",
            Field::Size => c"Size",
            Field::Filters => c"Number of filters",
            Field::Items => c"Number of items inserted",
            Field::Expansion => c"Expansion rate",
            Field::Window => c"Window",
            Field::Layout => c"Layout",
        }
    }

    /// The field a BF.INFO argument asks for, in any letter case.
    fn named(token: &[u8]) -> Option<Field> {
        let names: [(&str, Field); 7] = [
            ("CAPACITY", Field::Capacity),
            ("SIZE", Field::Size),
            ("FILTERS", Field::Filters),
            ("ITEMS", Field::Items),
            ("EXPANSION", Field::Expansion),
            ("WINDOW", Field::Window),
            ("LAYOUT", Field::Layout),
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

    /// Replies the field's value for `filter` at `now` (which a windowed filter's item and
    /// sub-filter counts depend on).
    fn reply(self, call: &Call, filter: &Filter, now: u64) {
        match self {
            Field::Capacity => call.reply_integer(saturating(filter.capacity())),
            Field::Size => call.reply_integer(saturating(memory_usage(filter) as u64)),
            Field::Filters => call.reply_integer(filter.live_sub_filters(now).len() as i64),
            Field::Items => call.reply_integer(saturating(filter.items(now))),
            Field::Expansion => match filter.growth() {
                Growth::Scaling { expansion } => call.reply_integer(i64::from(expansion)),
                Growth::Fixed => call.reply_null(),
            },
            Field::Window => match filter.window() {
                Some(window) => call.reply_integer(saturating(window.as_seconds())),
                None => call.reply_null(),
            },
            Field::Layout => call.reply_bulk(match filter.layout() {
                Layout::Classic => b"classic",
                Layout::Blocked => b"blocked",
            }),
        }
    }
}

fn saturating(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Opens argument 1 for reading; `ERR not found` if it holds no filter.
fn existing(key: &FilterKey) -> Result<&Filter, BfError> {
    key.filter()?.ok_or(BfError::NotFound)
}

/// BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION|WINDOW]: every field as name/value pairs
/// (a map in RESP3), or one field: a one-element array in RESP2, a one-pair map in RESP3.
pub fn info(call: &Call) -> Result<(), BfError> {
    let field = Field::parse(&call.args())?;
    let key = FilterKey::open(call, 1, Access::Read);
    let filter = existing(&key)?;
    let now = now(call, filter);
    match field {
        None => {
            let fields = Field::all(filter);
            call.reply_map(fields.len());
            for field in fields {
                call.reply_simple(field.title());
                field.reply(call, filter, now);
            }
        }
        Some(field) if call.is_resp3() => {
            call.reply_map(1);
            call.reply_simple(field.title());
            field.reply(call, filter, now);
        }
        Some(field) => {
            call.reply_array(1);
            field.reply(call, filter, now);
        }
    }
    Ok(())
}

/// BF.CARD key: items added (those of its live generations, for a windowed filter); 0 for a
/// missing key.
pub fn card(call: &Call) -> Result<(), BfError> {
    let key = FilterKey::open(call, 1, Access::Read);
    let items = key
        .filter()?
        .map_or(0, |filter| filter.items(now(call, filter)));
    call.reply_integer(saturating(items));
    Ok(())
}

/// BF.DEBUG key: `size:<items>`, then one line per sub-filter, oldest first (RedisBloom's
/// format); a windowed filter's sub-filters come under a line per live generation.
pub fn debug(call: &Call) -> Result<(), BfError> {
    let key = FilterKey::open(call, 1, Access::Read);
    let filter = existing(&key)?;
    let lines = debug_lines(filter, now(call, filter));
    call.reply_array(lines.len());
    for line in &lines {
        call.reply_bulk(line.as_bytes());
    }
    Ok(())
}

/// The lines of BF.DEBUG, in RedisBloom's exact format: `size:<items of the filter>`, then per
/// sub-filter `bytes:N bits:N hashes:N hashwidth:W capacity:N size:<its items> ratio:<its error
/// rate, as C's %g>`. `hashwidth` is 32 for a filter imported from RedisBloom's first releases
/// (32-bit MurmurHash2), 64 otherwise (this module's xxh3-128, or RedisBloom's MurmurHash64A).
/// A windowed filter (this module's own) puts `generation from:<ms> until:<ms> size:<items>`
/// before each live generation's sub-filters (the slot it took items in, when its last part
/// expires, the items of its live parts), and each of its sub-filter lines ends with
/// ` until:<ms>`, when that part expires. A blocked filter's sub-filter lines add, before
/// that, ` layout:blocked block:<bits>` (the bits of the block an item's probes fall in), or
/// ` layout:classic` for a sub-filter whose error rate is too small for blocks.
pub fn debug_lines(filter: &Filter, now: u64) -> Vec<String> {
    let width = match filter.hashing() {
        Hashing::Xxh3 | Hashing::Murmur64 => 64,
        Hashing::Murmur32 => 32,
    };
    let blocked = filter.layout() == Layout::Blocked;
    let line = |sub_filter: &SubFilter| {
        let shape = sub_filter.shape();
        let layout = match (blocked, shape.lines) {
            (false, _) => String::new(),
            (true, 0) => " layout:classic".to_string(),
            (true, lines) => format!(" layout:blocked block:{}", 512 * u32::from(lines)),
        };
        format!(
            "bytes:{} bits:{} hashes:{} hashwidth:{width} capacity:{} size:{} ratio:{}{layout}",
            shape.bit_bytes(),
            shape.bits,
            shape.hash_count,
            shape.capacity,
            sub_filter.items(),
            printf_g(shape.error)
        )
    };
    let mut lines = vec![format!("size:{}", filter.items(now))];
    match filter {
        Filter::Chain(chain) => lines.extend(chain.filters().iter().map(line)),
        Filter::Windowed(windowed) => {
            let shape = windowed.shape();
            for generation in windowed.live(now) {
                let live: Vec<_> = generation.live_parts(now).collect();
                let items: u64 = live.iter().map(|part| part.filter().items()).sum();
                lines.push(format!(
                    "generation from:{} until:{} size:{items}",
                    shape.slot_start(generation.slot()),
                    generation.expires_at(),
                ));
                lines
                    .extend(live.iter().map(|part| {
                        format!("{} until:{}", line(part.filter()), part.expires_at())
                    }));
            }
        }
    }
    lines
}

/// A number as C's `printf("%g")` writes it: six significant digits, fixed notation for
/// exponents from -4 to 5 and scientific (`6.25e-05`, at least two exponent digits) otherwise,
/// trailing zeros dropped.
pub fn printf_g(value: f64) -> String {
    const PRECISION: i32 = 6;
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    // The exponent after rounding to six significant digits (9.999995 rounds to 1.00000e1).
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, value);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trimmed = |digits: &str| -> String {
        if digits.contains('.') {
            digits
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        } else {
            digits.to_string()
        }
    };
    if (-4..PRECISION).contains(&exponent) {
        let decimals = (PRECISION - 1 - exponent) as usize;
        trimmed(&format!("{value:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trimmed(mantissa), exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filters::bloom::Chain;

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
        let items = chain.items();
        let lines = debug_lines(&Filter::Chain(chain), 0);
        assert_eq!(lines[0], format!("size:{items}"));
        assert_eq!(
            lines[1],
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005"
        );
        assert!(lines[2].starts_with("bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:"));
        assert!(lines[2].ends_with(" ratio:0.0025"));
    }

    #[test]
    fn ratios_print_as_c_printf_g() {
        for (value, text) in [
            (0.005, "0.005"),
            (0.000625, "0.000625"),
            (6.25e-05, "6.25e-05"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.1, "0.1"),
            (0.5, "0.5"),
            (1.0 / 3.0, "0.333333"),
            (2.0 / 3.0 * 1e-7, "6.66667e-08"),
            (5e-301, "5e-301"),
            (f64::from_bits(1), "4.94066e-324"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (999999.5, "1e+06"),
            (0.00009999995, "0.0001"),
        ] {
            assert_eq!(printf_g(value), text, "{value:e}");
        }
    }
}

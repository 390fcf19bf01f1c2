//! The `BF.*` commands, one file per family. Each command parses its arguments into a typed request
//! in one function that owns every argument error, then runs it against the key.

pub mod add;
pub mod docs;
pub mod dump;
pub mod exists;
pub mod info;
pub mod reserve;
pub mod window;

use crate::error::{quote_token, BfError};
use crate::glue::call::Call;
use bf_filter::window::{Window, DEFAULT_EXPANSION};
use bf_filter::{sizing::check_requested_error_rate, Filter, Growth, MAX_EXPANSION};

/// A command's arguments as byte strings; `get(0)` is the command name. Implemented for the
/// server's argument vector and, in tests, for plain slices.
pub trait Args<'a> {
    /// Number of arguments, the command name included.
    fn len(&self) -> usize;
    /// Argument `index`, which must be below `len()`.
    fn get(&self, index: usize) -> &'a [u8];
}

impl<'a> Args<'a> for &'a [&'a [u8]] {
    fn len(&self) -> usize {
        <[&[u8]]>::len(self)
    }

    fn get(&self, index: usize) -> &'a [u8] {
        self[index]
    }
}

/// An error rate: a decimal number from `MIN_ERROR_RATE` (2^-1020) up to, not including, 1,
/// parsed in full.
pub fn parse_error_rate(token: &[u8]) -> Result<f64, BfError> {
    let error = std::str::from_utf8(token)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        .ok_or(BfError::BadErrorRate)?;
    check_requested_error_rate(error).map_err(|_| BfError::BadErrorRate)?;
    Ok(error)
}

/// A whole number written with decimal digits only (no sign, no spaces, no exponent).
pub fn parse_whole(token: &[u8]) -> Option<u64> {
    if token.is_empty() || !token.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(token).ok()?.parse().ok()
}

/// A capacity: a whole number from 1 to `i64::MAX` (as RedisBloom, which reads a `long long`;
/// and BF.INFO reports it as an integer).
pub fn parse_capacity(token: &[u8]) -> Result<u64, BfError> {
    match parse_whole(token) {
        Some(capacity) if (1..=i64::MAX as u64).contains(&capacity) => Ok(capacity),
        _ => Err(BfError::BadCapacity),
    }
}

/// An expansion factor: a whole number from 1 to 32768.
pub fn parse_expansion(token: &[u8]) -> Result<u16, BfError> {
    parse_whole(token)
        .and_then(|value| u16::try_from(value).ok())
        .filter(|expansion| (1..=MAX_EXPANSION).contains(expansion))
        .ok_or(BfError::BadExpansion)
}

/// A window: a whole number of seconds from 1 to 10 years.
pub fn parse_window(token: &[u8]) -> Result<Window, BfError> {
    parse_whole(token)
        .and_then(|seconds| Window::seconds(seconds).ok())
        .ok_or(BfError::BadWindow)
}

/// The growth that `EXPANSION n` and `NONSCALING` (each given or not) ask for: when neither is
/// given, `default` for a filter that remembers every item, or the windowed filters' own default.
pub fn growth_of(
    expansion: Option<u16>,
    non_scaling: Option<()>,
    windowed: bool,
    default: Growth,
) -> Result<Growth, BfError> {
    match (expansion, non_scaling) {
        (Some(_), Some(())) => Err(BfError::ExpansionWithNonScaling),
        (_, Some(())) => Ok(Growth::Fixed),
        (Some(expansion), None) => Ok(Growth::Scaling { expansion }),
        (None, None) if windowed => Ok(Growth::Scaling {
            expansion: DEFAULT_EXPANSION,
        }),
        (None, None) => Ok(default),
    }
}

/// The arguments that spell out a growth in a propagated command: `EXPANSION n` or `NONSCALING`.
pub fn growth_words(growth: Growth) -> Vec<String> {
    match growth {
        Growth::Scaling { expansion } => vec!["EXPANSION".into(), expansion.to_string()],
        Growth::Fixed => vec!["NONSCALING".into()],
    }
}

/// The arguments that spell out how a filter is made, in a propagated command: `CAPACITY c ERROR
/// e`, the growth, and the window if any.
pub fn creation_words(
    capacity: u64,
    error: f64,
    growth: Growth,
    window: Option<Window>,
) -> Vec<String> {
    let mut words = vec![
        "CAPACITY".to_string(),
        capacity.to_string(),
        "ERROR".into(),
        // The shortest text that parses back to the same f64 (with an exponent when small).
        format!("{error:?}"),
    ];
    words.extend(growth_words(growth));
    if let Some(window) = window {
        words.extend(["WINDOW".to_string(), window.as_seconds().to_string()]);
    }
    words
}

/// The time a read asks a filter at: this server's clock for a windowed filter (whose expired
/// generations a replica hides by its own clock), nothing for the others.
pub fn now(call: &Call, filter: &Filter) -> u64 {
    match filter {
        Filter::Windowed(_) => call.now(),
        Filter::Chain(_) => 0,
    }
}

/// Checks that a filter answers adds and lookups: it is not being rebuilt by BF.LOADCHUNK.
pub fn in_use(filter: &Filter) -> Result<(), BfError> {
    match filter.restoring() {
        None => Ok(()),
        Some(loaded) => Err(BfError::BeingRestored {
            loaded,
            total: filter.dump_len(),
        }),
    }
}

/// True if `token` is the option `name`, in any letter case (whole words only).
pub fn is_option(token: &[u8], name: &str) -> bool {
    token.eq_ignore_ascii_case(name.as_bytes())
}

/// The error for a token the grammar does not know.
pub fn unknown(token: &[u8]) -> BfError {
    BfError::UnknownArgument(quote_token(token))
}

/// Records an option that may appear once; a second time is an error.
pub fn once<T>(slot: &mut Option<T>, name: &'static str, value: T) -> Result<(), BfError> {
    if slot.is_some() {
        return Err(BfError::DuplicateOption(name));
    }
    *slot = Some(value);
    Ok(())
}

/// The value after an option keyword at `index`, or an error naming the option.
pub fn value_of<'a>(
    args: &impl Args<'a>,
    index: usize,
    name: &'static str,
) -> Result<&'a [u8], BfError> {
    if index + 1 < args.len() {
        Ok(args.get(index + 1))
    } else {
        Err(BfError::MissingValue(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_rates_parse_in_full_and_stay_in_range() {
        assert_eq!(parse_error_rate(b"0.01"), Ok(0.01));
        assert_eq!(parse_error_rate(b"1e-5"), Ok(1e-5));
        assert_eq!(parse_error_rate(b".5"), Ok(0.5));
        for bad in [
            &b"0"[..],
            b"1",
            b"-0.1",
            b"1.5",
            b"nan",
            b"NaN",
            b"inf",
            b"-inf",
            b"infinity",
            b"1e400",
            b"1e-400",
            b"0.01abc",
            b" 0.01",
            b"0.01 ",
            b"",
            b"0x0.1",
            b"\xff",
        ] {
            assert_eq!(parse_error_rate(bad), Err(BfError::BadErrorRate), "{bad:?}");
        }
    }

    #[test]
    fn capacities_are_whole_numbers_from_one_to_i64_max() {
        assert_eq!(parse_capacity(b"1"), Ok(1));
        assert_eq!(parse_capacity(b"9223372036854775807"), Ok(i64::MAX as u64));
        for bad in [
            &b"0"[..],
            b"9223372036854775808",
            b"18446744073709551615",
            b"-1",
            b"+5",
            b"10abc",
            b"1e3",
            b"1.0",
            b"",
            b"18446744073709551616",
            b" 5",
        ] {
            assert_eq!(parse_capacity(bad), Err(BfError::BadCapacity), "{bad:?}");
        }
    }

    #[test]
    fn expansions_run_from_1_to_32768() {
        assert_eq!(parse_expansion(b"1"), Ok(1));
        assert_eq!(parse_expansion(b"32768"), Ok(32768));
        for bad in [
            &b"0"[..],
            b"32769",
            b"-2",
            b"2.0",
            b"",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_expansion(bad), Err(BfError::BadExpansion), "{bad:?}");
        }
    }
}

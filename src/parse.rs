//! The values a command or a config takes, parsed from bytes with the error each refusal
//! answers, and the argument vector they come from (the [`Args`] the glue implements for the
//! server's arguments). Commands and configs both use these; they use nothing of either.

use crate::error::{quote_token, BfError};
use filters::bloom::sizing::Layout;
use filters::bloom::window::Window;
use filters::bloom::{sizing::check_requested_error_rate, MAX_EXPANSION};

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

/// A layout: `CLASSIC` or `BLOCKED`, in any letter case.
pub fn parse_layout(token: &[u8]) -> Result<Layout, BfError> {
    if token.eq_ignore_ascii_case(b"classic") {
        Ok(Layout::Classic)
    } else if token.eq_ignore_ascii_case(b"blocked") {
        Ok(Layout::Blocked)
    } else {
        Err(BfError::BadLayout)
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

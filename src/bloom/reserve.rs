//! `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [WINDOW seconds]`: creates an
//! empty filter.

use super::add::{check_windowed_error_rate, Creation};
use super::options::{End, Options, RESERVE};
use super::{parse_capacity, parse_error_rate, Args};
use crate::config;
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, FilterKey};
use filters::bloom::sizing::Layout;
use filters::bloom::window::Window;
use filters::bloom::Growth;

/// A parsed BF.RESERVE.
#[derive(Debug, PartialEq)]
pub struct Reserve {
    pub error: f64,
    pub capacity: u64,
    pub growth: Growth,
    pub window: Option<Window>,
    pub layout: Layout,
}

impl Reserve {
    /// Parses the arguments after the key; `default_growth` applies when neither EXPANSION nor
    /// NONSCALING is given (a windowed filter has its own default).
    pub fn parse<'a>(
        args: &impl Args<'a>,
        default_growth: Growth,
        default_layout: Layout,
    ) -> Result<Reserve, BfError> {
        let error = parse_error_rate(args.get(2))?;
        let capacity = parse_capacity(args.get(3))?;
        let (options, _) = Options::parse(args, 4, RESERVE, End::Last)?;
        let growth = options.growth(default_growth)?;
        let window = options.window;
        if window.is_some() {
            check_windowed_error_rate(error)?;
        }
        Ok(Reserve {
            error,
            capacity,
            growth,
            window,
            layout: options.layout.unwrap_or(default_layout),
        })
    }

    /// The filter it asks for.
    fn creation(&self) -> Creation {
        Creation {
            capacity: self.capacity,
            error: self.error,
            growth: self.growth,
            window: self.window,
            layout: self.layout,
        }
    }
}

/// BF.RESERVE: `OK`, or `ERR item exists` if the key holds a filter already.
pub fn reserve(call: &Call) -> Result<(), BfError> {
    let args = call.args();
    let defaults = config::defaults();
    let request = Reserve::parse(&args, defaults.growth, defaults.layout)?;
    let mut key = FilterKey::open(call, 1, Access::Write);
    if key.filter()?.is_some() {
        return Err(BfError::ItemExists);
    }
    let limit = call.size_limit();
    let filter = request
        .creation()
        .build(limit.bytes())
        .map_err(|err| BfError::from_filter(err, &limit))?;
    key.create(filter)?;
    call.reply_ok();
    // Propagated with the growth and layout spelled out: a replica's defaults may differ.
    let mut words = super::growth_words(request.growth);
    if let Some(window) = request.window {
        words.extend(["WINDOW".to_string(), window.as_seconds().to_string()]);
    }
    words.extend(super::layout_words(request.layout));
    let mut made = vec![args.get(1), args.get(2), args.get(3)];
    made.extend(words.iter().map(|word| word.as_bytes()));
    call.replicate(c"BF.RESERVE", &made, 0..0);
    call.notify(c"bf.reserve", 1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Reserve, BfError> {
        let mut all: Vec<&[u8]> = vec![b"BF.RESERVE", b"key"];
        all.extend(args.iter().map(|a| a.as_bytes()));
        Reserve::parse(
            &all.as_slice(),
            Growth::Scaling { expansion: 2 },
            Layout::Classic,
        )
    }

    #[test]
    fn options_are_case_insensitive_in_any_order() {
        let expected = Reserve {
            error: 0.01,
            capacity: 100,
            growth: Growth::Scaling { expansion: 4 },
            window: None,
            layout: Layout::Classic,
        };
        assert_eq!(parse(&["0.01", "100", "expansion", "4"]), Ok(expected));
        assert_eq!(
            parse(&["0.01", "100", "NonScaling"]).unwrap().growth,
            Growth::Fixed
        );
        assert_eq!(
            parse(&["0.01", "100"]).unwrap().growth,
            Growth::Scaling { expansion: 2 }
        );
    }

    #[test]
    fn bad_grammar_is_refused_with_its_own_error() {
        assert_eq!(
            parse(&["0.01", "100", "EXPANSION", "2", "NONSCALING"]),
            Err(BfError::ExpansionWithNonScaling)
        );
        assert_eq!(
            parse(&["0.01", "100", "NONSCALING", "EXPANSION", "2"]),
            Err(BfError::ExpansionWithNonScaling)
        );
        assert_eq!(
            parse(&["0.01", "100", "EXPANSION", "2", "EXPANSION", "2"]),
            Err(BfError::DuplicateOption("EXPANSION"))
        );
        assert_eq!(
            parse(&["0.01", "100", "NONSCALING", "NONSCALING"]),
            Err(BfError::DuplicateOption("NONSCALING"))
        );
        assert_eq!(
            parse(&["0.01", "100", "EXPANSION"]),
            Err(BfError::MissingValue("EXPANSION"))
        );
        assert_eq!(
            parse(&["0.01", "100", "EXPANSION", "0"]),
            Err(BfError::BadExpansion)
        );
        assert_eq!(
            parse(&["0.01", "100", "NONSCALINGX"]),
            Err(BfError::UnknownArgument("NONSCALINGX".into()))
        );
        assert_eq!(
            parse(&["0.01", "100", "N"]),
            Err(BfError::UnknownArgument("N".into()))
        );
        assert_eq!(parse(&["2", "100"]), Err(BfError::BadErrorRate));
        assert_eq!(parse(&["0.01", "0"]), Err(BfError::BadCapacity));
        assert_eq!(
            parse(&["0.01", "100", "WINDOW", "-1"]),
            Err(BfError::BadWindow)
        );
        assert_eq!(
            parse(&["0.01", "100", "WINDOW", "60", "WINDOW", "60"]),
            Err(BfError::DuplicateOption("WINDOW"))
        );
        assert_eq!(
            parse(&["1e-307", "100", "WINDOW", "60"]),
            Err(BfError::BadWindowedErrorRate)
        );
    }

    #[test]
    fn a_window_grows_by_4_unless_told_otherwise() {
        let windowed = parse(&["0.01", "100", "WINDOW", "86400"]).unwrap();
        assert_eq!(windowed.window, Some(Window::seconds(86400).unwrap()));
        assert_eq!(windowed.growth, Growth::Scaling { expansion: 4 });
        assert_eq!(
            parse(&["0.01", "100", "window", "60", "NONSCALING"])
                .unwrap()
                .growth,
            Growth::Fixed
        );
        assert_eq!(
            parse(&["0.01", "100", "EXPANSION", "2", "WINDOW", "60"])
                .unwrap()
                .growth,
            Growth::Scaling { expansion: 2 }
        );
    }
}

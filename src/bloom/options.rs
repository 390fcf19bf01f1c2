//! The options of the `BF.*` commands that make filters, as one grammar: each option is a row of a
//! table (its keyword and how it records its value), and each command names the rows it takes.
//! `BF.RESERVE` takes [`RESERVE`], `BF.INSERT` takes [`INSERT`] up to its `ITEMS`. Options come
//! in any order and any letter case, each at most once; a value is checked where it is read.
//! A new option is a field of [`Options`], a row, and its name in the commands' lists.

use super::{
    is_option, once, parse_capacity, parse_error_rate, parse_expansion, parse_layout, parse_whole,
    parse_window, unknown, value_of, Args,
};
use crate::error::BfError;
use filters::bloom::sizing::Layout;
use filters::bloom::window::{Window, DEFAULT_EXPANSION};
use filters::bloom::Growth;

/// The options a command was given; each is `None` when left out.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Options {
    pub capacity: Option<u64>,
    pub error: Option<f64>,
    pub expansion: Option<u16>,
    pub no_create: Option<()>,
    pub non_scaling: Option<()>,
    pub window: Option<Window>,
    pub layout: Option<Layout>,
    /// The primary's time of a propagated windowed write (BF.INSERT only).
    pub at: Option<u64>,
}

/// How an option records itself.
#[derive(Clone, Copy)]
enum Takes {
    /// A keyword alone.
    Flag(fn(&mut Options) -> Result<(), BfError>),
    /// A keyword and the value after it.
    Value(fn(&mut Options, &[u8]) -> Result<(), BfError>),
}

/// One row of the grammar.
#[derive(Clone, Copy)]
pub struct Opt {
    name: &'static str,
    takes: Takes,
}

const CAPACITY: Opt = Opt {
    name: "CAPACITY",
    takes: Takes::Value(|o, v| once(&mut o.capacity, "CAPACITY", parse_capacity(v)?)),
};
const ERROR: Opt = Opt {
    name: "ERROR",
    takes: Takes::Value(|o, v| once(&mut o.error, "ERROR", parse_error_rate(v)?)),
};
const EXPANSION: Opt = Opt {
    name: "EXPANSION",
    takes: Takes::Value(|o, v| once(&mut o.expansion, "EXPANSION", parse_expansion(v)?)),
};
const NOCREATE: Opt = Opt {
    name: "NOCREATE",
    takes: Takes::Flag(|o| once(&mut o.no_create, "NOCREATE", ())),
};
const NONSCALING: Opt = Opt {
    name: "NONSCALING",
    takes: Takes::Flag(|o| once(&mut o.non_scaling, "NONSCALING", ())),
};
const WINDOW: Opt = Opt {
    name: "WINDOW",
    takes: Takes::Value(|o, v| once(&mut o.window, "WINDOW", parse_window(v)?)),
};
const LAYOUT: Opt = Opt {
    name: "LAYOUT",
    takes: Takes::Value(|o, v| once(&mut o.layout, "LAYOUT", parse_layout(v)?)),
};
const AT: Opt = Opt {
    name: "AT",
    takes: Takes::Value(|o, v| once(&mut o.at, "AT", parse_whole(v).ok_or(BfError::BadTime)?)),
};

/// `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [WINDOW seconds]
/// [LAYOUT CLASSIC|BLOCKED]`.
pub const RESERVE: &[Opt] = &[EXPANSION, NONSCALING, WINDOW, LAYOUT];

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING] [WINDOW seconds]
/// [LAYOUT CLASSIC|BLOCKED] [AT milliseconds] ITEMS item...`.
pub const INSERT: &[Opt] = &[
    CAPACITY, ERROR, EXPANSION, NOCREATE, NONSCALING, WINDOW, LAYOUT, AT,
];

/// Where a command's options end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// At the last argument.
    Last,
    /// At this keyword (`ITEMS`), which must come.
    Keyword(&'static str),
}

impl Options {
    /// Reads the options of `grammar` from argument `start` to `end`; with [`End::Keyword`],
    /// also the index of the keyword (a missing one is [`BfError::MissingItems`]). A value is
    /// checked before the option is recorded: a bad value's error comes before a repetition's.
    pub fn parse<'a>(
        args: &impl Args<'a>,
        start: usize,
        grammar: &[Opt],
        end: End,
    ) -> Result<(Options, usize), BfError> {
        let mut options = Options::default();
        let mut index = start;
        loop {
            if index >= args.len() {
                return match end {
                    End::Last => Ok((options, index)),
                    End::Keyword(_) => Err(BfError::MissingItems),
                };
            }
            let token = args.get(index);
            if matches!(end, End::Keyword(keyword) if is_option(token, keyword)) {
                return Ok((options, index));
            }
            let opt = grammar
                .iter()
                .find(|opt| is_option(token, opt.name))
                .ok_or_else(|| unknown(token))?;
            index += match opt.takes {
                Takes::Flag(record) => record(&mut options).map(|()| 1)?,
                Takes::Value(record) => {
                    record(&mut options, value_of(args, index, opt.name)?).map(|()| 2)?
                }
            };
        }
    }

    /// The growth that `EXPANSION n` and `NONSCALING` (each given or not) ask for: when neither
    /// is given, `default` for a filter that remembers every item, or the windowed filters' own
    /// default.
    pub fn growth(&self, default: Growth) -> Result<Growth, BfError> {
        match (self.expansion, self.non_scaling) {
            (Some(_), Some(())) => Err(BfError::ExpansionWithNonScaling),
            (_, Some(())) => Ok(Growth::Fixed),
            (Some(expansion), None) => Ok(Growth::Scaling { expansion }),
            (None, None) if self.window.is_some() => Ok(Growth::Scaling {
                expansion: DEFAULT_EXPANSION,
            }),
            (None, None) => Ok(default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], grammar: &[Opt], end: End) -> Result<(Options, usize), BfError> {
        let all: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        Options::parse(&all.as_slice(), 0, grammar, end)
    }

    #[test]
    fn each_command_takes_its_own_rows() {
        assert_eq!(
            parse(&["CAPACITY", "5"], RESERVE, End::Last),
            Err(BfError::UnknownArgument("CAPACITY".into()))
        );
        let (options, end) = parse(
            &["capacity", "5", "at", "7", "Items"],
            INSERT,
            End::Keyword("ITEMS"),
        )
        .unwrap();
        assert_eq!((options.capacity, options.at, end), (Some(5), Some(7), 4));
    }

    #[test]
    fn a_bad_value_is_reported_before_a_repetition() {
        assert_eq!(
            parse(&["EXPANSION", "2", "EXPANSION", "0"], RESERVE, End::Last),
            Err(BfError::BadExpansion)
        );
        assert_eq!(
            parse(&["EXPANSION", "2", "EXPANSION", "3"], RESERVE, End::Last),
            Err(BfError::DuplicateOption("EXPANSION"))
        );
    }

    #[test]
    fn growth_follows_expansion_nonscaling_and_window() {
        let default = Growth::Scaling { expansion: 2 };
        let of = |options: Options| options.growth(default);
        assert_eq!(of(Options::default()), Ok(default));
        let window = Some(Window::seconds(60).unwrap());
        let windowed = Options {
            window,
            ..Options::default()
        };
        assert_eq!(of(windowed), Ok(Growth::Scaling { expansion: 4 }));
        let fixed = Options {
            non_scaling: Some(()),
            ..windowed
        };
        assert_eq!(of(fixed), Ok(Growth::Fixed));
        let both = Options {
            expansion: Some(3),
            ..fixed
        };
        assert_eq!(of(both), Err(BfError::ExpansionWithNonScaling));
    }
}

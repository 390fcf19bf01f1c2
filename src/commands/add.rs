//! The commands that add items: `BF.ADD`, `BF.MADD` and `BF.INSERT`. They share one executor:
//! open the key, create the filter if the command may, add the items in order, reply, propagate.

use super::{
    growth_words, in_use, is_option, once, parse_capacity, parse_error_rate, parse_expansion,
    unknown, value_of, Args,
};
use crate::config::{self, SizeLimit};
use crate::datatype::memory_usage;
use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::key::{Access, Entry, FilterKey};
use crate::stats;
use bf_filter::{Chain, FilterError, Growth};

/// How a command creates a missing filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Creation {
    pub capacity: u64,
    pub error: f64,
    pub growth: Growth,
}

impl Creation {
    /// The server's defaults (`bf.initial-size`, `bf.error-rate`, `bf.expansion-factor`).
    pub fn defaults() -> Creation {
        let defaults = config::defaults();
        Creation {
            capacity: defaults.capacity,
            error: defaults.error,
            growth: Growth::Scaling {
                expansion: defaults.expansion,
            },
        }
    }
}

/// A parsed BF.INSERT: `creation` is `None` with NOCREATE; items start at argument `first_item`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Insert {
    pub creation: Option<Creation>,
    pub first_item: usize,
}

impl Insert {
    /// Parses `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING] ITEMS
    /// item...`; options the command leaves out come from `defaults`.
    pub fn parse<'a>(args: &impl Args<'a>, defaults: Creation) -> Result<Insert, BfError> {
        let (mut capacity, mut error, mut expansion) = (None, None, None);
        let (mut no_create, mut non_scaling) = (None, None);
        let mut index = 2;
        let first_item = loop {
            if index >= args.len() {
                return Err(BfError::MissingItems);
            }
            let token = args.get(index);
            if is_option(token, "ITEMS") {
                break index + 1;
            } else if is_option(token, "CAPACITY") {
                let value = parse_capacity(value_of(args, index, "CAPACITY")?)?;
                once(&mut capacity, "CAPACITY", value)?;
                index += 2;
            } else if is_option(token, "ERROR") {
                let value = parse_error_rate(value_of(args, index, "ERROR")?)?;
                once(&mut error, "ERROR", value)?;
                index += 2;
            } else if is_option(token, "EXPANSION") {
                let value = parse_expansion(value_of(args, index, "EXPANSION")?)?;
                once(&mut expansion, "EXPANSION", value)?;
                index += 2;
            } else if is_option(token, "NOCREATE") {
                once(&mut no_create, "NOCREATE", ())?;
                index += 1;
            } else if is_option(token, "NONSCALING") {
                once(&mut non_scaling, "NONSCALING", ())?;
                index += 1;
            } else {
                return Err(unknown(token));
            }
        };
        if first_item >= args.len() {
            return Err(BfError::MissingItems);
        }
        let growth = match (expansion, non_scaling, defaults.growth) {
            (Some(_), Some(()), _) => return Err(BfError::ExpansionWithNonScaling),
            (_, Some(()), _) => Growth::Fixed,
            (Some(expansion), None, _) => Growth::Scaling { expansion },
            (None, None, growth) => growth,
        };
        let creation = Creation {
            capacity: capacity.unwrap_or(defaults.capacity),
            error: error.unwrap_or(defaults.error),
            growth,
        };
        Ok(Insert {
            creation: no_create.is_none().then_some(creation),
            first_item,
        })
    }
}

/// How an add command answers.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    /// One boolean (BF.ADD); an error is the whole reply.
    One,
    /// An array of booleans; an error ends it, as its last element (BF.MADD, BF.INSERT).
    Each,
}

/// BF.ADD key item
pub fn add(call: &Call) -> Result<(), BfError> {
    add_items(call, Some(Creation::defaults()), 2, Answer::One)
}

/// BF.MADD key item [item ...]
pub fn madd(call: &Call) -> Result<(), BfError> {
    add_items(call, Some(Creation::defaults()), 2, Answer::Each)
}

/// BF.INSERT key [options] ITEMS item [item ...]
pub fn insert(call: &Call) -> Result<(), BfError> {
    let request = Insert::parse(&call.args(), Creation::defaults())?;
    add_items(call, request.creation, request.first_item, Answer::Each)
}

/// Adds the items from argument `first_item` on to the filter at argument 1.
fn add_items(
    call: &Call,
    creation: Option<Creation>,
    first_item: usize,
    answer: Answer,
) -> Result<(), BfError> {
    let args = call.args();
    let mut key = FilterKey::open(call, 1, Access::Write);
    let (chain, created) = match (key.entry()?, creation) {
        (Entry::Filter(chain), _) => {
            in_use(chain)?;
            (chain, None)
        }
        (Entry::Empty(_), None) => return Err(BfError::NotFound),
        (Entry::Empty(vacant), Some(creation)) => {
            let limit = call.size_limit();
            let chain = Chain::new(
                creation.capacity,
                creation.error,
                creation.growth,
                limit.bytes(),
            )
            .map_err(|err| BfError::from_filter(err, &limit))?;
            (vacant.create(chain)?, Some(creation))
        }
    };
    if answer == Answer::Each {
        call.reply_array_open();
    }
    let items = first_item..args.len();
    // Growth is the only change of size, and the only thing the size limit bounds: ask for the
    // limit and measure the bytes before it only when it may come (both cost on the hot path).
    let may_grow = chain.may_grow_within(items.len() as u64);
    let limit = if may_grow {
        call.size_limit().growing(chain.planned_size())
    } else {
        SizeLimit::unlimited()
    };
    let bytes_before = may_grow.then(|| memory_usage(chain));
    let mut added_any = false;
    // Items before `end` were applied; an error stops the command at its item.
    let mut end = args.len();
    let mut refused = None;
    let mut index = first_item;
    let mut answer_one = |result: Result<bool, FilterError>| match result {
        Ok(added) => {
            added_any |= added;
            call.reply_bool(added);
            index += 1;
            true
        }
        Err(err) => {
            end = index;
            refused = Some(BfError::from_filter(err, &limit));
            false
        }
    };
    if items.len() == 1 {
        // One item has nothing to batch: no group buffer, no prefetching.
        answer_one(chain.add(args.get(first_item), limit.bytes()));
    } else {
        chain.add_many(items.map(|i| args.get(i)), limit.bytes(), answer_one);
    }
    if let Some(err) = refused {
        if answer == Answer::One {
            stats::items_added(end - first_item);
            return Err(err);
        }
        call.reply_error(&err);
    }
    if answer == Answer::Each {
        call.end_array();
    }
    stats::items_added(end - first_item);
    if let Some(before) = bytes_before {
        stats::filter_resized(before, chain);
    }
    // Propagate exactly what was applied: a replica never refuses what its primary accepted (it
    // skips the size limit), so items after an error must not reach it.
    match created {
        Some(creation) => propagate_creation(call, creation, first_item..end),
        None if added_any && end == args.len() => call.replicate_verbatim(),
        None if added_any => {
            let key = call.args().get(1);
            call.replicate(c"BF.MADD", &[key], first_item..end);
        }
        None => {}
    }
    if created.is_some() {
        call.notify(c"bf.reserve", 1);
    }
    if added_any {
        call.notify(c"bf.add", 1);
    }
    Ok(())
}

/// Propagates a command that created its filter as a BF.INSERT with every parameter spelled out,
/// so a replica or an AOF replay builds the same filter whatever its own defaults.
fn propagate_creation(call: &Call, creation: Creation, items: std::ops::Range<usize>) {
    let capacity = creation.capacity.to_string();
    // The shortest text that parses back to the same f64 (with an exponent when small).
    let error = format!("{:?}", creation.error);
    let growth = growth_words(creation.growth);
    let mut made: Vec<&[u8]> = vec![
        call.args().get(1),
        b"CAPACITY",
        capacity.as_bytes(),
        b"ERROR",
        error.as_bytes(),
    ];
    made.extend(growth.iter().map(|word| word.as_bytes()));
    made.push(b"ITEMS");
    call.replicate(c"BF.INSERT", &made, items);
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: Creation = Creation {
        capacity: 100,
        error: 0.01,
        growth: Growth::Scaling { expansion: 2 },
    };

    fn parse(args: &[&str]) -> Result<Insert, BfError> {
        let mut all: Vec<&[u8]> = vec![b"BF.INSERT", b"key"];
        all.extend(args.iter().map(|a| a.as_bytes()));
        Insert::parse(&all.as_slice(), DEFAULTS)
    }

    #[test]
    fn options_come_in_any_order_and_any_letter_case() {
        let expected = Insert {
            creation: Some(Creation {
                capacity: 500,
                error: 0.001,
                growth: Growth::Scaling { expansion: 4 },
            }),
            first_item: 9,
        };
        assert_eq!(
            parse(&[
                "CAPACITY",
                "500",
                "ERROR",
                "0.001",
                "EXPANSION",
                "4",
                "ITEMS",
                "a"
            ]),
            Ok(expected)
        );
        let reordered = parse(&[
            "expansion",
            "4",
            "error",
            "0.001",
            "Capacity",
            "500",
            "items",
            "a",
        ]);
        assert_eq!(reordered.unwrap().creation, expected.creation);
    }

    #[test]
    fn left_out_options_come_from_the_defaults() {
        assert_eq!(
            parse(&["ITEMS", "a", "b"]),
            Ok(Insert {
                creation: Some(DEFAULTS),
                first_item: 3
            })
        );
        assert_eq!(
            parse(&["NONSCALING", "ITEMS", "a"]).unwrap().creation,
            Some(Creation {
                growth: Growth::Fixed,
                ..DEFAULTS
            })
        );
        assert_eq!(
            parse(&["NOCREATE", "CAPACITY", "10", "ITEMS", "a"])
                .unwrap()
                .creation,
            None
        );
    }

    #[test]
    fn everything_after_items_is_an_item() {
        let parsed = parse(&["ITEMS", "CAPACITY", "NOCREATE", "ITEMS"]).unwrap();
        assert_eq!(parsed.first_item, 3);
        assert_eq!(parsed.creation, Some(DEFAULTS));
    }

    #[test]
    fn bad_grammar_is_refused() {
        assert_eq!(parse(&[]), Err(BfError::MissingItems));
        assert_eq!(parse(&["ITEMS"]), Err(BfError::MissingItems));
        assert_eq!(parse(&["CAPACITY", "10"]), Err(BfError::MissingItems));
        assert_eq!(
            parse(&["CAPACITY", "10", "CAPACITY", "20", "ITEMS", "a"]),
            Err(BfError::DuplicateOption("CAPACITY"))
        );
        assert_eq!(
            parse(&["EXPANSION", "2", "NONSCALING", "ITEMS", "a"]),
            Err(BfError::ExpansionWithNonScaling)
        );
        assert_eq!(parse(&["CAPACITY"]), Err(BfError::MissingValue("CAPACITY")));
        assert_eq!(
            parse(&["C", "10", "ITEMS", "a"]),
            Err(BfError::UnknownArgument("C".into()))
        );
        assert_eq!(
            parse(&["ERROR", "1", "ITEMS", "a"]),
            Err(BfError::BadErrorRate)
        );
        assert_eq!(
            parse(&["CAPACITY", "0", "ITEMS", "a"]),
            Err(BfError::BadCapacity)
        );
    }
}

//! The commands that add items: `BF.ADD`, `BF.MADD` and `BF.INSERT`. They share one executor:
//! open the key, create the filter if the command may, add the items in order, reply, propagate.

use super::early::{Early, Purpose};
use super::options::{End, Options, INSERT};
use super::{creation_words, in_use, Args};
use crate::config;
use crate::error::BfError;
use crate::error::SizeLimit;
use crate::glue::call::Call;
use crate::glue::key::{Access, Entry, FilterKey};
use crate::size::memory_usage;
use crate::stats;
use filters::bloom::locator::EarlyHash;
use filters::bloom::sizing::Layout;
use filters::bloom::window::{Window, Windowed, WindowedShape, MIN_WINDOWED_ERROR_RATE};
use filters::bloom::{Chain, Filter, Growth};
use filters::FilterError;
use std::cell::Cell;
use std::ops::Range;

/// How a command creates a missing filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Creation {
    pub capacity: u64,
    pub error: f64,
    pub growth: Growth,
    /// A windowed filter's window; `None` for a filter that remembers every item.
    pub window: Option<Window>,
    /// How its sub-filters lay out an item's probes.
    pub layout: Layout,
}

impl Creation {
    /// The server's defaults (`bf.initial-size`, `bf.error-rate`, `bf.expansion-factor`,
    /// `bf.layout`).
    pub fn defaults() -> Creation {
        let defaults = config::defaults();
        Creation {
            capacity: defaults.capacity,
            error: defaults.error,
            growth: defaults.growth,
            window: None,
            layout: defaults.layout,
        }
    }

    /// The filter it describes, empty, refused past `max_bytes`.
    pub fn build(&self, max_bytes: u64) -> Result<Filter, FilterError> {
        match self.window {
            None => Ok(Filter::Chain(Chain::with_layout(
                self.layout,
                self.capacity,
                self.error,
                self.growth,
                max_bytes,
            )?)),
            Some(window) => {
                let shape = WindowedShape::new(self.capacity, self.error, self.growth, window)?
                    .with_layout(self.layout);
                // Created empty, but refused unless its first item's part fits the limit, as a
                // plain filter is: a windowed filter no item can enter is no filter.
                let bytes = Windowed::first_item_bytes(&shape)?;
                if bytes > max_bytes {
                    return Err(FilterError::TooLarge { bytes });
                }
                Ok(Filter::from(Windowed::new(shape)))
            }
        }
    }

    /// The arguments that spell it out in a propagated command (see `creation_words`).
    fn words(&self) -> Vec<String> {
        creation_words(
            self.capacity,
            self.error,
            self.growth,
            self.window,
            self.layout,
        )
    }
}

/// Checks an error rate given with `WINDOW`: its generations take a share of it (see
/// `filters::bloom::window`), which must itself be a rate a filter can be built for.
pub fn check_windowed_error_rate(error: f64) -> Result<(), BfError> {
    if error < MIN_WINDOWED_ERROR_RATE {
        return Err(BfError::BadWindowedErrorRate);
    }
    Ok(())
}

/// A parsed BF.INSERT: `creation` is `None` with NOCREATE; items start at argument `first_item`;
/// `at` is the primary's time of a propagated windowed write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Insert {
    pub creation: Option<Creation>,
    pub first_item: usize,
    pub at: Option<u64>,
}

impl Insert {
    /// Parses `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING]
    /// [WINDOW seconds] [AT milliseconds] ITEMS item...`; options the command leaves out come
    /// from `defaults`.
    pub fn parse<'a>(args: &impl Args<'a>, defaults: Creation) -> Result<Insert, BfError> {
        let (options, items) = Options::parse(args, 2, INSERT, End::Keyword("ITEMS"))?;
        let (first_item, window, at) = (items + 1, options.window, options.at);
        // With AT (a windowed write as its primary propagated it, never a client's), no items is
        // a change of time alone: expired generations dropped, the key's expiry set.
        if first_item >= args.len() && at.is_none() {
            return Err(BfError::MissingItems);
        }
        let growth = options.growth(defaults.growth)?;
        let creation = Creation {
            capacity: options.capacity.unwrap_or(defaults.capacity),
            error: options.error.unwrap_or(defaults.error),
            growth,
            window,
            layout: options.layout.unwrap_or(defaults.layout),
        };
        // A propagated write (AT) names the filter its primary holds, which may be a first
        // release's, made below today's floor: a replica must apply it as its primary did.
        if window.is_some() && at.is_none() {
            check_windowed_error_rate(creation.error)?;
        }
        Ok(Insert {
            creation: options.no_create.is_none().then_some(creation),
            first_item,
            at,
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

/// What an add command asks: the filter it may create if the key is missing, the arguments that
/// are its items, how it answers, and the time of a windowed write as its primary propagated it
/// (accepted from a primary or the AOF only).
struct Request {
    creation: Option<Creation>,
    items: Range<usize>,
    answer: Answer,
    at: Option<u64>,
    /// A single BF.ADD's item, hashed before the key was opened (see [`Early`]).
    early: Early,
}

/// BF.ADD key item
pub fn add(call: &Call) -> Result<(), BfError> {
    let item = call.args().get(2);
    let early = Early::hash(call, item, Purpose::Add);
    let mut key = FilterKey::open(call, 1, Access::Write);
    let Some(done) = add_in_room(call, &mut key, item, early) else {
        let request = Request {
            early,
            ..Request::of_items(call, Answer::One)
        };
        return add_items_in(call, key, request);
    };
    // What `add_items_in` does for this case, and nothing else: its bookkeeping (the creation
    // it might do, the reply array, the growth and expiry checks, a propagated form to choose) is
    // a quarter of the command's instructions.
    call.reply_bool(done.added);
    stats::items_added(1);
    if done.added {
        if !done.propagated {
            call.replicate_verbatim();
        }
        call.notify(c"bf.add", 1);
    }
    Ok(())
}

/// A single BF.ADD that [`add_in_room`] applied.
#[derive(Clone, Copy)]
struct InRoom {
    /// The item was new.
    added: bool,
    /// It was propagated in another form than as received (a windowed write carries its time).
    propagated: bool,
}

/// The common case of BF.ADD: one item into a filter in use whose newest sub-filter has room for
/// it, and, for a windowed filter, where nothing has expired and the newest part is the current
/// slot's, so that nothing can be created, grow, expire or be refused. `None` for every other
/// case (then nothing has changed).
fn add_in_room(call: &Call, key: &mut FilterKey, item: &[u8], early: Early) -> Option<InRoom> {
    let Ok(Some(filter)) = key.filter_mut() else {
        return None;
    };
    let chain = match filter {
        Filter::Chain(chain) => chain,
        Filter::Windowed(_) if filter.restoring().is_some() => return None,
        Filter::Windowed(windowed) => return windowed_in_room(call, windowed, item, early),
    };
    if chain.may_grow_within(1) || chain.is_restoring() {
        return None;
    }
    let early = early.take_for_chain(call, chain);
    // With no growth possible the size limit is never asked; a full fixed filter refuses the
    // item (and changes nothing): the general path answers that.
    let added = match early {
        None => chain.add(item, u64::MAX).ok()?,
        early => chain.add_early(item, early, u64::MAX).ok()?,
    };
    Some(InRoom {
        added,
        propagated: false,
    })
}

/// [`add_in_room`] for a windowed filter, at the server's clock (a single BF.ADD has no `AT`),
/// which propagates a new item with its time. A filter of the first release (which set a time to
/// live on its key) takes the general path, which drops that time to live.
fn windowed_in_room(
    call: &Call,
    windowed: &mut Windowed,
    item: &[u8],
    early: Early,
) -> Option<InRoom> {
    let now = call.now();
    if windowed.has_expired(now)
        || windowed.may_grow_within(1, now)
        || windowed.legacy_expiry().is_some()
    {
        return None;
    }
    let early = early.take_for_windowed(call, windowed, now);
    let added = windowed.add_early(item, early, now, u64::MAX).ok()?;
    if added {
        super::window::replicate_write(call, windowed.shape(), now, 2..3);
    }
    Some(InRoom {
        added,
        propagated: true,
    })
}

/// BF.MADD key item [item ...]
pub fn madd(call: &Call) -> Result<(), BfError> {
    add_items(call, Request::of_items(call, Answer::Each))
}

/// BF.INSERT key [options] ITEMS item [item ...]
pub fn insert(call: &Call) -> Result<(), BfError> {
    let insert = Insert::parse(&call.args(), Creation::defaults())?;
    let request = Request {
        creation: insert.creation,
        items: insert.first_item..call.args().len(),
        answer: Answer::Each,
        at: insert.at,
        early: Early::NONE,
    };
    add_items(call, request)
}

impl Request {
    /// BF.ADD's and BF.MADD's: the items after the key, into a filter made with the defaults.
    fn of_items(call: &Call, answer: Answer) -> Request {
        Request {
            creation: Some(Creation::defaults()),
            items: 2..call.args().len(),
            answer,
            at: None,
            early: Early::NONE,
        }
    }
}

/// Runs an add command on the filter at argument 1: opens or creates it, adds the items in order
/// replying each answer, then propagates exactly what was applied.
fn add_items(call: &Call, request: Request) -> Result<(), BfError> {
    add_items_in(call, FilterKey::open(call, 1, Access::Write), request)
}

/// [`add_items`] on the key at argument 1, already open for writing.
fn add_items_in(call: &Call, mut key: FilterKey, request: Request) -> Result<(), BfError> {
    super::window::check_at(call, request.at)?;
    // A change of time alone (a replayed `BF.INSERT ... AT t ITEMS`, no item) creates nothing.
    let creation = request.creation.filter(|_| !request.items.is_empty());
    if request.items.is_empty() && key.filter()?.is_none() {
        call.reply_array(0);
        return Ok(());
    }
    let (filter, created) = open_or_create(call, &mut key, creation)?;
    let time = WriteTime::of(call, filter, request.at);
    let early = request.early.take(call, filter, WriteTime::core_time(time));
    let reply = Reply::new(call, request.answer);
    let applied = apply(call, filter, request.items.clone(), time, early, &reply);
    // A filter this command created and no item could enter is not left behind.
    if created.is_some() && applied.end == request.items.start {
        key.delete();
        return Err(applied.refused.unwrap_or(BfError::Internal));
    }
    let changed = applied.added_any || applied.dropped_parts;
    let outcome = reply.finish(applied.refused);
    let done = Done {
        created,
        time,
        applied: request.items.start..applied.end,
        changed,
    };
    propagate(call, &done);
    super::window::drop_legacy_ttl(call, &mut key, time.and_then(|time| time.legacy_expiry));
    if outcome.is_ok() && created.is_some() {
        call.notify(c"bf.reserve", 1);
    }
    if outcome.is_ok() && applied.added_any {
        call.notify(c"bf.add", 1);
    }
    outcome
}

/// The filter at the key, or a new one if the command may create it (and which).
fn open_or_create<'k>(
    call: &Call,
    key: &'k mut FilterKey,
    creation: Option<Creation>,
) -> Result<(&'k mut Filter, Option<Creation>), BfError> {
    match (key.entry()?, creation) {
        (Entry::Filter(filter), _) => {
            in_use(filter)?;
            Ok((filter, None))
        }
        (Entry::Empty(_), None) => Err(BfError::NotFound),
        (Entry::Empty(vacant), Some(creation)) => {
            let limit = call.size_limit();
            let filter = creation
                .build(limit.bytes())
                .map_err(|err| BfError::from_filter(err, &limit))?;
            Ok((vacant.create(filter)?, Some(creation)))
        }
    }
}

/// The time of a write to a windowed filter (the others have none): the primary's clock, or the
/// time it propagated; with what the write needs to know of the filter around it.
#[derive(Clone, Copy)]
struct WriteTime {
    now: u64,
    shape: WindowedShape,
    /// The expiry the first release gave the key, read before the write (see
    /// `super::window::drop_legacy_ttl`).
    legacy_expiry: Option<u64>,
}

impl WriteTime {
    /// The write's time if `filter` is windowed.
    fn of(call: &Call, filter: &Filter, at: Option<u64>) -> Option<WriteTime> {
        let Filter::Windowed(windowed) = filter else {
            return None;
        };
        let shape = *windowed.shape();
        Some(WriteTime {
            now: super::window::write_time(call, at, &shape),
            shape,
            legacy_expiry: windowed.legacy_expiry(),
        })
    }

    /// The time the core's add and expiry take: the write's; a filter without a window has none
    /// and reads no time (any value will do).
    fn core_time(time: Option<WriteTime>) -> u64 {
        time.map_or(0, |time| time.now)
    }
}

/// An add command's reply, written as the items are applied.
struct Reply<'c> {
    call: &'c Call<'c>,
    answer: Answer,
    /// The reply array has been opened (it opens with its first element).
    opened: Cell<bool>,
}

impl<'c> Reply<'c> {
    fn new(call: &'c Call<'c>, answer: Answer) -> Reply<'c> {
        Reply {
            call,
            answer,
            opened: Cell::new(false),
        }
    }

    /// One item's answer: 1 if it was added, 0 if it may have been there already.
    fn item(&self, added: bool) {
        self.open();
        self.call.reply_bool(added);
    }

    /// Opens the reply array of a command that answers each item, once.
    fn open(&self) {
        if self.answer == Answer::Each && !self.opened.replace(true) {
            self.call.reply_array_open();
        }
    }

    /// Ends the reply. An error that stopped the command is the whole reply of one that answers
    /// one item (returned, for the command to reply), and the last element of the others' array.
    fn finish(&self, refused: Option<BfError>) -> Result<(), BfError> {
        match (self.answer, refused) {
            (Answer::One, Some(err)) => return Err(err),
            (Answer::One, None) => return Ok(()),
            (Answer::Each, refused) => {
                self.open();
                if let Some(err) = refused {
                    self.call.reply_error(&err);
                }
            }
        }
        self.call.end_array();
        Ok(())
    }
}

/// What adding a command's items did.
struct Applied {
    /// Items before this argument were applied; an error stopped the command there.
    end: usize,
    refused: Option<BfError>,
    added_any: bool,
    /// A windowed filter dropped expired parts first.
    dropped_parts: bool,
}

/// Adds the items at `items` at `time`, replying each answer as it comes, and keeps the module's
/// counters and the sweep up to date.
fn apply(
    call: &Call,
    filter: &mut Filter,
    items: Range<usize>,
    time: Option<WriteTime>,
    early: Option<EarlyHash>,
    reply: &Reply,
) -> Applied {
    let args = call.args();
    let now = WriteTime::core_time(time);
    // Growth (and, for a windowed filter, dropping what expired) are the only changes of size,
    // and growth the only thing the size limit bounds: ask for the limit and measure the bytes
    // before only when they may come (both cost on the hot path).
    let may_grow = filter.may_grow_within(items.len() as u64, now);
    let limit = if may_grow {
        call.size_limit().growing(filter.planned_size())
    } else {
        SizeLimit::unlimited()
    };
    let bytes_before = (may_grow || filter.has_expired(now)).then(|| memory_usage(filter));
    let expired = filter.expire(now);
    stats::generations_expired(expired.generations);
    let mut applied = Applied {
        end: items.start,
        refused: None,
        added_any: false,
        dropped_parts: expired.parts > 0,
    };
    let mut take = |result: Result<bool, FilterError>| match result {
        Ok(added) => {
            applied.added_any |= added;
            reply.item(added);
            applied.end += 1;
            true
        }
        Err(err) => {
            applied.refused = Some(BfError::from_filter(err, &limit));
            false
        }
    };
    if items.len() == 1 {
        // One item has nothing to batch: no group buffer.
        take(filter.add_early(args.get(items.start), early, now, limit.bytes()));
    } else {
        let each = items.clone().map(|i| args.get(i));
        filter.add_many(each, now, limit.bytes(), take);
    }
    if let Some(before) = bytes_before {
        stats::filter_resized(before, filter);
    }
    if may_grow || applied.dropped_parts {
        super::window::register(call, filter);
    }
    stats::items_added(applied.end - items.start);
    applied
}

/// What an add command did, as propagation needs it.
struct Done {
    /// The filter it created, if it did.
    created: Option<Creation>,
    time: Option<WriteTime>,
    /// The arguments of the items it applied.
    applied: Range<usize>,
    /// It added an item or dropped expired parts.
    changed: bool,
}

/// Propagates exactly what was applied: a replica never refuses what its primary accepted (it
/// skips the size limit), so items after an error must not reach it. A command that created its
/// filter is propagated as a BF.INSERT with every parameter spelled out, so a replica or an AOF
/// replay builds the same filter whatever its own defaults; a windowed write also carries its
/// time (`AT`, see `super::window`); a write that changed nothing is not propagated.
fn propagate(call: &Call, done: &Done) {
    let all = done.applied.end == call.args().len();
    // Allocated only for a command propagated in another form (most are not).
    let mut made: Vec<&[u8]> = Vec::new();
    let creation_words;
    match (done.created, done.time) {
        (_, Some(time)) if done.changed || done.created.is_some() => {
            let items = done.applied.clone();
            return super::window::replicate_write(call, &time.shape, time.now, items);
        }
        (Some(creation), None) => {
            creation_words = creation.words();
            made.push(call.args().get(1));
            made.extend(creation_words.iter().map(|word| word.as_bytes()));
            made.push(b"ITEMS");
        }
        (None, None) if done.changed && all => return call.replicate_verbatim(),
        (None, None) if done.changed => {
            let key = call.args().get(1);
            return call.replicate(c"BF.MADD", &[key], done.applied.clone());
        }
        _ => return,
    }
    call.replicate(c"BF.INSERT", &made, done.applied.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: Creation = Creation {
        capacity: 100,
        error: 0.01,
        growth: Growth::Scaling { expansion: 2 },
        window: None,
        layout: Layout::Classic,
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
                window: None,
                layout: Layout::Classic,
            }),
            first_item: 9,
            at: None,
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
                first_item: 3,
                at: None,
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
        assert_eq!(
            parse(&["WINDOW", "0", "ITEMS", "a"]),
            Err(BfError::BadWindow)
        );
        assert_eq!(
            parse(&["WINDOW", "315576001", "ITEMS", "a"]),
            Err(BfError::BadWindow)
        );
        assert_eq!(
            parse(&["WINDOW", "60", "ERROR", "1e-307", "ITEMS", "a"]),
            Err(BfError::BadWindowedErrorRate)
        );
        assert_eq!(parse(&["AT", "x", "ITEMS", "a"]), Err(BfError::BadTime));
    }

    #[test]
    fn a_replayed_change_of_time_alone_has_no_items() {
        let parsed = parse(&["NOCREATE", "AT", "5", "ITEMS"]).unwrap();
        assert_eq!(parsed.at, Some(5));
        assert_eq!(parsed.first_item, 6);
        assert_eq!(parse(&["NOCREATE", "ITEMS"]), Err(BfError::MissingItems));
    }

    #[test]
    fn a_window_makes_a_windowed_creation_growing_by_4_unless_told() {
        let parsed = parse(&["WINDOW", "3600", "CAPACITY", "10", "ITEMS", "a"]).unwrap();
        let creation = parsed.creation.unwrap();
        assert_eq!(creation.window, Some(Window::seconds(3600).unwrap()));
        assert_eq!(creation.growth, Growth::Scaling { expansion: 4 });
        let told = parse(&["WINDOW", "5", "EXPANSION", "2", "ITEMS", "a"]).unwrap();
        assert_eq!(
            told.creation.unwrap().growth,
            Growth::Scaling { expansion: 2 }
        );
        let fixed = parse(&["NONSCALING", "WINDOW", "5", "AT", "17", "ITEMS", "a"]).unwrap();
        assert_eq!(fixed.creation.unwrap().growth, Growth::Fixed);
        assert_eq!(fixed.at, Some(17));
        assert_eq!(
            creation.words(),
            [
                "CAPACITY",
                "10",
                "ERROR",
                "0.01",
                "EXPANSION",
                "4",
                "WINDOW",
                "3600",
                "LAYOUT",
                "CLASSIC"
            ]
        );
    }
}

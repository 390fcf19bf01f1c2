//! `CF.ADD`, `CF.ADDNX`, `CF.INSERT` and `CF.INSERTNX`: adding items, creating the filter on a
//! missing key. ADD adds another copy of an item it holds; the NX forms add only items it does not
//! seem to hold. The sub-filter limit (`cf-max-expansions`) is checked before every item: a batch
//! cannot pass it (RedisBloom checks once per command). A walk makes at most `WALK_EVICTIONS`
//! evictions, a call evictions weighing at most `COMMAND_EVICTIONS` over all its items, and none
//! after an item showed the filter full: a batch cannot hold the server for its items times
//! `MAXITERATIONS`, as RedisBloom's can.

use super::create::{checked_capacity, parse_capacity, parse_error, Creation};
use super::{in_use, limits, open, Early};
use crate::error::{BfError, CfError};
use crate::glue::call::Call;
use crate::glue::key::{Access, Entry};
use crate::parse::{is_option, once, unknown, value_of, Args};
use crate::size::cuckoo_memory_usage;
use crate::stats;
use filters::cuckoo::shape::BOUNDED_BUCKET_SIZE;
use filters::cuckoo::{Adding, Cuckoo, Limits, Print, COMMAND_EVICTIONS};
use filters::FilterError;

/// Whether an add adds another copy of an item already there.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// CF.ADD, CF.INSERT: always adds.
    Always,
    /// CF.ADDNX, CF.INSERTNX: adds only an item it does not seem to hold.
    Unique,
}

/// What happened to one item.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Added,
    /// Already there (the NX forms).
    Held,
    Refused(FilterError),
}

/// What the adds of this call may take: `bf.cf-max-expansions`, the size limit asked of the
/// server only if an item needs a new sub-filter (which may ask the server for its memory), and
/// evictions weighing [`COMMAND_EVICTIONS`] over all its items; a replay none of them (it applies
/// what the primary did: every item it is sent was added there).
fn adding<'c>(call: &'c Call) -> Adding<impl FnMut(&Cuckoo) -> u64 + 'c> {
    adding_as(call, call.is_replay())
}

/// [`adding`] for a single item (CF.ADD, CF.ADDNX) into a filter of `tables` sub-filters, which
/// asks the server whether the call is a replay (its context flags: about 130 instructions, an
/// eighth of what the command runs in this module) only where the answer can change what the add
/// does. One item makes one walk of evictions at most, and a call's first walk always runs whole,
/// so the budget never cuts it; the sub-filter limits refuse an item only in a filter that has
/// as many sub-filters already. Below both limits, a replay's add and a client's are the same.
fn adding_one<'c>(call: &'c Call, tables: usize) -> Adding<impl FnMut(&Cuckoo) -> u64 + 'c> {
    let limit = crate::config::cuckoo_max_tables().min(Limits::NONE.max_tables);
    adding_as(call, tables as u64 >= limit && call.is_replay())
}

/// [`adding`] for a call that is a replay (`replay`) or a client's.
fn adding_as<'c>(call: &'c Call, replay: bool) -> Adding<impl FnMut(&Cuckoo) -> u64 + 'c> {
    let max_tables = match replay {
        true => Limits::NONE.max_tables,
        false => crate::config::cuckoo_max_tables(),
    };
    // The size limit asks again whether the call is a replay, only if the filter must grow.
    let adding = Adding::new(max_tables, move |filter: &Cuckoo| {
        limits(call, cuckoo_memory_usage(filter)).max_bytes
    });
    match replay {
        true => adding,
        false => adding.limited(COMMAND_EVICTIONS),
    }
}

/// Adds one item within the call's `adding`. One walk of evictions at most, whatever refuses the
/// item after it, and none once the call has spent its evictions or found the filter full.
fn add_one<F: FnMut(&Cuckoo) -> u64>(
    filter: &mut Cuckoo,
    print: Print,
    mode: Mode,
    adding: &mut Adding<F>,
) -> Outcome {
    let added = match mode {
        Mode::Always => filter.add_within(print, adding).map(|()| true),
        Mode::Unique => filter.add_unique_within(print, adding),
    };
    match added {
        Ok(true) => Outcome::Added,
        Ok(false) => Outcome::Held,
        Err(err) => Outcome::Refused(err),
    }
}

/// What a missing key gets from an add: its capacity (or `bf.cf-initial-size`), and a bounded
/// error rate if CF.INSERT asked for one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Make {
    pub capacity: Option<u64>,
    pub error: Option<f64>,
}

impl Make {
    fn creation(self) -> Result<Creation, BfError> {
        match self.error {
            Some(error) => Creation::bounded(self.capacity, error),
            None => Creation::defaults(self.capacity),
        }
    }
}

/// The filter at the key, or one made by `make` if the key is empty (`None`: NOCREATE, the key
/// must hold one); with the creation if it was made here.
fn filter_at<'k>(
    key: &'k mut super::CuckooKey,
    call: &Call,
    make: Option<Make>,
) -> Result<(&'k mut Cuckoo, Option<Creation>), BfError> {
    match key.entry()? {
        Entry::Filter(filter) => {
            in_use(filter)?;
            Ok((filter, None))
        }
        Entry::Empty(vacant) => {
            let creation = make.ok_or(BfError::NotFound)?.creation()?;
            let filter = creation.build(call)?;
            Ok((vacant.create(filter)?, Some(creation)))
        }
    }
}

/// The error reply for an item refused by a single-item command.
fn refusal(err: FilterError, call: &Call, existing: usize) -> BfError {
    match err {
        FilterError::Full => BfError::Cf(CfError::Full),
        other => {
            let limit = call.size_limit().growing(existing as u64);
            BfError::from_filter(other, &limit)
        }
    }
}

/// CF.ADD key item / CF.ADDNX key item.
fn add_command(call: &Call, mode: Mode) -> Result<(), BfError> {
    let item = call.args().get(2);
    let early = Early::hash(call, item);
    let mut key = open(call, Access::Write);
    let defaults = Make {
        capacity: None,
        error: None,
    };
    let (filter, made) = filter_at(&mut key, call, Some(defaults))?;
    if let Some(creation) = made {
        creation.propagate(call);
    }
    let tables = filter.tables().len();
    let print = early.print(call, filter, item);
    let mut adding = adding_one(call, tables);
    let outcome = add_one(filter, print, mode, &mut adding);
    stats::cuckoo_evictions(adding.evictions);
    stats::cuckoo_items(1, 0, 0);
    // Its size before the add, from its sub-filters then (an add only appends them): sized only
    // where it grew or refused, not on every add.
    let before = || filter.planned_size_of_first(tables) as usize;
    if filter.tables().len() != tables {
        stats::cuckoo_resized(before(), filter);
    }
    match outcome {
        Outcome::Added => {
            call.reply_bool(true);
            // As received: the same item into the same filter (and for CF.ADDNX, which added it,
            // the same answer) on a replica.
            call.replicate_verbatim();
            call.notify(c"cf.add", 1);
        }
        Outcome::Held => call.reply_bool(false),
        Outcome::Refused(err) => return Err(refusal(err, call, before())),
    }
    Ok(())
}

/// CF.ADD key item: `1` (RESP3 `true`); an error if the item finds no room.
pub fn add(call: &Call) -> Result<(), BfError> {
    add_command(call, Mode::Always)
}

/// CF.ADDNX key item: `1` if added, `0` if it may be there already.
pub fn addnx(call: &Call) -> Result<(), BfError> {
    add_command(call, Mode::Unique)
}

/// A parsed CF.INSERT or CF.INSERTNX.
#[derive(Debug, PartialEq)]
pub struct Insert {
    /// What a missing key gets; `None` with NOCREATE.
    pub creation: Option<Make>,
    /// The index of the first item.
    pub first_item: usize,
}

impl Insert {
    /// Parses `key [CAPACITY c] [ERROR rate] [NOCREATE] ITEMS item...`: whole option words
    /// (RedisBloom looks at first letters), each once; everything after ITEMS is an item.
    pub fn parse<'a>(args: &impl Args<'a>) -> Result<Insert, BfError> {
        let (mut capacity, mut no_create, mut error) = (None, None, None);
        let mut index = 2;
        loop {
            if index >= args.len() {
                return Err(BfError::MissingItems);
            }
            let token = args.get(index);
            if is_option(token, "ITEMS") {
                break;
            } else if is_option(token, "CAPACITY") {
                let value = parse_capacity(value_of(args, index, "CAPACITY")?)?;
                once(&mut capacity, "CAPACITY", value)?;
                index += 2;
            } else if is_option(token, "ERROR") {
                let value = parse_error(value_of(args, index, "ERROR")?)?;
                once(&mut error, "ERROR", value)?;
                index += 2;
            } else if is_option(token, "NOCREATE") {
                once(&mut no_create, "NOCREATE", ())?;
                index += 1;
            } else {
                return Err(unknown(token));
            }
        }
        let first_item = index + 1;
        if first_item >= args.len() {
            return Err(BfError::MissingItems);
        }
        // Checked even for an existing key, as RedisBloom checks it.
        let bucket_size = match error {
            Some(_) => BOUNDED_BUCKET_SIZE,
            None => crate::config::cuckoo_defaults().params().bucket_size,
        };
        let capacity = capacity
            .map(|capacity| checked_capacity(capacity, bucket_size))
            .transpose()?;
        let creation = match no_create {
            Some(()) => None,
            None => Some(Make { capacity, error }),
        };
        Ok(Insert {
            creation,
            first_item,
        })
    }
}

/// CF.INSERT / CF.INSERTNX: an array of answers, one per item.
fn insert_command(call: &Call, mode: Mode) -> Result<(), BfError> {
    let args = call.args();
    let request = Insert::parse(&args)?;
    let mut key = open(call, Access::Write);
    let (filter, made) = filter_at(&mut key, call, request.creation)?;
    if let Some(creation) = made {
        creation.propagate(call);
    }
    let before = cuckoo_memory_usage(filter);
    let limits = limits(call, before);
    // RedisBloom's answer for a filter at its limit before any item: one error, not an array.
    filter
        .check_room(limits.max_tables)
        .map_err(|err| refusal(err, call, before))?;
    let items = request.first_item..args.len();
    let mut added: Vec<&[u8]> = Vec::new();
    // One budget of evictions for the whole batch: past it, or once the filter is found full, an
    // item goes in only where it finds an empty slot (the same one a replica finds).
    let mut adding = adding(call);
    call.reply_array(items.len());
    for index in items.clone() {
        let item = args.get(index);
        let outcome = add_one(filter, filter.print(item), mode, &mut adding);
        match (outcome, mode) {
            (Outcome::Added, Mode::Always) => call.reply_bool(true),
            (Outcome::Added, Mode::Unique) => call.reply_integer(1),
            (Outcome::Held, _) => call.reply_integer(0),
            (Outcome::Refused(_), Mode::Always) if call.is_resp3() => call.reply_bool(false),
            (Outcome::Refused(_), _) => call.reply_integer(-1),
        }
        if outcome == Outcome::Added {
            added.push(item);
        }
    }
    stats::cuckoo_evictions(adding.evictions);
    stats::cuckoo_items(items.len(), 0, 0);
    stats::cuckoo_resized(before, filter);
    if !added.is_empty() {
        // What was added, as plain adds: a replica applies exactly that, whatever its limits.
        let mut made: Vec<&[u8]> = vec![args.get(1), b"NOCREATE", b"ITEMS"];
        made.extend(added);
        call.replicate(c"CF.INSERT", &made, 0..0);
        call.notify(c"cf.add", 1);
    }
    Ok(())
}

/// CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item...: `1` per item added, `-1` per item refused
/// (RESP3: `true`, `false`).
pub fn insert(call: &Call) -> Result<(), BfError> {
    insert_command(call, Mode::Always)
}

/// CF.INSERTNX: `1` added, `0` may be there already, `-1` refused (integers in RESP3 too).
pub fn insertnx(call: &Call) -> Result<(), BfError> {
    insert_command(call, Mode::Unique)
}

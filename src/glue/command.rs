//! Registering commands with the server (flags, arity, key specs) and running them: every command
//! callback goes through [`dispatch`], which turns an `Err` into an error reply and a panic into an
//! error reply plus a log line instead of a dead server.

use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::guard::guarded;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::c_int;

/// A command handler: reads its arguments from the call, replies through it, or returns the error
/// to reply with.
pub type Handler = fn(&Call) -> Result<(), BfError>;

/// The C callback Redis calls for a command.
pub type Callback =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// What a command does to its key (argument 1), for ACLs and cluster routing.
#[derive(Clone, Copy)]
pub enum KeyUse {
    /// Reads the filter's contents (EXISTS, SCANDUMP): RO + ACCESS.
    ReadsItems,
    /// Reads only the filter's metadata (INFO, CARD, DEBUG): RO.
    ReadsMetadata,
    /// Adds to the filter, creating it if needed (RESERVE, ADD, INSERT): RW + INSERT.
    Inserts,
    /// Creates the filter or overwrites part of it (LOADCHUNK): RW + UPDATE (the server takes
    /// one of INSERT, UPDATE and DELETE per key spec).
    Loads,
    /// Removes from the filter (CF.DEL): RW + DELETE.
    Deletes,
    /// Rearranges the filter without changing what it holds (CF.COMPACT): RW + UPDATE.
    Updates,
}

impl KeyUse {
    fn flags(self) -> u32 {
        match self {
            KeyUse::ReadsItems => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
            KeyUse::ReadsMetadata => raw::REDISMODULE_CMD_KEY_RO,
            KeyUse::Inserts => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT,
            KeyUse::Loads | KeyUse::Updates => {
                raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE
            }
            KeyUse::Deletes => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
        }
    }
}

/// What `COMMAND DOCS` shows for a command.
pub struct Docs {
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    pub args: &'static [Arg],
}

/// One argument of a command, as `COMMAND DOCS` describes it.
pub struct Arg {
    pub name: &'static CStr,
    pub kind: ArgKind,
    /// The keyword before the value (`EXPANSION 4`), or the whole of a pure token.
    pub token: Option<&'static CStr>,
    pub optional: bool,
    pub multiple: bool,
}

/// The type of an argument.
pub enum ArgKind {
    /// The command's key (its only key spec).
    Key,
    String,
    Integer,
    Double,
    /// A keyword alone (`NONSCALING`).
    PureToken,
    /// Exactly one of the sub-arguments.
    OneOf(&'static [Arg]),
}

impl Arg {
    const fn new(name: &'static CStr, kind: ArgKind) -> Arg {
        Arg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
        }
    }

    /// The key.
    pub const fn key(name: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::Key)
    }

    /// A string (an item, a chunk).
    pub const fn string(name: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::String)
    }

    /// An integer.
    pub const fn integer(name: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::Integer)
    }

    /// A floating-point number.
    pub const fn double(name: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::Double)
    }

    /// A keyword alone.
    pub const fn pure_token(name: &'static CStr, token: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::PureToken).token(token)
    }

    /// One of `choices`.
    pub const fn one_of(name: &'static CStr, choices: &'static [Arg]) -> Arg {
        Arg::new(name, ArgKind::OneOf(choices))
    }

    /// Preceded by a keyword.
    pub const fn token(mut self, token: &'static CStr) -> Arg {
        self.token = Some(token);
        self
    }

    /// May be left out.
    pub const fn optional(mut self) -> Arg {
        self.optional = true;
        self
    }

    /// May repeat.
    pub const fn multiple(mut self) -> Arg {
        self.multiple = true;
        self
    }
}

/// The module version, as `COMMAND DOCS` shows it in `since`.
const SINCE: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => c"0.0.0",
    };

/// One command as it is registered.
pub struct Command {
    pub name: &'static CStr,
    pub callback: Callback,
    /// Command flags, e.g. `write deny-oom` or `readonly fast`.
    pub flags: &'static CStr,
    /// Redis arity: the exact argument count including the name, or minus the minimum.
    pub arity: i32,
    pub key: KeyUse,
    pub docs: Docs,
}

/// Runs a handler for a command callback.
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    // SAFETY: these are the callback's own arguments.
    let call = unsafe { Call::new(ctx, argv, usize::try_from(argc).unwrap_or(0)) };
    let outcome = guarded(
        ctx,
        "a command",
        || Err(BfError::Internal),
        || handler(&call),
    );
    if let Err(err) = outcome {
        if !call.close_abandoned_array(&err) {
            call.reply_error(&err);
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// The version of the command-info structures this module was built with.
static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// The ACL category of each command family, on servers that let modules add one: `@bloom` for
/// `BF.*`, `@cuckoo` for `CF.*` (RedisBloom 8's names).
const CATEGORIES: [&CStr; 2] = [c"bloom", c"cuckoo"];

/// The category of a command by its family (its name's prefix).
fn family_category(name: &CStr) -> &'static str {
    if name.to_bytes().starts_with(b"cf.") {
        "cuckoo"
    } else {
        "bloom"
    }
}

/// Registers every command; an error names the command that failed.
pub fn register(ctx: *mut raw::RedisModuleCtx, commands: &[Command]) -> Result<(), String> {
    let bloom = add_category(ctx);
    for command in commands {
        let name = command.name.to_string_lossy();
        // SAFETY: a valid load-time context and NUL-terminated strings that live for the
        // program; the callback has the signature Redis expects.
        let created = unsafe {
            raw::RedisModule_CreateCommand.unwrap()(
                ctx,
                command.name.as_ptr(),
                Some(command.callback),
                command.flags.as_ptr(),
                1,
                1,
                1,
            )
        };
        if created != raw::REDISMODULE_OK as c_int {
            // The flags are fixed and valid: the one way to fail here is a name already held.
            return Err(crate::glue::module::taken(&format!(
                "the command name {name} is taken"
            )));
        }
        // SAFETY: the command was just created under this name.
        let handle = unsafe { raw::RedisModule_GetCommand.unwrap()(ctx, command.name.as_ptr()) };
        if handle.is_null() {
            return Err(format!("could not find command {name} after creating it"));
        }
        set_info(handle, command).map_err(|why| format!("command {name}: {why}"))?;
        let family = bloom.then(|| family_category(command.name));
        set_categories(handle, command, family).map_err(|why| format!("command {name}: {why}"))?;
    }
    Ok(())
}

/// Adds the `bloom` and `cuckoo` ACL categories (`RedisModule_AddACLCategory`, Redis 7.4 and
/// newer); whether the server has them. Older servers load the module all the same, without.
fn add_category(ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: reading a function pointer the server filled in (or left empty) at load.
    let Some(add) = (unsafe { raw::RedisModule_AddACLCategory }) else {
        crate::glue::log::notice(
            ctx,
            "this server cannot add module ACL categories (Redis 7.4 and newer can): the BF and CF commands are in no @bloom or @cuckoo category here",
        );
        return false;
    };
    CATEGORIES.iter().all(|category| {
        // SAFETY: a load-time context and a NUL-terminated name.
        unsafe { add(ctx, category.as_ptr()) == raw::REDISMODULE_OK as c_int }
    })
}

/// The ACL categories of a command: `@read` or `@write` and `@fast` or `@slow` from its flags, as
/// for the server's own commands, and `@bloom` where the server has it
/// (`RedisModule_SetCommandACLCategories`, Redis 7.2 and newer; older servers skip this).
fn set_categories(
    handle: *mut raw::RedisModuleCommand,
    command: &Command,
    family: Option<&str>,
) -> Result<(), &'static str> {
    // SAFETY: reading a function pointer the server filled in (or left empty) at load.
    let Some(set) = (unsafe { raw::RedisModule_SetCommandACLCategories }) else {
        return Ok(());
    };
    let categories = categories(command.flags.to_str().unwrap_or(""), family);
    let categories =
        std::ffi::CString::new(categories).map_err(|_| "ACL categories contain NUL")?;
    // SAFETY: a command created by this module during its load, and a NUL-terminated string
    // that the server parses during the call.
    if unsafe { set(handle, categories.as_ptr()) } != raw::REDISMODULE_OK as c_int {
        return Err("the server refused its ACL categories");
    }
    Ok(())
}

/// The ACL categories for command flags such as `write deny-oom` or `readonly fast`.
fn categories(flags: &str, family: Option<&str>) -> String {
    let flags: Vec<&str> = flags.split_whitespace().collect();
    let mut categories = vec![if flags.contains(&"write") {
        "write"
    } else {
        "read"
    }];
    categories.push(if flags.contains(&"fast") {
        "fast"
    } else {
        "slow"
    });
    categories.extend(family);
    categories.join(" ")
}

/// Builds the server's argument table for `args` (ending in a zeroed entry), keeping it and its
/// sub-tables in `tables`; returns a pointer to it, valid while `tables` lives.
fn arg_table(
    args: &[Arg],
    tables: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    let mut table: Vec<raw::RedisModuleCommandArg> = Vec::with_capacity(args.len() + 1);
    for arg in args {
        // SAFETY: zeroed pointers mean "none" for every optional field.
        let mut entry: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
        entry.name = arg.name.as_ptr();
        entry.key_spec_index = -1;
        entry.type_ = match arg.kind {
            ArgKind::Key => {
                entry.key_spec_index = 0;
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
            }
            ArgKind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            ArgKind::Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
            ArgKind::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            ArgKind::OneOf(choices) => {
                entry.subargs = arg_table(choices, tables);
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF
            }
        };
        entry.token = arg.token.map_or(std::ptr::null(), CStr::as_ptr);
        let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
        if arg.optional {
            flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        }
        if arg.multiple {
            flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        }
        entry.flags = flags as c_int;
        table.push(entry);
    }
    // SAFETY: the zeroed entry is the documented terminator.
    table.push(unsafe { std::mem::zeroed() });
    // The heap buffer does not move when the Vec moves into `tables`.
    let pointer = table.as_mut_ptr();
    tables.push(table);
    pointer
}

/// Declares the arity and the single key spec: argument 1, with the command's access flags.
fn set_info(handle: *mut raw::RedisModuleCommand, command: &Command) -> Result<(), &'static str> {
    // SAFETY: zeroed key specs are the documented terminator; the other fields are plain data.
    let mut key_specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { std::mem::zeroed() };
    key_specs[0].flags = u64::from(command.key.flags());
    key_specs[0].begin_search_type =
        raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    key_specs[0].bs.index.pos = 1;
    key_specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    key_specs[0].fk.range.lastkey = 0;
    key_specs[0].fk.range.keystep = 1;
    key_specs[0].fk.range.limit = 0;
    // The argument tables, each ending in a zeroed entry; sub-tables are kept alive here until
    // the server has copied them.
    let mut tables = Vec::new();
    let args = arg_table(command.docs.args, &mut tables);
    // SAFETY: zeroed pointers mean "none" for every optional field.
    let mut info: raw::RedisModuleCommandInfo = unsafe { std::mem::zeroed() };
    info.version = &INFO_VERSION;
    info.summary = command.docs.summary.as_ptr();
    info.complexity = command.docs.complexity.as_ptr();
    info.since = SINCE.as_ptr();
    info.arity = command.arity;
    info.key_specs = key_specs.as_mut_ptr();
    info.args = args;
    // SAFETY: a read of the API table, bound at load time on the main thread and not changed since.
    let Some(set_command_info) = (unsafe { raw::RedisModule_SetCommandInfo }) else {
        return Err("this server cannot describe commands (Redis 7.0 or newer is needed)");
    };
    // SAFETY: the info and its key specs are valid for the call; Redis copies what it keeps.
    if unsafe { set_command_info(handle, &info) } != raw::REDISMODULE_OK as c_int {
        return Err("the server refused its command info");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::categories;

    #[test]
    fn categories_follow_the_command_flags() {
        assert_eq!(
            categories("write deny-oom", Some("bloom")),
            "write slow bloom"
        );
        assert_eq!(
            categories("readonly fast", Some("cuckoo")),
            "read fast cuckoo"
        );
        assert_eq!(categories("readonly", None), "read slow");
    }
}

/**
 * How the server's replies become answers (the spec's "replies", docs/sharding.md): one item's
 * answer in RESP2 or RESP3 (`asBool`, a cuckoo insert's), a batch command's array, `*.INFO` as
 * an object, the replies of a whole round trip back in the caller's order with the first failing
 * item thrown (`collect`), and `WAIT`'s confirmations (`checkWaits`). No I/O: the core says what
 * was sent (`Round`), the runner hands over what came back, error replies included as values.
 */

import {
  BloomFilterError,
  CUCKOO_REFUSED,
  FilterFullError,
  ModuleMissingError,
  NotReplicatedError,
  errorClass,
  isErrorReply,
  isModuleMissing,
  isNotFound,
} from './errors.js';

function shown(reply) {
  if (reply instanceof Error) return `${reply.name}: ${reply.message}`;
  try {
    return JSON.stringify(reply) ?? String(reply);
  } catch {
    return String(reply);
  }
}

/** One answer: RESP3 true/false or RESP2 1/0. An error reply, or anything else, throws. */
export function asBool(reply) {
  if (typeof reply === 'boolean') return reply;
  if (reply === 0 || reply === 1) return reply === 1;
  if (isErrorReply(reply)) throw new (errorClass(reply.message))(reply.message);
  throw new BloomFilterError(`unexpected reply ${shown(reply)}: not a Bloom filter answer`);
}

/** One answer of `CF.INSERT`: added (1, true); an item refused (-1, false) throws `FilterFullError`. */
export function cuckooAdded(reply) {
  if (reply === true || reply === 1) return true;
  if (reply === false || reply === -1) throw new FilterFullError(CUCKOO_REFUSED);
  if (isErrorReply(reply)) throw new (errorClass(reply.message))(reply.message);
  throw new BloomFilterError(`unexpected reply ${shown(reply)}: not a cuckoo filter answer`);
}

/**
 * One answer of `CF.INSERTNX`: 1 added, 0 (probably) held already; -1 (refused) throws
 * `FilterFullError`. (Integers in RESP3 too; booleans taken as added or held.)
 */
export function cuckooAddedUnique(reply) {
  if (typeof reply === 'boolean') return reply;
  if (reply === 0 || reply === 1) return reply === 1;
  if (reply === -1) throw new FilterFullError(CUCKOO_REFUSED);
  if (isErrorReply(reply)) throw new (errorClass(reply.message))(reply.message);
  throw new BloomFilterError(`unexpected reply ${shown(reply)}: not a cuckoo filter answer`);
}

/**
 * The answers of a batch command; an error element throws with the answers before it
 * (`FilterFullError` for an item that found no room, `BloomFilterError` otherwise). `offset` is
 * the position of the batch's first item among the items of the whole call; `answer` reads one
 * element.
 */
export function asBools(reply, offset = 0, answer = asBool) {
  if (!Array.isArray(reply)) {
    throw new BloomFilterError(`unexpected reply ${shown(reply)}: not an array of answers`);
  }
  const answers = [];
  for (const element of reply) {
    try {
      answers.push(answer(element));
    } catch (error) {
      if (!(error instanceof BloomFilterError)) throw error;
      throw new error.constructor(error.message, answers, offset + answers.length);
    }
  }
  return answers;
}

/** A Buffer as text (a client whose type mapping answers bulk strings as Buffers). */
export function decode(value) {
  return Buffer.isBuffer(value) ? value.toString('utf8') : value;
}

/** `BF.INFO`: a flat name/value array in RESP2, a map in RESP3 (an object or a Map); an object. */
export function infoObject(reply) {
  if (reply instanceof Map) return Object.fromEntries([...reply].map(([name, value]) => [decode(name), value]));
  if (Array.isArray(reply) && reply.length % 2 === 0) {
    const info = {};
    for (let i = 0; i < reply.length; i += 2) info[decode(reply[i])] = reply[i + 1];
    return info;
  }
  if (reply !== null && typeof reply === 'object' && !(reply instanceof Error) && !Buffer.isBuffer(reply)) {
    return { ...reply };
  }
  throw new BloomFilterError(`unexpected BF.INFO reply ${shown(reply)}`);
}

/**
 * `CF.INFO` as an object: RedisBloom's eight counts, and `Error rate` as a number (the module
 * answers it as text) for a filter with one.
 */
export function cuckooInfo(reply) {
  const info = infoObject(reply);
  if ('Error rate' in info) info['Error rate'] = Number(decode(info['Error rate']));
  return info;
}

/**
 * What a `*.RESERVE` reply means for `create`: null if the key now holds a filter (made, or
 * already there: TYPE says), else the error to throw.
 */
export function reserveFailure(reply) {
  if (!isErrorReply(reply)) return null;
  // redis-bf: "item exists" for a filter, WRONGTYPE for anything else. RedisBloom answers
  // "item exists" for both: TYPE tells them apart.
  const message = reply.message;
  if (message.includes('item exists') || message.startsWith('WRONGTYPE')) return null;
  return reply;
}

/** A request to the runner: one command. It answers the reply, an error reply as a value. */
export class Call {
  constructor(args) {
    this.args = args;
    Object.freeze(this);
  }
}

/**
 * A request to the runner: commands in one round trip (one pipeline per node on a cluster), and
 * with `wait`, `Core.waitCommands` after them on the connection that sent them (on each node
 * written). It answers the replies, error replies as values, and then one `Waited` per node.
 */
export class Batch {
  constructor(commands, wait = false) {
    this.commands = commands;
    this.wait = wait;
    Object.freeze(this);
  }
}

/**
 * What a node (`address`, host:port) answered to `Core.waitCommands`, sent after a batch's
 * writes on the same connection.
 */
export class Waited {
  constructor(address, replies) {
    this.address = address;
    this.replies = replies;
    Object.freeze(this);
  }
}

/**
 * A command over items: its name, whether it writes, whether it carries the creation options
 * (`<command> key <creation> ITEMS item...`), whether it takes one item (`CF.DEL key item`) or
 * many, how one answer is read, and the answer for every item when the key is missing and the
 * command says "not found" (null: that is an error).
 */
export class Verb {
  constructor(command, { write = false, creates = false, single = false, answer = asBool, missing = null } = {}) {
    Object.assign(this, { command, write, creates, single, answer, missing });
    Object.freeze(this);
  }
}

/**
 * One command of a batch, and the positions (in the call's items) of the items it carries. A
 * command that does not `answer` (a `CF.RESERVE` before inserts that cannot carry the creation)
 * carries the positions of the items its key gets in the round: its failure, if it is one, is
 * theirs.
 */
export class Command {
  constructor(args, positions, answers = true) {
    Object.assign(this, { args, positions, answers });
    Object.freeze(this);
  }
}

/** The commands of one round trip, for the items from `start` (`size` of them), all of one `verb`. */
export class Round {
  constructor(start, size, verb) {
    Object.assign(this, { start, size, verb, commands: [] });
  }
}

/**
 * The answers of a round trip, in the items' order; the first failing item (by position) throws,
 * with the answers before it. `replies` may go on past the commands (`Waited`s, checked by
 * `checkWaits`). `address` is named by a `ModuleMissingError`.
 */
export function collect(round, replies, address) {
  const { verb } = round;
  const answers = new Array(round.size).fill(null);
  let failure = null; // [position, message, class]
  if (replies.length < round.commands.length) {
    throw new BloomFilterError(`${replies.length} replies to ${round.commands.length} commands`, [], round.start);
  }
  round.commands.forEach((command, n) => {
    const reply = replies[n];
    let found = null;
    if (isErrorReply(reply) && isModuleMissing(reply)) throw new ModuleMissingError(address, reply.message);
    if (!command.answers) {
      // A reserve: OK, or "item exists"/WRONGTYPE (the inserts after it tell). Another error
      // (OOM, a size limit) is the failure of the key's items.
      const failed = reserveFailure(reply);
      if (failed !== null) found = [command.positions[0], failed.message, errorClass(failed.message)];
    } else if (isErrorReply(reply)) {
      if (verb.missing !== null && isNotFound(reply)) {
        for (const position of command.positions) answers[position - round.start] = verb.missing;
      } else {
        // A top-level error (WRONGTYPE, OOM, MOVED...): none of the command's items applied.
        found = [command.positions[0], reply.message, errorClass(reply.message)];
      }
    } else {
      let values;
      try {
        values = verb.single ? [verb.answer(reply)] : asBools(reply, 0, verb.answer);
      } catch (error) {
        if (!(error instanceof BloomFilterError)) throw error;
        values = error.results;
        found = [command.positions[values.length], error.message, error.constructor];
      }
      if (found === null && values.length !== command.positions.length) {
        const missing = command.positions[Math.min(values.length, command.positions.length - 1)];
        found = [missing, `${values.length} answers to ${command.positions.length} items`, BloomFilterError];
      }
      values.forEach((value, i) => {
        if (i < command.positions.length) answers[command.positions[i] - round.start] = value;
      });
    }
    if (found !== null && (failure === null || found[0] < failure[0])) failure = found;
  });
  if (failure !== null) {
    const [index, message, Raised] = failure;
    const before = answers.slice(0, index - round.start).map(Boolean);
    throw new Raised(message, before, index);
  }
  return answers.map(Boolean);
}

/**
 * Throws `NotReplicatedError` unless every node's `WAIT asked millis` (a `Waited`) reached the
 * replicas asked, after its marker write went through. `results` are the answers so far
 * (applied on the primaries: the error carries them).
 */
export function checkWaits(waits, results, asked, millis) {
  for (const waited of waits) {
    if (!(waited instanceof Waited) || waited.replies.length !== 3) {
      throw new NotReplicatedError(
        `no answer to WAIT (${shown(waited)}): the writes were applied on the primary, but ` +
          'whether a replica has them is unknown',
        results,
        results.length,
        { asked },
      );
    }
    const [marked, , reply] = waited.replies;
    const applied =
      `the writes were applied on the primary at ${waited.address} (the ${results.length} ` +
      'answer(s) in .results stand there), but';
    const lost = 'they may be lost if that primary fails now';
    const where = { address: waited.address, asked };
    if (marked instanceof Error) {
      throw new NotReplicatedError(
        `${applied} the write that WAIT ${asked} needs after them (SET of the marker key) failed ` +
          `(${marked.message}), so no replica could be asked: ${lost}`,
        results,
        results.length,
        where,
      );
    }
    if (typeof reply !== 'number' || !Number.isInteger(reply)) {
      const said = reply instanceof Error ? `failed (${reply.message})` : `answered ${shown(reply)}`;
      throw new NotReplicatedError(
        `${applied} WAIT ${asked} ${said}, so no replica could be asked: ${lost}`,
        results,
        results.length,
        where,
      );
    }
    if (reply < asked) {
      throw new NotReplicatedError(
        `${applied} ${reply} of the ${asked} replica(s) asked confirmed them, and every write ` +
          `before them, within ${millis} ms (WAIT ${asked}): ${lost}`,
        results,
        results.length,
        { ...where, confirmed: reply },
      );
    }
  }
}

/**
 * The command core of `BloomFilter` and `CuckooFilter`: the operations, each a generator that
 * yields the requests to send (`Call`, `Batch`) and turns their replies into its answer, without
 * any I/O (lib/runner.js sends what this builds and hands back what came). `Core` is a Bloom
 * filter's (`BF.*`), `CuckooCore` a cuckoo filter's (`CF.*`): the same batching, sharding,
 * creation on a missing key and `waitForReplicas`, with the family's own commands and replies.
 *
 * The rooms below it, each one of docs/sharding.md's concepts: errors.js (the error classes and
 * their messages), options.js (how a filter is created), replies.js (how replies become answers)
 * and shards.js (item bytes, the item's shard, key names, the manifest, merged info).
 *
 * A filter lives at one key, or, with `shards: N`, at N keys: the items of a batch are then
 * grouped by shard, each shard's items go `batchSize` to a command, and one round trip carries
 * them all (on a cluster, one pipeline per node, all nodes at once).
 */

import {
  CUCKOO_TYPE,
  FILTER_TYPE,
  ErrorRateUnsupportedError,
  FilterMismatchError,
  KeyTypeError,
  REDISBLOOM_UNKNOWN_ARGUMENT,
  BloomFilterError,
  errorRateUnsupported,
  explained,
  isErrorReply,
  isNotFound,
} from './errors.js';
import {
  Batch,
  Call,
  Command,
  Round,
  Verb,
  asBool,
  asBools,
  checkWaits,
  collect,
  cuckooAdded,
  cuckooAddedUnique,
  cuckooInfo,
  decode,
  infoObject,
  reserveFailure,
} from './replies.js';
import { SETTINGS } from './options.js';
import {
  NEW_VERSION,
  READABLE_VERSIONS,
  SHARD_FUNCTIONS,
  disagreements,
  itemArgument,
  kindName,
  manifestText,
  mergeBloomInfo,
  mergeCuckooInfo,
  parseManifest,
  sameSlotKey,
  shardCapacity,
  shardKeys,
} from './shards.js';

/**
 * The key `waitForReplicas` writes (and deletes) after a batch's writes, next to the filter's
 * key, so that the `WAIT` after it covers the primary's whole replication stream up to the
 * answers; and how long it lives if the DEL never comes.
 */
export const WAIT_MARKER_SUFFIX = ':redis-bf-wait';
export const WAIT_MARKER_MILLIS = 60_000;

export { Batch, Call };

export const BF_INSERT = new Verb('BF.INSERT', { write: true, creates: true });
export const BF_MEXISTS = new Verb('BF.MEXISTS');
export const CF_INSERT = new Verb('CF.INSERT', { write: true, creates: true, answer: cuckooAdded });
export const CF_INSERTNX = new Verb('CF.INSERTNX', { write: true, creates: true, answer: cuckooAddedUnique });
export const CF_MEXISTS = new Verb('CF.MEXISTS');
/** CF.DEL of a missing key answers "Not found": it holds nothing, so nothing was deleted. */
export const CF_DEL = new Verb('CF.DEL', { write: true, single: true, missing: false });

/** `items` in arrays of `size`, the last one shorter. */
function* chunks(items, size) {
  let chunk = [];
  for (const item of iterable(items)) {
    chunk.push(item);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length) yield chunk;
}

/** `items` if it is an iterable of items (a string is one item, not an iterable of them). */
function iterable(items) {
  if (typeof items === 'string' || typeof items?.[Symbol.iterator] !== 'function') {
    throw new TypeError(`items must be an iterable of items (an array, a Set...), not ${typeof items}`);
  }
  return items;
}

/**
 * A Bloom filter's commands and answers, for one key or `shards` keys (see the file's doc).
 * `CuckooCore` is a cuckoo filter's: the family's fields and a few operations differ.
 */
export class Core {
  name = 'Bloom filter';
  typeName = FILTER_TYPE;
  kind = 'bloom'; // a sharded filter's "kind" in its manifest
  addVerb = BF_INSERT;
  existsVerb = BF_MEXISTS;
  existsCommand = 'BF.EXISTS';
  reserveCommand = 'BF.RESERVE';
  infoCommand = 'BF.INFO';

  /**
   * `address` names the server in messages; `options` are the filter's (`FilterOptions` or
   * `CuckooOptions`); `settings` as options.js `settingsOf` checks them (`waitTimeout` in
   * milliseconds), any left out at their defaults.
   */
  constructor(address, key, options, settings = {}) {
    const { shards, batchSize, pipelineSize, waitForReplicas, waitTimeout } = { ...SETTINGS, ...settings };
    if (typeof key !== 'string' || key === '') throw new TypeError(`a filter's key is a non-empty string, not ${key}`);
    this.address = address;
    this.key = key;
    this.options = options;
    this.batchSize = batchSize;
    this.pipelineSize = pipelineSize;
    this.waitForReplicas = waitForReplicas;
    this.waitMillis = Math.max(1, Math.round(waitTimeout));
    this.shards = shards ?? null;
    this.keys = this.shards === null ? Object.freeze([key]) : shardKeys(key, this.shards);
    this.checked = this.shards === null; // a sharded filter checks its manifest on first use
    this.manifestReplicated = false; // a sharded filter's parameters, once a WAIT confirmed them
    this.markers = new Map();
    this.adopt(null);
  }

  /** The parameters, for inspection. */
  describe() {
    const shards = this.shards === null ? '' : `, shards: ${this.shards}`;
    return `key: '${this.key}', ${this.options.describe()}${shards}`;
  }

  // -- single items -----------------------------------------------------------------------------

  /**
   * The key that holds an item and what is sent for it (`itemArgument`: a string or a Buffer):
   * the filter's key, or its shard's, by a hash of the item's bytes.
   */
  place(item) {
    const argument = itemArgument(item);
    if (this.shards === null) return [this.key, argument];
    return [this.keys[this.shardOf(argument, this.shards)], argument];
  }

  /** The key that holds `item`. */
  keyOf(item) {
    return this.place(item)[0];
  }

  /**
   * An insert (`BF.INSERT` unless `verb` says) of `items` (already arguments) at `key`, with
   * the creation options; with `NOCREATE` where they cannot say the whole creation (the reserve
   * before it does).
   */
  insert(key, items, verb = this.addVerb) {
    const creation = this.insertArgs === null ? ['NOCREATE'] : this.insertArgs;
    return [verb.command, key, ...creation, 'ITEMS', ...items];
  }

  /** The command that creates the filter at `key` if it is missing. */
  reserve(key) {
    return [this.reserveCommand, key, ...this.creation.reserveArgs()];
  }

  /** `verb`'s command for `items` at `key`. */
  build(verb, key, items) {
    return verb.creates ? this.insert(key, items, verb) : [verb.command, key, ...items];
  }

  // -- replication ------------------------------------------------------------------------------

  /** The key `waitCommands` writes for writes to `key`: in its slot, named after it. */
  marker(key) {
    let marker = this.markers.get(key);
    if (marker === undefined) {
      marker = sameSlotKey(key, WAIT_MARKER_SUFFIX);
      this.markers.set(key, marker);
    }
    return marker;
  }

  /**
   * What follows a batch's writes to `key` (and to other keys of its node) on their connection:
   * a write the server always propagates (`SET` of the marker key, then its `DEL`), and `WAIT`.
   * `WAIT` waits for the replication offset of the connection's own last propagated write, and
   * an insert that adds nothing new propagates nothing; the `SET` is propagated after every
   * write the primary made before it, so the `WAIT` covers them all.
   */
  waitCommands(key) {
    const marker = this.marker(key);
    return [
      ['SET', marker, '1', 'PX', String(WAIT_MARKER_MILLIS)],
      ['DEL', marker],
      ['WAIT', String(this.waitForReplicas), String(this.waitMillis)],
    ];
  }

  // -- batches ----------------------------------------------------------------------------------

  /** The verb of a batch call: `write` true (the family's add), false (its lookup), or a Verb. */
  verbFor(write) {
    if (write instanceof Verb) return write;
    return write ? this.addVerb : this.existsVerb;
  }

  /**
   * The round trips of a batch call: `batchSize * pipelineSize` items each, in commands of at
   * most `batchSize` items of one key (one, for a single-item verb). An insert whose creation
   * options the command cannot carry is preceded, for each key of the round, by its reserve.
   */
  *rounds(items, write) {
    const verb = this.verbFor(write);
    const step = verb.single ? 1 : this.batchSize;
    const reserveFirst = verb.creates && this.insertArgs === null;
    const perRound = this.batchSize * this.pipelineSize;
    let start = 0;
    for (const some of chunks(items, perRound)) {
      const chunk = some.map((item) => this.place(item)); // [key, argument] of each item
      const round = new Round(start, chunk.length, verb);
      const groups = new Map(); // key -> the positions of its items in the chunk
      chunk.forEach(([key], position) => {
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key).push(position);
      });
      const at = (positions) => positions.map((p) => start + p);
      for (const key of [...groups.keys()].sort()) {
        const positions = groups.get(key);
        if (reserveFirst) round.commands.push(new Command(this.reserve(key), at(positions), false));
        for (let first = 0; first < positions.length; first += step) {
          const part = positions.slice(first, first + step);
          const args = this.build(
            verb,
            key,
            part.map((p) => chunk[p][1]),
          );
          round.commands.push(new Command(args, at(part)));
        }
      }
      yield round;
      start += chunk.length;
    }
  }

  /** The answers of a round trip, in the items' order (replies.js `collect`). */
  collect(round, replies) {
    return collect(round, replies, this.address);
  }

  // -- the manifest of a sharded filter ---------------------------------------------------------

  /** What a new sharded filter keeps at its key: the newest version and the shared parameters. */
  manifest() {
    return manifestText(NEW_VERSION, this.kind, this.shards ?? 1, this.options.capacity, this.options.identity());
  }

  /** Sets the manifest if the key is missing, and answers what was there (Redis 7.0+). */
  manifestCommand() {
    return ['SET', this.key, this.manifest(), 'NX', 'GET'];
  }

  /**
   * Follows the stored manifest (null: none, so this filter's own): its version picks the
   * item-to-shard function, its capacity each shard's (the first process's).
   */
  adopt(manifest) {
    this.version = manifest?.version ?? NEW_VERSION;
    this.shardOf = SHARD_FUNCTIONS[this.version];
    this.creation = this.ownCreation(manifest?.capacity ?? null);
    this.insertArgs = this.creation.insertArgs();
  }

  /**
   * Checks what `manifestCommand` found (null: it set ours; `claimed` false: what a `GET`
   * found, null then meaning no filter yet): true if this call made the filter. Another kind,
   * shard count or parameters throw `FilterMismatchError`, and so does a version this client
   * cannot read; another capacity is the stored one's.
   */
  checkManifest(reply, claimed = true) {
    if (isErrorReply(reply)) {
      if (reply.message.startsWith('WRONGTYPE')) {
        throw new KeyTypeError(
          this.key,
          'value of another type',
          'a sharded filter keeps its parameters at its key (a string): use another key',
        );
      }
      throw explained(this.address, reply);
    }
    if (reply === null || reply === undefined) {
      this.adopt(null);
      this.checked = claimed;
      return claimed;
    }
    const stored = parseManifest(decode(reply));
    if (stored === null) {
      throw new KeyTypeError(this.key, 'string', "not a sharded filter's parameters: use another key");
    }
    if (!READABLE_VERSIONS.includes(stored.version)) throw new FilterMismatchError(this.unreadable(stored));
    if (stored.kind !== this.kind) {
      throw new FilterMismatchError(
        `the sharded filter at '${this.key}' is a ${kindName(stored.kind)}, not a ${this.name}: it is another filter`,
      );
    }
    const mismatches = disagreements(stored, this.shards ?? 1, this.options.identity());
    if (mismatches.length) {
      throw new FilterMismatchError(
        `the sharded filter at '${this.key}' has ${mismatches.join(', ')}: it is another filter ` +
          '(changing the shard count needs a new filter, see the package README)',
      );
    }
    this.adopt(stored);
    this.checked = true;
    return false;
  }

  /** Why a stored manifest's version cannot be followed, in one line. */
  unreadable(stored) {
    const written = stored.fields.version === undefined ? 'none' : JSON.stringify(stored.fields.version);
    const head =
      `the sharded filter at '${this.key}' has a manifest of version ${written}, which this ` +
      `client cannot read (it reads ${READABLE_VERSIONS.join(' and ')})`;
    if (stored.version === 1) {
      return (
        `${head}: version 1 places items by a personalised BLAKE2b hash, which Node's crypto ` +
        'cannot compute; use the Python package with it, or build a new filter under another key'
      );
    }
    return `${head}: upgrade redis-bf`;
  }

  /**
   * How this filter's keys are created (options of its own kind): as asked, or each shard for
   * its share of `capacity` (the stored one).
   */
  ownCreation(capacity = null) {
    if (this.shards === null) return this.options;
    return this.options.resized(shardCapacity(capacity ?? this.options.capacity, this.shards));
  }

  /** The shards' `BF.INFO` as one (shards.js `mergeBloomInfo`). */
  mergeInfo(infos) {
    return mergeBloomInfo(infos, this.creation);
  }

  // -- the operations (what the filter classes run) ---------------------------------------------

  /** A reply, or its error thrown (`ModuleMissingError` for a server without the commands). */
  answer(reply) {
    if (isErrorReply(reply)) throw explained(this.address, reply);
    return reply;
  }

  /** The family's `*.INFO` reply as an object. */
  parseInfo(reply) {
    return infoObject(reply);
  }

  /** Checks the waits of a round trip (replies.js `checkWaits`). */
  checkWaits(waits, results) {
    checkWaits(waits, results, this.waitForReplicas, this.waitMillis);
  }

  /**
   * Before reading or deleting a sharded filter not yet checked: its parameters, if stored, must
   * be this filter's (a `GET`; nothing is written).
   */
  *verify() {
    if (!this.checked) this.checkManifest(yield new Call(['GET', this.key]), false);
  }

  /**
   * A sharded filter's parameters, checked against (or written at) its key, once: true if this
   * wrote them. Before the first write with `waitForReplicas`, they are confirmed on the
   * replicas of their own node (which may hold no shard written).
   */
  *check(write = false) {
    let created = false;
    if (!this.checked) created = this.checkManifest(yield new Call(this.manifestCommand()));
    if (write && this.waitForReplicas && this.shards !== null && !this.manifestReplicated) {
      const replies = yield new Batch([['EXISTS', this.key]], true);
      this.checkWaits(replies.slice(1), []);
      this.manifestReplicated = true;
    }
    return created;
  }

  /**
   * Reserves the filter (every shard) if missing: true if this call created anything (the key,
   * a shard, or a sharded filter's parameters). A key holding anything else throws
   * `KeyTypeError`. With `waitForReplicas`, the answer is confirmed as a write's.
   */
  *create() {
    let created = yield* this.check(true);
    const reserve = this.keys.map((key) => this.reserve(key));
    const wait = this.waitForReplicas > 0;
    const replies = yield new Batch(reserve, wait);
    for (let i = 0; i < reserve.length; i++) {
      const reply = replies[i];
      if (isErrorReply(reply)) {
        const failure = reserveFailure(reply);
        if (failure !== null) throw explained(this.address, failure);
        const keyType = String(decode(this.answer(yield new Call(['TYPE', this.keys[i]]))));
        if (keyType !== this.typeName) throw new KeyTypeError(this.keys[i], keyType, '', this.name);
      } else {
        created = true;
      }
    }
    if (wait) this.checkWaits(replies.slice(reserve.length), []);
    return created;
  }

  /** What TYPE answers for the key. */
  *keyType() {
    return String(decode(this.answer(yield new Call(['TYPE', this.key]))));
  }

  /**
   * One item's insert (the family's add, or `verb`): one command, unless it waits for replicas
   * or needs a reserve before it (a batch of one, then).
   */
  *add(item, verb = this.addVerb) {
    if (this.waitForReplicas || this.insertArgs === null) return (yield* this.batched([item], verb))[0];
    yield* this.check();
    const [key, argument] = this.place(item);
    const reply = yield new Call(this.insert(key, [argument], verb));
    return asBools(this.answer(reply), 0, verb.answer)[0];
  }

  *contains(item) {
    yield* this.check();
    const [key, argument] = this.place(item);
    return asBool(this.answer(yield new Call([this.existsCommand, key, argument])));
  }

  *count() {
    yield* this.verify();
    const replies = yield new Batch(this.keys.map((key) => ['BF.CARD', key]));
    return replies.reduce((sum, reply) => sum + Number(this.answer(reply)), 0);
  }

  *info() {
    yield* this.verify();
    const replies = yield new Batch(this.keys.map((key) => [this.infoCommand, key]));
    if (this.shards === null) return this.parseInfo(this.answer(replies[0]));
    const infos = replies.map((reply) => (isNotFound(reply) ? null : this.parseInfo(this.answer(reply))));
    if (infos.every((info) => info === null)) {
      // No shard yet: the filter exists if its parameters do (count() answers 0 then).
      if (!Number(this.answer(yield new Call(['EXISTS', this.key])))) this.answer(replies[0]); // "not found"
    }
    return this.mergeInfo(infos);
  }

  *drop() {
    yield* this.verify();
    const keys = this.shards === null ? this.keys : [...this.keys, this.key];
    const replies = yield new Batch(keys.map((key) => ['DEL', key]));
    this.checked = this.shards === null;
    this.manifestReplicated = false;
    this.adopt(null);
    return replies.reduce((sum, reply) => sum + Number(this.answer(reply)), 0);
  }

  /** A batch call: `write` true (the family's add), false (its lookup), or a Verb. */
  *batched(items, write) {
    const verb = this.verbFor(write);
    iterable(items);
    yield* this.check(verb.write);
    const answers = [];
    for (const round of this.rounds(items, verb)) {
      const replies = yield new Batch(
        round.commands.map((command) => command.args),
        verb.write && this.waitForReplicas > 0,
      );
      try {
        answers.push(...this.collect(round, replies));
      } catch (error) {
        if (error instanceof BloomFilterError) error.results = [...answers, ...error.results];
        throw error;
      }
      this.checkWaits(replies.slice(round.commands.length), answers);
    }
    return answers;
  }
}

/**
 * A cuckoo filter's commands and answers (`CF.*`), for one key or `shards` keys: the batching,
 * sharding, creation and replication of `Core`, with `CF.INSERT` (add), `CF.INSERTNX`
 * (addUnique), `CF.MEXISTS`, `CF.DEL`, `CF.COUNT` and `CF.INFO`. An item's shard is chosen by
 * its bytes, as for a Bloom filter, so a delete reaches the shard that holds the item.
 */
export class CuckooCore extends Core {
  name = 'cuckoo filter';
  typeName = CUCKOO_TYPE;
  kind = 'cuckoo';
  addVerb = CF_INSERT;
  existsVerb = CF_MEXISTS;
  existsCommand = 'CF.EXISTS';
  reserveCommand = 'CF.RESERVE';
  infoCommand = 'CF.INFO';

  parseInfo(reply) {
    return cuckooInfo(reply);
  }

  /** True for RedisBloom's answer to this (bounded) filter's `ERROR`. */
  refusesErrorRate(message) {
    return this.creation.bounded && message.trim() === REDISBLOOM_UNKNOWN_ARGUMENT;
  }

  /** As `Core.answer`, and `ErrorRateUnsupportedError` for RedisBloom's refusal of `ERROR`. */
  answer(reply) {
    if (isErrorReply(reply) && this.refusesErrorRate(reply.message)) {
      throw new ErrorRateUnsupportedError(errorRateUnsupported(this.address, reply.message));
    }
    return super.answer(reply);
  }

  /** As `Core.collect`, and `ErrorRateUnsupportedError` (with the answers before it). */
  collect(round, replies) {
    try {
      return super.collect(round, replies);
    } catch (error) {
      if (!(error instanceof BloomFilterError) || !this.refusesErrorRate(error.message)) throw error;
      throw new ErrorRateUnsupportedError(
        errorRateUnsupported(this.address, error.message),
        error.results,
        error.index,
      );
    }
  }

  /** Items held (`Number of items inserted`: adds less deletes), summed; 0 for a missing key. */
  *count() {
    yield* this.verify();
    const replies = yield new Batch(this.keys.map((key) => [this.infoCommand, key]));
    return replies.reduce(
      (sum, reply) =>
        sum + (isNotFound(reply) ? 0 : Number(this.parseInfo(this.answer(reply))['Number of items inserted'])),
      0,
    );
  }

  /** `CF.COUNT`: the copies of `item`'s fingerprint in its buckets (0 for a missing key). */
  *copies(item) {
    yield* this.check();
    const [key, argument] = this.place(item);
    return Number(this.answer(yield new Call(['CF.COUNT', key, argument])));
  }

  /** `CF.DEL`: true if a copy was deleted; false if the filter does not hold it, or no key. */
  *remove(item) {
    if (this.waitForReplicas) return (yield* this.batched([item], CF_DEL))[0];
    yield* this.check();
    const [key, argument] = this.place(item);
    const reply = yield new Call(['CF.DEL', key, argument]);
    if (isNotFound(reply)) return false;
    return asBool(this.answer(reply));
  }

  /** The shards' `CF.INFO` as one (shards.js `mergeCuckooInfo`). */
  mergeInfo(infos) {
    return mergeCuckooInfo(infos, this.creation);
  }
}

/**
 * A Bloom filter in Redis (redis-bf's `BF.*` commands) behind a small class.
 *
 * `new BloomFilter(client, key, { capacity, errorRate })` answers "have I seen this?" with one
 * command per item (`add`, `contains`) or per batch (`addMany`, `containsMany`, several batches
 * to a round trip). Every write carries the filter's creation parameters (`BF.INSERT key
 * CAPACITY c ERROR e [WINDOW w] [LAYOUT l] ITEMS ...`), so whichever command reaches a missing
 * key first creates the filter as asked, never with the server's defaults.
 *
 * The client is node-redis's `createClient()` (or `createClientPool()`) or `createCluster()`;
 * with `shards: N` one filter is spread over N keys (docs/sharding.md in the repository says how,
 * lib/shards.js does it). The commands are built, and their replies read, in lib/core.js; they
 * are sent in lib/runner.js.
 *
 * Replies: RESP2 answers 1/0, RESP3 true/false; both come back as booleans. An error reply is
 * thrown, never read as an answer: a top-level one as node-redis's `ErrorReply` (`WRONGTYPE`,
 * `OOM`, ...), an error element inside a batch's array as `BloomFilterError`, with the answers
 * for the items before it (`FilterFullError` for `non scaling filter is full`). A server without
 * the module throws `ModuleMissingError`, which names the server and says how to get one.
 */

import { Core } from './core.js';
import { serverAddress } from './errors.js';
import { FilterOptions, settingsOf } from './options.js';
import { Runner } from './runner.js';

const INSPECT = Symbol.for('nodejs.util.inspect.custom');

/**
 * What both filter classes share: the client, the key, the core (the commands and answers) and
 * the runner that sends them.
 */
export class FilterBase {
  #core;
  #runner;

  constructor(client, key, options, CoreClass, settings) {
    this.#core = new CoreClass(serverAddress(client), key, options, settings);
    this.#runner = new Runner(client, this.#core);
    /** The client given. */
    this.client = client;
    /** The filter's key (a sharded filter's manifest is there, its shards beside it). */
    this.key = key;
    /** How the filter is created (`FilterOptions` or `CuckooOptions`). */
    this.options = options;
  }

  /** The core, for the subclasses' operations. */
  get core() {
    return this.#core;
  }

  /** Runs an operation of the core (lib/runner.js). */
  run(operation) {
    return this.#runner.run(operation);
  }

  /** The shard count, or null for a filter at one key. */
  get shards() {
    return this.#core.shards;
  }

  /** The keys holding the items: `[key]`, or the shards' keys. */
  get keys() {
    return this.#core.keys;
  }

  /** The key that holds `item` (its shard's, for a sharded filter). */
  keyOf(item) {
    return this.#core.keyOf(item);
  }

  /** What TYPE answers for the key (a sharded filter's key holds its manifest: `string`). */
  keyType() {
    return this.run(this.#core.keyType());
  }

  /**
   * Reserves the filter if the key is missing (a sharded filter: every shard not created yet):
   * true if this call created anything. An existing filter is left alone (false); a key holding
   * anything else throws `KeyTypeError`.
   */
  create() {
    return this.run(this.#core.create());
  }

  /** Whether `item` may have been added (false: certainly not). */
  contains(item) {
    return this.run(this.#core.contains(item));
  }

  /** For each item, whether it may have been added (false: certainly not). */
  containsMany(items) {
    return this.run(this.#core.batched(items, false));
  }

  /**
   * The family's `*.INFO` as an object; for a sharded filter the counts and sizes summed, a
   * shard not created yet counting as the empty shard its first write creates, and `Shards`. A
   * missing filter throws the server's `ERR not found`.
   */
  info() {
    return this.run(this.#core.info());
  }

  /** Deletes the filter (every shard, and a sharded filter's manifest): the keys removed. */
  drop() {
    return this.run(this.#core.drop());
  }

  [INSPECT]() {
    return `${this.constructor.name} { ${this.#core.describe()} }`;
  }
}

/**
 * A redis-bf Bloom filter at `key`, created by the first write with `capacity` and `errorRate`
 * (and `window`, in seconds: remember each item for that long, not forever; and `layout`,
 * 'classic' or 'blocked'). See the package README for every option.
 */
export class BloomFilter extends FilterBase {
  constructor(client, key, options = {}) {
    const settings = settingsOf('BloomFilter', options, ['capacity', 'errorRate', 'window', 'layout']);
    const { capacity, errorRate, window, layout } = options;
    super(client, key, new FilterOptions({ capacity, errorRate, window, layout }), Core, settings);
  }

  /** Records `item`: true if it was new, false if the filter (probably) held it. */
  add(item) {
    return this.run(this.core.add(item));
  }

  /** Records every item, in order: for each, whether it was new. */
  addMany(items) {
    return this.run(this.core.batched(items, true));
  }

  /** Items added (`BF.CARD`: an item counts when it was new), summed over the shards. */
  count() {
    return this.run(this.core.count());
  }
}

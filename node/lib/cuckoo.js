/**
 * A cuckoo filter in Redis (redis-bf's `CF.*` commands) behind a small class: a filter that can
 * forget an item.
 *
 * `new CuckooFilter(client, key, { capacity })` answers "have I seen this?" as `BloomFilter`
 * does, one command per item or per batch, and `delete(item)` forgets an item (`CF.DEL`). By
 * default (`errorRate: 0.01`) it is the module's bounded filter (`ERROR`): its false-positive
 * rate stays at most `errorRate` however far it grows, and every write carries the creation
 * (`CF.INSERT key CAPACITY c ERROR e ITEMS ...`). `errorRate: null` makes RedisBloom's kind
 * (`bucketSize`, `maxIterations`, `expansion`): then a write that may create the key sends a
 * `CF.RESERVE` with every parameter first and inserts with `NOCREATE`, in the same round trip.
 *
 * Replies: RESP2 integers and RESP3 booleans alike come back as booleans. An item the filter has
 * no room for throws `FilterFullError`, with the answers for the items before it; every other
 * error is thrown as for `BloomFilter`.
 */

import { CF_DEL, CF_INSERTNX, CuckooCore } from './core.js';
import { CuckooOptions, settingsOf } from './options.js';
import { FilterBase } from './bloom.js';

/**
 * A redis-bf cuckoo filter at `key`, created by the first write for `capacity` items at
 * `errorRate` (0.01 unless given: the module's bounded filter; null: RedisBloom's kind, with
 * `bucketSize`, `maxIterations` and `expansion`). See the package README for every option.
 */
export class CuckooFilter extends FilterBase {
  constructor(client, key, options = {}) {
    const creation = ['capacity', 'errorRate', 'bucketSize', 'maxIterations', 'expansion'];
    const settings = settingsOf('CuckooFilter', options, creation);
    const { capacity, errorRate, bucketSize, maxIterations, expansion } = options;
    const cuckoo = new CuckooOptions({ capacity, errorRate, bucketSize, maxIterations, expansion });
    super(client, key, cuckoo, CuckooCore, settings);
  }

  /** Adds `item` (`CF.INSERT`: another copy if it is there): true; `FilterFullError` if no room. */
  add(item) {
    return this.run(this.core.add(item));
  }

  /**
   * Adds `item` unless the filter (probably) holds it (`CF.INSERTNX`): true if added, false if it
   * seemed to be there; `FilterFullError` if there was no room.
   */
  addUnique(item) {
    return this.run(this.core.add(item, CF_INSERTNX));
  }

  /**
   * Adds every item, in order (`CF.INSERT`; with `{ unique: true }`, `CF.INSERTNX`): for each,
   * whether it was added. An item with no room throws `FilterFullError` with the answers before
   * it (`.results`) and its position (`.index`).
   */
  addMany(items, { unique = false } = {}) {
    return this.run(this.core.batched(items, unique ? CF_INSERTNX : true));
  }

  /**
   * Forgets one copy of `item` (`CF.DEL`): true if one was deleted; false if the filter does not
   * hold it, or if there is no filter at the key. Delete only items you added: deleting one
   * that never was may delete another item that shares its fingerprint.
   */
  delete(item) {
    return this.run(this.core.remove(item));
  }

  /** `delete` of every item, in order, pipelined (one `CF.DEL` each): whether each was deleted. */
  deleteMany(items) {
    return this.run(this.core.batched(items, CF_DEL));
  }

  /**
   * Without `item`: the items the filter holds (adds less deletes, `CF.INFO`), summed over the
   * shards; 0 for a missing key. With `item`: the copies of it (`CF.COUNT`).
   */
  count(item) {
    return this.run(item === undefined ? this.core.count() : this.core.copies(item));
  }
}

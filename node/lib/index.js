/**
 * redis-bf for Node.js: Bloom and cuckoo filters in Redis (the redis-bf module's `BF.*` and `CF.*`
 * commands), on node-redis v6, one key or sharded over a cluster.
 *
 * - `BloomFilter`: `add`, `addMany`, `contains`, `containsMany`, `count`, `info`, `create`,
 *   `drop`; batched and pipelined; on one server or a Redis Cluster, for one key or spread over
 *   the cluster's primaries (`shards: N`, as docs/sharding.md says, like the Python package).
 * - `CuckooFilter`: the same, and `addUnique`, `delete`, `deleteMany`, `count(item)`.
 * - The errors, each one line: `ModuleMissingError`, `KeyTypeError`, `FilterFullError`,
 *   `FilterMismatchError`, `NotReplicatedError`, `ErrorRateUnsupportedError`, and their base
 *   `BloomFilterError`.
 */

export { BloomFilter } from './bloom.js';
export { CuckooFilter } from './cuckoo.js';
export {
  BloomFilterError,
  ErrorRateUnsupportedError,
  FilterFullError,
  FilterMismatchError,
  KeyTypeError,
  ModuleMissingError,
  NotReplicatedError,
} from './errors.js';
export { CuckooOptions, FilterOptions, MAX_WINDOW } from './options.js';

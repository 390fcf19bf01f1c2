// Types of redis-bf (lib/index.js). Hand-written: the package ships its JavaScript as it is, with
// no build step; test/types.test.js compiles a program against these with `tsc --strict`.

/**
 * A node-redis v6 client the filters send their commands through: what `createClient()`,
 * `createClientPool()` or `createCluster()` made (connected; RESP2 or RESP3; any modules,
 * scripts and type mapping). Declared by the one method every one of them has, since node-redis's
 * own types differ with each of those choices.
 */
export interface RedisClient {
  sendCommand(...args: any[]): Promise<unknown>;
}

/**
 * An item: its bytes are what is sent and what chooses its shard. A string (UTF-8; a lone
 * surrogate is refused), a Buffer or other Uint8Array (as it is), a bigint (its decimal digits),
 * or a number: a safe integer (its decimal digits; -0 is 0) or a fraction of at least 0.0001 in
 * magnitude (`String(x)`). Anything else throws before anything is sent.
 */
export type Item = string | Uint8Array | bigint | number;

/** What every filter takes besides its creation parameters. */
export interface FilterSettings {
  /** Spread the filter over this many keys (1 to 1024) of a cluster (docs/sharding.md). */
  shards?: number | null;
  /** Items per command (1000). */
  batchSize?: number;
  /** Commands per round trip (16). */
  pipelineSize?: number;
  /** Confirm every write on this many replicas (`WAIT`), or throw `NotReplicatedError` (0). */
  waitForReplicas?: number;
  /** How long `WAIT` may take, in milliseconds (1000). */
  waitTimeout?: number;
}

export interface BloomFilterOptions extends FilterSettings {
  /** Items the filter is created for (it grows past them, at the same error rate). */
  capacity: number;
  /** The false-positive rate, strictly between 0 and 1. */
  errorRate: number;
  /** Remember each item for this many seconds (1 to ten years), not forever; 0 or null: none. */
  window?: number | null;
  /** `LAYOUT`: 'classic' or 'blocked'; null or absent: the server's `bf.layout`. */
  layout?: 'classic' | 'blocked' | null;
}

export interface CuckooFilterOptions extends FilterSettings {
  /** Items the filter is created for (at least two buckets). */
  capacity: number;
  /** The bounded filter's false-positive rate (0.01); null: RedisBloom's kind. */
  errorRate?: number | null;
  /** Slots per bucket, RedisBloom's kind only (2). */
  bucketSize?: number;
  /** Evictions before the filter grows (500 bounded, 20 RedisBloom's kind). */
  maxIterations?: number;
  /** Growth factor, a power of two (2 bounded, 1 RedisBloom's kind; 0: never grows). */
  expansion?: number;
}

/** `BF.INFO` as an object (a sharded filter's summed, with `Shards`). */
export interface BloomInfo {
  Capacity: number;
  Size: number;
  'Number of filters': number;
  'Number of items inserted': number;
  /** null for a NONSCALING filter; absent while no shard of a sharded filter exists. */
  'Expansion rate'?: number | null;
  /** Seconds, for a windowed filter. */
  Window?: number;
  /** 'blocked', for a blocked filter. */
  Layout?: string;
  /** The shard count, for a sharded filter. */
  Shards?: number;
  [field: string]: unknown;
}

/** `CF.INFO` as an object (a sharded filter's summed, with `Shards`). */
export interface CuckooInfo {
  Size: number;
  'Number of buckets': number;
  'Number of filters': number;
  /** Items held: adds less deletes. */
  'Number of items inserted': number;
  'Number of items deleted': number;
  'Bucket size': number;
  'Expansion rate': number;
  'Max iterations': number;
  /** The bounded filter's error rate. */
  'Error rate'?: number;
  Shards?: number;
  [field: string]: unknown;
}

declare abstract class FilterBase {
  /** The client given. */
  readonly client: RedisClient;
  /** The filter's key (a sharded filter's manifest is there, its shards beside it). */
  readonly key: string;
  /** The shard count, or null for a filter at one key. */
  readonly shards: number | null;
  /** The keys holding the items: `[key]`, or the shards' keys. */
  readonly keys: readonly string[];
  /** The key that holds `item` (its shard's, for a sharded filter). */
  keyOf(item: Item): string;
  /** What TYPE answers for the key. */
  keyType(): Promise<string>;
  /** Reserves the filter (every shard) if missing: true if this call created anything. */
  create(): Promise<boolean>;
  /** Whether `item` may have been added (false: certainly not). */
  contains(item: Item): Promise<boolean>;
  /** For each item, whether it may have been added (false: certainly not). */
  containsMany(items: Iterable<Item>): Promise<boolean[]>;
  /** Deletes the filter (every shard, and a sharded filter's manifest): the keys removed. */
  drop(): Promise<number>;
}

/** A redis-bf Bloom filter at `key`, created by the first write as `options` say. */
export declare class BloomFilter extends FilterBase {
  constructor(client: RedisClient, key: string, options: BloomFilterOptions);
  readonly options: FilterOptions;
  /** Records `item`: true if it was new, false if the filter (probably) held it. */
  add(item: Item): Promise<boolean>;
  /** Records every item, in order: for each, whether it was new. */
  addMany(items: Iterable<Item>): Promise<boolean[]>;
  /** Items added (`BF.CARD`), summed over the shards; 0 for a missing filter. */
  count(): Promise<number>;
  /** `BF.INFO`; a missing filter throws the server's `ERR not found`. */
  info(): Promise<BloomInfo>;
}

/** A redis-bf cuckoo filter at `key`, created by the first write as `options` say. */
export declare class CuckooFilter extends FilterBase {
  constructor(client: RedisClient, key: string, options: CuckooFilterOptions);
  readonly options: CuckooOptions;
  /** Adds `item` (another copy if it is there): true; `FilterFullError` if no room. */
  add(item: Item): Promise<boolean>;
  /** Adds `item` unless the filter (probably) holds it: true if added, false if it seemed there. */
  addUnique(item: Item): Promise<boolean>;
  /** Adds every item (with `unique`, only those it does not seem to hold): whether each was added. */
  addMany(items: Iterable<Item>, options?: { unique?: boolean }): Promise<boolean[]>;
  /** Forgets one copy of `item`: true if one was deleted; false if not held, or no filter. */
  delete(item: Item): Promise<boolean>;
  /** `delete` of every item, pipelined: whether each was deleted. */
  deleteMany(items: Iterable<Item>): Promise<boolean[]>;
  /** Without `item`: the items held, summed over the shards. With `item`: its copies. */
  count(item?: Item): Promise<number>;
  /** `CF.INFO`; a missing filter throws the server's `ERR not found`. */
  info(): Promise<CuckooInfo>;
}

/** How a missing Bloom filter is created (checked before any command). */
export declare class FilterOptions {
  constructor(options: {
    capacity: number;
    errorRate: number;
    window?: number | null;
    layout?: 'classic' | 'blocked' | null;
  });
  readonly capacity: number;
  readonly errorRate: number;
  readonly window: number | null;
  readonly layout: 'classic' | 'blocked' | null;
  reserveArgs(): string[];
  insertArgs(): string[];
  resized(capacity: number): FilterOptions;
  identity(): { error_rate: number; window: number | null };
  describe(): string;
}

/** How a missing cuckoo filter is created (checked and normalised before any command). */
export declare class CuckooOptions {
  constructor(options: {
    capacity: number;
    errorRate?: number | null;
    bucketSize?: number;
    maxIterations?: number;
    expansion?: number;
  });
  readonly capacity: number;
  readonly errorRate: number | null;
  readonly bucketSize: number;
  readonly maxIterations: number;
  readonly expansion: number;
  readonly bounded: boolean;
  reserveArgs(): string[];
  insertArgs(): string[] | null;
  buckets(): number;
  resized(capacity: number): CuckooOptions;
  identity(): { error_rate: number | null; bucket_size: number; max_iterations: number; expansion: number };
  describe(): string;
}

/** The longest window the module takes: ten years, in seconds. */
export declare const MAX_WINDOW: number;

/**
 * An error element inside a batch reply, or a reply that is not a filter's answer: `results`
 * holds the answers for the items before the failing one (applied), `index` its position.
 */
export declare class BloomFilterError extends Error {
  constructor(message: string, results?: readonly boolean[], index?: number);
  results: boolean[];
  index: number;
}

/** The filter has no room for an item, which was not added. */
export declare class FilterFullError extends BloomFilterError {}

/** Writes applied on a primary that fewer replicas than asked confirmed within the timeout. */
export declare class NotReplicatedError extends BloomFilterError {
  constructor(
    message: string,
    results?: readonly boolean[],
    index?: number,
    where?: { address?: string; confirmed?: number | null; asked?: number },
  );
  /** The primary, host:port. */
  address: string;
  /** How many replicas confirmed (null if they could not be asked). */
  confirmed: number | null;
  /** How many were asked for. */
  asked: number;
}

/** A sharded filter at the key with other parameters, or a version this package cannot read. */
export declare class FilterMismatchError extends BloomFilterError {}

/** RedisBloom's refusal of a bounded cuckoo filter's `ERROR`. */
export declare class ErrorRateUnsupportedError extends BloomFilterError {}

/** The server has no `BF.*` (or `CF.*`) commands: the message names it and the way out. */
export declare class ModuleMissingError extends Error {
  constructor(address: string, reply: string);
  /** The server, host:port. */
  address: string;
}

/** The key holds a value that is not the filter asked for. */
export declare class KeyTypeError extends Error {
  constructor(key: string, keyType: string, hint?: string, expected?: string);
  key: string;
  /** What TYPE answered. */
  keyType: string;
  /** "Bloom filter" or "cuckoo filter". */
  expected: string;
}

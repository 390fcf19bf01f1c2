/**
 * One filter over N keys (the spec's "shards and manifest": docs/sharding.md in the repository,
 * and its test vectors docs/sharding-vectors.json): the bytes of an item, its shard, the shards'
 * key names and hash tags, each shard's capacity, the manifest kept at the filter's key, and how
 * the shards' `*.INFO` add up. Everything another client must compute alike to read and write the
 * same filter is here (and, besides, `sameSlotKey`, which names the key `waitForReplicas`
 * writes). No I/O.
 *
 * Version 2 of the scheme (SHA-256) is what this package reads and writes. Version 1 (BLAKE2b
 * with a personalisation, which Node's crypto cannot compute) is refused as a version this
 * client cannot read, as the spec says, before anything is sent to the shards.
 */

import crypto from 'node:crypto';

/** Redis Cluster's hash slots. */
export const SLOTS = 16384;
export const MAX_SHARDS = 1024;
/** A shard's capacity is its share plus this many standard deviations (see `shardCapacity`). */
export const SHARD_SLACK_SIGMAS = 4.0;

// The manifest: a JSON object at the filter's key. Version 2's format string differs from
// version 1's so that a client older than version 2 refuses a version 2 filter.
export const MANIFEST_FORMAT_V1 = 'redis-bf sharded filter';
export const MANIFEST_FORMAT = 'redis-bf sharded filter manifest';
export const NEW_VERSION = 2;
/** The versions this package places items by (version 1 needs BLAKE2b's personalisation). */
export const READABLE_VERSIONS = Object.freeze([2]);
export const KIND_NAMES = Object.freeze({ bloom: 'Bloom filter', cuckoo: 'cuckoo filter' });

/** Version 2: an item's shard is the first 8 bytes of SHA-256(this prefix + its bytes). */
export const SHARD_HASH_PREFIX = Buffer.from('redis-bf:shard:v2:', 'ascii');

// A number's fraction part is sent as JavaScript writes it only from this magnitude up: there,
// String(x) is Python's repr(x) (docs/sharding.md, "An item's bytes").
const SMALLEST_FRACTION = 0.0001;

function describe(value) {
  if (value === null) return 'null';
  if (typeof value === 'object') return value.constructor?.name ?? 'object';
  return typeof value;
}

/**
 * What is sent for an item: a string (well-formed, sent as UTF-8) or a Buffer (bytes as they
 * are). Strings, Buffers and other Uint8Arrays, bigints, and numbers that are safe integers or
 * fractions of at least 0.0001 in magnitude; anything else throws (a TypeError, or a RangeError
 * for a number no Python client spells alike) before anything is sent.
 */
export function itemArgument(item) {
  if (typeof item === 'string') {
    if (!item.isWellFormed()) {
      throw new TypeError(
        'a string with a lone surrogate has no UTF-8 encoding, so it is not an item: ' +
          'send its bytes as a Buffer if that is what you mean',
      );
    }
    return item;
  }
  if (Buffer.isBuffer(item)) return item;
  if (item instanceof Uint8Array) return Buffer.from(item.buffer, item.byteOffset, item.byteLength);
  if (typeof item === 'number') return numberText(item);
  if (typeof item === 'bigint') return item.toString();
  if (typeof item === 'boolean') {
    throw new TypeError(`a boolean is not an item: send '1' or '${item}' if that is what you mean`);
  }
  throw new TypeError(`an item is a string, a Buffer (Uint8Array), a bigint or a number, not ${describe(item)}`);
}

/** The decimal text of a number that is an item (see `itemArgument`). */
function numberText(value) {
  if (!Number.isFinite(value)) {
    throw new RangeError(`${value} is not an item: send the string '${value}' if that is what you mean`);
  }
  if (Number.isInteger(value)) {
    if (!Number.isSafeInteger(value)) {
      throw new RangeError(
        `${value} is past the safe integers (2^53 - 1), where a number no longer says which ` +
          'integer was meant: give a bigint',
      );
    }
    return Object.is(value, -0) ? '0' : String(value);
  }
  if (Math.abs(value) < SMALLEST_FRACTION) {
    throw new RangeError(
      `${value} is a fraction smaller than 0.0001 in magnitude, which JavaScript and Python ` +
        'spell differently: send its text as a string',
    );
  }
  return String(value);
}

/** The bytes of an item (what `itemArgument` sends), which choose its shard. */
export function itemBytes(item) {
  const argument = itemArgument(item);
  return typeof argument === 'string' ? Buffer.from(argument, 'utf8') : argument;
}

const SHARD_HASH_PREFIX_TEXT = SHARD_HASH_PREFIX.toString('ascii');
// crypto.hash (Node 20.12 and newer) spares a Hash object per item: a third of the cost.
const oneShot = typeof crypto.hash === 'function' ? crypto.hash : null;

/** The first 8 bytes of the version 2 digest of `data`, as 16 hexadecimal digits. */
function digestHead(data) {
  if (oneShot !== null) {
    // A string item is well-formed (itemArgument checked it), so the prefix and it, as one
    // string, are the prefix's bytes then the item's UTF-8.
    const input = typeof data === 'string' ? SHARD_HASH_PREFIX_TEXT + data : Buffer.concat([SHARD_HASH_PREFIX, data]);
    return oneShot('sha256', input, 'hex').slice(0, 16);
  }
  return crypto.createHash('sha256').update(SHARD_HASH_PREFIX).update(data).digest('hex').slice(0, 16);
}

/**
 * The shard (0 to `count` - 1) of the item whose bytes are `data` (a Buffer, or a string that
 * stands for its UTF-8), in version 2.
 */
export function shardV2(data, count) {
  const head = digestHead(data);
  // (high * 2^32 + low) mod count in doubles, exact: (count - 1) * 2^32 + 2^32 - 1 < 2^53.
  const high = Number.parseInt(head.slice(0, 8), 16);
  const low = Number.parseInt(head.slice(8), 16);
  return ((high % count) * 2 ** 32 + low) % count;
}

/** Each readable version's item-to-shard function. */
export const SHARD_FUNCTIONS = Object.freeze({ 2: shardV2 });

// -- slots, tags and key names ------------------------------------------------------------------

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
})();

function crc16(bytes, start, end) {
  let crc = 0;
  for (let i = start; i < end; i++) crc = ((crc << 8) ^ CRC16_TABLE[((crc >> 8) ^ bytes[i]) & 0xff]) & 0xffff;
  return crc;
}

/** Redis Cluster's slot of a key (a string, sent as UTF-8, or bytes), its hash tag honoured. */
export function keySlot(key) {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  const open = bytes.indexOf(0x7b); // {
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) return crc16(bytes, open + 1, close) % SLOTS;
  }
  return crc16(bytes, 0, bytes.length) % SLOTS;
}

// The first of "0", "1", ... (hexadecimal) seen with each slot, filled by one upward scan shared
// by every shard count, and how far it went.
const FIRST_TAG = new Map();
let scanned = 0;

/** The first of "0", "1", ... (lowercase hexadecimal) whose hash slot is `slot`. */
export function slotTag(slot) {
  while (!FIRST_TAG.has(slot)) {
    const tag = scanned.toString(16);
    const found = keySlot(tag);
    if (!FIRST_TAG.has(found)) FIRST_TAG.set(found, tag);
    scanned++;
  }
  return FIRST_TAG.get(slot);
}

/** The hash tag of shard `index` of `count`: the tag of the middle slot of its range. */
export function shardTag(index, count) {
  return slotTag(Math.floor(((2 * index + 1) * SLOTS) / (2 * count)));
}

/** A shard count checked: an integer from 1 to 1024 (a TypeError or RangeError otherwise). */
export function checkShards(count) {
  if (typeof count !== 'number' || !Number.isInteger(count)) {
    throw new TypeError(`shards must be an integer, not ${describe(count)} ${String(count)}`);
  }
  if (count < 1 || count > MAX_SHARDS) {
    throw new RangeError(`shards must be from 1 to ${MAX_SHARDS}, not ${count}`);
  }
  return count;
}

/**
 * The keys of a filter at `key` sharded `count` ways: `<key>:<i>/<count>{<tag>}`. A RangeError
 * for a key with a `{` (its own hash tag would pull every shard into one slot).
 */
export function shardKeys(key, count) {
  checkShards(count);
  if (key.includes('{')) {
    throw new RangeError(
      `a sharded filter's key cannot hold a hash tag ('${key}'): each shard's key gets a tag ` + 'of its own',
    );
  }
  return Object.freeze(
    Array.from({ length: count }, (_, index) => `${key}:${index}/${count}{${shardTag(index, count)}}`),
  );
}

/**
 * `key + suffix`, with a hash tag after it if that is needed to keep it in `key`'s cluster slot
 * (the key `waitForReplicas` writes beside a filter's key).
 */
export function sameSlotKey(key, suffix) {
  const slot = keySlot(key);
  const plain = key + suffix;
  if (keySlot(plain) === slot) return plain; // key has a hash tag of its own
  const tagged = `${plain}{${slotTag(slot)}}`;
  if (keySlot(tagged) === slot) return tagged;
  // An unclosed "{" in key swallows the tag: search for a suffix that lands in the slot.
  for (let attempt = 0; ; attempt++) {
    const candidate = `${plain}{${attempt.toString(16)}}`;
    if (keySlot(candidate) === slot) return candidate;
  }
}

/**
 * What each of `count` shards is created for, out of `capacity` items: its share plus four
 * standard deviations of the binomial count of items a shard gets. Double arithmetic in this
 * order, as every client computes it.
 */
export function shardCapacity(capacity, count) {
  const share = capacity / count;
  const spread = Math.sqrt(share * (1 - 1 / count));
  return Math.max(1, Math.ceil(share + SHARD_SLACK_SIGMAS * spread));
}

// -- the manifest -------------------------------------------------------------------------------

/**
 * A float as Python's `repr` writes it, for the error rates of a manifest (always below 1): the
 * shortest round-trip digits, in exponent notation below 1e-4 with two exponent digits at least
 * (`1e-06`), plain from there on (where String(x) is the same text).
 */
export function pythonFloat(value) {
  if (Number.isInteger(value)) return `${value}.0`;
  const magnitude = Math.abs(value);
  if (magnitude >= SMALLEST_FRACTION && magnitude < 1e16) return String(value);
  const [digits, exponent] = value.toExponential().split('e');
  const sign = exponent.startsWith('-') ? '-' : '+';
  return `${digits}e${sign}${exponent.replace(/^[-+]/, '').padStart(2, '0')}`;
}

// The manifest fields that hold a float (the others are integers, strings or null).
const FLOAT_FIELDS = new Set(['error_rate']);

/**
 * The manifest a filter of these parameters writes at its key: keys sorted, Python's
 * `json.dumps` spacing, so that every client writes the same text. `identity` is the options'
 * (`error_rate` and `window`, or the cuckoo parameters).
 */
export function manifestText(version, kind, shards, capacity, identity) {
  const fields = {
    format: version >= 2 ? MANIFEST_FORMAT : MANIFEST_FORMAT_V1,
    version,
    shards,
    capacity,
    ...identity,
  };
  if (version >= 2 || kind !== 'bloom') fields.kind = kind;
  const entries = Object.keys(fields)
    .sort()
    .map((name) => {
      const value = fields[name];
      const text = typeof value === 'number' && FLOAT_FIELDS.has(name) ? pythonFloat(value) : JSON.stringify(value);
      return `${JSON.stringify(name)}: ${text}`;
    });
  return `{${entries.join(', ')}}`;
}

/**
 * The manifest in `text` (a string or a Buffer, as GET answers it): `{ version, kind, capacity,
 * fields }`, or null if it is not one (not a JSON object with one of the two format strings).
 * The version is as stored (null when missing or not readable under its format string): a
 * version not in `READABLE_VERSIONS` is for the caller to refuse. `capacity` is null unless an
 * integer of at least 1.
 */
export function parseManifest(text) {
  let fields;
  try {
    fields = JSON.parse(Buffer.isBuffer(text) ? text.toString('utf8') : String(text));
  } catch {
    return null;
  }
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) return null;
  let version = Number.isInteger(fields.version) ? fields.version : null;
  if (fields.format === MANIFEST_FORMAT_V1) {
    version = version === 1 ? 1 : null;
  } else if (fields.format !== MANIFEST_FORMAT) {
    return null;
  } else if (version !== null && version < 2) {
    version = null; // version 1 has the other format string
  }
  const capacity = Number.isInteger(fields.capacity) && fields.capacity >= 1 ? fields.capacity : null;
  const kind = fields.kind ?? 'bloom'; // version 1 names only the cuckoo kind
  return { version, kind: typeof kind === 'string' ? kind : JSON.stringify(kind), capacity, fields };
}

/**
 * What a stored manifest says otherwise than a filter of `shards` shards and these parameters
 * (its options' `identity`), each as "name <stored>, not <ours>"; the capacity never does.
 */
export function disagreements(manifest, shards, identity) {
  const found = [];
  for (const [name, mine] of [['shards', shards], ...Object.entries(identity)]) {
    const stored = manifest.fields[name] ?? null;
    if (stored !== mine) found.push(`${name} ${JSON.stringify(stored)}, not ${JSON.stringify(mine)}`);
  }
  return found;
}

/** "Bloom filter" or "cuckoo filter" (or what the manifest says). */
export function kindName(kind) {
  return KIND_NAMES[kind] ?? `${kind} filter`;
}

// -- count and info over the shards -------------------------------------------------------------

/**
 * `BF.INFO` of every shard as one (null for a shard not created yet): counts and sizes summed,
 * the rest the first existing shard's, and `Shards`. A missing shard counts as the empty shard
 * its first write creates (`creation`'s capacity, no sub-filter, no item, 0 bytes).
 */
export function mergeBloomInfo(infos, creation) {
  const present = infos.filter((info) => info !== null);
  const missing = infos.length - present.length;
  const merged = present.length ? { ...present[0] } : {};
  for (const [name, absent] of [
    ['Capacity', creation.capacity],
    ['Size', 0],
    ['Number of filters', 0],
    ['Number of items inserted', 0],
  ]) {
    if (present.every((info) => name in info)) {
      merged[name] = present.reduce((sum, info) => sum + Number(info[name]), 0) + missing * absent;
    }
  }
  if (!present.length && creation.window !== null) merged.Window = creation.window;
  merged.Shards = infos.length;
  return merged;
}

/** `CF.INFO`'s fields that add up over shards. */
export const CUCKOO_SUMMED = Object.freeze([
  'Size',
  'Number of buckets',
  'Number of filters',
  'Number of items inserted',
  'Number of items deleted',
]);

/**
 * `CF.INFO` of every shard as one (null for a shard not created yet): counts and sizes summed,
 * the parameters the shards share, and `Shards`. A missing shard counts as the empty shard its
 * first write creates (`creation`): its buckets, no sub-filter, no item, 0 bytes.
 */
export function mergeCuckooInfo(infos, creation) {
  const present = infos.filter((info) => info !== null);
  const missing = infos.length - present.length;
  const absent = { 'Number of buckets': creation.buckets() };
  const merged = {};
  for (const name of CUCKOO_SUMMED) {
    merged[name] = present.reduce((sum, info) => sum + Number(info[name] ?? 0), 0) + missing * (absent[name] ?? 0);
  }
  merged['Bucket size'] = creation.bucketSize;
  merged['Expansion rate'] = creation.expansion;
  merged['Max iterations'] = creation.maxIterations;
  if (present.length) {
    for (const name of ['Bucket size', 'Expansion rate', 'Max iterations']) {
      merged[name] = present[0][name] ?? merged[name];
    }
  }
  if (creation.errorRate !== null) {
    merged['Error rate'] = present.length ? present[0]['Error rate'] : creation.errorRate;
  }
  merged.Shards = infos.length;
  return merged;
}

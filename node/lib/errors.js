/**
 * The errors of both filters, and how a server's answer becomes one (the spec's "errors",
 * docs/sharding.md): the error classes users import from `redis-bf`, their one-line messages
 * (the Python package's texts), and the tests that tell an error reply apart (a server without
 * the module, a filter with no room, a missing key). No I/O: a client is only asked where it
 * connects, for the messages.
 */

/** What TYPE answers for a redis-bf (or RedisBloom) filter, and for a cuckoo filter. */
export const FILTER_TYPE = 'MBbloom--';
export const CUCKOO_TYPE = 'MBbloomCF';
/** What a filter's TYPE is called in messages. */
export const TYPE_NAMES = Object.freeze({ [FILTER_TYPE]: 'Bloom filter', [CUCKOO_TYPE]: 'cuckoo filter' });

/**
 * An error element inside a batch reply, or a reply that is not a filter's answer. `results`
 * holds the answers for the items before the failing one (they were applied), and `index` is the
 * failing item's position among the items of the call. Items after it in the same round trip may
 * have been applied too.
 */
export class BloomFilterError extends Error {
  constructor(message, results = [], index = 0) {
    super(message);
    this.name = new.target.name;
    this.results = [...results];
    this.index = index;
  }
}

/**
 * The filter has no room for an item, which was not added: a full `NONSCALING` Bloom filter
 * (`non scaling filter is full`), or a cuckoo filter that cannot take it. `results` and `index`
 * as for `BloomFilterError`.
 */
export class FilterFullError extends BloomFilterError {}

/**
 * Writes were applied on a primary but fewer replicas than `waitForReplicas` confirmed them (and
 * every write the primary made before them) within the timeout (`WAIT`), or that could not be
 * asked. `results` holds the answers of the items sent (applied on the primaries), `index` the
 * first item not sent, `address` the primary (host:port), `confirmed` how many replicas did
 * (null if they could not be asked) and `asked` how many were asked for.
 */
export class NotReplicatedError extends BloomFilterError {
  constructor(message, results = [], index = 0, { address = '', confirmed = null, asked = 0 } = {}) {
    super(message, results, index);
    this.address = address;
    this.confirmed = confirmed;
    this.asked = asked;
  }
}

/**
 * A sharded filter exists at the key with other parameters (kind, shard count, error rate or
 * window), or with a version of the scheme this package cannot read: using it would make a
 * second, different filter.
 */
export class FilterMismatchError extends BloomFilterError {}

/**
 * The server answered a cuckoo filter's insert that carries its error rate with RedisBloom's
 * `Unknown argument received`: it has RedisBloom's `CF.*` commands, which take no `ERROR`.
 */
export class ErrorRateUnsupportedError extends BloomFilterError {}

/**
 * The server answered `unknown command 'BF....'` (or `'CF....'`): it has no Bloom filter module
 * loaded (or one without cuckoo filters). The message names the server and how to get one with
 * the module; it quotes the server's answer without its `ERR `, as the Python package does.
 */
export class ModuleMissingError extends Error {
  constructor(address, reply) {
    const what = reply.toLowerCase().includes("'cf.") ? 'cuckoo filter commands loaded' : 'Bloom filter module loaded';
    super(
      `the Redis server at ${address} has no ${what} (it answered: ${reply.replace(/^ERR /, '').trim()}): connect ` +
        'to the server that has it (`redis-bf-server` and `make run` print its port), or start ' +
        'one with `redis-bf-server`, or `redis-server --loadmodule "$(redis-bf-module-path)"`',
    );
    this.name = new.target.name;
    this.address = address;
  }
}

/**
 * The key holds a value that is not the filter asked for (`keyType` is what TYPE answered;
 * `expected` what the key should hold: "Bloom filter" or "cuckoo filter").
 */
export class KeyTypeError extends Error {
  constructor(key, keyType, hint = '', expected = 'Bloom filter') {
    const message = `'${key}' holds a ${TYPE_NAMES[keyType] ?? keyType}, not a ${expected}`;
    super(hint ? `${message}: ${hint}` : message);
    this.name = new.target.name;
    this.key = key;
    this.keyType = keyType;
    this.expected = expected;
  }
}

/**
 * True for an error reply of the server: node-redis's `ErrorReply` (`SimpleError`,
 * `BlobError`), recognised by its class name so that a second copy of node-redis in the tree is
 * recognised too. Anything else that is an Error (a closed socket, a timeout) is a failure to
 * talk to the server.
 */
export function isErrorReply(value) {
  if (!(value instanceof Error)) return false;
  for (let proto = Object.getPrototypeOf(value); proto; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

function socketAddress(socket) {
  if (!socket) return null;
  if (socket.path) return String(socket.path);
  if (socket.host === undefined && socket.port === undefined) return null;
  return `${socket.host ?? 'localhost'}:${socket.port ?? 6379}`;
}

function urlAddress(url) {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || 'localhost'}:${parsed.port || 6379}`;
  } catch {
    return null;
  }
}

/** What `serverAddress` answers for a client that does not say where it connects. */
export const UNKNOWN_ADDRESS = 'the address this client uses';

/** host:port (or the socket path) a node-redis client or cluster talks to, as far as it says. */
export function serverAddress(client) {
  const options = client?.options ?? client?._options;
  const direct = socketAddress(options?.socket) ?? (options?.url ? urlAddress(options.url) : null);
  if (direct) return direct;
  const root = options?.rootNodes?.[0];
  if (root) return socketAddress(root.socket) ?? (root.url ? urlAddress(root.url) : null) ?? UNKNOWN_ADDRESS;
  return UNKNOWN_ADDRESS;
}

/** True for the server's answer to a `BF.*` or `CF.*` command it does not know. */
export function isModuleMissing(error) {
  const message = String(error?.message ?? error).toLowerCase();
  return message.includes('unknown command') && (message.includes("'bf.") || message.includes("'cf."));
}

/**
 * True for `BF.INFO`'s and `CF.INFO`'s answer on a missing key, and `CF.DEL`'s ("not found",
 * "Not found", with or without `ERR`).
 */
export function isNotFound(reply) {
  return isErrorReply(reply) && reply.message.replace(/^ERR /, '').toLowerCase() === 'not found';
}

/** What the module answers when a filter has no room for an item. */
export const FULL_REPLIES = Object.freeze([
  'non scaling filter is full',
  'filter is full',
  'maximum expansions reached',
  'item added too many times',
]);

/** True for an error that says the filter has no room for an item. */
export function isFull(message) {
  const text = message.toLowerCase();
  return FULL_REPLIES.some((reply) => text.includes(reply));
}

/** `FilterFullError` for a filter that has no room, `BloomFilterError` otherwise. */
export function errorClass(message) {
  return isFull(message) ? FilterFullError : BloomFilterError;
}

/**
 * `error`, or a `ModuleMissingError` if it says the server at `address` has no `BF.*`/`CF.*`
 * commands, or a `FilterFullError` if it says the filter has no room.
 */
export function explained(address, error) {
  if (isModuleMissing(error)) return new ModuleMissingError(address, error.message);
  if (isFull(error.message) && !(error instanceof BloomFilterError)) return new FilterFullError(error.message);
  return error;
}

/** What RedisBloom answers `CF.INSERT` and `CF.INSERTNX` for an option it does not know. */
export const REDISBLOOM_UNKNOWN_ARGUMENT = 'Unknown argument received';

/** The message of `ErrorRateUnsupportedError` for the server's answer `message`. */
export function errorRateUnsupported(address, message) {
  return (
    `the Redis server at ${address} refused the cuckoo filter's error rate (it answered: ` +
    `${message.trim()}): it has RedisBloom's cuckoo filters, which take no ERROR; use ` +
    "new CuckooFilter(client, key, { capacity, errorRate: null }) for RedisBloom's kind (its " +
    'false-positive rate grows with each sub-filter), or a server with redis-bf for a bounded one'
  );
}

/** What `CF.INSERT` and `CF.INSERTNX` answer for an item that found no room (-1, RESP3 false). */
export const CUCKOO_REFUSED =
  'the cuckoo filter has no room for the item, which was not added: it is full and cannot grow ' +
  '(EXPANSION 0, cf-max-expansions sub-filters, or a size limit: bf.max-filter-bytes, ' +
  'maxmemory), or the item was added so many times that its buckets hold nothing but copies ' +
  'of it';

/**
 * How a filter is created, checked before any command is sent (the spec's "options",
 * docs/sharding.md): `FilterOptions` for a Bloom filter, `CuckooOptions` for a cuckoo filter,
 * each spelling out its `*.RESERVE` and `*.INSERT` arguments, its shard's options (`resized`)
 * and what every process of a sharded filter must give alike (`identity`, kept in the manifest
 * under the manifest's own field names). No I/O.
 */

/** The longest window the module takes: ten years, in seconds. */
export const MAX_WINDOW = 315_576_000;
/** The layouts `BF.RESERVE` and `BF.INSERT` take (`LAYOUT`). */
export const LAYOUTS = Object.freeze(['classic', 'blocked']);

function kindOf(value) {
  return value === null ? 'null' : typeof value;
}

/** An integer parameter within `low..high`: a TypeError or RangeError otherwise. */
export function whole(name, value, low, high) {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new TypeError(`${name} must be an integer, not ${kindOf(value)} ${String(value)}`);
  }
  if (value < low || value > high) {
    throw new RangeError(`${name} must be from ${low} to ${high}, not ${value}`);
  }
  return value;
}

/** The smallest power of two that is at least `value` (a positive integer). */
function powerOfTwoAtLeast(value) {
  let power = 1;
  while (power < value) power *= 2;
  return power;
}

/** A window as whole seconds, or null for none (undefined, null or 0). */
export function windowSeconds(value) {
  if (value === undefined || value === null || value === 0) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`window must be a number of seconds, not ${kindOf(value)} ${String(value)}`);
  }
  if (!Number.isInteger(value)) throw new RangeError(`window must be whole seconds, not ${value}`);
  if (value < 1 || value > MAX_WINDOW) {
    throw new RangeError(
      `window must be from 1 to ${MAX_WINDOW} seconds (ten years), or 0 or null for none, not ${value}`,
    );
  }
  return value;
}

/**
 * How a missing Bloom filter is created: `capacity` items at `errorRate`, with `window` (whole
 * seconds: each item is remembered for at least that long and forgotten by 1.25 x window, and
 * the capacity counts the items of one window) and `layout` ('classic' or 'blocked'; the
 * server's `bf.layout` when not given). The one place that spells out the creation arguments,
 * for `BF.RESERVE` and for `BF.INSERT`.
 */
export class FilterOptions {
  constructor({ capacity, errorRate, window = null, layout = null } = {}) {
    whole('capacity', capacity, 1, Number.MAX_SAFE_INTEGER);
    if (typeof errorRate !== 'number') {
      throw new TypeError(`errorRate must be a number, not ${kindOf(errorRate)} ${String(errorRate)}`);
    }
    if (!(errorRate > 0 && errorRate < 1)) {
      throw new RangeError(`errorRate must be strictly between 0 and 1, not ${errorRate}`);
    }
    if (layout !== null && layout !== undefined && !LAYOUTS.includes(layout)) {
      throw new RangeError(
        `layout must be 'classic' or 'blocked' (or null for the server's bf.layout), not ${String(layout)}`,
      );
    }
    this.capacity = capacity;
    this.errorRate = errorRate;
    this.window = windowSeconds(window);
    this.layout = layout ?? null;
    Object.freeze(this);
  }

  #tail() {
    return [
      ...(this.window === null ? [] : ['WINDOW', String(this.window)]),
      ...(this.layout === null ? [] : ['LAYOUT', this.layout.toUpperCase()]),
    ];
  }

  /** `BF.RESERVE key <these>`. */
  reserveArgs() {
    return [String(this.errorRate), String(this.capacity), ...this.#tail()];
  }

  /** `BF.INSERT key <these> ITEMS ...`: applied only when the call creates the filter. */
  insertArgs() {
    return ['CAPACITY', String(this.capacity), 'ERROR', String(this.errorRate), ...this.#tail()];
  }

  /** The same filter for another capacity (a shard's). */
  resized(capacity) {
    return new FilterOptions({ capacity, errorRate: this.errorRate, window: this.window, layout: this.layout });
  }

  /** What every process of a sharded filter must give alike (kept at its key). */
  identity() {
    return { error_rate: this.errorRate, window: this.window };
  }

  /** The parameters, for inspection. */
  describe() {
    let text = `capacity: ${this.capacity}, errorRate: ${this.errorRate}`;
    if (this.window !== null) text += `, window: ${this.window}`;
    if (this.layout !== null) text += `, layout: '${this.layout}'`;
    return text;
  }
}

// A cuckoo filter's parameters, as the module takes them.
export const CUCKOO_MIN_ERROR = 1e-12;
export const BOUNDED_BUCKET_SIZE = 4; // a filter with an error rate (ERROR) has buckets of 4
export const BOUNDED_MAX_ITERATIONS = 500; // and, unless told, these: what CF.INSERT ... ERROR makes
export const BOUNDED_EXPANSION = 2;
// RedisBloom's kind (no error rate): its defaults, spelled out on every creation so that the
// server's bf.cf-* configs never decide.
export const REDISBLOOM_BUCKET_SIZE = 2;
export const REDISBLOOM_MAX_ITERATIONS = 20;
export const REDISBLOOM_EXPANSION = 1;

/**
 * How a missing cuckoo filter is created.
 *
 * `errorRate` (0.01 unless given) makes the module's bounded filter (`ERROR`): its
 * false-positive rate stays at most `errorRate` however far it grows, with buckets of 4, up to
 * `maxIterations` evictions (500) before it grows, by `expansion` (2) each time; then
 * `CF.INSERT key CAPACITY c ERROR e ITEMS ...` says all of it, and every write carries it.
 *
 * `errorRate: null` makes RedisBloom's kind: `bucketSize` (2), `maxIterations` (20) and
 * `expansion` (1), RedisBloom's defaults, spelled out. `CF.INSERT` cannot carry those, so a
 * write creates a missing key with a `CF.RESERVE` first and inserts with `NOCREATE` (so does a
 * bounded filter given another `maxIterations` or `expansion`).
 */
export class CuckooOptions {
  constructor({ capacity, errorRate = 0.01, bucketSize, maxIterations, expansion } = {}) {
    if (errorRate !== null) {
      if (typeof errorRate !== 'number') {
        throw new TypeError(`errorRate must be a number or null, not ${kindOf(errorRate)} ${String(errorRate)}`);
      }
      if (!(errorRate >= CUCKOO_MIN_ERROR && errorRate < 1)) {
        throw new RangeError(
          `errorRate must be from ${CUCKOO_MIN_ERROR} up to, not including, 1 (or null for ` +
            `RedisBloom's kind of cuckoo filter), not ${errorRate}`,
        );
      }
      if (bucketSize !== undefined && bucketSize !== null) {
        throw new RangeError(
          'bucketSize goes with errorRate: null: a cuckoo filter with an error rate has buckets of 4',
        );
      }
      bucketSize = BOUNDED_BUCKET_SIZE;
      maxIterations ??= BOUNDED_MAX_ITERATIONS;
      expansion ??= BOUNDED_EXPANSION;
    } else {
      bucketSize ??= REDISBLOOM_BUCKET_SIZE;
      maxIterations ??= REDISBLOOM_MAX_ITERATIONS;
      expansion ??= REDISBLOOM_EXPANSION;
    }
    whole('bucketSize', bucketSize, 1, 255);
    whole('maxIterations', maxIterations, 1, 65535);
    whole('expansion', expansion, 0, 32768);
    // The module keeps an expansion as a power of two (3 is 4).
    this.expansion = expansion === 0 ? 0 : powerOfTwoAtLeast(expansion);
    whole('capacity', capacity, 2 * bucketSize, Number.MAX_SAFE_INTEGER);
    this.capacity = capacity;
    this.errorRate = errorRate;
    this.bucketSize = bucketSize;
    this.maxIterations = maxIterations;
    Object.freeze(this);
  }

  /** A filter with an error rate (this module's kind). */
  get bounded() {
    return this.errorRate !== null;
  }

  /** `CF.RESERVE key <these>`: every parameter spelled out. */
  reserveArgs() {
    const args = [String(this.capacity)];
    if (!this.bounded) args.push('BUCKETSIZE', String(this.bucketSize));
    args.push('MAXITERATIONS', String(this.maxIterations), 'EXPANSION', String(this.expansion));
    if (this.bounded) args.push('ERROR', String(this.errorRate));
    return args;
  }

  /**
   * `CF.INSERT key <these> ITEMS ...` when they say the whole creation (a bounded filter with
   * the bounded defaults); null when they cannot (`CF.RESERVE` then comes first).
   */
  insertArgs() {
    if (!this.bounded || this.maxIterations !== BOUNDED_MAX_ITERATIONS || this.expansion !== BOUNDED_EXPANSION) {
      return null;
    }
    return ['CAPACITY', String(this.capacity), 'ERROR', String(this.errorRate)];
  }

  /** The first sub-filter's buckets: `capacity / bucket size` up to a power of two. */
  buckets() {
    return powerOfTwoAtLeast(Math.max(1, Math.floor(this.capacity / this.bucketSize)));
  }

  /** The same filter for another capacity (a shard's: at least two buckets). */
  resized(capacity) {
    return new CuckooOptions({
      capacity: Math.max(capacity, 2 * this.bucketSize),
      errorRate: this.errorRate,
      bucketSize: this.bounded ? undefined : this.bucketSize,
      maxIterations: this.maxIterations,
      expansion: this.expansion,
    });
  }

  /** What every process of a sharded filter must give alike (kept at its key). */
  identity() {
    return {
      error_rate: this.errorRate,
      bucket_size: this.bucketSize,
      max_iterations: this.maxIterations,
      expansion: this.expansion,
    };
  }

  /** The parameters, for inspection: those that are not the kind's defaults. */
  describe() {
    let text = `capacity: ${this.capacity}, errorRate: ${this.errorRate}`;
    const defaults = this.bounded
      ? [BOUNDED_BUCKET_SIZE, BOUNDED_MAX_ITERATIONS, BOUNDED_EXPANSION]
      : [REDISBLOOM_BUCKET_SIZE, REDISBLOOM_MAX_ITERATIONS, REDISBLOOM_EXPANSION];
    const values = [this.bucketSize, this.maxIterations, this.expansion];
    ['bucketSize', 'maxIterations', 'expansion'].forEach((name, i) => {
      if (values[i] !== defaults[i]) text += `, ${name}: ${values[i]}`;
    });
    return text;
  }
}

/** The options every filter takes besides its creation parameters, with their defaults. */
export const SETTINGS = Object.freeze({
  shards: null,
  batchSize: 1000,
  pipelineSize: 16,
  waitForReplicas: 0,
  waitTimeout: 1000,
});

function atLeast(name, value, low) {
  if (!Number.isInteger(value) || value < low) {
    throw new RangeError(`${name} must be an integer of at least ${low}, not ${String(value)}`);
  }
  return value;
}

/**
 * The settings among a filter class's `options` (`creation` names the others), checked, with
 * their defaults. A name the class does not know throws a TypeError: a misspelt option would
 * otherwise vanish. (`shards` is checked with the key, by shards.js.)
 */
export function settingsOf(className, options, creation) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${className} takes an options object ({ capacity, ... }), not ${String(options)}`);
  }
  const names = [...creation, ...Object.keys(SETTINGS)];
  for (const name of Object.keys(options)) {
    if (!names.includes(name))
      throw new TypeError(`${className} has no option '${name}' (it takes ${names.join(', ')})`);
  }
  const settings = { ...SETTINGS };
  for (const name of Object.keys(SETTINGS)) if (options[name] !== undefined) settings[name] = options[name];
  atLeast('batchSize', settings.batchSize, 1);
  atLeast('pipelineSize', settings.pipelineSize, 1);
  atLeast('waitForReplicas', settings.waitForReplicas, 0);
  if (typeof settings.waitTimeout !== 'number' || !(settings.waitTimeout > 0)) {
    throw new RangeError(`waitTimeout must be a positive number of milliseconds, not ${String(settings.waitTimeout)}`);
  }
  return settings;
}

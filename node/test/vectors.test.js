// The sharding spec's test vectors (docs/sharding-vectors.json, written from docs/sharding.md by
// scripts/sharding_vectors.py, which shares no code with either package), every one checked
// against this package: item bytes, the item's shard in version 2, hash tags and key names, each
// shard's capacity, the manifests written and how a stored one is read, and merged info. No
// server: what this package computes is what another client (the Python package) computes.
//
// Version 1 (BLAKE2b with a personalisation) is the one place where the vectors say what the
// Python package does and the spec says what this one does instead: "A client that cannot compute
// version 1 (the Node package, without an add-on) refuses such a filter as a version it cannot
// read, before it sends anything to the shards." The tests hold it to the spec there.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { CuckooCore, Core } from '../lib/core.js';
import { FilterMismatchError, KeyTypeError } from '../lib/errors.js';
import { CuckooOptions, FilterOptions } from '../lib/options.js';
import {
  NEW_VERSION,
  itemBytes,
  keySlot,
  manifestText,
  parseManifest,
  shardCapacity,
  shardKeys,
  shardTag,
  shardV2,
} from '../lib/shards.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const VECTORS = JSON.parse(readFileSync(path.join(ROOT, 'docs/sharding-vectors.json'), 'utf8'));
const BLOOM = { capacity: 1000, error_rate: 0.01, window: null };

/** The JavaScript value a vector spells. */
function jsItem(spelled) {
  const [[kind, value]] = Object.entries(spelled);
  switch (kind) {
    case 'string':
      return value;
    case 'number':
      return value;
    case 'number_text':
      return Number(value);
    case 'bigint':
      return BigInt(value);
    case 'bytes_hex':
      return Buffer.from(value, 'hex');
    case 'boolean':
      return value;
    case 'null':
      return null;
    default:
      throw new Error(`a vector of an unknown kind: ${kind}`);
  }
}

/** The core of a filter of `kind` given `asked` (a vector's arguments), sharded `shards` ways. */
function core(kind, asked, shards, key = 'k') {
  const settings = { shards, batchSize: 10, pipelineSize: 2 };
  if (kind === 'bloom') {
    const options = new FilterOptions({ capacity: asked.capacity, errorRate: asked.error_rate, window: asked.window });
    return new Core('host:port', key, options, settings);
  }
  const cuckoo = new CuckooOptions({
    capacity: asked.capacity,
    errorRate: asked.error_rate,
    bucketSize: asked.error_rate === null ? asked.bucket_size : undefined,
    maxIterations: asked.max_iterations,
    expansion: asked.expansion,
  });
  return new CuckooCore('host:port', key, cuckoo, settings);
}

describe('an item', () => {
  for (const vector of VECTORS.items) {
    test(`${vector.name}: its bytes and its shard`, () => {
      const data = Buffer.from(vector.bytes_hex, 'hex');
      const prefix = Buffer.from(VECTORS.v2_prefix_hex, 'hex');
      assert.equal(
        createHash('sha256').update(prefix).update(data).digest().subarray(0, 8).toString('hex'),
        vector.v2_hash_hex,
      );
      for (const [count, index] of Object.entries(vector.v2)) {
        assert.equal(shardV2(data, Number(count)), index, `${count} shards`);
      }
      if (vector.js === null) {
        assert.ok(vector.note, 'a Python value no JavaScript value spells says why');
        return;
      }
      const item = jsItem(vector.js);
      assert.deepEqual(itemBytes(item), data);
      for (const [count, index] of Object.entries(vector.v2)) {
        const bf = core('bloom', BLOOM, Number(count), 'crawl');
        assert.equal(bf.version, NEW_VERSION);
        const stored = manifestText(2, 'bloom', Number(count), 1000, bf.options.identity());
        assert.equal(bf.checkManifest(stored, false), false);
        assert.equal(bf.keyOf(item), bf.keys[index]);
      }
    });
  }

  test('-0 is the integer 0', () => {
    assert.deepEqual(itemBytes(-0), Buffer.from('0'));
  });

  for (const vector of VECTORS.refused_items.js) {
    test(`refused: ${JSON.stringify(vector.value)} (${vector.why})`, () => {
      const item = jsItem(vector.value);
      assert.throws(
        () => itemBytes(item),
        (error) => error instanceof TypeError || error instanceof RangeError,
      );
      const sharded = core('bloom', BLOOM, 4);
      assert.throws(
        () => sharded.keyOf(item),
        (error) => error instanceof TypeError || error instanceof RangeError,
      );
      const single = core('bloom', BLOOM, null);
      assert.throws(
        () => single.keyOf(item),
        (error) => error instanceof TypeError || error instanceof RangeError,
      );
    });
  }
});

test('tags, slots and key names', () => {
  for (const [count, tags] of Object.entries(VECTORS.shard_tags)) {
    const n = Number(count);
    assert.deepEqual(
      tags.map((_, index) => shardTag(index, n)),
      tags,
    );
    tags.forEach((tag, index) => assert.equal(keySlot(tag), Math.floor(((2 * index + 1) * 16384) / (2 * n))));
  }
  for (const [tag, slot] of Object.entries(VECTORS.slots)) assert.equal(keySlot(tag), slot);
  for (const vector of VECTORS.keys) {
    assert.deepEqual([...shardKeys(vector.key, vector.shards)], vector.keys);
    assert.deepEqual([...core('bloom', BLOOM, vector.shards, vector.key).keys], vector.keys);
  }
  for (const vector of VECTORS.refused_keys) {
    assert.throws(() => shardKeys(vector.key, vector.shards), RangeError, vector.why);
  }
});

test("each shard's capacity", () => {
  for (const vector of VECTORS.capacities) {
    const { capacity, shards } = vector;
    assert.equal(shardCapacity(capacity, shards), vector.bloom);
    assert.equal(
      new FilterOptions({ capacity, errorRate: 0.01 }).resized(shardCapacity(capacity, shards)).capacity,
      vector.bloom,
    );
    for (const cuckoo of vector.cuckoo) {
      const size = cuckoo.bucket_size;
      // The filter's own options (at least two buckets), then its shard's.
      const options =
        size === 4
          ? new CuckooOptions({ capacity: Math.max(capacity, 8), errorRate: 0.01 })
          : new CuckooOptions({ capacity: Math.max(capacity, 2 * size), errorRate: null, bucketSize: size });
      const shard = options.resized(shardCapacity(capacity, shards));
      assert.deepEqual([shard.capacity, shard.buckets()], [cuckoo.capacity, cuckoo.buckets]);
    }
  }
});

describe('a manifest written', () => {
  for (const vector of VECTORS.manifests.written) {
    test(vector.text.slice(0, 70), () => {
      const text = manifestText(vector.version, vector.kind, vector.shards, vector.capacity, vector.parameters);
      assert.equal(text, vector.text);
      const made = core(vector.kind, { capacity: vector.capacity, ...vector.parameters }, vector.shards);
      assert.deepEqual(made.options.identity(), vector.parameters);
      if (vector.version === NEW_VERSION) assert.equal(made.manifest(), vector.text); // what a new filter writes
      const stored = parseManifest(vector.text);
      assert.equal(stored.version, vector.version);
      assert.equal(stored.kind, vector.kind);
      assert.equal(stored.capacity, vector.capacity);
    });
  }
});

describe('a manifest read', () => {
  for (const vector of VECTORS.manifests.read) {
    test(vector.name, () => {
      const { asked } = vector;
      const made = core(asked.kind, asked, asked.shards);
      for (const text of [vector.text, Buffer.from(vector.text)]) {
        // GET answers a string, or a Buffer with a Buffer type mapping.
        if (vector.outcome === 'use' && vector.version !== 1) {
          assert.equal(made.checkManifest(text, false), false);
          assert.equal(made.version, vector.version);
          assert.equal(made.creation.capacity, vector.shard_capacity);
          continue;
        }
        if (vector.outcome === 'use') {
          // Version 1: refused here, as the spec says (see the top of this file).
          assert.throws(
            () => made.checkManifest(text, false),
            (error) => {
              assert.ok(error instanceof FilterMismatchError);
              assert.match(error.message, /version 1, which this client cannot read \(it reads 2\)/);
              return true;
            },
          );
          continue;
        }
        const raised = { FilterMismatchError, KeyTypeError }[vector.error];
        assert.throws(
          () => made.checkManifest(text, false),
          (error) => {
            assert.ok(error instanceof raised, `${error.name}: ${error.message}`);
            if (vector.because === 'kind') assert.match(error.message, /is a cuckoo filter, not a Bloom filter/);
            else if (vector.because === 'not a manifest')
              assert.match(error.message, /not a sharded filter's parameters/);
            else for (const name of vector.because.split(', ')) assert.ok(error.message.includes(name), error.message);
            assert.ok(!error.message.includes('\n'), 'one line');
            return true;
          },
        );
      }
    });
  }
});

describe('info over the shards', () => {
  for (const vector of VECTORS.info) {
    test(vector.name, () => {
      const made = core(vector.kind, vector.asked, vector.shards.length);
      assert.deepEqual(made.mergeInfo(vector.shards), vector.merged);
    });
  }
});

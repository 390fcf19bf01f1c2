// BloomFilter against a real server, in RESP2 and RESP3: answers as booleans, batches, creation,
// windows, one filter sharded over several keys, and errors thrown, never read as answers.

import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { after, before, beforeEach, describe, test } from 'node:test';

import { BloomFilter, BloomFilterError, FilterFullError, FilterMismatchError, KeyTypeError } from '../lib/index.js';
import { shardCapacity } from '../lib/shards.js';
import { bloomInfo, commandstats, referenceSize, sleep } from './harness/helpers.js';
import { RedisServer } from './harness/servers.js';

const server = new RedisServer('bloom');
before(() => server.start());
after(() => server.stop());

for (const RESP of [2, 3]) {
  describe(`RESP${RESP}`, () => {
    let r;
    before(async () => {
      r = await server.client({ RESP });
    });
    after(() => r.close());
    beforeEach(async () => {
      await r.flushAll();
      await r.sendCommand(['CONFIG', 'RESETSTAT']);
    });

    test('add answers new, then seen', async () => {
      const bf = new BloomFilter(r, 'urls', { capacity: 1000, errorRate: 0.001 });
      assert.equal(await bf.add('https://example.com/'), true);
      assert.equal(await bf.add('https://example.com/'), false);
      assert.equal(await bf.add(Buffer.from('https://example.com/')), false); // a string is sent as UTF-8
      assert.equal(await bf.add(42), true);
      assert.equal(await bf.add('42'), false); // a number is its decimal digits
      assert.equal(await bf.add(42n), false);
      assert.equal(await bf.add(new Uint8Array([0x34, 0x32])), false);
      assert.equal(await bf.add(0.5), true);
      assert.equal(await bf.contains('0.5'), true);
      assert.deepEqual(
        [await bf.contains('https://example.com/'), await bf.contains('https://example.org/')],
        [true, false],
      );
      assert.equal(await bf.count(), 3);
    });

    test('the first write creates the filter as asked', async () => {
      const bf = new BloomFilter(r, 'urls', { capacity: 1000, errorRate: 0.001 });
      assert.equal(await r.exists('urls'), 0);
      assert.equal(await bf.add('a'), true);
      assert.deepEqual(await bloomInfo(r, 'urls'), {
        Capacity: 1000,
        Size: await referenceSize(r, 0.001, 1000),
        'Number of filters': 1,
        'Number of items inserted': 1,
        'Expansion rate': 2,
      });
      // The server's default filter (capacity 100 at 1%) would differ.
      assert.notEqual(await referenceSize(r, 0.01, 100), (await bloomInfo(r, 'urls')).Size);
      await r.del('urls');
      assert.deepEqual(await bf.addMany(['a', 'b']), [true, true]);
      assert.equal((await bloomInfo(r, 'urls')).Capacity, 1000);
      // One command each: BF.INSERT key CAPACITY c ERROR e ITEMS ...
      const calls = await commandstats(r);
      assert.equal(calls['bf.insert'], 2);
      assert.equal(calls['bf.add'], undefined);
    });

    test('create reserves a missing key and leaves a filter alone', async () => {
      const bf = new BloomFilter(r, 'urls', { capacity: 5000, errorRate: 0.0001 });
      assert.equal(await bf.create(), true);
      assert.equal((await bloomInfo(r, 'urls')).Size, await referenceSize(r, 0.0001, 5000));
      assert.equal(await bf.create(), false);
      assert.equal(await bf.keyType(), 'MBbloom--');
      await r.sendCommand(['BF.RESERVE', 'old', '0.01', '50']);
      await r.sendCommand(['BF.ADD', 'old', 'kept']);
      const before = await bloomInfo(r, 'old');
      const old = new BloomFilter(r, 'old', { capacity: 5000, errorRate: 0.0001 });
      assert.equal(await old.create(), false);
      assert.deepEqual(await bloomInfo(r, 'old'), before);
      assert.equal(await old.add('kept'), false);
      assert.equal((await bloomInfo(r, 'old')).Capacity, 50);
    });

    test('addMany batches in order', async () => {
      const bf = new BloomFilter(r, 'k', { capacity: 1000, errorRate: 0.001, batchSize: 3, pipelineSize: 2 });
      const items = ['a', 'b', 'c', 'a', 'd', 'e', 'b', 'f', 'g', 'h', 'a'];
      assert.deepEqual(await bf.addMany(items), [true, true, true, false, true, true, false, true, true, true, false]);
      assert.deepEqual(await bf.addMany([]), []);
      assert.deepEqual(await bf.addMany(new Set(['h', 'i'])), [false, true]);
      assert.deepEqual(
        await bf.addMany(
          (function* () {
            yield 'i';
            yield 'j';
          })(),
        ),
        [false, true],
      );
      assert.equal(await bf.count(), 10);
      // 11 items in batches of 3: 4 commands, and 1 for each later call.
      assert.equal((await commandstats(r))['bf.insert'], 6);
      await assert.rejects(bf.addMany('abc'), { name: 'TypeError', message: /items must be an iterable of items/ });
    });

    test('containsMany, and a lookup creates nothing', async () => {
      const bf = new BloomFilter(r, 'k', { capacity: 1000, errorRate: 0.001, batchSize: 2 });
      assert.deepEqual(await bf.containsMany(['a', 'b']), [false, false]);
      assert.equal(await r.exists('k'), 0);
      await bf.addMany(['a', 'c', 'e']);
      assert.deepEqual(await bf.containsMany(['a', 'b', 'c', 'd', 'e']), [true, false, true, false, true]);
    });

    test('info', async () => {
      const bf = new BloomFilter(r, 'k', { capacity: 200, errorRate: 0.01 });
      await assert.rejects(bf.info(), { message: 'ERR not found' });
      await bf.addMany(Array.from({ length: 250 }, (_, i) => i));
      assert.deepEqual(await bf.info(), {
        Capacity: 600,
        Size: (await bloomInfo(r, 'k')).Size,
        'Number of filters': 2,
        'Number of items inserted': 250,
        'Expansion rate': 2,
      });
      const blocked = new BloomFilter(r, 'blocked', { capacity: 200, errorRate: 0.01, layout: 'blocked' });
      await blocked.add('x');
      assert.equal((await blocked.info()).Layout, 'blocked');
      assert.equal(
        inspect(blocked),
        "BloomFilter { key: 'blocked', capacity: 200, errorRate: 0.01, layout: 'blocked' }",
      );
    });

    test('a full NONSCALING filter throws with the answers before', async () => {
      await r.sendCommand(['BF.RESERVE', 'full', '0.01', '3', 'NONSCALING']);
      const bf = new BloomFilter(r, 'full', { capacity: 3, errorRate: 0.01, batchSize: 2 });
      await assert.rejects(bf.addMany(['a', 'b', 'a', 'c', 'd', 'e']), (error) => {
        assert.ok(error instanceof FilterFullError && error instanceof BloomFilterError);
        assert.equal(error.message, 'ERR non scaling filter is full');
        assert.deepEqual([error.results, error.index], [[true, true, false, true], 4]);
        return true;
      });
      assert.equal(await bf.count(), 3);
      await assert.rejects(bf.add('new'), FilterFullError);
      assert.equal(await bf.add('a'), false); // an item it holds still answers
      assert.deepEqual(await bf.containsMany(['a', 'new']), [true, false]);
    });

    test('a key of another type throws', async () => {
      await r.set('text', 'v');
      const bf = new BloomFilter(r, 'text', { capacity: 1000, errorRate: 0.01 });
      await assert.rejects(bf.add('x'), /^Error: WRONGTYPE/);
      await assert.rejects(bf.contains('x'), /WRONGTYPE/);
      await assert.rejects(bf.addMany(['x', 'y']), (error) => {
        assert.ok(error instanceof BloomFilterError && /WRONGTYPE/.test(error.message));
        assert.deepEqual([error.results, error.index], [[], 0]);
        return true;
      });
      await assert.rejects(bf.create(), (error) => {
        assert.ok(error instanceof KeyTypeError);
        assert.equal(error.message, "'text' holds a string, not a Bloom filter");
        assert.equal(error.keyType, 'string');
        return true;
      });
      await r.rPush('queue', 'x');
      await assert.rejects(new BloomFilter(r, 'queue', { capacity: 1000, errorRate: 0.01 }).create(), {
        keyType: 'list',
      });
      assert.equal(await r.get('text'), 'v');
    });

    test('a client whose type mapping answers Buffers and Maps', async () => {
      const { RESP_TYPES } = await import('redis');
      const mapped = r.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer, [RESP_TYPES.MAP]: Map });
      const bf = new BloomFilter(mapped, 'k', { capacity: 1000, errorRate: 0.01, shards: 2 });
      assert.equal(await bf.create(), true);
      assert.equal(await bf.create(), false);
      assert.deepEqual(await bf.addMany(['a', 'a']), [true, false]);
      assert.equal((await bf.info())['Number of items inserted'], 1);
      assert.equal(
        await new BloomFilter(mapped, 'k', { capacity: 1000, errorRate: 0.01, shards: 2 }).contains('a'),
        true,
      );
    });

    test('a windowed filter forgets an item after its window', async () => {
      const bf = new BloomFilter(r, 'feed', { capacity: 1000, errorRate: 0.01, window: 1 });
      assert.equal(inspect(bf), "BloomFilter { key: 'feed', capacity: 1000, errorRate: 0.01, window: 1 }");
      const added = Date.now();
      assert.equal(await bf.add('video:1'), true);
      assert.equal(await bf.add('video:1'), false);
      assert.deepEqual(await bf.addMany(['video:1', 'video:2']), [false, true]);
      assert.equal((await bloomInfo(r, 'feed')).Window, 1);
      assert.equal(await r.pTTL('feed'), -1); // the key stays; the server frees what expires
      while (await bf.contains('video:1')) {
        assert.ok(Date.now() - added < 2000, 'still held after 2 s');
        await sleep(20);
      }
      assert.ok(Date.now() - added >= 1000);
      assert.equal(await bf.add('video:1'), true); // new again after the window
      const plain = new BloomFilter(r, 'plain', { capacity: 1000, errorRate: 0.01, window: 0 });
      assert.equal(plain.options.window, null);
      await plain.add('a');
      assert.equal('Window' in (await bloomInfo(r, 'plain')), false);
    });

    test('items spread over the shards and answer in order', async () => {
      const bf = new BloomFilter(r, 'seen', {
        capacity: 3000,
        errorRate: 0.001,
        shards: 4,
        batchSize: 50,
        pipelineSize: 3,
      });
      const items = Array.from({ length: 2000 }, (_, i) => `item:${i}`);
      assert.deepEqual(await bf.addMany(items.slice(0, 1000)), new Array(1000).fill(true));
      assert.deepEqual(await bf.addMany(items.slice(500, 1500)), [
        ...new Array(500).fill(false),
        ...new Array(500).fill(true),
      ]);
      const answers = await bf.containsMany(items);
      assert.deepEqual(answers.slice(0, 1500), new Array(1500).fill(true));
      assert.ok(answers.slice(1500).filter(Boolean).length <= 5);
      assert.equal(await bf.add('item:0'), false);
      assert.equal(await bf.add('item:1999'), true);
      assert.equal(await bf.count(), 1501);
      const perShard = await Promise.all(bf.keys.map((key) => r.sendCommand(['BF.CARD', key])));
      assert.ok(
        perShard.every((count) => count > 300 && count < 450),
        String(perShard),
      );
      const merged = await bf.info();
      assert.equal(merged.Shards, 4);
      assert.equal(merged.Capacity, 4 * shardCapacity(3000, 4));
      assert.equal(merged['Number of items inserted'], 1501);
      assert.equal(await r.type('seen'), 'string'); // the manifest
      assert.equal(await bf.drop(), 5);
      assert.equal(await r.dbSize(), 0);
      assert.equal(await bf.count(), 0);
    });

    test('a second process finds the same filter, and a mismatch is refused', async () => {
      const first = new BloomFilter(r, 'seen', { capacity: 1000, errorRate: 0.01, shards: 3, window: 60 });
      assert.equal(await first.create(), true);
      assert.equal(await first.create(), false);
      assert.deepEqual(await first.addMany(['a', 'b', 'c']), [true, true, true]);
      const again = new BloomFilter(r, 'seen', { capacity: 1000, errorRate: 0.01, shards: 3, window: 60 });
      assert.deepEqual(await again.addMany(['a', 'b', 'd']), [false, false, true]);
      assert.equal((await again.info()).Window, 60);
      // Another capacity is the filter's own, as for one key: the shards keep the first one's.
      const bigger = new BloomFilter(r, 'seen', { capacity: 50_000, errorRate: 0.01, shards: 3, window: 60 });
      assert.equal(await bigger.add('e'), true);
      for (const key of bigger.keys) assert.equal((await bloomInfo(r, key)).Capacity, shardCapacity(1000, 3));
      for (const [options, message] of [
        [{ shards: 4, errorRate: 0.01, window: 60 }, /has shards 3, not 4/],
        [{ shards: 3, errorRate: 0.001, window: 60 }, /error_rate 0.01, not 0.001/],
        [{ shards: 3, errorRate: 0.01 }, /window 60, not null/],
      ]) {
        const mismatched = new BloomFilter(r, 'seen', { capacity: 1000, ...options });
        await assert.rejects(
          mismatched.add('x'),
          (error) => error instanceof FilterMismatchError && message.test(error.message),
        );
        await assert.rejects(mismatched.containsMany(['x']), FilterMismatchError);
      }
      await assert.rejects(
        new BloomFilter(r, 'seen', { capacity: 1000, errorRate: 0.01, shards: 4, window: 60 }).drop(),
        FilterMismatchError,
      );
      assert.equal(await first.count(), 5); // nothing was deleted
      // Deleted and made again by a process with another capacity: its own, this time.
      assert.equal(await bigger.drop(), 4);
      assert.equal(await bigger.add('f'), true);
      assert.equal(await bigger.create(), true);
      for (const key of bigger.keys) assert.equal((await bloomInfo(r, key)).Capacity, shardCapacity(50_000, 3));
      // One key where a sharded filter keeps its manifest is refused as such, and the reverse.
      await assert.rejects(new BloomFilter(r, 'seen', { capacity: 1000, errorRate: 0.01 }).add('x'), /WRONGTYPE/);
      await r.sendCommand(['BF.ADD', 'plain', 'x']);
      await assert.rejects(
        new BloomFilter(r, 'plain', { capacity: 1000, errorRate: 0.01, shards: 2 }).add('x'),
        (error) => error instanceof KeyTypeError && /keeps its parameters at its key/.test(error.message),
      );
      for (const text of ['hello', '123', '[1]', '"x"', '{}']) {
        await r.set('text', text);
        await assert.rejects(
          new BloomFilter(r, 'text', { capacity: 1000, errorRate: 0.01, shards: 2 }).contains('x'),
          (error) => error instanceof KeyTypeError && /not a sharded filter's parameters/.test(error.message),
        );
      }
    });

    test('a version 1 filter, which Node cannot place items in, is refused before anything is sent to its shards', async () => {
      const v1 =
        '{"capacity": 1000, "error_rate": 0.01, "format": "redis-bf sharded filter", "shards": 2, "version": 1, "window": null}';
      await r.set('old', v1);
      const bf = new BloomFilter(r, 'old', { capacity: 1000, errorRate: 0.01, shards: 2 });
      for (const call of [
        () => bf.add('x'),
        () => bf.containsMany(['x']),
        () => bf.count(),
        () => bf.info(),
        () => bf.drop(),
      ]) {
        await assert.rejects(
          call(),
          (error) =>
            error instanceof FilterMismatchError && /version 1, which this client cannot read/.test(error.message),
        );
      }
      assert.deepEqual(await r.keys('*'), ['old']);
      assert.equal(await r.get('old'), v1);
    });

    test('an error element in a later round trip, and a failing shard', async () => {
      const bf = new BloomFilter(r, 'seen', {
        capacity: 1000,
        errorRate: 0.01,
        shards: 2,
        batchSize: 2,
        pipelineSize: 1,
      });
      const full = bf.keys[1];
      await r.sendCommand(['BF.RESERVE', full, '0.01', '5', 'NONSCALING']);
      const items = Array.from({ length: 60 }, (_, i) => `item:${i}`);
      const sixth = items.map((item, i) => [bf.keyOf(item), i]).filter(([key]) => key === full)[5][1];
      await assert.rejects(bf.addMany(items), (error) => {
        assert.ok(error instanceof FilterFullError);
        assert.deepEqual([error.index, error.results], [sixth, new Array(sixth).fill(true)]);
        return true;
      });
      assert.ok(sixth >= 2); // past the first round trip (two items)
      const four = new BloomFilter(r, 'four', { capacity: 1000, errorRate: 0.01, shards: 4, batchSize: 2 });
      await r.set(four.keys[2], 'not a filter');
      const first = items.findIndex((item) => four.keyOf(item) === four.keys[2]);
      await assert.rejects(four.addMany(items), (error) => {
        assert.ok(error instanceof BloomFilterError && /WRONGTYPE/.test(error.message));
        assert.deepEqual([error.index, error.results], [first, new Array(first).fill(true)]);
        return true;
      });
      await assert.rejects(
        four.create(),
        (error) => error instanceof KeyTypeError && /holds a string/.test(error.message),
      );
    });

    for (const window of [null, 60]) {
      test(`info and create while shards are missing (window ${window})`, async () => {
        const bf = new BloomFilter(r, 't:seen', { capacity: 1000, errorRate: 0.01, shards: 4, window });
        await assert.rejects(bf.info(), { message: 'ERR not found' }); // no filter at all
        const windowed = window === null ? {} : { Window: window };
        const capacity = 4 * shardCapacity(1000, 4);
        assert.equal(await bf.contains('absent'), false); // a lookup writes the manifest
        assert.deepEqual(await bf.info(), {
          Capacity: capacity,
          Size: 0,
          'Number of filters': 0,
          'Number of items inserted': 0,
          ...windowed,
          Shards: 4,
        });
        assert.equal(await bf.add('x'), true);
        const shard = await bloomInfo(r, bf.keyOf('x'));
        const partial = {
          Capacity: capacity,
          Size: shard.Size,
          'Number of filters': shard['Number of filters'],
          'Number of items inserted': 1,
          'Expansion rate': shard['Expansion rate'],
          ...windowed,
          Shards: 4,
        };
        assert.deepEqual(await bf.info(), partial);
        // Another process, with another capacity: missing shards count with the stored one.
        assert.deepEqual(
          await new BloomFilter(r, 't:seen', { capacity: 50_000, errorRate: 0.01, shards: 4, window }).info(),
          partial,
        );
        assert.equal(await bf.create(), true);
        assert.equal(await bf.create(), false);
        assert.equal(await r.dbSize(), 5);
      });
    }
  });
}

test('options are checked before any command', () => {
  const client = {
    sendCommand() {
      throw new Error('nothing is sent');
    },
  };
  const bloom = (options) => new BloomFilter(client, 'k', options);
  for (const [options, error, message] of [
    [{ capacity: 0, errorRate: 0.01 }, RangeError, /capacity must be from 1/],
    [{ capacity: 10.5, errorRate: 0.01 }, TypeError, /capacity must be an integer/],
    [{ capacity: '10', errorRate: 0.01 }, TypeError, /capacity must be an integer/],
    [{ capacity: 10 }, TypeError, /errorRate must be a number/],
    [{ capacity: 10, errorRate: 0 }, RangeError, /strictly between 0 and 1/],
    [{ capacity: 10, errorRate: 1 }, RangeError, /strictly between 0 and 1/],
    [
      { capacity: 10, errorRate: 0.01, window: -5 },
      RangeError,
      /^window must be from 1 to 315576000 seconds \(ten years\), or 0 or null for none, not -5$/,
    ],
    [{ capacity: 10, errorRate: 0.01, window: 315_576_001 }, RangeError, /window must be from 1/],
    [{ capacity: 10, errorRate: 0.01, window: 1.5 }, RangeError, /window must be whole seconds/],
    [{ capacity: 10, errorRate: 0.01, window: '60' }, TypeError, /window must be a number of seconds/],
    [{ capacity: 10, errorRate: 0.01, layout: 'BLOCKED' }, RangeError, /layout must be 'classic' or 'blocked'/],
    [{ capacity: 10, errorRate: 0.01, shards: 0 }, RangeError, /shards must be from 1 to 1024/],
    [{ capacity: 10, errorRate: 0.01, shards: 1025 }, RangeError, /shards must be from 1 to 1024/],
    [{ capacity: 10, errorRate: 0.01, shards: '4' }, TypeError, /shards must be an integer/],
    [{ capacity: 10, errorRate: 0.01, batchSize: 0 }, RangeError, /batchSize must be an integer of at least 1/],
    [
      { capacity: 10, errorRate: 0.01, waitTimeout: 0 },
      RangeError,
      /waitTimeout must be a positive number of milliseconds/,
    ],
    [
      { capacity: 10, errorRate: 0.01, waitForReplica: 1 },
      TypeError,
      /BloomFilter has no option 'waitForReplica' \(it takes capacity, errorRate, window, layout, shards/,
    ],
  ]) {
    assert.throws(
      () => bloom(options),
      (thrown) => thrown instanceof error && message.test(thrown.message),
      JSON.stringify(options),
    );
  }
  assert.throws(
    () => new BloomFilter(client, '{crawl}:seen', { capacity: 10, errorRate: 0.01, shards: 4 }),
    /cannot hold a hash tag/,
  );
  assert.throws(() => new BloomFilter({}, 'k', { capacity: 10, errorRate: 0.01 }), /must be a node-redis client/);
  // The shape of an ioredis Redis or Cluster: sendCommand(command), call(...args), status.
  const ioredisLike = { sendCommand() {}, call() {}, status: 'ready' };
  assert.throws(
    () => new BloomFilter(ioredisLike, 'k', { capacity: 10, errorRate: 0.01 }),
    /^TypeError: ioredis clients are not supported: give a node-redis client/,
  );
  const windowed = bloom({ capacity: 10, errorRate: 0.01, window: 3600, layout: 'blocked' });
  assert.deepEqual(windowed.options.reserveArgs(), ['0.01', '10', 'WINDOW', '3600', 'LAYOUT', 'BLOCKED']);
  assert.deepEqual(windowed.options.insertArgs(), [
    'CAPACITY',
    '10',
    'ERROR',
    '0.01',
    'WINDOW',
    '3600',
    'LAYOUT',
    'BLOCKED',
  ]);
  for (const none of [0, null, undefined])
    assert.equal(bloom({ capacity: 10, errorRate: 0.01, window: none }).options.window, null);
});

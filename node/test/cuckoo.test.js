// CuckooFilter against a real server, in RESP2 and RESP3: adds, lookups and deletes as booleans,
// every write creating a missing key as asked (never with the server's bf.cf-* defaults), errors
// thrown and never read as answers, one filter sharded over several keys with its deletes
// reaching the right shard, and RedisBloom's refusal of ERROR.

import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { after, before, beforeEach, describe, test } from 'node:test';
import { SimpleError } from 'redis';

import {
  BloomFilter,
  BloomFilterError,
  CuckooFilter,
  CuckooOptions,
  ErrorRateUnsupportedError,
  FilterFullError,
  FilterMismatchError,
  KeyTypeError,
} from '../lib/index.js';
import { shardCapacity } from '../lib/shards.js';
import { commandstats, cuckooDebug, cuckooInfoOf } from './harness/helpers.js';
import { RedisServer } from './harness/servers.js';

const server = new RedisServer('cuckoo');
before(() => server.start());
after(() => server.stop());

/** Other defaults for the filters the server makes on its own: a filter made with them shows it. */
async function serversDefaultsChanged(client) {
  for (const [name, value] of [
    ['bf.cf-initial-size', '40'],
    ['bf.cf-bucket-size', '3'],
    ['bf.cf-max-iterations', '9'],
    ['bf.cf-expansion-factor', '8'],
  ]) {
    await client.configSet(name, value);
  }
}

const range = (n, name = 'item') => Array.from({ length: n }, (_, i) => `${name}:${i}`);

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

    test('adds, lookups, deletes and counts', async () => {
      const cf = new CuckooFilter(r, 'emails', { capacity: 1000 });
      assert.equal(inspect(cf), "CuckooFilter { key: 'emails', capacity: 1000, errorRate: 0.01 }");
      assert.equal(await cf.add('alice@example.com'), true);
      assert.equal(await cf.add('alice@example.com'), true); // a second copy
      assert.equal(await cf.count('alice@example.com'), 2);
      assert.equal(await cf.addUnique('alice@example.com'), false); // held: not added
      assert.equal(await cf.addUnique(Buffer.from('bob@example.com')), true);
      assert.equal(await cf.addUnique('bob@example.com'), false); // a string is sent as UTF-8
      assert.deepEqual([await cf.contains('alice@example.com'), await cf.contains('carol@example.com')], [true, false]);
      assert.equal(await cf.count(), 3);
      assert.equal(await cf.delete('alice@example.com'), true);
      assert.equal(await cf.contains('alice@example.com'), true); // one copy left
      assert.equal(await cf.delete('alice@example.com'), true);
      assert.equal(await cf.contains('alice@example.com'), false);
      assert.equal(await cf.delete('alice@example.com'), false); // not held: nothing deleted
      assert.equal(await cf.count(), 1);
      assert.equal((await cf.info())['Number of items deleted'], 2);
      assert.deepEqual(await cf.addMany(['a', 'b', 'a']), [true, true, true]);
      assert.deepEqual(await cf.addMany(['a', 'c', 'c'], { unique: true }), [false, true, false]);
      assert.deepEqual(await cf.containsMany(['a', 'b', 'c', 'd']), [true, true, true, false]);
      assert.deepEqual(await cf.deleteMany(['a', 'a', 'a', 'd']), [true, true, false, false]);
      assert.equal(await cf.count(), 3); // bob, b, c
      assert.equal(await cf.drop(), 1);
      assert.equal(await r.exists('emails'), 0);
    });

    test('deleting from a missing key answers false, and creates nothing', async () => {
      const cf = new CuckooFilter(r, 'none', { capacity: 1000 });
      assert.equal(await cf.delete('x'), false);
      assert.deepEqual(await cf.deleteMany(['x', 'y']), [false, false]);
      assert.deepEqual(
        [await cf.contains('x'), await cf.containsMany(['x']), await cf.count(), await cf.count('x')],
        [false, [false], 0, 0],
      );
      assert.equal(await r.exists('none'), 0);
      await assert.rejects(cf.info(), { message: 'ERR not found' });
    });

    test('every write creates a missing key as asked', async () => {
      await serversDefaultsChanged(r);
      const cf = new CuckooFilter(r, 'seen', { capacity: 1000, errorRate: 0.001 });
      const bounded =
        'bktsize:4 buckets:256 items:1 deletes:0 filters:1 max_iterations:500 expansion:2 error:0.001 bits:16';
      for (const write of [
        () => cf.add('x'),
        () => cf.addUnique('x'),
        () => cf.addMany(['x']),
        () => cf.addMany(['x'], { unique: true }),
      ]) {
        await r.del('seen'); // a flush, an eviction, another process's delete
        await write();
        assert.equal(await cuckooDebug(r, 'seen'), bounded);
        assert.equal((await cuckooInfoOf(r, 'seen'))['Error rate'], 0.001);
      }
      const calls = await commandstats(r);
      assert.deepEqual(
        [calls['cf.insert'], calls['cf.insertnx'], calls['cf.reserve'], calls['cf.add']],
        [2, 2, undefined, undefined],
      );
      // RedisBloom's kind: a CF.RESERVE that spells the parameters out, then NOCREATE inserts.
      const plain = new CuckooFilter(r, 'plain', {
        capacity: 1000,
        errorRate: null,
        bucketSize: 3,
        maxIterations: 7,
        expansion: 3,
      });
      assert.equal(
        inspect(plain),
        "CuckooFilter { key: 'plain', capacity: 1000, errorRate: null, bucketSize: 3, maxIterations: 7, expansion: 4 }",
      );
      for (const write of [() => plain.add('x'), () => plain.addMany(['x', 'y'], { unique: true })]) {
        await r.del('plain');
        await write();
        const shape = await cuckooDebug(r, 'plain');
        assert.ok(
          shape.startsWith('bktsize:3 buckets:512 items:') && shape.endsWith(' max_iterations:7 expansion:4'),
          shape,
        );
      }
      const defaults = new CuckooFilter(r, 'defaults', { capacity: 1000, errorRate: null });
      assert.equal(await defaults.add('x'), true);
      assert.equal(
        await cuckooDebug(r, 'defaults'),
        'bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1',
      );
      const grown = new CuckooFilter(r, 'grown', { capacity: 1000, maxIterations: 50, expansion: 4 });
      assert.deepEqual(await grown.addMany(['x']), [true]);
      assert.equal(
        await cuckooDebug(r, 'grown'),
        'bktsize:4 buckets:256 items:1 deletes:0 filters:1 max_iterations:50 expansion:4 error:0.01 bits:12',
      );
      // An existing filter is used as it is.
      assert.equal(await new CuckooFilter(r, 'grown', { capacity: 50_000, errorRate: 0.001 }).addUnique('y'), true);
      assert.ok((await cuckooDebug(r, 'grown')).startsWith('bktsize:4 buckets:256 items:2 '));
    });

    test('create reserves a missing key and leaves a filter alone', async () => {
      const cf = new CuckooFilter(r, 'k', { capacity: 5000, errorRate: 0.0001 });
      assert.equal(await cf.create(), true);
      await r.sendCommand(['CF.RESERVE', 'reference', '5000', 'ERROR', '0.0001']);
      assert.equal(await cuckooDebug(r, 'k'), await cuckooDebug(r, 'reference'));
      assert.equal(await cf.create(), false);
      assert.equal(await cf.keyType(), 'MBbloomCF');
      await r.sendCommand(['BF.ADD', 'bloom', 'x']);
      await assert.rejects(new CuckooFilter(r, 'bloom', { capacity: 1000 }).create(), (error) => {
        assert.ok(error instanceof KeyTypeError);
        assert.equal(error.message, "'bloom' holds a Bloom filter, not a cuckoo filter");
        assert.deepEqual([error.keyType, error.expected], ['MBbloom--', 'cuckoo filter']);
        return true;
      });
      await assert.rejects(new BloomFilter(r, 'k', { capacity: 1000, errorRate: 0.01 }).create(), {
        message: "'k' holds a cuckoo filter, not a Bloom filter",
      });
    });

    test('a key of another type throws', async () => {
      await r.set('text', 'v');
      const cf = new CuckooFilter(r, 'text', { capacity: 1000 });
      for (const call of [
        () => cf.add('x'),
        () => cf.addUnique('x'),
        () => cf.contains('x'),
        () => cf.delete('x'),
        () => cf.count('x'),
        () => cf.count(),
        () => cf.info(),
      ]) {
        await assert.rejects(call(), /WRONGTYPE/);
      }
      for (const batch of [
        (items) => cf.addMany(items),
        (items) => cf.containsMany(items),
        (items) => cf.deleteMany(items),
      ]) {
        await assert.rejects(
          batch(['x', 'y']),
          (error) => error instanceof BloomFilterError && error.index === 0 && error.results.length === 0,
        );
      }
      await assert.rejects(
        new CuckooFilter(r, 'text', { capacity: 1000, errorRate: null }).add('x'),
        (error) => error instanceof BloomFilterError && /WRONGTYPE/.test(error.message),
      );
      assert.equal(await r.get('text'), 'v');
    });

    test('an item that finds no room throws FilterFullError', async () => {
      // RedisBloom's kind that cannot grow: 8 slots, 1 eviction, expansion 0.
      const cf = new CuckooFilter(r, 'full', {
        capacity: 8,
        errorRate: null,
        maxIterations: 1,
        expansion: 0,
        batchSize: 100,
      });
      const items = range(40);
      const raised = await cf.addMany(items).catch((error) => error);
      assert.ok(raised instanceof FilterFullError && raised instanceof BloomFilterError);
      assert.ok(raised.index > 0 && raised.index < 9, String(raised.index));
      assert.deepEqual(raised.results, new Array(raised.index).fill(true));
      assert.ok(raised.message.startsWith('the cuckoo filter has no room for the item'));
      assert.ok((await cf.count()) <= 8);
      await assert.rejects(
        (async () => {
          for (const item of items) await cf.add(`more:${item}`);
        })(),
        FilterFullError,
      );
      assert.equal(await cf.delete(items[0]), true); // deleting makes room
      assert.equal(await cf.addUnique(items[0]), true);
      // The same item again and again: its two buckets of four hold eight copies, then no more.
      const bounded = new CuckooFilter(r, 'copies', { capacity: 1000 });
      assert.deepEqual(await bounded.addMany(new Array(8).fill('same')), new Array(8).fill(true));
      await assert.rejects(
        bounded.addMany(['other', 'same']),
        (error) => error instanceof FilterFullError && error.index === 1 && error.results[0] === true,
      );
      await assert.rejects(bounded.add('same'), FilterFullError);
      assert.equal(await bounded.addUnique('same'), false);
      assert.equal(await bounded.count('same'), 8);
    });

    test('info', async () => {
      const cf = new CuckooFilter(r, 'k', { capacity: 1000 });
      await cf.addMany(
        Array.from({ length: 5000 }, (_, i) => i),
        { unique: true },
      );
      const got = await cf.info();
      assert.deepEqual(got, await cuckooInfoOf(r, 'k'));
      assert.equal(got['Number of filters'], 3);
      assert.deepEqual(
        [got['Bucket size'], got['Expansion rate'], got['Max iterations'], got['Error rate']],
        [4, 2, 500, 0.01],
      );
      assert.ok(got['Number of items inserted'] >= 5000 * 0.99);
      const plain = new CuckooFilter(r, 'plain', { capacity: 1000, errorRate: null });
      await plain.add('x');
      assert.equal('Error rate' in (await plain.info()), false);
    });

    test('sharded deletes reach the shard that holds the item', async () => {
      const cf = new CuckooFilter(r, 'seen', {
        capacity: 4000,
        errorRate: 0.001,
        shards: 4,
        batchSize: 50,
        pipelineSize: 3,
      });
      const items = range(2000);
      const answers = await cf.addMany(items, { unique: true });
      assert.ok(answers.filter(Boolean).length >= 1990);
      const added = items.filter((_, i) => answers[i]);
      const gone = added.filter((_, i) => i % 2 === 0);
      const kept = added.filter((_, i) => i % 2 === 1);
      assert.deepEqual(await cf.deleteMany(gone), new Array(gone.length).fill(true));
      const perShard = Object.fromEntries(cf.keys.map((key) => [key, 0]));
      for (const item of gone) perShard[cf.keyOf(item)] += 1;
      for (const key of cf.keys) assert.equal((await cuckooInfoOf(r, key))['Number of items deleted'], perShard[key]);
      assert.deepEqual(await cf.containsMany(kept), new Array(kept.length).fill(true));
      assert.ok((await cf.containsMany(gone)).filter(Boolean).length <= 10);
      assert.equal(await cf.count(), kept.length);
      assert.equal(cf.keyOf('café'), cf.keyOf(Buffer.from('café')));
      assert.equal(await cf.add('café'), true);
      assert.equal(await cf.delete(Buffer.from('caf\xc3\xa9', 'latin1')), true);
      const merged = await cf.info();
      assert.deepEqual(
        [merged.Shards, merged['Number of items inserted'], merged['Number of items deleted']],
        [4, kept.length, gone.length + 1],
      );
      const again = new CuckooFilter(r, 'seen', { capacity: 50_000, errorRate: 0.001, shards: 4 });
      assert.deepEqual(await again.containsMany(kept.slice(0, 10)), new Array(10).fill(true));
      assert.equal(shardCapacity(4000, 4), 1110);
      for (const key of cf.keys) assert.equal((await cuckooDebug(r, key)).split(' ')[1], 'buckets:512');
      assert.equal(await cf.drop(), 5);
      assert.equal(await r.dbSize(), 0);
    });

    test('a sharded filter of the other kind or parameters is refused', async () => {
      assert.equal(await new BloomFilter(r, 'bloom', { capacity: 1000, errorRate: 0.01, shards: 3 }).add('x'), true);
      await assert.rejects(
        new CuckooFilter(r, 'bloom', { capacity: 1000, shards: 3 }).add('x'),
        (error) => error instanceof FilterMismatchError && /is a Bloom filter, not a cuckoo filter/.test(error.message),
      );
      assert.equal(await new CuckooFilter(r, 'cuckoo', { capacity: 1000, shards: 3 }).add('x'), true);
      await assert.rejects(
        new BloomFilter(r, 'cuckoo', { capacity: 1000, errorRate: 0.01, shards: 3 }).contains('x'),
        /is a cuckoo filter, not a Bloom filter/,
      );
      for (const [options, message] of [
        [{ shards: 4 }, /has shards 3, not 4/],
        [{ shards: 3, errorRate: 0.001 }, /error_rate 0.01, not 0.001/],
        [{ shards: 3, errorRate: null }, /error_rate 0.01, not null/],
        [{ shards: 3, expansion: 4 }, /expansion 2, not 4/],
      ]) {
        await assert.rejects(
          new CuckooFilter(r, 'cuckoo', { capacity: 1000, ...options }).delete('x'),
          (error) => error instanceof FilterMismatchError && message.test(error.message),
        );
      }
      assert.equal(await new CuckooFilter(r, 'cuckoo', { capacity: 50_000, shards: 3 }).delete('x'), true);
    });

    test('a sharded filter counts missing shards as empty', async () => {
      const cf = new CuckooFilter(r, 't', { capacity: 1000, shards: 4 });
      await assert.rejects(cf.info(), { message: 'ERR not found' });
      assert.equal(await cf.contains('absent'), false); // the manifest is written: the filter exists
      const empty = {
        Size: 0,
        'Number of buckets': 4 * 128,
        'Number of filters': 0,
        'Number of items inserted': 0,
        'Number of items deleted': 0,
        'Bucket size': 4,
        'Expansion rate': 2,
        'Max iterations': 500,
        'Error rate': 0.01,
        Shards: 4,
      };
      assert.deepEqual(await cf.info(), empty);
      assert.equal(await cf.add('x'), true);
      const shard = await cuckooInfoOf(r, cf.keyOf('x'));
      assert.deepEqual(await cf.info(), { ...shard, 'Number of buckets': 4 * 128, Shards: 4 });
      assert.equal(await cf.create(), true);
      assert.equal((await cf.info())['Number of filters'], 4);
      assert.equal(await cf.create(), false);
    });
  });
}

/** A client of a server that answers a cuckoo insert with ERROR as RedisBloom does. */
function redisBloomLike(client) {
  return {
    options: client.options,
    sendCommand(args, options) {
      if (['CF.INSERT', 'CF.INSERTNX'].includes(args[0]) && args.includes('ERROR')) {
        return Promise.reject(new SimpleError('Unknown argument received'));
      }
      return client.sendCommand(args, options);
    },
  };
}

test('a bounded filter on RedisBloom says to use errorRate: null', async () => {
  const client = await server.client();
  try {
    const fake = redisBloomLike(client);
    const expected =
      `the Redis server at 127.0.0.1:${server.port} refused the cuckoo filter's error rate (it answered: ` +
      "Unknown argument received): it has RedisBloom's cuckoo filters, which take no ERROR; use new " +
      "CuckooFilter(client, key, { capacity, errorRate: null }) for RedisBloom's kind (its false-positive " +
      'rate grows with each sub-filter), or a server with redis-bf for a bounded one';
    const live = new CuckooFilter(fake, 'sessions:live', { capacity: 1000 });
    for (const call of [
      () => live.add('s:42'),
      () => live.addUnique('s:42'),
      () => live.addMany(['s:1', 's:2']),
      () => live.addMany(['s:1'], { unique: true }),
    ]) {
      await assert.rejects(call(), (error) => {
        assert.ok(error instanceof ErrorRateUnsupportedError);
        assert.equal(error.message, expected);
        assert.deepEqual([error.results, error.index], [[], 0]);
        return true;
      });
    }
    assert.equal(await live.contains('s:42'), false); // lookups carry no ERROR
    const plain = new CuckooFilter(fake, 'sessions:plain', { capacity: 1000, errorRate: null });
    assert.deepEqual(await plain.addMany(['s:1', 's:2']), [true, true]);
    assert.equal(await plain.add('s:42'), true);
  } finally {
    await client.close();
  }
});

test('cuckoo options are checked before any command', () => {
  const client = {
    sendCommand() {
      throw new Error('nothing is sent');
    },
  };
  for (const [options, error, message] of [
    [{ capacity: 0 }, RangeError, /capacity must be from 8 to/],
    [{ capacity: 7 }, RangeError, /capacity must be from 8 to/],
    [{ capacity: 3, errorRate: null }, RangeError, /capacity must be from 4 to/],
    [{ capacity: 10, errorRate: null, bucketSize: 6 }, RangeError, /capacity must be from 12 to/],
    [{ capacity: '10' }, TypeError, /capacity must be an integer/],
    [{ capacity: 100, errorRate: 0 }, RangeError, /errorRate must be from 1e-12 up to, not including, 1/],
    [{ capacity: 100, errorRate: 1 }, RangeError, /errorRate must be from 1e-12/],
    [{ capacity: 100, errorRate: '0.01' }, TypeError, /errorRate must be a number or null/],
    [{ capacity: 100, bucketSize: 2 }, RangeError, /bucketSize goes with errorRate: null/],
    [{ capacity: 100, errorRate: null, bucketSize: 0 }, RangeError, /bucketSize must be from 1 to 255/],
    [{ capacity: 100, maxIterations: 0 }, RangeError, /maxIterations must be from 1 to 65535/],
    [{ capacity: 100, expansion: 32769 }, RangeError, /expansion must be from 0 to 32768/],
    [{ capacity: 100, window: 60 }, TypeError, /CuckooFilter has no option 'window'/],
  ]) {
    assert.throws(
      () => new CuckooFilter(client, 'k', options),
      (thrown) => thrown instanceof error && message.test(thrown.message),
      JSON.stringify(options),
    );
  }
  assert.deepEqual(new CuckooOptions({ capacity: 100 }).reserveArgs(), [
    '100',
    'MAXITERATIONS',
    '500',
    'EXPANSION',
    '2',
    'ERROR',
    '0.01',
  ]);
  assert.deepEqual(new CuckooOptions({ capacity: 100 }).insertArgs(), ['CAPACITY', '100', 'ERROR', '0.01']);
  const plain = new CuckooOptions({ capacity: 100, errorRate: null, expansion: 0 });
  assert.deepEqual(plain.reserveArgs(), ['100', 'BUCKETSIZE', '2', 'MAXITERATIONS', '20', 'EXPANSION', '0']);
  assert.equal(plain.insertArgs(), null);
});

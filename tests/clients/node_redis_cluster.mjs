// Drives redis-bf through node-redis's cluster client (`createCluster`, `cluster.bf.*` and
// `cluster.cf.*`) on a 3-primary Redis Cluster: every BF and CF command must go to the primary that
// owns its key's slot.
//
// Usage: node node_redis_cluster.mjs PORT PORT PORT   (the three primaries, each owning slots)
// Runs once in RESP2 and once in RESP3. 12 Bloom filters and 8 cuckoo filters live on each primary
// (picked by hash slot), and each primary gets the very same commands, so that every primary's INFO
// commandstats must show the same exact counts, with no command rejected and no MOVED or ASK ever
// answered: the client routed each command itself, by its key. A Bloom filter and a cuckoo filter
// are copied with SCANDUMP/LOADCHUNK (chunks as Buffers) to keys whose slots another primary owns,
// and the copies answer as the originals (CF.DEBUG and CF.COMPACT, which node-redis has no methods
// for, go through `cluster.sendCommand(key, ...)`). Exits non-zero, with the failing assertion,
// otherwise; prints "cluster: ok" at the end.
// node-redis keeps the whole error text, `ERR` included.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { createClient, createCluster, RESP_TYPES } from 'redis';

const require = createRequire(import.meta.url);
const version = require('redis/package.json').version;
const ports = process.argv.slice(2).map(Number);
assert.equal(ports.length, 3, 'three ports, one per primary');

const exitOnError = (err) => {
  console.error(err);
  process.exit(1);
};

// A plain connection to each primary, to ask it (not the client under test) what it holds.
const nodes = new Map();
for (const port of ports) {
  const node = createClient({ url: `redis://127.0.0.1:${port}` });
  node.on('error', exitOnError);
  await node.connect();
  nodes.set(port, node);
}
const first = nodes.get(ports[0]);

// Who owns which slot, as the servers say.
const ownerOfSlot = new Map();
for (const [start, end, primary] of await first.sendCommand(['CLUSTER', 'SLOTS'])) {
  for (let slot = start; slot <= end; slot++) ownerOfSlot.set(slot, primary[1]);
}
assert.equal(ownerOfSlot.size, 16384);
assert.deepEqual(new Set(ownerOfSlot.values()), new Set(ports));

const slotOf = new Map();
async function slot(key) {
  if (!slotOf.has(key)) slotOf.set(key, await first.sendCommand(['CLUSTER', 'KEYSLOT', key]));
  return slotOf.get(key);
}
const owner = async (key) => ownerOfSlot.get(await slot(key));

// `count` key names per primary, Map(port -> [names]), found by hash slot.
async function names(prefix, count) {
  const found = new Map(ports.map((port) => [port, []]));
  for (let index = 0; [...found.values()].some((keys) => keys.length < count); index++) {
    const name = `${prefix}:${index}`;
    const keys = found.get(await owner(name));
    if (keys.length < count) keys.push(name);
  }
  return found;
}

const FILTERS = await names('filter', 12);
const MISSING = await names('missing', 1);
const COPIES = await names('copy', 1);
const CUCKOOS = await names('cuckoo', 8);
const CF_COPIES = await names('cuckoo-copy', 1);
// Keys that hash to slots of different primaries: the test means nothing otherwise.
const allFilters = [...FILTERS.values()].flat();
assert.equal(new Set(await Promise.all(allFilters.map(slot))).size, 36);
const allCuckoos = [...CUCKOOS.values()].flat();
assert.equal(new Set(await Promise.all(allCuckoos.map(slot))).size, 24);

// The four ways a filter is created, by its position on its primary (each primary gets each three
// times): [capacity, expansion rate, items counted at the end].
const FORMS = [
  [1000, 2, 4],
  [100, 4, 4],
  [500, 3, 6],
  [10, null, 5],
];

// What INFO commandstats must show on every primary, per protocol run: 12 filters, 1 missing key,
// 1 copy made from it and 1 copy made to it. [calls, failed calls].
const EXPECTED_CALLS = {
  'bf.reserve': [6, 0], // forms 0 and 1
  'bf.insert': [6 + 12 + 1, 1], // forms 2 and 3, NOCREATE on each filter, and on the missing key
  'bf.add': [24, 0],
  'bf.madd': [12, 0],
  'bf.exists': [24 + 1 + 5 + 5, 0], // and the missing key, the original and the copy
  'bf.mexists': [12 + 1 + 1 + 1, 0], // and the same three
  'bf.card': [12 + 1 + 1, 0], // and the missing key and the copy
  'bf.info': [12 + 1 + 1 + 1, 1], // and the missing key, the original and the copy
  'bf.scandump': [3, 0], // header, one data chunk, the end
  'bf.loadchunk': [2, 0],
  'bf.debug': [2, 0],
  // The same for the CF commands: 8 cuckoo filters, the missing key, 1 copy made from it and 1 to
  // it.
  'cf.reserve': [4, 0], // forms 0 and 1
  'cf.insert': [2 + 8 + 1, 1], // form 2, NOCREATE on each filter, and on the missing key
  'cf.insertnx': [2 + 8 + 1, 1], // form 3, the same
  'cf.add': [16, 0],
  'cf.addnx': [16, 0],
  'cf.exists': [16 + 1 + 5 + 5, 0], // and the missing key, the original and the copy
  'cf.mexists': [8 + 1 + 1 + 1, 0], // and the same three
  'cf.count': [16 + 1 + 1 + 1, 0], // and the same three
  'cf.del': [8 + 1, 1], // and the missing key
  'cf.info': [8 + 1 + 1 + 1, 1], // and the same three
  'cf.scandump': [3, 0], // header, one data chunk, the end
  'cf.loadchunk': [2, 0],
  'cf.debug': [2, 0],
  'cf.compact': [1, 0],
};

// The four ways a cuckoo filter is created, by its position on its primary (each primary gets each
// twice): CF.INFO at the end, RedisBloom's fields in its order.
const cfInfo = (size, buckets, inserted, bucketSize, expansion, iterations) => ({
  Size: size,
  'Number of buckets': buckets,
  'Number of filters': 1,
  'Number of items inserted': inserted,
  'Number of items deleted': 1,
  'Bucket size': bucketSize,
  'Expansion rate': expansion,
  'Max iterations': iterations,
});
const CF_FORMS = [
  cfInfo(1136, 512, 4, 2, 1, 20), // CF.RESERVE key 1000
  cfInfo(1136, 256, 4, 4, 2, 15), // CF.RESERVE key 1000 BUCKETSIZE 4 MAXITERATIONS 15 EXPANSION 2
  cfInfo(624, 256, 6, 2, 1, 20), // CF.INSERT key CAPACITY 500 ITEMS p q
  cfInfo(240, 64, 5, 2, 1, 20), // CF.INSERTNX key CAPACITY 100 ITEMS p p
];

// {command: [calls, failed calls]} of the BF and CF commands, asserting none was rejected.
async function commandStats(port) {
  const stats = {};
  for (const line of (await nodes.get(port).info('commandstats')).split('\r\n')) {
    const match = /^cmdstat_((?:bf|cf)\.[a-z]+):(.*)$/.exec(line);
    if (!match) continue;
    const fields = Object.fromEntries(match[2].split(',').map((field) => field.split('=')));
    assert.equal(fields.rejected_calls, '0', `${port} ${line}`);
    stats[match[1]] = [Number(fields.calls), Number(fields.failed_calls)];
  }
  return stats;
}

async function fails(promise, message) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.message, message);
    return true;
  });
}

async function run(protocol) {
  for (const node of nodes.values()) {
    await node.flushAll();
    await node.configResetStat();
  }
  const cluster = createCluster({
    rootNodes: [{ url: `redis://127.0.0.1:${ports[0]}` }],
    RESP: protocol,
  });
  cluster.on('error', exitOnError);
  await cluster.connect();
  assert.deepEqual(new Set(cluster.masters.map((master) => master.port)), new Set(ports));
  // Binary-safe replies (SCANDUMP chunks) as Buffers, not text.
  const binary = cluster.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });

  const info = async (key) => {
    const reply = await cluster.bf.info(key);
    return reply instanceof Map ? Object.fromEntries(reply) : reply;
  };

  const sizes = new Map();
  for (const keys of FILTERS.values()) {
    for (const [position, key] of keys.entries()) {
      const form = position % 4;
      if (form === 0) {
        assert.equal(await cluster.bf.reserve(key, 0.01, 1000), 'OK');
      } else if (form === 1) {
        assert.equal(await cluster.bf.reserve(key, 0.001, 100, { EXPANSION: 4 }), 'OK');
      } else if (form === 2) {
        const options = { CAPACITY: 500, ERROR: 0.001, EXPANSION: 3 };
        assert.deepEqual(await cluster.bf.insert(key, ['p', 'q'], options), [true, true]);
      } else {
        const options = { CAPACITY: 10, NONSCALING: true };
        assert.deepEqual(await cluster.bf.insert(key, ['p'], options), [true]);
      }

      assert.equal(await cluster.bf.add(key, 'a'), true, key);
      assert.equal(await cluster.bf.add(key, 'a'), false, key);
      assert.deepEqual(await cluster.bf.mAdd(key, ['b', 'c', 'b']), [true, true, false]);
      assert.deepEqual(await cluster.bf.insert(key, ['d'], { NOCREATE: true }), [true]);

      assert.equal(await cluster.bf.exists(key, 'a'), true, key);
      assert.equal(await cluster.bf.exists(key, 'zzz'), false, key);
      assert.deepEqual(await cluster.bf.mExists(key, ['a', 'zzz', 'd']), [true, false, true]);

      const [capacity, expansion, count] = FORMS[form];
      assert.equal(await cluster.bf.card(key), count, key);
      const got = await info(key);
      assert.equal(got['Capacity'], capacity, key);
      assert.equal(got['Number of filters'], 1, key);
      assert.equal(got['Number of items inserted'], count, key);
      assert.equal(got['Expansion rate'], expansion, key);
      if (!sizes.has(form)) sizes.set(form, got['Size']);
      assert.equal(got['Size'], sizes.get(form), key);
    }
  }

  for (const [key] of MISSING.values()) {
    await fails(cluster.bf.insert(key, ['p'], { NOCREATE: true }), 'ERR not found');
    await fails(cluster.bf.info(key), 'ERR not found');
    assert.equal(await cluster.bf.exists(key, 'a'), false, key);
    assert.deepEqual(await cluster.bf.mExists(key, ['a', 'b']), [false, false]);
    assert.equal(await cluster.bf.card(key), 0, key);
  }

  // Each primary's first filter copied, chunk by chunk, to a key of the next primary.
  for (const [index, port] of ports.entries()) {
    const original = FILTERS.get(port)[0];
    const target = ports[(index + 1) % 3];
    const [copy] = COPIES.get(target);
    assert.equal(await owner(original), port);
    assert.equal(await owner(copy), target);
    const chunks = [];
    for (let iterator = 0; ; ) {
      const { iterator: next, chunk } = await binary.bf.scanDump(original, iterator);
      if (next === 0) break;
      assert.ok(Buffer.isBuffer(chunk));
      chunks.push([next, chunk]);
      iterator = next;
    }
    assert.equal(chunks.length, 2);
    assert.equal(chunks[0][0], 1);
    assert.equal(chunks[0][1].subarray(0, 8).toString(), 'redis-bf');
    for (const [iterator, chunk] of chunks) {
      assert.equal(await cluster.bf.loadChunk(copy, iterator, chunk), 'OK');
    }
    for (const item of ['a', 'b', 'c', 'd', 'zzz']) {
      assert.equal(await cluster.bf.exists(copy, item), await cluster.bf.exists(original, item));
    }
    const items = ['a', 'zzz', 'b', 'c', 'd', 'p'];
    assert.deepEqual(
      await cluster.bf.mExists(copy, items),
      await cluster.bf.mExists(original, items),
    );
    assert.equal(await cluster.bf.card(copy), 4);
    assert.deepEqual(await info(copy), await info(original));
    const debug = (key) => cluster.sendCommand(key, true, ['BF.DEBUG', key]);
    const originalLines = await debug(original);
    assert.deepEqual(await debug(copy), originalLines);
    assert.deepEqual(originalLines, [
      'size:4',
      'bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:4 ratio:0.005',
    ]);
    // The copy really is on the other primary, and only there.
    assert.equal(await nodes.get(target).exists(copy), 1);
    const inSlot = ['CLUSTER', 'COUNTKEYSINSLOT', String(await slot(copy))];
    assert.equal(await nodes.get(target).sendCommand(inSlot), 1);
  }

  const cuckooInfo = async (key) => {
    const reply = await cluster.cf.info(key);
    return reply instanceof Map ? Object.fromEntries(reply) : reply;
  };
  const expectCuckooInfo = async (key, expected) => {
    const got = await cuckooInfo(key);
    assert.deepEqual(Object.keys(got), Object.keys(expected), key);
    assert.deepEqual(got, expected, key);
  };

  for (const keys of CUCKOOS.values()) {
    for (const [position, key] of keys.entries()) {
      const form = position % 4;
      if (form === 0) {
        assert.equal(await cluster.cf.reserve(key, 1000), 'OK');
      } else if (form === 1) {
        const options = { BUCKETSIZE: 4, MAXITERATIONS: 15, EXPANSION: 2 };
        assert.equal(await cluster.cf.reserve(key, 1000, options), 'OK');
      } else if (form === 2) {
        assert.deepEqual(await cluster.cf.insert(key, ['p', 'q'], { CAPACITY: 500 }), [true, true]);
      } else {
        assert.deepEqual(await cluster.cf.insertNX(key, ['p', 'p'], { CAPACITY: 100 }), [1, 0]);
      }

      assert.equal(await cluster.cf.add(key, 'a'), true, key);
      assert.equal(await cluster.cf.add(key, 'a'), true, key); // a second copy
      assert.equal(await cluster.cf.addNX(key, 'a'), false, key);
      assert.equal(await cluster.cf.addNX(key, 'b'), true, key);
      assert.deepEqual(await cluster.cf.insert(key, ['c'], { NOCREATE: true }), [true]);
      assert.deepEqual(await cluster.cf.insertNX(key, ['c', 'd'], { NOCREATE: true }), [0, 1]);

      assert.equal(await cluster.cf.exists(key, 'a'), true, key);
      assert.equal(await cluster.cf.exists(key, 'zzz'), false, key);
      assert.deepEqual(await cluster.cf.mExists(key, ['a', 'zzz', 'd']), [true, false, true]);
      assert.equal(await cluster.cf.count(key, 'a'), 2, key);
      assert.equal(await cluster.cf.del(key, 'a'), true, key);
      assert.equal(await cluster.cf.count(key, 'a'), 1, key);
      await expectCuckooInfo(key, CF_FORMS[form]);
    }
  }

  for (const [key] of MISSING.values()) {
    await fails(cluster.cf.insert(key, ['p'], { NOCREATE: true }), 'ERR not found');
    await fails(cluster.cf.insertNX(key, ['p'], { NOCREATE: true }), 'ERR not found');
    assert.equal(await cluster.cf.exists(key, 'a'), false, key);
    assert.deepEqual(await cluster.cf.mExists(key, ['a', 'b']), [false, false]);
    assert.equal(await cluster.cf.count(key, 'a'), 0, key);
    await fails(cluster.cf.del(key, 'a'), 'ERR Not found');
    await fails(cluster.cf.info(key), 'ERR not found');
  }

  // Each primary's first cuckoo filter copied, chunk by chunk, to a key of the next primary.
  for (const [index, port] of ports.entries()) {
    const original = CUCKOOS.get(port)[0];
    const target = ports[(index + 1) % 3];
    const [copy] = CF_COPIES.get(target);
    assert.equal(await owner(original), port);
    assert.equal(await owner(copy), target);
    const chunks = [];
    for (let iterator = 0; ; ) {
      const { iterator: next, chunk } = await binary.cf.scanDump(original, iterator);
      if (next === 0) {
        assert.equal(chunk, null);
        break;
      }
      assert.ok(Buffer.isBuffer(chunk));
      chunks.push([next, chunk]);
      iterator = next;
    }
    assert.deepEqual(
      chunks.map(([iterator, chunk]) => [iterator, chunk.length]),
      [
        [1, 38],
        [1025, 1024],
      ],
    );
    for (const [iterator, chunk] of chunks) {
      assert.equal(await cluster.cf.loadChunk(copy, iterator, chunk), 'OK');
    }
    for (const item of ['a', 'b', 'c', 'd', 'zzz']) {
      assert.equal(await cluster.cf.exists(copy, item), await cluster.cf.exists(original, item));
    }
    const items = ['a', 'zzz', 'b', 'c', 'd', 'p'];
    assert.deepEqual(
      await cluster.cf.mExists(copy, items),
      await cluster.cf.mExists(original, items),
    );
    assert.equal(await cluster.cf.count(copy, 'a'), 1);
    assert.equal(await cluster.cf.count(original, 'a'), 1);
    await expectCuckooInfo(copy, CF_FORMS[0]);
    await expectCuckooInfo(original, CF_FORMS[0]);
    const debug = (key) => cluster.sendCommand(key, true, ['CF.DEBUG', key]);
    const originalLine = await debug(original);
    assert.equal(await debug(copy), originalLine);
    assert.equal(
      originalLine,
      'bktsize:2 buckets:512 items:4 deletes:1 filters:1 max_iterations:20 expansion:1',
    );
    assert.equal(await cluster.sendCommand(copy, false, ['CF.COMPACT', copy]), 'OK');
    assert.equal(await nodes.get(target).exists(copy), 1);
    const inSlot = ['CLUSTER', 'COUNTKEYSINSLOT', String(await slot(copy))];
    assert.equal(await nodes.get(target).sendCommand(inSlot), 1);
  }

  for (const port of ports) {
    const node = nodes.get(port);
    const keys = [
      ...FILTERS.get(port),
      ...COPIES.get(port),
      ...CUCKOOS.get(port),
      ...CF_COPIES.get(port),
    ];
    assert.equal(keys.length, 22);
    assert.equal(await node.dbSize(), keys.length, `${port}`);
    for (const key of keys) {
      const inSlot = ['CLUSTER', 'COUNTKEYSINSLOT', String(await slot(key))];
      assert.equal(await node.sendCommand(inSlot), 1, key);
    }
    assert.deepEqual(await commandStats(port), EXPECTED_CALLS, `RESP${protocol} ${port}`);
    const errors = await node.info('errorstats');
    assert.doesNotMatch(errors, /errorstat_(MOVED|ASK):/, `${port}`);
  }
  await cluster.close();
  console.log(`node-redis ${version}, RESP${protocol}: ok`);
}

for (const protocol of [2, 3]) await run(protocol);
for (const node of nodes.values()) await node.close();
console.log('cluster: ok');

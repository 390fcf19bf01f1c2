// Drives redis-bf through node-redis's cluster client (`createCluster`, `cluster.bf.*`) on a
// 3-primary Redis Cluster: every BF command must go to the primary that owns its key's slot.
//
// Usage: node node_redis_cluster.mjs PORT PORT PORT   (the three primaries, each owning slots)
// Runs once in RESP2 and once in RESP3. 12 filters live on each primary (picked by hash slot), and
// each primary gets the very same commands, so that every primary's INFO commandstats must show
// the same exact counts, with no command rejected and no MOVED or ASK ever answered: the client
// routed each command itself, by its key. A filter is copied with SCANDUMP/LOADCHUNK (chunks as
// Buffers) to a key whose slot another primary owns, and the copy answers as the original. Exits
// non-zero, with the failing assertion, otherwise; prints "cluster: ok" at the end.
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
// Keys that hash to slots of different primaries: the test means nothing otherwise.
const allFilters = [...FILTERS.values()].flat();
assert.equal(new Set(await Promise.all(allFilters.map(slot))).size, 36);

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
};

// {command: [calls, failed calls]} of the BF commands, asserting none was rejected.
async function commandStats(port) {
  const stats = {};
  for (const line of (await nodes.get(port).info('commandstats')).split('\r\n')) {
    const match = /^cmdstat_(bf\.[a-z]+):(.*)$/.exec(line);
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

  for (const port of ports) {
    const node = nodes.get(port);
    const keys = [...FILTERS.get(port), ...COPIES.get(port)];
    assert.equal(keys.length, 13);
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

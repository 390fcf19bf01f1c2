// Drives redis-bf's cuckoo filters through node-redis's `client.cf` commands (@redis/bloom), the
// way applications use them.
//
// Usage: node node_redis_cf.mjs PORT PROTOCOL   (PROTOCOL is 2 or 3)
// First the scenarios of node-redis's own cuckoo specs (packages/bloom/lib/commands/cuckoo/
// *.spec.ts), then every command with its options and exact replies: reserve (BUCKETSIZE,
// MAXITERATIONS, EXPANSION), add, addNX, insert and insertNX (CAPACITY, NOCREATE), exists, mExists,
// count, del, info, scanDump (binary chunks as Buffers) and loadChunk copying a grown filter to
// another key; CF.COMPACT and CF.DEBUG (no methods for them) through sendCommand; a full filter;
// what this module deliberately answers otherwise than RedisBloom, named where it is checked.
// node-redis turns the replies of CF.ADD, CF.ADDNX, CF.EXISTS and CF.DEL, and the entries of
// CF.INSERT and CF.MEXISTS, into booleans in RESP2 too; CF.INSERTNX and CF.COUNT stay integers.
// It keeps the whole error text, `ERR` included (redis-py strips it).
// Exits non-zero, with the failing assertion, if any answer is not the expected one.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { createClient, RESP_TYPES } from 'redis';

const require = createRequire(import.meta.url);
const version = require('redis/package.json').version;
const [port, protocol] = process.argv.slice(2).map(Number);

const client = createClient({ url: `redis://127.0.0.1:${port}`, RESP: protocol });
client.on('error', (err) => {
  console.error(err);
  process.exit(1);
});
await client.connect();
await client.flushAll();

// Binary-safe replies (SCANDUMP chunks) as Buffers, not text.
const binary = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

async function fails(promise, message) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.message, message);
    return true;
  });
}

// CF.INFO: an object in both protocols (RESP2's flat array made one by node-redis, RESP3's map),
// RedisBloom's eight fields in its order.
const info = async (key) => {
  const reply = await client.cf.info(key);
  return reply instanceof Map ? Object.fromEntries(reply) : reply;
};
const fields = (size, buckets, filters, inserted, deleted, bucketSize, expansion, iterations) => ({
  Size: size,
  'Number of buckets': buckets,
  'Number of filters': filters,
  'Number of items inserted': inserted,
  'Number of items deleted': deleted,
  'Bucket size': bucketSize,
  'Expansion rate': expansion,
  'Max iterations': iterations,
});
async function expectInfo(key, ...values) {
  const got = await info(key);
  const expected = fields(...values);
  assert.deepEqual(Object.keys(got), Object.keys(expected), key);
  assert.deepEqual(got, expected, key);
}

// --- node-redis's own specs, one key each as they run.
assert.equal(await client.cf.reserve('key', 4), 'OK'); // RESERVE.spec
// SCANDUMP.spec: a filter with no item dumps nothing, as RedisBloom.
assert.deepEqual(await client.cf.scanDump('key', 0), { iterator: 0, chunk: null });
assert.equal(await client.cf.del('key', 'item'), false); // DEL.spec
assert.equal(await client.cf.add('key', 'item'), true);
assert.equal(await client.cf.del('key', 'item'), true);
assert.equal(await client.cf.count('none', 'item'), 0); // COUNT.spec
assert.equal(await client.cf.exists('none', 'item'), false); // EXISTS.spec
assert.deepEqual(await client.cf.mExists('none', ['1', '2']), [false, false]); // MEXISTS.spec
await client.flushAll();
assert.equal(await client.cf.add('key', 'item'), true); // ADD.spec
await client.flushAll();
assert.equal(await client.cf.addNX('key', 'item'), true); // ADDNX.spec
assert.equal(await client.cf.addNX('key', 'item'), false);
await client.flushAll();
assert.deepEqual(await client.cf.insert('key', 'item'), [true]); // INSERT.spec
await client.flushAll();
assert.deepEqual(await client.cf.insertNX('key', 'item'), [1]); // INSERTNX.spec
await client.flushAll();
assert.equal(await client.cf.reserve('key', 100), 'OK');
assert.equal(await client.cf.add('key', 'item'), true);
assert.equal(await client.cf.exists('key', 'item'), true);
assert.equal(await client.cf.add('mExistsKey', 'item1'), true);
assert.equal(await client.cf.add('mExistsKey', 'item2'), true);
assert.deepEqual(await client.cf.mExists('mExistsKey', ['item1', 'item2', 'item3']), [
  true,
  true,
  false,
]);
// INFO.spec (pipelined with the reserve, as it runs): every field a number.
await client.flushAll();
const [, pipelined] = await Promise.all([client.cf.reserve('key', 4), client.cf.info('key')]);
for (const value of Object.values(
  pipelined instanceof Map ? Object.fromEntries(pipelined) : pipelined,
)) {
  assert.equal(typeof value, 'number');
}
await expectInfo('key', 120, 2, 1, 0, 0, 2, 1, 20);
// LOADCHUNK.spec: the first chunk (the header) of a filter holding one item loads into a new key.
await client.flushAll();
const [, , first] = await Promise.all([
  binary.cf.reserve('source', 4),
  binary.cf.add('source', 'item'),
  binary.cf.scanDump('source', 0),
]);
assert.equal(first.iterator, 1);
assert.ok(Buffer.isBuffer(first.chunk) && first.chunk.length === 38, first.chunk);
assert.equal(await client.cf.loadChunk('destination', first.iterator, first.chunk), 'OK');
await client.flushAll();

// --- reserve: each option alone and all three; again on the same key.
assert.equal(await client.cf.reserve('cuckoo', 1000), 'OK');
assert.equal(await client.cf.reserve('cuckoo_e', 1000, { EXPANSION: 1 }), 'OK');
assert.equal(await client.cf.reserve('cuckoo_bs', 1000, { BUCKETSIZE: 4 }), 'OK');
assert.equal(await client.cf.reserve('cuckoo_mi', 1000, { MAXITERATIONS: 10 }), 'OK');
const all = { BUCKETSIZE: 4, MAXITERATIONS: 15, EXPANSION: 2 };
assert.equal(await client.cf.reserve('all', 1000, all), 'OK');
await expectInfo('cuckoo', 1136, 512, 1, 0, 0, 2, 1, 20);
await expectInfo('cuckoo_e', 1136, 512, 1, 0, 0, 2, 1, 20);
await expectInfo('cuckoo_bs', 1136, 256, 1, 0, 0, 4, 1, 20);
await expectInfo('cuckoo_mi', 1136, 512, 1, 0, 0, 2, 1, 10);
await expectInfo('all', 1136, 256, 1, 0, 0, 4, 2, 15);
await fails(client.cf.reserve('cuckoo', 1000), 'ERR item exists');
await fails(client.cf.reserve('tiny', 1), 'ERR Capacity must be at least (BucketSize * 2)');

// --- add / addNX / insert / insertNX (redis-py's test_cf_add_and_insert, through node-redis).
assert.equal(await client.cf.add('cuckoo', 'filter'), true);
assert.equal(await client.cf.addNX('cuckoo', 'filter'), false);
assert.equal(await client.cf.addNX('cuckoo', 'newItem'), true);
assert.deepEqual(await client.cf.insert('captest', ['foo']), [true]);
assert.deepEqual(await client.cf.insert('captest', ['foo'], { CAPACITY: 1000 }), [true]);
assert.deepEqual(await client.cf.insertNX('captest', ['bar']), [1]);
assert.deepEqual(await client.cf.insertNX('captest', ['food'], { NOCREATE: true }), [1]);
assert.deepEqual(await client.cf.insertNX('captest', ['foo', 'bar', 'baz']), [0, 0, 1]);
assert.deepEqual(await client.cf.insertNX('captest', ['bar'], { CAPACITY: 1000 }), [0]);
assert.deepEqual(await client.cf.insert('empty1', ['foo'], { CAPACITY: 1000 }), [true]);
assert.deepEqual(await client.cf.insertNX('empty2', ['bar'], { CAPACITY: 1000 }), [1]);
await expectInfo('captest', 1136, 512, 1, 5, 0, 2, 1, 20);
await expectInfo('cuckoo', 1136, 512, 1, 2, 0, 2, 1, 20);
// Both options; CAPACITY is ignored for a key that exists.
assert.deepEqual(await client.cf.insert('made', ['p', 'q', 'p'], { CAPACITY: 100 }), [
  true,
  true,
  true,
]);
await expectInfo('made', 240, 64, 1, 3, 0, 2, 1, 20);
const both = { CAPACITY: 5000, NOCREATE: true };
assert.deepEqual(await client.cf.insert('made', ['r'], both), [true]);
assert.deepEqual(await client.cf.insertNX('made', ['r', 's'], both), [0, 1]);
await expectInfo('made', 240, 64, 1, 5, 0, 2, 1, 20);
assert.deepEqual(await client.cf.insertNX('made-nx', ['p', 'p', 'q'], { CAPACITY: 500 }), [
  1, 0, 1,
]);
await expectInfo('made-nx', 624, 256, 1, 2, 0, 2, 1, 20);
await fails(client.cf.insert('nowhere', ['p'], { NOCREATE: true }), 'ERR not found');
await fails(client.cf.insertNX('nowhere', ['p'], both), 'ERR not found');

// --- exists / mExists / count / del (redis-py's test_cf_exists_and_del, and copies).
assert.equal(await client.cf.exists('cuckoo', 'filter'), true);
assert.equal(await client.cf.exists('cuckoo', 'notexist'), false);
assert.deepEqual(await client.cf.mExists('cuckoo', ['filter', 'notexist', 'newItem']), [
  true,
  false,
  true,
]);
assert.equal(await client.cf.count('cuckoo', 'filter'), 1);
assert.equal(await client.cf.count('cuckoo', 'notexist'), 0);
assert.equal(await client.cf.count('made', 'p'), 2);
assert.equal(await client.cf.del('cuckoo', 'filter'), true);
assert.equal(await client.cf.del('cuckoo', 'filter'), false);
assert.equal(await client.cf.count('cuckoo', 'filter'), 0);
assert.equal(await client.cf.del('made', 'p'), true);
assert.equal(await client.cf.count('made', 'p'), 1);
await expectInfo('made', 240, 64, 1, 4, 1, 2, 1, 20);

// --- a missing key (RedisBloom's texts: CF.DEL's is "Not found").
assert.equal(await client.cf.exists('nowhere', 'a'), false);
assert.deepEqual(await client.cf.mExists('nowhere', ['a', 'b']), [false, false]);
assert.equal(await client.cf.count('nowhere', 'a'), 0);
await fails(client.cf.del('nowhere', 'a'), 'ERR Not found');
await fails(client.cf.info('nowhere'), 'ERR not found');
await fails(client.cf.scanDump('nowhere', 0), 'ERR not found');
assert.equal(await client.exists('nowhere'), 0);

// --- a full filter (EXPANSION 0 never grows). CF.INSERT answers -1 per item refused in RESP2,
// which node-redis turns into false (RESP3 answers false itself): the same either way, and never
// an answer CF.INSERT gives otherwise. CF.INSERTNX keeps its -1.
assert.equal(await client.cf.reserve('full', 4, { EXPANSION: 0 }), 'OK');
for (let i = 0; i < 4; i++) assert.equal(await client.cf.add('full', `f${i}`), true);
for (let i = 4; i < 8; i++) await fails(client.cf.add('full', `f${i}`), 'ERR Filter is full');
assert.deepEqual(await client.cf.insert('full', ['z1', 'z2']), [false, false]);
assert.deepEqual(await client.cf.insertNX('full', ['z1', 'f0']), [-1, 0]);
const rawInsert = await client.sendCommand(['CF.INSERT', 'full', 'ITEMS', 'z1']);
assert.deepEqual(rawInsert, protocol === 3 ? [false] : [-1]);
await expectInfo('full', 120, 2, 1, 4, 0, 2, 0, 20);

// --- scanDump / loadChunk: a filter grown to three sub-filters, copied chunk by chunk.
assert.equal(await client.cf.reserve('grown', 64, { BUCKETSIZE: 4, EXPANSION: 2 }), 'OK');
for (let i = 0; i < 300; i++) assert.equal(await client.cf.add('grown', `item:${i}`), true);
for (let i = 0; i < 300; i += 3) assert.equal(await client.cf.del('grown', `item:${i}`), true);
// RedisBloom's compaction ran inside the deletes (CF.DEL compacts a filter of several sub-filters
// once its deletes outnumber a tenth of its items): 3 deletes left counted.
await expectInfo('grown', 640, 16, 3, 200, 3, 4, 2, 20);
// CF.COMPACT and CF.DEBUG: node-redis has no methods for them.
assert.equal(await client.sendCommand(['CF.COMPACT', 'grown']), 'OK');
await expectInfo('grown', 640, 16, 3, 200, 0, 4, 2, 20);
const chunks = [];
for (let iterator = 0; ; ) {
  const { iterator: next, chunk } = await binary.cf.scanDump('grown', iterator);
  if (next === 0) {
    assert.equal(chunk, null);
    break;
  }
  assert.ok(Buffer.isBuffer(chunk));
  chunks.push([next, chunk]);
  iterator = next;
}
// the header (38 bytes, RedisBloom's), then each sub-filter's buckets
assert.deepEqual(
  chunks.map(([iterator, chunk]) => [iterator, chunk.length]),
  [
    [1, 38],
    [65, 64],
    [193, 128],
    [449, 256],
  ],
);
for (const [iterator, chunk] of chunks) {
  assert.equal(await client.cf.loadChunk('grown-copy', iterator, chunk), 'OK');
}
await expectInfo('grown-copy', 640, 16, 3, 200, 0, 4, 2, 20);
const debug = (key) => client.sendCommand(['CF.DEBUG', key]);
const lines = await debug('grown');
assert.equal(
  lines,
  'bktsize:4 buckets:16 items:200 deletes:0 filters:3 max_iterations:20 expansion:2',
);
assert.equal(await debug('grown-copy'), lines);
assert.equal(
  await client.sendCommand(['DEBUG', 'DIGEST-VALUE', 'grown-copy']).then(String),
  await client.sendCommand(['DEBUG', 'DIGEST-VALUE', 'grown']).then(String),
);
const items = Array.from({ length: 300 }, (_, i) => `item:${i}`);
const found = await client.cf.mExists('grown-copy', items);
assert.deepEqual(found, await client.cf.mExists('grown', items));
assert.deepEqual(
  found.filter((_, i) => i % 3),
  Array(200).fill(true),
);
for (const item of ['item:1', 'item:2', 'item:299', 'nope']) {
  assert.equal(await client.cf.exists('grown-copy', item), await client.cf.exists('grown', item));
  assert.equal(await client.cf.count('grown-copy', item), await client.cf.count('grown', item));
}

// --- Where this module answers otherwise than RedisBloom, on purpose.
assert.equal(await client.set('string', 'x'), 'OK');
assert.equal(await client.bf.add('bloom', 'x'), true);
for (const key of ['string', 'bloom']) {
  // A key of another type, a Bloom filter's included: WRONGTYPE for lookups too (RedisBloom
  // answers 0/false for CF.EXISTS, CF.MEXISTS and CF.COUNT, and "Not found" for CF.DEL).
  await fails(client.cf.exists(key, 'a'), WRONGTYPE);
  await fails(client.cf.mExists(key, ['a', 'b']), WRONGTYPE);
  await fails(client.cf.count(key, 'a'), WRONGTYPE);
  await fails(client.cf.del(key, 'a'), WRONGTYPE);
  await fails(client.cf.add(key, 'a'), WRONGTYPE);
  await fails(client.cf.insertNX(key, ['a']), WRONGTYPE);
  await fails(client.cf.info(key), WRONGTYPE);
}
// One item's two buckets hold four copies of it (bucket size 2): a fifth CF.ADD is refused
// (RedisBloom answers true and adds a sub-filter each time, growing without end).
assert.equal(await client.cf.reserve('copies', 1024, { EXPANSION: 2 }), 'OK');
for (let i = 0; i < 4; i++) assert.equal(await client.cf.add('copies', 'same'), true);
await fails(
  client.cf.add('copies', 'same'),
  'ERR item added too many times: its buckets hold nothing but copies of it ' +
    '(delete some, or add it with CF.ADDNX)',
);
assert.equal(await client.cf.count('copies', 'same'), 4);
assert.equal(await client.cf.addNX('copies', 'same'), false);
assert.deepEqual(await client.cf.insertNX('copies', ['same']), [0]);
await expectInfo('copies', 1136, 512, 1, 4, 0, 2, 2, 20);
// Error texts: every one starts with a code here. RedisBloom sends some without (CF.DEL's
// "Not found", CF.ADD's "Filter is full", "Maximum expansions reached", CF.COMPACT's "Cuckoo filter
// was not found"), and node-redis shows the text as it came: `ERR Not found` here.
await fails(client.sendCommand(['CF.COMPACT', 'nowhere']), 'ERR Cuckoo filter was not found');

await client.quit();
console.log(`node-redis ${version}, RESP${protocol}: ok`);

// Drives redis-bf through node-redis's `client.bf` commands (@redis/bloom), the way applications
// use them.
//
// Usage: node node_redis_bf.mjs PORT PROTOCOL   (PROTOCOL is 2 or 3)
// Exits non-zero, with the failing assertion, if any answer is not what RedisBloom would give.
// node-redis keeps the whole error text, `ERR` included (redis-py strips it).

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

async function fails(promise, message) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.message, message);
    return true;
  });
}

// reserve, in its three forms
assert.equal(await client.bf.reserve('urls', 0.01, 1000), 'OK');
assert.equal(await client.bf.reserve('wide', 0.001, 100, { EXPANSION: 4 }), 'OK');
assert.equal(await client.bf.reserve('fixed', 0.01, 2, { NONSCALING: true }), 'OK');
await fails(client.bf.reserve('urls', 0.01, 1000), 'ERR item exists');

// add / madd
assert.equal(await client.bf.add('urls', 'https://example.com/'), true);
assert.equal(await client.bf.add('urls', 'https://example.com/'), false);
assert.deepEqual(await client.bf.mAdd('urls', ['a', 'b', 'a']), [true, true, false]);

// a full non-scaling filter: the reply ends with the error element
const full = await client.sendCommand(['BF.MADD', 'fixed', 'x', 'y', 'z']);
assert.equal(full.length, 3);
assert.equal(full[2].message, 'ERR non scaling filter is full');
// bf.mAdd itself: in RESP3 the error element stays an error; in RESP2 node-redis turns every
// element into a boolean, so the error reads as false, "seen before" (docs/commands.md warns of it).
assert.equal(await client.bf.reserve('fixed2', 0.01, 2, { NONSCALING: true }), 'OK');
const typed = await client.bf.mAdd('fixed2', ['x', 'y', 'z']);
assert.equal(typed.length, 3);
if (protocol === 2) {
  assert.deepEqual(typed, [true, true, false]);
} else {
  assert.deepEqual(typed.slice(0, 2), [true, true]);
  assert.equal(typed[2].message, 'ERR non scaling filter is full');
}

// insert, with options, and NOCREATE
assert.deepEqual(
  await client.bf.insert('inserted', ['p', 'q'], { CAPACITY: 500, ERROR: 0.001, EXPANSION: 3 }),
  [true, true],
);
assert.deepEqual(
  await client.bf.insert('inserted-fixed', ['p'], { CAPACITY: 10, NONSCALING: true }),
  [true],
);
await fails(client.bf.insert('nowhere', ['p'], { NOCREATE: true }), 'ERR not found');

// exists / mexists
assert.equal(await client.bf.exists('urls', 'https://example.com/'), true);
assert.equal(await client.bf.exists('urls', 'https://example.org/'), false);
assert.equal(await client.bf.exists('missing', 'a'), false);
assert.deepEqual(await client.bf.mExists('urls', ['a', 'zzz', 'b']), [true, false, true]);

// info and card
const info = async (key) => {
  const reply = await client.bf.info(key);
  return reply instanceof Map ? Object.fromEntries(reply) : reply;
};
const urls = await info('urls');
assert.deepEqual(Object.keys(urls), [
  'Capacity',
  'Size',
  'Number of filters',
  'Number of items inserted',
  'Expansion rate',
]);
assert.equal(urls['Capacity'], 1000);
assert.equal(urls['Number of filters'], 1);
assert.equal(urls['Number of items inserted'], 3);
assert.equal(urls['Expansion rate'], 2);
assert.ok(urls['Size'] > (1000 * 11) / 8);
assert.equal((await info('wide'))['Expansion rate'], 4);
assert.equal((await info('fixed'))['Expansion rate'], null);
assert.equal((await info('inserted'))['Capacity'], 500);
assert.equal((await info('inserted'))['Expansion rate'], 3);
assert.equal(await client.bf.card('urls'), 3);
assert.equal(await client.bf.card('missing'), 0);

// scandump / loadchunk: copy a filter chunk by chunk
const chunks = [];
for (let iterator = 0; ; ) {
  const { iterator: next, chunk } = await binary.bf.scanDump('urls', iterator);
  if (next === 0) break;
  assert.ok(Buffer.isBuffer(chunk));
  chunks.push([next, chunk]);
  iterator = next;
}
assert.equal(chunks[0][0], 1);
assert.equal(chunks[0][1].subarray(0, 8).toString(), 'redis-bf');
for (const [iterator, chunk] of chunks) {
  assert.equal(await client.bf.loadChunk('urls-copy', iterator, chunk), 'OK');
}
assert.deepEqual(await info('urls-copy'), urls);
assert.equal(await client.bf.exists('urls-copy', 'https://example.com/'), true);
assert.equal(
  await client.sendCommand(['DEBUG', 'DIGEST-VALUE', 'urls-copy']).then(String),
  await client.sendCommand(['DEBUG', 'DIGEST-VALUE', 'urls']).then(String),
);

await client.quit();
console.log(`node-redis ${version}, RESP${protocol}: ok`);

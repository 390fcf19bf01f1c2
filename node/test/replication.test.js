// waitForReplicas on one primary with one replica: an answer is confirmed only once the replica
// has every write up to it, other clients' writes included; for a Bloom filter and for a cuckoo
// filter (its deletes too), one key or sharded, through a client and a client pool.
//
// Redis 7.2 and newer (and Valkey) make WAIT wait for the offset of the connection's own last
// propagated write, and an insert of an item the filter holds propagates nothing: the marker
// write after every batch makes the WAIT cover the writes before it. The replica is frozen
// (SIGSTOP) to hold another client's write back deterministically.

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createClientPool } from 'redis';

import { BloomFilter, CuckooFilter, NotReplicatedError } from '../lib/index.js';
import { eventually, sleep } from './harness/helpers.js';
import { RedisServer } from './harness/servers.js';

const primary = new RedisServer('replication-primary', { args: ['--repl-diskless-sync-delay', '0'] });
const replica = new RedisServer('replication-replica');
let admin;

before(async () => {
  await primary.start();
  replica.args = ['--replicaof', '127.0.0.1', String(primary.port)];
  await replica.start();
  admin = await primary.client();
  const deadline = Date.now() + 20_000;
  while ((await admin.sendCommand(['WAIT', '1', '100'])) !== 1) {
    assert.ok(Date.now() < deadline, 'the replica did not sync in 20 s');
  }
});
after(async () => {
  if (replica.alive) replica.freeze(false);
  await admin?.close();
  await replica.stop();
  await primary.stop();
});
beforeEach(() => admin.flushAll());

/** The replica frozen while `body` runs. */
async function replicaStopped(body) {
  replica.freeze(true);
  try {
    return await body();
  } finally {
    replica.freeze(false);
  }
}

/** What NotReplicatedError says when the replica did not confirm within 200 ms. */
function unconfirmed(answers) {
  return (
    `the writes were applied on the primary at 127.0.0.1:${primary.port} (the ${answers} answer(s) in .results ` +
    'stand there), but 0 of the 1 replica(s) asked confirmed them, and every write before them, within 200 ms ' +
    '(WAIT 1): they may be lost if that primary fails now'
  );
}

async function unconfirmedWith(call, results) {
  await assert.rejects(call(), (error) => {
    assert.ok(error instanceof NotReplicatedError, String(error));
    assert.deepEqual(error.results, results);
    assert.deepEqual([error.confirmed, error.asked, error.address], [0, 1, `127.0.0.1:${primary.port}`]);
    assert.equal(error.message, unconfirmed(results.length));
    return true;
  });
}

/** Asked of the replica itself, once it has caught up. */
async function heldByReplica(command, key, items) {
  const client = await replica.client();
  try {
    return (await client.sendCommand([command, key, ...items])).map(Boolean);
  } finally {
    await client.close();
  }
}

for (const shards of [null, 4]) {
  describe(shards === null ? 'one key' : `${shards} shards`, () => {
    const clients = [];
    const client = async (options) => {
      const made = await primary.client(options);
      clients.push(made);
      return made;
    };
    after(() => Promise.all(clients.map((made) => made.close())));

    test('an add that finds the item waits for the write that put it there', async () => {
      const other = new BloomFilter(await client(), 'seen', { capacity: 1000, errorRate: 0.01, shards });
      const settings = { capacity: 1000, errorRate: 0.01, shards, waitForReplicas: 1 };
      const mine = new BloomFilter(await client({ RESP: 3 }), 'seen', { ...settings, waitTimeout: 200 });
      await eventually(() => mine.add('before'), NotReplicatedError);
      await replicaStopped(async () => {
        assert.equal(await other.add('x'), true); // another client's write, held back from the replica
        await unconfirmedWith(() => mine.add('x'), [false]);
        await unconfirmedWith(() => mine.addMany(['x', 'before', 'y']), [false, false, true]);
        await unconfirmedWith(() => mine.create(), []);
      });
      const patient = new BloomFilter(await client(), 'seen', { ...settings, waitTimeout: 10_000 });
      assert.equal(await patient.add('x'), false); // confirmed now: the replica has it
      assert.deepEqual(await patient.addMany(['x', 'y', 'z']), [false, false, true]);
      if (shards === null)
        assert.deepEqual(await heldByReplica('BF.MEXISTS', 'seen', ['before', 'x', 'y', 'z']), [
          true,
          true,
          true,
          true,
        ]);
      // The write each WAIT covers leaves nothing behind.
      assert.deepEqual(new Set(await admin.keys('*')), new Set(shards === null ? ['seen'] : ['seen', ...mine.keys]));
    });

    test("a cuckoo filter's adds and deletes wait for every write before them", async () => {
      const other = new CuckooFilter(await client(), 'seen', { capacity: 1000, shards });
      const settings = { capacity: 1000, shards, waitForReplicas: 1 };
      const mine = new CuckooFilter(await client({ RESP: 3 }), 'seen', { ...settings, waitTimeout: 200 });
      await eventually(() => mine.addUnique('before'), NotReplicatedError);
      await replicaStopped(async () => {
        assert.equal(await other.addUnique('x'), true);
        await unconfirmedWith(() => mine.addUnique('x'), [false]);
        await unconfirmedWith(() => mine.addMany(['x', 'y'], { unique: true }), [false, true]);
        await unconfirmedWith(() => mine.delete('never-added'), [false]);
        await unconfirmedWith(() => mine.deleteMany(['never-added']), [false]);
        await unconfirmedWith(() => mine.create(), []);
      });
      const patient = new CuckooFilter(await client(), 'seen', { ...settings, waitTimeout: 10_000 });
      assert.equal(await patient.addUnique('x'), false);
      assert.equal(await patient.delete('y'), true);
      assert.deepEqual(await patient.addMany(['x', 'z'], { unique: true }), [false, true]);
      if (shards === null)
        assert.deepEqual(await heldByReplica('CF.MEXISTS', 'seen', ['before', 'x', 'y', 'z']), [
          true,
          true,
          false,
          true,
        ]);
      // RedisBloom's kind: its reserve, its NOCREATE insert and the marker, then the WAIT.
      const plain = new CuckooFilter(await client(), 'plain', {
        capacity: 1000,
        errorRate: null,
        waitForReplicas: 1,
        waitTimeout: 10_000,
      });
      assert.equal(await plain.add('a'), true);
      assert.equal(await plain.delete('a'), true);
      assert.equal(await plain.add('b'), true);
      assert.deepEqual(await heldByReplica('CF.MEXISTS', 'plain', ['a', 'b']), [false, true]);
      assert.deepEqual(
        new Set(await admin.keys('*')),
        new Set(['seen', 'plain', ...(shards === null ? [] : mine.keys)]),
      );
    });
  });
}

test('a client pool sends each batch and its WAIT on one of its connections', async () => {
  const pool = createClientPool({ url: primary.url }, { minimum: 3, maximum: 3 });
  pool.on('error', () => {});
  await pool.connect();
  try {
    const mine = new BloomFilter(pool, 'pooled', {
      capacity: 1000,
      errorRate: 0.01,
      waitForReplicas: 1,
      waitTimeout: 200,
    });
    await eventually(() => mine.addMany(['before']), NotReplicatedError);
    const other = new BloomFilter(admin, 'pooled', { capacity: 1000, errorRate: 0.01 });
    await replicaStopped(async () => {
      assert.equal(await other.add('x'), true);
      // Busy connections beside it change nothing: each batch's WAIT follows its own writes.
      const busy = Array.from({ length: 4 }, () => pool.sendCommand(['PING']));
      await unconfirmedWith(() => mine.addMany(['x', 'y']), [false, true]);
      await Promise.all(busy);
    });
    await sleep(50);
    const patient = new BloomFilter(pool, 'pooled', {
      capacity: 1000,
      errorRate: 0.01,
      waitForReplicas: 1,
      waitTimeout: 10_000,
    });
    assert.deepEqual(await patient.addMany(['x', 'y', 'z']), [false, false, true]);
  } finally {
    await pool.close();
  }
});

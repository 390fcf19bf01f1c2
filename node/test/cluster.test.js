// One filter over a real Redis Cluster (three primaries, a replica each, test/harness/servers.js),
// as python/tests/test_cluster.py: a million items through twelve shards, four on each primary;
// info and create while shards are missing; one key through the cluster client; a cuckoo filter
// sharded over it, its deletes reaching each item's shard; an add that finds the item waits on
// its own node for the write that put it there; and a primary killed under a stream of
// acknowledged, replicated adds, every one of them found after the failover.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { BloomFilter, CuckooFilter, NotReplicatedError } from '../lib/index.js';
import { keySlot, shardCapacity } from '../lib/shards.js';
import { bloomInfo, cuckooInfoOf, eventually } from './harness/helpers.js';
import { RedisCluster } from './harness/servers.js';

const cluster = new RedisCluster('node-cluster');
let client;
before(async () => {
  await cluster.start();
  client = await cluster.client();
});
after(async () => {
  for (const node of cluster.nodes) if (node.alive) node.freeze(false);
  await client?.close().catch(() => {});
  await cluster.stop();
});

const range = (n, name) => Array.from({ length: n }, (_, i) => `${name}${i}`);

/** A connected client of one node, for `body`. */
async function direct(node, body) {
  const connection = await node.client();
  try {
    return await body(connection);
  } finally {
    await connection.close();
  }
}

/** How many of `keys` each primary holds (asked directly), primaries in slot order. */
async function shardsPerMaster(keys) {
  const counts = [];
  for (const master of await cluster.masters()) {
    counts.push(
      await direct(master, async (node) => {
        let held = 0;
        for (const key of keys) {
          if ((await cluster.masterOfSlot(keySlot(key))) === master) held += await node.exists(key);
        }
        return held;
      }),
    );
  }
  return counts;
}

/** The node frozen while `body` runs. */
async function frozen(node, body) {
  node.freeze(true);
  try {
    return await body();
  } finally {
    node.freeze(false);
  }
}

test('a million items through twelve shards, four on each primary', async () => {
  const bf = new BloomFilter(client, 'crawl', { capacity: 1_000_000, errorRate: 0.001, shards: 12 });
  const items = range(1_000_000, 'https://example.com/page/');
  const started = Date.now();
  const added = await bf.addMany(items);
  const seconds = (Date.now() - started) / 1000;
  const fresh = added.filter(Boolean).length;
  assert.ok(fresh > 999_000, String(fresh)); // an add answers "seen" only on a false positive
  assert.ok((await bf.containsMany(items)).every(Boolean)); // no false negative
  const falsePositives = (await bf.containsMany(range(200_000, 'https://example.org/other/'))).filter(Boolean).length;
  assert.ok(falsePositives <= 220, String(falsePositives)); // at most 0.11%
  const count = await bf.count();
  assert.equal(count, fresh);
  const info = await bf.info();
  assert.equal(info.Shards, 12);
  assert.equal(info['Number of items inserted'], count);
  assert.equal(info.Capacity, 12 * shardCapacity(1_000_000, 12));
  assert.equal(info['Number of filters'], 12); // no shard had to grow
  assert.deepEqual(await shardsPerMaster(bf.keys), [4, 4, 4]);
  // Memory as one filter's: the shards' bits against one filter of the same parameters.
  await client.sendCommand('one', false, ['BF.RESERVE', 'one', '0.001', '1000000']);
  const one = (await client.sendCommand('one', true, ['BF.INFO', 'one'])).at(3); // RESP2: name, value...
  assert.ok(info.Size / one >= 1 && info.Size / one < 1.03, `${info.Size} / ${one}`);
  console.log(`12 shards: ${fresh} new of 1,000,000 in ${seconds} s, ${falsePositives} false positives of 200,000`);
  assert.equal(await bf.drop(), 13);
});

test('info and create while shards are missing', async () => {
  const bf = new BloomFilter(client, 't:seen', { capacity: 1000, errorRate: 0.01, shards: 12 });
  assert.equal(await bf.add('x'), true);
  const owner = await cluster.masterOfSlot(keySlot(bf.keyOf('x')));
  const shard = await direct(owner, (node) => bloomInfo(node, bf.keyOf('x')));
  assert.equal(await bf.count(), 1);
  const expected = {
    Capacity: 12 * shardCapacity(1000, 12),
    Size: shard.Size,
    'Number of filters': 1,
    'Number of items inserted': 1,
    'Expansion rate': 2,
    Shards: 12,
  };
  assert.deepEqual(await bf.info(), expected);
  assert.equal(await bf.create(), true);
  assert.deepEqual(await bf.info(), { ...expected, Size: 12 * shard.Size, 'Number of filters': 12 });
  assert.equal(await bf.create(), false);
  assert.equal(await bf.drop(), 13);
});

test('one key through the cluster client, on the primary of its slot (RESP3)', async () => {
  const resp3 = await cluster.client({ RESP: 3 });
  try {
    const bf = new BloomFilter(resp3, 'single', { capacity: 10_000, errorRate: 0.001, window: 3600, batchSize: 100 });
    assert.equal(await bf.create(), true);
    const items = range(1000, 'item:');
    assert.deepEqual(await bf.addMany(items), new Array(1000).fill(true));
    assert.equal(await bf.add('item:0'), false);
    assert.deepEqual([await bf.contains('item:999'), await bf.contains('absent')], [true, false]);
    assert.equal(await bf.count(), 1000);
    assert.equal((await bf.info()).Window, 3600);
    const owner = await cluster.masterOfSlot(keySlot('single'));
    assert.equal(await direct(owner, (node) => node.sendCommand(['BF.CARD', 'single'])), 1000);
    const waiting = new BloomFilter(resp3, 'single', {
      capacity: 10_000,
      errorRate: 0.001,
      window: 3600,
      waitForReplicas: 1,
      waitTimeout: 5000,
    });
    assert.deepEqual(await waiting.addMany(['item:0', 'new']), [false, true]);
    assert.equal(await waiting.count(), 1001);
    assert.equal(await waiting.drop(), 1);
  } finally {
    await resp3.close();
  }
});

test("a cuckoo filter sharded over the cluster deletes on each item's shard", async () => {
  const cf = new CuckooFilter(client, 'cf', { capacity: 100_000, errorRate: 0.001, shards: 12 });
  const items = range(50_000, 'https://example.com/page/');
  const answers = await cf.addMany(items, { unique: true });
  assert.ok(answers.filter(Boolean).length >= 49_950);
  const added = items.filter((_, i) => answers[i]);
  const gone = added.filter((_, i) => i % 2 === 0);
  const kept = added.filter((_, i) => i % 2 === 1);
  assert.ok((await cf.deleteMany(gone)).every(Boolean));
  assert.ok((await cf.containsMany(kept)).every(Boolean));
  assert.ok((await cf.containsMany(gone)).filter(Boolean).length <= 50);
  assert.equal(await cf.count(), kept.length);
  const expected = Object.fromEntries(cf.keys.map((key) => [key, 0]));
  for (const item of gone) expected[cf.keyOf(item)] += 1;
  for (const key of cf.keys) {
    const owner = await cluster.masterOfSlot(keySlot(key));
    assert.equal(
      (await direct(owner, (node) => cuckooInfoOf(node, key)))['Number of items deleted'],
      expected[key],
      key,
    );
  }
  assert.deepEqual(await shardsPerMaster(cf.keys), [4, 4, 4]);
  assert.equal((await cf.info())['Number of items deleted'], gone.length);
  // A delete that deletes nothing waits for what its node wrote before it.
  const owner = await cluster.masterOfSlot(keySlot(cf.keyOf(kept[0])));
  const [replica] = await cluster.replicasOf(owner);
  const waiting = new CuckooFilter(client, 'cf', {
    capacity: 100_000,
    errorRate: 0.001,
    shards: 12,
    waitForReplicas: 1,
    waitTimeout: 200,
  });
  await eventually(() => waiting.addUnique(kept[0]), NotReplicatedError);
  await frozen(replica, async () => {
    assert.equal(await cf.delete(kept[0]), true); // another client's write, held back
    await assert.rejects(waiting.delete(kept[0]), (error) => {
      assert.ok(error instanceof NotReplicatedError, String(error));
      assert.deepEqual([error.results, error.address], [[false], `127.0.0.1:${owner.port}`]);
      return true;
    });
  });
  const patient = new CuckooFilter(client, 'cf', {
    capacity: 100_000,
    errorRate: 0.001,
    shards: 12,
    waitForReplicas: 1,
    waitTimeout: 5000,
  });
  const three = kept.slice(1, 4);
  assert.deepEqual(await patient.deleteMany(three), [true, true, true]);
  assert.deepEqual(await patient.containsMany(three), [false, false, false]);
  assert.deepEqual(await patient.addMany(three, { unique: true }), [true, true, true]);
  assert.equal(await patient.count(), kept.length - 1);
  assert.equal(await patient.drop(), 13);
});

test('an add that finds the item waits on its own node for the write that put it there', async () => {
  const resp3 = await cluster.client({ RESP: 3 });
  try {
    for (const [key, shards] of [
      ['single', null],
      ['sharded', 6],
    ]) {
      const other = new BloomFilter(client, key, { capacity: 1000, errorRate: 0.01, shards });
      const mine = new BloomFilter(resp3, key, {
        capacity: 1000,
        errorRate: 0.01,
        shards,
        waitForReplicas: 1,
        waitTimeout: 200,
      });
      await eventually(() => mine.add('before'), NotReplicatedError);
      const owner = await cluster.masterOfSlot(keySlot(mine.keyOf('x')));
      const [replica] = await cluster.replicasOf(owner);
      // An item on another primary (sharded), or on the same key.
      let elsewhere = 'y0';
      for (let i = 0; shards !== null && (await cluster.masterOfSlot(keySlot(mine.keyOf(elsewhere)))) === owner; i++)
        elsewhere = `y${i}`;
      await frozen(replica, async () => {
        assert.equal(await other.add('x'), true);
        for (const [call, results] of [
          [() => mine.add('x'), [false]],
          [() => mine.addMany(['x', elsewhere]), [false, true]],
        ]) {
          await assert.rejects(call(), (error) => {
            assert.ok(error instanceof NotReplicatedError, String(error));
            assert.deepEqual(error.results, results);
            assert.equal(error.address, `127.0.0.1:${owner.port}`);
            assert.equal(
              error.message,
              `the writes were applied on the primary at 127.0.0.1:${owner.port} (the ${results.length} answer(s) in ` +
                '.results stand there), but 0 of the 1 replica(s) asked confirmed them, and every write before them, ' +
                'within 200 ms (WAIT 1): they may be lost if that primary fails now',
            );
            return true;
          });
        }
      });
      const patient = new BloomFilter(client, key, {
        capacity: 1000,
        errorRate: 0.01,
        shards,
        waitForReplicas: 1,
        waitTimeout: 10_000,
      });
      assert.deepEqual(await patient.addMany(['x', elsewhere, 'z']), [false, false, true]);
      await patient.drop();
    }
  } finally {
    await resp3.close();
  }
});

// Last: it kills a primary, and the cluster stays with one primary that has no replica.
test('adds acknowledged and replicated survive a killed primary', async () => {
  const bf = new BloomFilter(client, 'stream', {
    capacity: 200_000,
    errorRate: 0.001,
    shards: 6,
    waitForReplicas: 1,
    waitTimeout: 2000,
  });
  const victim = (await cluster.masters())[1];
  let failedOver = false;
  let killer = null;
  let problem = null; // what went wrong with the kill, if anything
  const acknowledged = [];
  const refused = [];
  const messages = [];
  let after = 0; // batches tried once the replica took over
  const deadline = Date.now() + 90_000;
  // Until, after the failover, three batches in a row were refused for want of a replica (the
  // first ones after it may meet the client's reconnections: not acknowledged either).
  const settled = () => refused.length >= 3 && refused.slice(-3).every((name) => name === 'NotReplicatedError');
  for (let batch = 0; !(failedOver && after >= 3 && settled()); batch++) {
    assert.equal(problem, null);
    assert.ok(Date.now() < deadline, `no failover within 90 s (${messages.slice(-3)})`);
    assert.ok(after <= 10, `still not settled 10 batches after the failover:\n${messages.join('\n')}`);
    if (killer === null && acknowledged.length >= 2000) {
      killer = (async () => {
        const slot = (await cluster.view()).find((seen) => seen.port === victim.port).slots[0][0];
        await cluster.kill(victim);
        await cluster.waitForFailover(slot, 60_000);
        failedOver = true;
      })();
      killer.catch((error) => {
        problem = error;
      });
    }
    if (failedOver) after += 1;
    const items = range(500, `event:${batch}:`);
    try {
      await bf.addMany(items);
      acknowledged.push(...items);
    } catch (error) {
      refused.push(error.name); // not acknowledged: some may be in, some not
      messages.push(`${error.name}: ${error.message}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  await killer;
  assert.ok(refused.length, 'no add was refused: the kill did not land during the stream');
  assert.ok(acknowledged.length >= 2000, 'the kill came before the stream');
  const fresh = await cluster.client();
  try {
    const again = new BloomFilter(fresh, 'stream', { capacity: 200_000, errorRate: 0.001, shards: 6 });
    assert.ok((await again.containsMany(acknowledged)).every(Boolean));
  } finally {
    await fresh.close();
  }
  console.log(`${acknowledged.length} items acknowledged, refused: ${refused.join(' ')}`);
});

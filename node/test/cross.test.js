// Node and Python on the same filters (docs/sharding.md): on a three-primary cluster with a
// replica each, a 12-shard filter written by the Python package (driven through a subprocess,
// test/harness/python_side.py, in the venv of scripts/python-venv.sh) is read by this package and
// the other way round; Bloom and cuckoo (deletes by one reaching the other's adds), plain and
// windowed, with strings, integers, fractions and bytes that are not UTF-8; a filter made by one
// with other parameters refused by the other; and a primary killed under a stream of this
// package's replicated adds, every acknowledged item found by Python after the failover.

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { BloomFilter, CuckooFilter, FilterMismatchError, NotReplicatedError } from '../lib/index.js';
import { keySlot } from '../lib/shards.js';
import { cuckooInfoOf, eventually } from './harness/helpers.js';
import { ROOT, RedisCluster } from './harness/servers.js';

const PYTHON = path.join(ROOT, 'target/pyvenv/bin/python');
const SIDE = path.join(ROOT, 'node/test/harness/python_side.py');
const cluster = new RedisCluster('cross');
let client;
let url;

before(async () => {
  // The venv python/tests/requirements.txt pins, with the package installed (quick when it is
  // there already: make test's Python suite made it).
  await promisify(execFile)(
    path.join(ROOT, 'scripts/python-venv.sh'),
    ['target/pyvenv', 'python/tests/requirements.txt'],
    {
      cwd: ROOT,
      maxBuffer: 1 << 24,
    },
  );
  await cluster.start();
  client = await cluster.client();
  url = await cluster.url();
});
after(async () => {
  await client?.close().catch(() => {});
  await cluster.stop();
});

/** Runs `ops` on the Python package's filter of `kind` at `key`: their answers. */
function python(kind, key, options, ops) {
  const request = JSON.stringify({ url, cluster: true, kind, key, options, ops });
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [SIDE], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`python_side.py: ${stderr}`)),
    );
    child.stdin.end(request);
  });
}

/**
 * `n` items of every kind a client forms alike, each as this package takes it (`js`) and as the
 * Python side spells it (`py`): strings (some not ASCII), integers, fractions, and bytes that are
 * not UTF-8.
 */
function items(prefix, n, base) {
  return Array.from({ length: n }, (_, i) => {
    switch (i % 5) {
      case 0:
        return { js: `https://example.com/${prefix}/${i}`, py: { str: `https://example.com/${prefix}/${i}` } };
      case 1:
        return { js: `${prefix}:café:σ:${i}`, py: { str: `${prefix}:café:σ:${i}` } };
      case 2:
        return { js: base + i, py: { int: String(base + i) } };
      case 3:
        return { js: base + i + 0.25, py: { float: String(base + i + 0.25) } };
      default: {
        const bytes = Buffer.concat([Buffer.from(`${prefix}:${i}:`), Buffer.from([0xff, 0x00, 0xe9])]);
        return { js: bytes, py: { bytes_hex: bytes.toString('hex') } };
      }
    }
  });
}

const js = (list) => list.map((pair) => pair.js);
const py = (list) => list.map((pair) => pair.py);
const all = (answers) => answers.length > 0 && answers.every((answer) => answer === true);
const none = (answers) => answers.every((answer) => answer === false);

for (const window of [null, 3600]) {
  test(`a 12-shard Bloom filter (window ${window}): written by Python, read by Node, and the other way round`, async () => {
    const key = `crawl:${window ?? 'plain'}`;
    const options = { capacity: 200_000, error_rate: 0.001, shards: 12, window };
    const fromPython = items('py', 5000, 1_000_000);
    const fromNode = items('node', 5000, 2_000_000);
    const [added] = await python('bloom', key, options, [{ op: 'add_many', items: py(fromPython) }]);
    assert.ok(added.filter(Boolean).length >= 4990, String(added.filter(Boolean).length));
    const bf = new BloomFilter(client, key, { capacity: 200_000, errorRate: 0.001, shards: 12, window });
    assert.equal(await client.get(key), bf.core.manifest()); // the very text this package writes
    assert.ok(all(await bf.containsMany(js(fromPython))));
    assert.deepEqual(await bf.addMany(js(fromPython)), new Array(5000).fill(false)); // the same bytes
    const mine = await bf.addMany(js(fromNode));
    assert.ok(mine.filter(Boolean).length >= 4990);
    const [held, again, count, info] = await python('bloom', key, options, [
      { op: 'contains_many', items: py(fromNode) },
      { op: 'add_many', items: py(fromNode) },
      { op: 'count' },
      { op: 'info' },
    ]);
    assert.ok(all(held));
    assert.ok(none(again));
    assert.equal(count, await bf.count());
    assert.deepEqual(info, await bf.info());
    assert.equal(info.Shards, 12);
    if (window !== null) assert.equal(info.Window, window);
    assert.equal(await bf.drop(), 13);
  });
}

test('a 12-shard cuckoo filter: each package deletes the items the other added, on their shards', async () => {
  const options = { capacity: 100_000, error_rate: 0.001, shards: 12 };
  const fromPython = items('py', 4000, 3_000_000);
  const fromNode = items('node', 4000, 4_000_000);
  const [added] = await python('cuckoo', 'live', options, [
    { op: 'add_many', items: py(fromPython), kwargs: { unique: true } },
  ]);
  const cf = new CuckooFilter(client, 'live', { capacity: 100_000, errorRate: 0.001, shards: 12 });
  const pythonAdded = fromPython.filter((_, i) => added[i]);
  const gone = pythonAdded.filter((_, i) => i % 2 === 0);
  const kept = pythonAdded.filter((_, i) => i % 2 === 1);
  assert.ok(all(await cf.deleteMany(js(gone)))); // each delete reaches the shard Python's add went to
  const nodeAdded = (await cf.addMany(js(fromNode), { unique: true })).filter(Boolean).length;
  const [keptHeld, goneHeld, deleted, count] = await python('cuckoo', 'live', options, [
    { op: 'contains_many', items: py(kept) },
    { op: 'contains_many', items: py(gone) },
    { op: 'delete_many', items: py(fromNode.slice(0, 1000)) },
    { op: 'count' },
  ]);
  assert.ok(all(keptHeld));
  assert.ok(goneHeld.filter(Boolean).length <= 10); // false positives only
  assert.ok(all(deleted.slice(0, 100)));
  assert.equal(count, kept.length + nodeAdded - deleted.filter(Boolean).length);
  assert.equal(await cf.count(), count);
  assert.equal((await cf.containsMany(js(fromNode.slice(0, 1000)))).filter(Boolean).length <= 10, true);
  // Each shard's deletes counted where the items live.
  const expected = Object.fromEntries(cf.keys.map((k) => [k, 0]));
  for (const pair of [...gone, ...fromNode.slice(0, 1000).filter((_, i) => deleted[i])])
    expected[cf.keyOf(pair.js)] += 1;
  for (const k of cf.keys) {
    const owner = await cluster.masterOfSlot(keySlot(k));
    const node = await owner.client();
    try {
      assert.equal((await cuckooInfoOf(node, k))['Number of items deleted'], expected[k], k);
    } finally {
      await node.close();
    }
  }
  assert.equal(await cf.drop(), 13);
});

test("a filter one package made with other parameters is the other's FilterMismatchError", async () => {
  const [made] = await python('bloom', 'shared', { capacity: 1000, error_rate: 0.01, shards: 12 }, [{ op: 'create' }]);
  assert.equal(made, true);
  await assert.rejects(
    new BloomFilter(client, 'shared', { capacity: 1000, errorRate: 0.001, shards: 12 }).add('x'),
    (error) => error instanceof FilterMismatchError && /has error_rate 0.01, not 0.001/.test(error.message),
  );
  await assert.rejects(
    new CuckooFilter(client, 'shared', { capacity: 1000, shards: 12 }).add('x'),
    /is a Bloom filter, not a cuckoo filter/,
  );
  // Another capacity is the first one's, as for one key.
  assert.equal(await new BloomFilter(client, 'shared', { capacity: 50, errorRate: 0.01, shards: 12 }).add('x'), true);
  assert.equal(await new CuckooFilter(client, 'mine', { capacity: 1000, shards: 6 }).add('x'), true);
  const [answer] = await python('cuckoo', 'mine', { capacity: 1000, shards: 12 }, [{ op: 'add', item: { str: 'y' } }]);
  assert.equal(answer.error, 'FilterMismatchError');
  assert.match(answer.message, /has shards 6, not 12/);
  const [found] = await python('cuckoo', 'mine', { capacity: 5000, shards: 6 }, [
    { op: 'contains', item: { str: 'x' } },
  ]);
  assert.equal(found, true);
  await new BloomFilter(client, 'shared', { capacity: 1000, errorRate: 0.01, shards: 12 }).drop();
  await new CuckooFilter(client, 'mine', { capacity: 1000, shards: 6 }).drop();
});

// Last: it kills a primary, and the cluster stays with one primary that has no replica.
test("a primary killed under Node's replicated adds: Python finds every acknowledged item", async () => {
  const options = { capacity: 200_000, error_rate: 0.001, shards: 12 };
  const bf = new BloomFilter(client, 'stream', {
    capacity: 200_000,
    errorRate: 0.001,
    shards: 12,
    waitForReplicas: 1,
    waitTimeout: 2000,
  });
  await eventually(() => bf.add('first'), NotReplicatedError);
  const victim = (await cluster.masters())[2];
  const acknowledged = [];
  const refused = [];
  let killer = null;
  let failedOver = false;
  let after = 0;
  const deadline = Date.now() + 90_000;
  const settled = () => refused.length >= 3 && refused.slice(-3).every((name) => name === 'NotReplicatedError');
  for (let batch = 0; !(failedOver && after >= 3 && settled()); batch++) {
    assert.ok(Date.now() < deadline, `no failover within 90 s: ${refused.slice(-3)}`);
    assert.ok(after <= 10, `not settled 10 batches after the failover: ${refused}`);
    if (killer === null && acknowledged.length >= 2000) {
      const slot = (await cluster.view()).find((seen) => seen.port === victim.port).slots[0][0];
      killer = cluster
        .kill(victim)
        .then(() => cluster.waitForFailover(slot, 60_000))
        .then(() => (failedOver = true));
    }
    if (failedOver) after += 1;
    const batchItems = items(`event${batch}`, 250, 10_000_000 + batch * 1000);
    try {
      await bf.addMany(js(batchItems));
      acknowledged.push(...batchItems);
    } catch (error) {
      refused.push(error.name);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  await killer;
  assert.ok(refused.length > 0 && acknowledged.length >= 2000);
  const [held] = await python('bloom', 'stream', options, [{ op: 'contains_many', items: py(acknowledged) }]);
  assert.equal(held.length, acknowledged.length);
  assert.ok(all(held), `${held.filter((answer) => !answer).length} acknowledged items not found`);
  // And Python's writes after the failover (no replicas asked) are Node's to read.
  const later = items('later', 1000, 50_000_000);
  await python('bloom', 'stream', options, [{ op: 'add_many', items: py(later) }]);
  const fresh = await cluster.client();
  try {
    assert.ok(
      all(
        await new BloomFilter(fresh, 'stream', { capacity: 1, errorRate: 0.001, shards: 12 }).containsMany(js(later)),
      ),
    );
  } finally {
    await fresh.close();
  }
});

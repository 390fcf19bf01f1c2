// lib/core.js without a server: how a batch becomes round trips and commands, and how replies
// (answers, error elements, top-level errors, short replies) become answers in the caller's
// order; WAIT's confirmations. The classes that send them are tested against real servers
// (bloom, cuckoo, replication, cluster).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SimpleError } from 'redis';

import { BF_MEXISTS, Batch, CF_DEL, CF_INSERTNX, Call, Core, CuckooCore } from '../lib/core.js';
import { BloomFilterError, FilterFullError, NotReplicatedError } from '../lib/errors.js';
import { CuckooOptions, FilterOptions } from '../lib/options.js';
import { Waited, asBool, asBools, infoObject } from '../lib/replies.js';
import { keySlot } from '../lib/shards.js';

const reply = (message) => new SimpleError(message);

function core({ shards = null, batchSize = 2, pipelineSize = 2 } = {}) {
  const options = new FilterOptions({ capacity: 100, errorRate: 0.01 });
  return new Core('127.0.0.1:6379', 'k', options, {
    shards,
    batchSize,
    pipelineSize,
    waitForReplicas: 1,
    waitTimeout: 500,
  });
}

function cuckoo(options, { shards = null, batchSize = 2 } = {}) {
  return new CuckooCore('127.0.0.1:6379', 'k', options, { shards, batchSize, pipelineSize: 2 });
}

test('one key: rounds are batches, in order', () => {
  const rounds = [...core().rounds(['a', 'b', 'c', 'd', 'e'], false)];
  assert.deepEqual(
    rounds.map((r) => [r.start, r.size]),
    [
      [0, 4],
      [4, 1],
    ],
  );
  assert.deepEqual(
    rounds[0].commands.map((c) => c.args),
    [
      ['BF.MEXISTS', 'k', 'a', 'b'],
      ['BF.MEXISTS', 'k', 'c', 'd'],
    ],
  );
  assert.deepEqual(
    rounds[0].commands.map((c) => c.positions),
    [
      [0, 1],
      [2, 3],
    ],
  );
  const [write] = core().rounds([1.5], true);
  assert.deepEqual(write.commands[0].args, ['BF.INSERT', 'k', 'CAPACITY', '100', 'ERROR', '0.01', 'ITEMS', '1.5']);
  assert.deepEqual([...core().rounds([], false)], []);
  assert.equal([...core().rounds(['a', 'b', 'c', 'd'], BF_MEXISTS)].length, 1); // exactly one round's worth
});

test("sharded answers come back in the caller's order", () => {
  const sharded = core({ shards: 3, batchSize: 100 });
  const items = Array.from({ length: 30 }, (_, n) => `i${n}`);
  const [round] = sharded.rounds(items, false);
  assert.deepEqual(new Set(round.commands.map((c) => c.args[1])), new Set(sharded.keys));
  const replies = round.commands.map((c) => c.positions.map((p) => Number(p % 2 === 0)));
  assert.deepEqual(
    sharded.collect(round, replies),
    items.map((_, n) => n % 2 === 0),
  );
});

test("the first failing item in the caller's order is thrown", () => {
  const sharded = core({ shards: 3, batchSize: 100 });
  const [round] = sharded.rounds(
    Array.from({ length: 30 }, (_, n) => `i${n}`),
    true,
  );
  const [first, second] = round.commands;
  const replies = round.commands.map((c) => c.positions.map(() => 1));
  replies[0] = [1, 1, reply('ERR non scaling filter is full')];
  replies[1] = reply('WRONGTYPE Operation against a key holding the wrong kind of value');
  const index = Math.min(first.positions[2], second.positions[0]);
  assert.throws(
    () => sharded.collect(round, replies),
    (error) => {
      assert.ok(error instanceof BloomFilterError);
      assert.deepEqual([error.index, error.results], [index, new Array(index).fill(true)]);
      return true;
    },
  );
});

test('short or strange replies are errors, not answers', () => {
  const one = core({ batchSize: 3 });
  const [round] = one.rounds(['a', 'b', 'c'], false);
  assert.throws(() => one.collect(round, [[1, 0]]), {
    message: '2 answers to 3 items',
    index: 2,
    results: [true, false],
  });
  assert.throws(() => one.collect(round, []), { message: '0 replies to 1 commands' });
  assert.throws(() => one.collect(round, [[1, 7, 1]]), { message: /^unexpected reply 7/, index: 1, results: [true] });
  for (const strange of [2, -1, '1', null, [1], Buffer.from('1')])
    assert.throws(() => asBool(strange), /unexpected reply/);
  assert.deepEqual([asBool(true), asBool(false), asBool(1), asBool(0)], [true, false, true, false]);
  assert.throws(
    () => asBools([1, 0, reply('ERR non scaling filter is full')], 10),
    (error) => error instanceof FilterFullError && error.index === 12,
  );
  assert.throws(() => asBools(1), /not an array/);
  assert.deepEqual(infoObject([Buffer.from('Capacity'), 5, 'Expansion rate', null]), {
    Capacity: 5,
    'Expansion rate': null,
  });
  assert.deepEqual(infoObject(new Map([['Capacity', 5]])), { Capacity: 5 });
  assert.deepEqual(infoObject({ Capacity: 5 }), { Capacity: 5 });
});

test('waits below the replicas asked throw', () => {
  const one = core();
  const node = '127.0.0.1:7000';
  one.checkWaits([new Waited(node, ['OK', 1, 1]), new Waited('127.0.0.1:7001', ['OK', 1, 2])], [true]);
  const applied =
    'the writes were applied on the primary at 127.0.0.1:7000 (the 2 answer(s) in .results stand there), but';
  const lost = 'they may be lost if that primary fails now';
  for (const [waits, confirmed, message] of [
    [
      [new Waited(node, ['OK', 1, 0])],
      0,
      `${applied} 0 of the 1 replica(s) asked confirmed them, and every write before them, within 500 ms (WAIT 1): ${lost}`,
    ],
    [
      [new Waited('127.0.0.1:7001', ['OK', 1, 1]), new Waited(node, ['OK', 1, 0])],
      0,
      `${applied} 0 of the 1 replica(s) asked confirmed them, and every write before them, within 500 ms (WAIT 1): ${lost}`,
    ],
    [
      [new Waited(node, ['OK', 1, reply('NOREPLICAS')])],
      null,
      `${applied} WAIT 1 failed (NOREPLICAS), so no replica could be asked: ${lost}`,
    ],
    [
      [new Waited(node, [reply('NOPERM no permissions'), 0, 1])],
      null,
      `${applied} the write that WAIT 1 needs after them (SET of the marker key) failed (NOPERM no permissions), so no replica could be asked: ${lost}`,
    ],
  ]) {
    assert.throws(
      () => one.checkWaits(waits, [true, false]),
      (error) => {
        assert.ok(error instanceof NotReplicatedError);
        assert.deepEqual(
          [error.results, error.index, error.address, error.confirmed, error.asked],
          [[true, false], 2, node, confirmed, 1],
        );
        assert.equal(error.message, message);
        return true;
      },
    );
  }
});

test('the WAIT covers a write of its own in the slot written', () => {
  const one = core();
  const marker = one.marker('k');
  assert.ok(marker.startsWith('k:redis-bf-wait{') && keySlot(marker) === keySlot('k'));
  assert.deepEqual(one.waitCommands('k'), [
    ['SET', marker, '1', 'PX', '60000'],
    ['DEL', marker],
    ['WAIT', '1', '500'],
  ]);
  const sharded = core({ shards: 12 });
  for (const key of sharded.keys) assert.equal(sharded.marker(key), `${key}:redis-bf-wait`);
  for (const key of ['{t}seen', 'a{b', 'odd}key', '{}x', 'café']) {
    const found = one.marker(key);
    assert.ok(found.startsWith(`${key}:redis-bf-wait`));
    assert.equal(keySlot(found), keySlot(key), key);
  }
});

test('an operation asks for the manifest once', () => {
  const sharded = core({ shards: 2 });
  const operation = sharded.contains('x');
  let request = operation.next().value;
  assert.ok(request instanceof Call);
  assert.deepEqual(request.args.slice(0, 2), ['SET', 'k']);
  assert.deepEqual(request.args.slice(3), ['NX', 'GET']);
  request = operation.next(null).value; // it set the manifest: the filter is new
  assert.deepEqual(request.args, ['BF.EXISTS', sharded.keyOf('x'), 'x']);
  assert.deepEqual(operation.next(1), { value: true, done: true });
  const count = sharded.count();
  request = count.next().value; // checked already: straight to the shards
  assert.ok(request instanceof Batch);
  assert.deepEqual(
    request.commands,
    sharded.keys.map((key) => ['BF.CARD', key]),
  );
});

test('a cuckoo insert carries the creation, or follows a reserve', () => {
  const bounded = cuckoo(new CuckooOptions({ capacity: 100 }));
  const [round] = bounded.rounds(['a', 'b', 'c'], CF_INSERTNX);
  assert.deepEqual(
    round.commands.map((c) => c.args),
    [
      ['CF.INSERTNX', 'k', 'CAPACITY', '100', 'ERROR', '0.01', 'ITEMS', 'a', 'b'],
      ['CF.INSERTNX', 'k', 'CAPACITY', '100', 'ERROR', '0.01', 'ITEMS', 'c'],
    ],
  );
  const plain = cuckoo(new CuckooOptions({ capacity: 100, errorRate: null, bucketSize: 4 }), {
    shards: 2,
    batchSize: 10,
  });
  const [mixed] = plain.rounds(
    Array.from({ length: 6 }, (_, n) => `i${n}`),
    true,
  );
  const { commands } = mixed;
  assert.deepEqual(
    commands.map((c) => c.answers),
    [false, true, false, true],
  );
  for (const [reserve, insert] of [commands.slice(0, 2), commands.slice(2)]) {
    const key = reserve.args[1];
    assert.deepEqual(reserve.args, [
      'CF.RESERVE',
      key,
      '70',
      'BUCKETSIZE',
      '4',
      'MAXITERATIONS',
      '20',
      'EXPANSION',
      '1',
    ]);
    assert.deepEqual(insert.args.slice(0, 4), ['CF.INSERT', key, 'NOCREATE', 'ITEMS']);
    assert.deepEqual(reserve.positions, insert.positions);
  }
  assert.equal(plain.creation.capacity, 70);
  const replies = [
    reply('ERR item exists'),
    commands[1].positions.map(() => 1),
    'OK',
    commands[3].positions.map(() => 1),
  ];
  assert.deepEqual(plain.collect(mixed, replies), new Array(6).fill(true));
  replies[2] = reply("OOM command not allowed when used memory > 'maxmemory'");
  replies[3] = reply('ERR not found');
  assert.throws(
    () => plain.collect(mixed, replies),
    (error) =>
      error instanceof BloomFilterError && /^OOM/.test(error.message) && error.index === commands[2].positions[0],
  );
});

test('cuckoo answers are read strictly', () => {
  const one = cuckoo(new CuckooOptions({ capacity: 100 }), { batchSize: 4 });
  const [insert] = one.rounds(['a', 'b', 'c'], true);
  assert.deepEqual(one.collect(insert, [[1, 1, 1]]), [true, true, true]);
  assert.deepEqual(one.collect(insert, [[true, true, true]]), [true, true, true]);
  for (const refused of [-1, false]) {
    assert.throws(
      () => one.collect(insert, [[1, refused, 1]]),
      (error) =>
        error instanceof FilterFullError && /has no room for the item/.test(error.message) && error.index === 1,
    );
  }
  assert.throws(() => one.collect(insert, [[1, 0, 1]]), /unexpected reply 0/); // CF.INSERT never answers "held"
  const [unique] = one.rounds(['a', 'b', 'c'], CF_INSERTNX);
  assert.deepEqual(one.collect(unique, [[1, 0, 1]]), [true, false, true]);
  assert.throws(
    () => one.collect(unique, [[1, 0, -1]]),
    (error) => error instanceof FilterFullError && error.index === 2,
  );
  for (const full of ['Filter is full', 'Maximum expansions reached']) {
    assert.throws(
      () => one.collect(unique, [reply(full)]),
      (error) => error instanceof FilterFullError && error.message === full,
    );
  }
  const [deletes] = one.rounds(['a', 'b', 'c'], CF_DEL);
  assert.deepEqual(
    deletes.commands.map((c) => c.args),
    [
      ['CF.DEL', 'k', 'a'],
      ['CF.DEL', 'k', 'b'],
      ['CF.DEL', 'k', 'c'],
    ],
  );
  assert.deepEqual(one.collect(deletes, [true, 0, reply('ERR Not found')]), [true, false, false]);
  assert.throws(() => one.collect(deletes, [1, reply('WRONGTYPE Operation'), 1]), { index: 1, results: [true] });
});

test("a cuckoo delete asks its item's shard", () => {
  const sharded = cuckoo(new CuckooOptions({ capacity: 1000 }), { shards: 12 });
  const bloom = core({ shards: 12 });
  for (const item of ['https://example.com/', Buffer.from([0]), 42, 1.5, 7n]) {
    assert.equal(sharded.keyOf(item), bloom.keyOf(item)); // the same shards as a Bloom filter's
    const operation = sharded.remove(item);
    assert.deepEqual(operation.next().value.args.slice(0, 2), ['SET', 'k']);
    const request = operation.next(null).value;
    assert.deepEqual(request.args, ['CF.DEL', sharded.keyOf(item), typeof item === 'object' ? item : String(item)]);
    assert.deepEqual(operation.next(reply('ERR Not found')), { value: false, done: true });
    sharded.checked = false;
  }
});

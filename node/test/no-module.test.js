// Against a plain redis-server without the module (a packaged one on the default port, say),
// every call of both filters says so in one line, names the server, and says how to get one with
// the module, in the Python package's words. Nothing is written to the server.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { BloomFilter, CuckooFilter, ModuleMissingError } from '../lib/index.js';
import { RedisServer } from './harness/servers.js';

const HOW =
  'connect to the server that has it (`redis-bf-server` and `make run` print its port), or ' +
  'start one with `redis-bf-server`, or `redis-server --loadmodule "$(redis-bf-module-path)"`';

const plain = new RedisServer('no-module', { module: false });
before(() => plain.start());
after(() => plain.stop());

async function saysIt(call, command, what = 'Bloom filter module loaded') {
  await assert.rejects(call(), (error) => {
    assert.ok(error instanceof ModuleMissingError, String(error));
    const start =
      `the Redis server at 127.0.0.1:${plain.port} has no ${what} (it answered: ` +
      `unknown command '${command}', with args beginning with: `;
    assert.ok(error.message.startsWith(start), error.message);
    assert.ok(error.message.endsWith(HOW), error.message);
    assert.ok(!error.message.includes('\n'));
    assert.equal(error.address, `127.0.0.1:${plain.port}`);
    return true;
  });
}

for (const RESP of [2, 3]) {
  describe(`RESP${RESP}`, () => {
    let r;
    before(async () => {
      r = await plain.client({ RESP });
    });
    after(() => r.close());

    test('every call of a Bloom filter names the server and the way out', async () => {
      const bf = new BloomFilter(r, 'seen', { capacity: 1000, errorRate: 0.01 });
      await saysIt(() => bf.add('a'), 'BF.INSERT');
      await saysIt(() => bf.contains('a'), 'BF.EXISTS');
      await saysIt(() => bf.count(), 'BF.CARD');
      await saysIt(() => bf.info(), 'BF.INFO');
      await saysIt(() => bf.create(), 'BF.RESERVE');
      await saysIt(() => bf.addMany(['a', 'b']), 'BF.INSERT');
      await saysIt(() => bf.containsMany(['a', 'b']), 'BF.MEXISTS');
      assert.equal(await r.dbSize(), 0);
    });

    test('every call of a cuckoo filter says it too', async () => {
      const cf = new CuckooFilter(r, 'seen', { capacity: 1000 });
      const plainKind = new CuckooFilter(r, 'plain', { capacity: 1000, errorRate: null });
      const cuckoo = 'cuckoo filter commands loaded';
      await saysIt(() => cf.add('a'), 'CF.INSERT', cuckoo);
      await saysIt(() => cf.addUnique('a'), 'CF.INSERTNX', cuckoo);
      await saysIt(() => cf.contains('a'), 'CF.EXISTS', cuckoo);
      await saysIt(() => cf.delete('a'), 'CF.DEL', cuckoo);
      await saysIt(() => cf.count('a'), 'CF.COUNT', cuckoo);
      await saysIt(() => cf.info(), 'CF.INFO', cuckoo);
      await saysIt(() => cf.create(), 'CF.RESERVE', cuckoo);
      await saysIt(() => cf.addMany(['a', 'b']), 'CF.INSERT', cuckoo);
      await saysIt(() => cf.containsMany(['a', 'b']), 'CF.MEXISTS', cuckoo);
      await saysIt(() => cf.deleteMany(['a', 'b']), 'CF.DEL', cuckoo);
      await saysIt(() => plainKind.add('a'), 'CF.RESERVE', cuckoo);
      assert.equal(await r.dbSize(), 0);
    });
  });
}

test('another error is left as it is', async () => {
  const r = await plain.client();
  try {
    await r.set('text', 'v');
    await assert.rejects(
      new BloomFilter(r, 'text', { capacity: 10, errorRate: 0.1, shards: 2 }).add('x'),
      (error) => !(error instanceof ModuleMissingError),
    );
  } finally {
    await r.flushAll();
    await r.close();
  }
});

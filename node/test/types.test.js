// The types (lib/index.d.ts, hand-written) hold: a program using every class and option, and the
// README's TypeScript block, compile under `tsc --strict` against the package as a user imports
// it (`redis-bf`, through its exports map), and misuses fail to compile (`@ts-expect-error`). The
// declared names are the module's exports.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const NODE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRATCH = path.join(NODE_DIR, 'test', `.types-${process.pid}`);
const TSC = path.join(NODE_DIR, 'node_modules/typescript/bin/tsc');
after(() => rmSync(SCRATCH, { recursive: true, force: true }));

const PROGRAM = `
import { createClient, createCluster, createClientPool } from 'redis';
import {
  BloomFilter, BloomFilterError, CuckooFilter, CuckooOptions, ErrorRateUnsupportedError, FilterFullError,
  FilterMismatchError, FilterOptions, KeyTypeError, MAX_WINDOW, ModuleMissingError, NotReplicatedError,
  type BloomFilterOptions, type BloomInfo, type CuckooFilterOptions, type CuckooInfo, type Item, type RedisClient,
} from 'redis-bf';

export async function use(): Promise<void> {
  const client = await createClient({ RESP: 3 }).connect();
  const cluster = createCluster({ rootNodes: [{ url: 'redis://localhost:7000' }] });
  const pool = createClientPool();
  const clients: RedisClient[] = [client, cluster, pool, client.withTypeMapping({})];
  const options: BloomFilterOptions = { capacity: 10, errorRate: 0.01, window: 60, layout: 'blocked', shards: 4, batchSize: 10, pipelineSize: 2, waitForReplicas: 1, waitTimeout: 500 };
  const bf = new BloomFilter(clients[0], 'k', options);
  const items: Item[] = ['a', Buffer.from('b'), new Uint8Array([1]), 7, 7n];
  const answers: boolean[] = await bf.addMany(items);
  const one: boolean = (await bf.add('x')) && (await bf.contains('x'));
  const many: boolean[] = await bf.containsMany(new Set(['x']));
  const count: number = await bf.count();
  const info: BloomInfo = await bf.info();
  const capacity: number = info.Capacity;
  const window: number | undefined = info.Window;
  const created: boolean = await bf.create();
  const dropped: number = await bf.drop();
  const keys: readonly string[] = bf.keys;
  const shards: number | null = bf.shards;
  const where: string = bf.keyOf('x') + (await bf.keyType());
  const bloomOptions: FilterOptions = bf.options;
  const cuckooOptions: CuckooFilterOptions = { capacity: 100, errorRate: null, bucketSize: 2, maxIterations: 20, expansion: 1 };
  const cf = new CuckooFilter(cluster, 'c', cuckooOptions);
  const added: boolean[] = await cf.addMany(['a'], { unique: true });
  const unique: boolean = (await cf.addUnique('a')) && (await cf.delete('a'));
  const deleted: boolean[] = await cf.deleteMany(['a']);
  const copies: number = (await cf.count('a')) + (await cf.count());
  const cinfo: CuckooInfo = await cf.info();
  const rate: number | undefined = cinfo['Error rate'];
  const normalised: CuckooOptions = cf.options;
  const made = new CuckooOptions({ capacity: 100 });
  const buckets: number = made.buckets();
  const args: string[] | null = made.insertArgs();
  try {
    await bf.add('y');
  } catch (error) {
    if (error instanceof FilterFullError || error instanceof FilterMismatchError || error instanceof ErrorRateUnsupportedError) {
      const results: boolean[] = error.results;
      const index: number = error.index;
    }
    if (error instanceof NotReplicatedError) {
      const confirmed: number | null = error.confirmed;
      const address: string = error.address + error.asked;
    }
    if (error instanceof ModuleMissingError) console.log(error.address);
    if (error instanceof KeyTypeError) console.log(error.key, error.keyType, error.expected);
    if (error instanceof BloomFilterError) console.log(error.message);
  }
  console.log(answers, one, many, count, capacity, window, created, dropped, keys, shards, where, bloomOptions, added, unique, deleted, copies, rate, normalised, buckets, args, MAX_WINDOW);

  // @ts-expect-error: errorRate is a number
  new BloomFilter(client, 'k', { capacity: 10, errorRate: '0.01' });
  // @ts-expect-error: errorRate is required for a Bloom filter
  new BloomFilter(client, 'k', { capacity: 10 });
  // @ts-expect-error: no such option
  new BloomFilter(client, 'k', { capacity: 10, errorRate: 0.1, waitForReplica: 1 });
  // @ts-expect-error: a cuckoo filter has no window
  new CuckooFilter(client, 'k', { capacity: 10, window: 60 });
  // @ts-expect-error: a boolean is not an item
  await bf.add(true);
  // @ts-expect-error: items are an iterable of items
  await bf.addMany(42);
  // @ts-expect-error: a layout is 'classic' or 'blocked'
  new BloomFilter(client, 'k', { capacity: 10, errorRate: 0.1, layout: 'BLOCKED' });
  // @ts-expect-error: a Bloom filter deletes no item
  await bf.delete('x');
}
`;

test('a program using the whole API, and the README block, compile under tsc --strict', async () => {
  mkdirSync(SCRATCH, { recursive: true });
  const readme = readFileSync(path.join(NODE_DIR, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n(.*?)```/gs)].map((match) => match[1]);
  assert.equal(blocks.length, 1);
  writeFileSync(path.join(SCRATCH, 'program.ts'), PROGRAM);
  writeFileSync(path.join(SCRATCH, 'readme.ts'), `${blocks[0]}\nexport {};\n`);
  const args = [
    '--noEmit',
    '--strict',
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2022',
    '--types',
    'node',
    '--skipLibCheck',
    'false',
    'program.ts',
    'readme.ts',
  ];
  try {
    await promisify(execFile)(process.execPath, [TSC, ...args], { cwd: SCRATCH });
  } catch (error) {
    assert.fail(`tsc failed:\n${error.stdout}${error.stderr}`);
  }
});

test('the declared names are the exports', async () => {
  const declared = readFileSync(path.join(NODE_DIR, 'lib/index.d.ts'), 'utf8');
  const values = [...declared.matchAll(/^export declare (?:class|const) (\w+)/gm)].map((match) => match[1]).sort();
  const exported = Object.keys(await import('../lib/index.js')).sort();
  assert.deepEqual(values, exported);
});

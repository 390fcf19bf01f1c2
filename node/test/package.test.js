// The package as it would be published: `npm pack` makes a tarball of the files a user needs and
// no other (the whitelist), whose package.json says what an npm package should (ESM with its
// exports map and types, Node 20 or newer, BSD-3-Clause, node-redis 6 the one dependency and a
// peer, no install scripts, no addresses the project does not have yet); the README's install
// lines install it into an empty project, with the registry only for node-redis, and it works
// there against a real server. And the code keeps its shape: every file under 600 lines, only
// lib/runner.js talks to Redis, no import but the package's own files and node:crypto.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { ROOT, RedisServer } from './harness/servers.js';

const NODE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE = JSON.parse(readFileSync(path.join(NODE_DIR, 'package.json'), 'utf8'));
const run = promisify(execFile);
const scratch = mkdtempSync(path.join(os.tmpdir(), 'redis-bf-node-package-'));
const server = new RedisServer('package');
before(() => server.start());
after(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await server.stop();
});

function sources(directory) {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name.startsWith('.') ? [] : sources(full);
    return /\.(m?js|d\.ts)$/.test(entry.name) ? [full] : [];
  });
}

test('every file of the package, its tests and the crawl example is under 600 lines', () => {
  const files = [...sources(NODE_DIR), ...sources(path.join(ROOT, 'examples/crawlee_crawl'))];
  assert.ok(files.length >= 20, String(files.length));
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n').length;
    assert.ok(lines < 600, `${path.relative(ROOT, file)}: ${lines} lines`);
  }
});

test('only lib/runner.js talks to Redis; the rooms import only each other and node:crypto', () => {
  for (const file of readdirSync(path.join(NODE_DIR, 'lib')).filter((name) => name.endsWith('.js'))) {
    const text = readFileSync(path.join(NODE_DIR, 'lib', file), 'utf8');
    const imports = [...text.matchAll(/^(?:import|export) [^;]*? from '([^']+)';/gms)].map((match) => match[1]);
    for (const name of imports) assert.ok(name.startsWith('./') || name === 'node:crypto', `${file} imports ${name}`);
    if (file !== 'runner.js') {
      for (const io of ['sendCommand', '.execute(', 'nodeClient', '.connect('])
        assert.ok(!text.includes(io), `${file} uses ${io}`);
    }
  }
});

test('the code is formatted as prettier formats it (npm run format)', async () => {
  const prettier = path.join(NODE_DIR, 'node_modules/prettier/bin/prettier.cjs');
  const files = [
    'lib',
    'test',
    ...readdirSync(path.join(ROOT, 'examples/crawlee_crawl'))
      .filter((name) => name.endsWith('.mjs'))
      .map((name) => `../examples/crawlee_crawl/${name}`),
  ];
  try {
    await run(process.execPath, [prettier, '--config', '.prettierrc.json', '--check', ...files], { cwd: NODE_DIR });
  } catch (error) {
    assert.fail(`prettier --check:\n${error.stdout}${error.stderr}`);
  }
});

test("the package.json is a publishable package's", () => {
  assert.equal(PACKAGE.name, 'redis-bf');
  assert.equal(PACKAGE.version, '0.1.0');
  assert.equal(PACKAGE.license, 'BSD-3-Clause');
  assert.equal(PACKAGE.type, 'module');
  assert.deepEqual(PACKAGE.exports, {
    '.': { types: './lib/index.d.ts', default: './lib/index.js' },
    './package.json': './package.json',
  });
  assert.deepEqual(PACKAGE.engines, { node: '>=20' });
  assert.deepEqual(PACKAGE.files, ['lib/']);
  assert.deepEqual(PACKAGE.peerDependencies, { redis: '^6.0.0' });
  assert.equal(PACKAGE.dependencies, undefined);
  for (const script of ['preinstall', 'install', 'postinstall', 'prepare', 'prepack', 'postpack'])
    assert.equal(PACKAGE.scripts?.[script], undefined, script);
  for (const field of ['repository', 'homepage', 'bugs', 'funding']) assert.equal(PACKAGE[field], undefined, field); // no public address yet
  assert.equal(readFileSync(path.join(NODE_DIR, 'LICENSE'), 'utf8'), readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'));
});

test("npm pack's tarball holds the files a user needs, and installs into an empty project as the README says", async () => {
  // The README's install lines, as written: the first from a checkout's root (here, a copy of
  // the package's files in one), the second in a project of one's own.
  const readme = readFileSync(path.join(NODE_DIR, 'README.md'), 'utf8');
  const [block] = /<!-- install -->\n```sh\n(.*?)```/s.exec(readme).slice(1);
  const lines = block
    .trim()
    .split('\n')
    .map((line) => line.split('#')[0].trim());
  assert.deepEqual(lines, ['(cd node && npm pack)', 'npm install ./node/redis-bf-0.1.0.tgz']);
  const checkout = path.join(scratch, 'checkout');
  mkdirSync(path.join(checkout, 'node'), { recursive: true });
  for (const name of ['package.json', 'README.md', 'LICENSE', 'lib'])
    cpSync(path.join(NODE_DIR, name), path.join(checkout, 'node', name), { recursive: true });
  await run('sh', ['-c', lines[0]], { cwd: checkout });
  const filename = 'redis-bf-0.1.0.tgz';
  const listed = await run('tar', ['tzf', path.join(checkout, 'node', filename)]);
  const libs = readdirSync(path.join(NODE_DIR, 'lib')).map((name) => `package/lib/${name}`);
  const expected = ['LICENSE', 'README.md', 'package.json'].map((name) => `package/${name}`);
  assert.deepEqual(listed.stdout.trim().split('\n').sort(), [...expected, ...libs].sort());
  // An empty project of one's own, beside the checkout: the registry only for node-redis.
  const project = path.join(scratch, 'project');
  mkdirSync(project);
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'mine', version: '1.0.0', private: true, type: 'module' }),
  );
  const tarball = path.join(checkout, 'node', filename);
  await run(
    'sh',
    ['-c', `${lines[1].replace('./node/redis-bf-0.1.0.tgz', tarball)} --no-audit --no-fund --loglevel=error`],
    { cwd: project },
  );
  const installed = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8'));
  assert.deepEqual(Object.keys(installed.dependencies), ['redis-bf']);
  const lock = JSON.parse(readFileSync(path.join(project, 'package-lock.json'), 'utf8'));
  assert.match(lock.packages['node_modules/redis'].version, /^6\./); // the peer, from the registry
  assert.equal(lock.packages['node_modules/redis'].peer, true);
  assert.deepEqual(readdirSync(path.join(project, 'node_modules/redis-bf')).sort(), [
    'LICENSE',
    'README.md',
    'lib',
    'package.json',
  ]);
  writeFileSync(
    path.join(project, 'use.mjs'),
    `import { createClient } from 'redis';
import { BloomFilter, CuckooFilter } from 'redis-bf';
import { createRequire } from 'node:module';
const client = await createClient({ url: process.argv[2] }).connect();
const seen = new BloomFilter(client, 'installed', { capacity: 1000, errorRate: 0.01, shards: 3 });
const live = new CuckooFilter(client, 'installed:cf', { capacity: 1000 });
console.log(await seen.addMany(['a', 'b', 'a']), await live.addUnique('x'), await live.delete('x'));
console.log(await seen.drop(), await live.drop(), createRequire(import.meta.url)('redis-bf/package.json').version);
await client.close();
`,
  );
  const used = await run(process.execPath, ['use.mjs', server.url], { cwd: project });
  // 'a' and 'b' share a shard of the three: that shard and the manifest are the keys dropped.
  assert.equal(used.stdout, '[ true, true, false ] true true\n2 1 0.1.0\n');
});

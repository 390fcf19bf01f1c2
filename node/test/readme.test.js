// The README says what the package does (and the repository's README, its `<!-- node example -->`
// block): each JavaScript block after an `<!-- example: server -->`
// line runs as written (a module of the package, so `import 'redis-bf'` is the package itself)
// against one server, with its `redis://localhost:6379` pointed at the test's, and each after an
// `<!-- example: cluster -->` line against a three-primary cluster (REDIS_URL); each prints what
// its comments say and leaves nothing behind. What a `console.log(` line prints is its comment,
// up to the first ': ' or ' (' (what follows explains it), or the comment on the line after it.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { RedisCluster, RedisServer } from './harness/servers.js';

const NODE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const README = readFileSync(path.join(NODE_DIR, 'README.md'), 'utf8');
// Inside the package, where `import 'redis-bf'` names the package itself (and `redis` resolves).
const SCRATCH = path.join(NODE_DIR, 'test', `.readme-${process.pid}`);

function examples(kind, text = README) {
  return [...text.matchAll(new RegExp(`<!-- example: ${kind} -->\\n\`\`\`js\\n(.*?)\`\`\``, 'gs'))].map(
    (match) => match[1],
  );
}

/** What the block's comments say its console.log lines print. */
function printed(code) {
  const lines = code.split('\n');
  const said = [];
  lines.forEach((line, number) => {
    if (!line.trimStart().startsWith('console.log(')) return;
    const comment = line.indexOf(' // ');
    if (comment >= 0)
      said.push(
        line
          .slice(comment + 4)
          .trim()
          .split(/: | \(/)[0],
      );
    else if (lines[number + 1]?.startsWith('// ')) said.push(lines[number + 1].slice(3).trim());
  });
  return said;
}

function run(code, name, env = {}) {
  const file = path.join(SCRATCH, `${name}.mjs`);
  writeFileSync(file, code);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], {
      cwd: SCRATCH,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const server = new RedisServer('readme');
const cluster = new RedisCluster('readme-cluster');
before(async () => {
  mkdirSync(SCRATCH, { recursive: true });
  await Promise.all([server.start(), cluster.start()]);
});
after(async () => {
  rmSync(SCRATCH, { recursive: true, force: true });
  await Promise.all([server.stop(), cluster.stop()]);
});

test('the server examples run as written', async () => {
  const blocks = examples('server');
  assert.equal(blocks.length, 2); // BloomFilter, CuckooFilter
  for (const [n, code] of blocks.entries()) {
    assert.equal(code.split("'redis://localhost:6379'").length, 2, code);
    const done = await run(code.replace("'redis://localhost:6379'", `'${server.url}'`), `server-${n}`);
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(done.stdout.trimEnd().split('\n'), printed(code), code);
  }
  const client = await server.client();
  try {
    assert.equal(await client.dbSize(), 0); // each example deletes its filters
  } finally {
    await client.close();
  }
});

test("the repository README's Node example runs as written", async () => {
  const front = readFileSync(path.join(NODE_DIR, '..', 'README.md'), 'utf8');
  const blocks = [...front.matchAll(/<!-- node example -->\n```js\n(.*?)```/gs)].map((match) => match[1]);
  assert.equal(blocks.length, 1);
  const [code] = blocks;
  assert.equal(code.split("'redis://localhost:6379'").length, 2, code);
  const done = await run(code.replace("'redis://localhost:6379'", `'${server.url}'`), 'front');
  assert.equal(done.code, 0, done.stderr);
  assert.deepEqual(done.stdout.trimEnd().split('\n'), printed(code));
  const client = await server.client();
  try {
    assert.equal(await client.dbSize(), 0);
  } finally {
    await client.close();
  }
});

test('the cluster examples run as written', async () => {
  const blocks = examples('cluster');
  assert.equal(blocks.length, 2); // BloomFilter, CuckooFilter
  const url = await cluster.url();
  for (const [n, code] of blocks.entries()) {
    const done = await run(code, `cluster-${n}`, { REDIS_URL: url });
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(done.stdout.trimEnd().split('\n'), printed(code), code);
  }
  for (const master of await cluster.masters()) {
    const client = await master.client();
    try {
      assert.equal(await client.dbSize(), 0);
    } finally {
      await client.close();
    }
  }
});

test("the errors the README quotes are the package's", async () => {
  const { FilterMismatchError, ModuleMissingError, NotReplicatedError } = await import('../lib/index.js');
  const text = README.replace(/\s+/g, ' ');
  const missing = new ModuleMissingError('127.0.0.1:6379', "ERR unknown command 'BF.INSERT', ...").message;
  const [quoted] = /`(the Redis server at 127\.0\.0\.1:6379 has no Bloom filter module loaded [^`]*)`/
    .exec(text)
    .slice(1);
  const [head, tail] = quoted.split('(...)');
  assert.ok(
    missing.startsWith(
      head
        .trimEnd()
        .replace(/ \(it answered: unknown command 'BF\.INSERT', \.\.\.\): connect to the server that has it $/, ''),
    ),
    quoted,
  );
  assert.ok(
    missing.includes("(it answered: unknown command 'BF.INSERT', ...): connect to the server that has it ("),
    missing,
  );
  assert.ok(missing.includes(tail.replace(/ \.\.\.$/, '').trim()), tail);
  const core = await import('../lib/core.js');
  const { FilterOptions } = await import('../lib/options.js');
  const mine = new core.Core('h:p', 'crawl:seen', new FilterOptions({ capacity: 10, errorRate: 0.01 }), { shards: 12 });
  const stored = mine.manifest().replace('"error_rate": 0.01', '"error_rate": 0.001');
  assert.throws(
    () => mine.checkManifest(stored),
    (error) => {
      assert.ok(error instanceof FilterMismatchError);
      assert.ok(text.includes(error.message.split(' (')[0]), error.message);
      return true;
    },
  );
  const { checkWaits, Waited } = await import('../lib/replies.js');
  assert.throws(
    () => checkWaits([new Waited('127.0.0.1:6379', ['OK', 1, 0])], [true], 1, 1000),
    (error) => {
      assert.ok(error instanceof NotReplicatedError);
      assert.ok(README.includes(`NotReplicatedError: ${error.message}\n`), error.message);
      return true;
    },
  );
});

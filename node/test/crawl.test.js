// The crawlee crawl of examples/crawlee_crawl, end to end: a server with the module, a local site
// of 240 pages (24 links each), two crawler processes started at once from two pages and sharing
// one filter. The site's fetch log must show every page fetched once and none twice, and the
// server must have seen one BF.INSERT per page fetched (a page's links in one round trip) and one
// per process for its start page. Against a server without the module a crawler stops with one
// line that says so, and so it does where no server answers. Needs the example's npm
// dependencies (scripts/node-tests.sh installs them).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { startSite } from '../../examples/crawlee_crawl/site.mjs';
import { commandstats } from './harness/helpers.js';
import { ROOT, RedisServer, freePort } from './harness/servers.js';

const EXAMPLE = path.join(ROOT, 'examples/crawlee_crawl');
const PAGES = 240;

const server = new RedisServer('crawlee');
const plain = new RedisServer('crawlee-no-module', { module: false });
before(async () => {
  assert.ok(
    existsSync(path.join(EXAMPLE, 'node_modules/@crawlee/cheerio')),
    `run npm ci in ${EXAMPLE} first (scripts/node-tests.sh does)`,
  );
  await Promise.all([server.start(), plain.start()]);
});
after(() => Promise.all([server.stop(), plain.stop()]));

/** Runs `node <script> ...args` in the example's directory: its exit status and output. */
function run(script, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: EXAMPLE, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

test('two crawler processes sharing one filter fetch every page once', async () => {
  const site = await startSite({ pages: PAGES });
  try {
    const crawl = (name, start) =>
      run('crawl.mjs', ['--site', site.url, '--start', start, '--redis', server.url, '--name', name]);
    const [a, b] = await Promise.all([crawl('crawler A', '/p/0'), crawl('crawler B', '/p/120')]);
    for (const done of [a, b]) assert.equal(done.code, 0, done.stderr);
    // The site's fetch log: each page once.
    assert.deepEqual(site.fetched(), new Map(site.paths.map((page) => [page, 1])));
    const fetched = [a, b].map((done) => {
      const match =
        /^crawler [AB]: (\d+) pages fetched, 0 failed; ([\d,]+) links checked, (\d+) new \(taken by this crawler\); start \/p\/\d+ taken\n$/.exec(
          done.stdout,
        );
      assert.ok(match, done.stdout);
      assert.equal(Number(match[2].replace(/,/g, '')), Number(match[1]) * 24); // every link of every page checked
      assert.equal(Number(match[3]), Number(match[1]) - 1); // all but its start were links it took
      return Number(match[1]);
    });
    assert.ok(fetched[0] > 0 && fetched[1] > 0, String(fetched)); // both did a share of the work
    assert.equal(fetched[0] + fetched[1], PAGES);
    // One round trip per page: its links in one BF.INSERT; and one per process for its start.
    const client = await server.client();
    try {
      const calls = Object.fromEntries(
        Object.entries(await commandstats(client)).filter(([name]) => name.startsWith('bf.')),
      );
      assert.deepEqual(calls, { 'bf.insert': PAGES + 2 });
      const info = (await client.sendCommand(['BF.INFO', 'crawl:crawlee:seen', 'ITEMS']))[0];
      assert.equal(info, PAGES); // the pages, and nothing else, are in the filter
    } finally {
      await client.close();
    }
  } finally {
    await site.stop();
  }
});

test('the demo runs as its README says', async () => {
  const done = await run('demo.mjs', ['--redis', server.url, '--pages', '120']);
  assert.equal(done.code, 0, done.stderr);
  const lines = done.stdout.split('\n');
  assert.match(
    lines[0],
    /^crawler A: \d+ pages fetched, 0 failed; [\d,]+ links checked, \d+ new \(taken by this crawler\); start \/p\/0 taken$/,
  );
  assert.match(
    lines[1],
    /^crawler B: \d+ pages fetched, 0 failed; [\d,]+ links checked, \d+ new \(taken by this crawler\); start \/p\/60 taken$/,
  );
  assert.equal(lines[2], '120 pages on the site: 120 fetched, 0 of them more than once, 0 never');
  const client = await server.client();
  try {
    assert.equal(await client.exists('crawl:crawlee:demo'), 0); // deleted after
  } finally {
    await client.close();
  }
});

test('a crawler against a server without the module, or with no server, stops with one line', async () => {
  const site = await startSite({ pages: 10 });
  try {
    const done = await run('crawl.mjs', ['--site', site.url, '--redis', plain.url]);
    assert.equal(done.code, 1);
    assert.equal(
      done.stderr,
      `error: the Redis server at 127.0.0.1:${plain.port} has no Bloom filter module loaded (it answered: unknown command ` +
        "'BF.INSERT', with args beginning with: 'crawl:crawlee:seen' 'CAPACITY' '1000000' 'ERROR' '0.000001' 'ITEMS' " +
        `'${site.url}/p/0'): connect to the server that has it (\`redis-bf-server\` and ` +
        '`make run` print its port), or start one with `redis-bf-server`, or `redis-server --loadmodule ' +
        '"$(redis-bf-module-path)"`\n',
    );
    assert.equal(site.fetched().size, 0);
    const nobody = await freePort();
    const unreachable = await run('crawl.mjs', ['--site', site.url, '--redis', `redis://127.0.0.1:${nobody}`]);
    assert.equal(unreachable.code, 1);
    assert.match(
      unreachable.stderr,
      new RegExp(`^error: no Redis server answers at redis://127.0.0.1:${nobody} \\(.*\\)\n$`),
    );
  } finally {
    await site.stop();
  }
});

// The whole demonstration in one command: a local site of --pages pages, two crawl.mjs processes
// started at once from two different pages and sharing one filter, then the site's fetch log.
//
//   node demo.mjs [--redis redis://localhost:6379] [--pages 2000]
//
// It uses the key crawl:crawlee:demo, deleted before and after (as a new crawl would start).

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createClient } from 'redis';
import { BloomFilter } from 'redis-bf';

import { startSite, summary } from './site.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    redis: { type: 'string', default: 'redis://localhost:6379' },
    pages: { type: 'string', default: '2000' },
  },
});
const key = 'crawl:crawlee:demo';
const pages = Number(values.pages);

/** Runs crawl.mjs to its end: its standard output, or its exit status and error. */
function crawl(name, start, site) {
  const args = [
    'crawl.mjs',
    '--site',
    site.url,
    '--start',
    start,
    '--redis',
    values.redis,
    '--key',
    key,
    '--name',
    name,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`${name} exited ${code}: ${err.trim()}`)),
    );
  });
}

// A few tries to reach the server, then one line that says it is not there.
const client = createClient({
  url: values.redis,
  socket: { reconnectStrategy: (retries, cause) => (retries < 5 ? 200 : cause) },
});
client.on('error', () => {});
await client.connect().catch((error) => {
  console.error(`error: no Redis server answers at ${values.redis} (${error.message})`);
  process.exit(1);
});
const filter = new BloomFilter(client, key, { capacity: 1_000_000, errorRate: 1e-6 });
const site = await startSite({ pages });
try {
  await filter.drop();
  const lines = await Promise.all([
    crawl('crawler A', '/p/0', site),
    crawl('crawler B', `/p/${Math.floor(pages / 2)}`, site),
  ]);
  for (const line of lines) console.log(line);
  console.log(summary(site));
  await filter.drop();
} catch (error) {
  console.error(`error: ${error.message}`);
  process.exitCode = 1;
} finally {
  await site.stop();
  await client.close();
}

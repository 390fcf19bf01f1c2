// A crawlee crawler that shares its "seen" filter with every other crawler of the same crawl:
// run it as two (or twenty) processes, on one machine or many, and each page is fetched once,
// by the process that saw its link first.
//
//   node crawl.mjs --site http://127.0.0.1:8000 --start /p/0 [--redis redis://localhost:6379]
//
// Each page's links go to Redis in one round trip (`seen.addMany(links)`: one BF.INSERT that
// records them and answers, for each, whether it was new); the process queues only the links
// answered true, which no other process will fetch. The filter is created by that first insert,
// for --capacity URLs at --error-rate (a page wrongly taken for seen is a page never fetched).

import { CheerioCrawler, Configuration, log } from '@crawlee/cheerio';
import { parseArgs } from 'node:util';
import { createClient } from 'redis';
import { BloomFilter, ModuleMissingError } from 'redis-bf';

const { values } = parseArgs({
  options: {
    site: { type: 'string' },
    start: { type: 'string', default: '/p/0' },
    redis: { type: 'string', default: 'redis://localhost:6379' },
    key: { type: 'string', default: 'crawl:crawlee:seen' },
    capacity: { type: 'string', default: '1000000' },
    'error-rate': { type: 'string', default: '1e-6' },
    concurrency: { type: 'string', default: '8' },
    name: { type: 'string', default: `crawler ${process.pid}` },
  },
});
if (!values.site) {
  console.error('usage: node crawl.mjs --site URL [--start PATH] [--redis URL] [--key KEY]');
  process.exit(2);
}

/** The page a link names: absolute, without its #fragment (the same page for the server). */
function pageOf(href, base) {
  const url = new URL(href, base);
  url.hash = '';
  return url.href;
}

// A few tries to reach the server, then one line that says it is not there.
const client = createClient({
  url: values.redis,
  socket: { reconnectStrategy: (retries, cause) => (retries < 5 ? 200 : cause) },
});
client.on('error', () => {}); // a lost connection fails the commands, which say so
await client.connect().catch((error) => {
  console.error(`error: no Redis server answers at ${values.redis} (${error.message})`);
  process.exit(1);
});
const seen = new BloomFilter(client, values.key, {
  capacity: Number(values.capacity),
  errorRate: Number(values['error-rate']),
});

/** Of `urls`, those no crawler had seen: this process takes them. One round trip. */
async function claim(urls) {
  const distinct = [...new Set(urls)];
  const answers = await seen.addMany(distinct);
  return distinct.filter((_, i) => answers[i]);
}

let checked = 0;
let claimed = 0;
log.setLevel(log.LEVELS.WARNING);
const crawler = new CheerioCrawler(
  {
    maxConcurrency: Number(values.concurrency),
    async requestHandler({ request, $, addRequests }) {
      const links = $('a[href]')
        .map((_, anchor) => pageOf($(anchor).attr('href'), request.loadedUrl ?? request.url))
        .get();
      const mine = await claim(links);
      checked += links.length;
      claimed += mine.length;
      await addRequests(mine);
    },
  },
  // Nothing on disk: the filter in Redis is what the processes share.
  new Configuration({ persistStorage: false }),
);

try {
  const start = await claim([pageOf(values.start, values.site)]);
  const stats = await crawler.run(start);
  const n = (count) => count.toLocaleString('en-US');
  console.log(
    `${values.name}: ${n(stats.requestsFinished)} pages fetched, ${n(stats.requestsFailed)} failed; ` +
      `${n(checked)} links checked, ${n(claimed)} new (taken by this crawler); ` +
      `start ${values.start} ${start.length ? 'taken' : 'already seen'}`,
  );
} catch (error) {
  if (!(error instanceof ModuleMissingError)) throw error;
  console.error(`error: ${error.message}`);
  process.exitCode = 1;
} finally {
  await client.close();
}

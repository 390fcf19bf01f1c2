// A generated website on loopback, to crawl (the shape of python/harness/website.py).
//
// `startSite({ pages })` serves /p/0 to /p/<pages-1>. Every page links to the next one (so the
// whole site is reachable from /p/0) and to `linksPerPage - 1` others chosen at random (a fixed
// seed: the same site every time); one link in eight carries a #fragment, which a crawler must
// take for the same page. The server keeps its fetch log: how many times each path was fetched.
//
// Alone, `node site.mjs --pages 2000 --port 8000` serves it until Ctrl-C, then prints the log's
// summary (pages fetched, none twice?).

import http from 'node:http';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

/** A small seeded generator (mulberry32): the same numbers for the same seed. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** The hrefs on /p/<page>, in order. */
export function links(page, { pages, linksPerPage = 24, seed = 16 }) {
  const next = random(seed * 1_000_003 + page);
  const targets = [(page + 1) % pages];
  for (let i = 1; i < linksPerPage; i++) targets.push(Math.floor(next() * pages));
  return targets.map((target) => (next() < 0.125 ? `/p/${target}#c${Math.floor(next() * 9)}` : `/p/${target}`));
}

function html(page, shape) {
  const anchors = links(page, shape)
    .map((href) => `<li><a href="${href}">${href}</a></li>`)
    .join('');
  return `<!doctype html><html><head><title>Page ${page}</title></head><body><h1>Page ${page}</h1><ul>${anchors}</ul></body></html>`;
}

/**
 * Serves the site on 127.0.0.1 (`port` 0: any free one). Answers `{ url, paths, fetched, stop }`:
 * `fetched()` is the fetch log, a Map from path to the number of requests for it.
 */
export async function startSite({ pages, linksPerPage = 24, seed = 16, port = 0 }) {
  const shape = { pages, linksPerPage, seed };
  const hits = new Map();
  const server = http.createServer((request, response) => {
    const path = request.url.split('?')[0];
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const match = /^\/p\/(\d+)$/.exec(path);
    const page = match ? Number(match[1]) : -1;
    if (page < 0 || page >= pages) {
      response.writeHead(404, { 'Content-Length': '0' }).end();
      return;
    }
    const body = Buffer.from(html(page, shape));
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': body.length }).end(body);
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    paths: Array.from({ length: pages }, (_, page) => `/p/${page}`),
    fetched: () => new Map(hits),
    stop: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** One line on the fetch log: how many pages were fetched, how many more than once, and missed. */
export function summary(site) {
  const log = site.fetched();
  const twice = [...log].filter(([, count]) => count > 1).map(([path]) => path);
  const missed = site.paths.filter((path) => !log.has(path));
  return (
    `${site.paths.length.toLocaleString('en-US')} pages on the site: ${(site.paths.length - missed.length).toLocaleString('en-US')} fetched, ` +
    `${twice.length} of them more than once${twice.length ? ` (${twice.slice(0, 5).join(', ')})` : ''}, ${missed.length} never`
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { pages: { type: 'string', default: '2000' }, port: { type: 'string', default: '8000' } },
  });
  const site = await startSite({ pages: Number(values.pages), port: Number(values.port) });
  console.log(`serving ${values.pages} pages at ${site.url}/p/0 (Ctrl-C prints the fetch log)`);
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, async () => {
      console.log(summary(site));
      await site.stop();
      process.exit(0);
    });
  }
}

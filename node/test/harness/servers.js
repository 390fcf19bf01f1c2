// Servers of our own for the tests: `RedisServer`, a redis-server with the module, and
// `RedisCluster`, three primaries and three replicas joined by `redis-cli --cluster create` (the
// same shape as python/harness/redis_server.py and redis_cluster.py).
//
// Each server runs on a free loopback port (never 6379), bound to 127.0.0.1, in a directory of
// its own under target/node-servers/, and is killed by its process id when stopped; the kernel
// kills it if the test process dies first (`setpriv --pdeathsig KILL`). The module:
// $REDIS_BF_MODULE, by default target/release/libredis_bf.so of this checkout; the server:
// $REDIS_BF_SERVER, by default redis-server on the PATH.

import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createClient, createCluster } from 'redis';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const SERVERS_DIR = path.join(ROOT, 'target/node-servers');
const run = promisify(execFile);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let started = 0;

/** The module the servers load. */
export function modulePath() {
  const module = process.env.REDIS_BF_MODULE || path.join(ROOT, 'target/release/libredis_bf.so');
  if (!existsSync(module))
    throw new Error(`the module is not at ${module}: build it (make build) or set REDIS_BF_MODULE`);
  return path.resolve(module);
}

function hasSetpriv() {
  try {
    execFileSync('setpriv', ['--help'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const SETPRIV = hasSetpriv();

/** A port free now, between 20000 and 32000 (below Linux's ephemeral range), at random. */
export async function freePort() {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port between 20000 and 32000');
}

function removeUnlessKept(directory) {
  if (process.env.REDIS_BF_KEEP_SERVERS !== '1') rmSync(directory, { recursive: true, force: true });
}

/** `await new RedisServer('name').start()`; `.port`, `.url`, `.client()`, `.stop()`. */
export class RedisServer {
  constructor(name, { module = true, args = [], binary = process.env.REDIS_BF_SERVER || 'redis-server' } = {}) {
    started += 1;
    this.name = name;
    this.binary = binary;
    this.dir = path.join(SERVERS_DIR, `${name}-${process.pid}-${started}`);
    this.module = module ? modulePath() : null;
    this.args = args;
    this.port = 0;
    this.process = null;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid() {
    return this.process.pid;
  }

  /** A connected node-redis client of this server (RESP2 unless told: node-redis says RESP3). */
  async client(options = {}) {
    const client = createClient({ url: this.url, RESP: 2, ...options });
    client.on('error', () => {}); // a killed server: the commands fail, the test says so
    await client.connect();
    return client;
  }

  async start() {
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
    for (let attempt = 0; attempt < 5; attempt++) {
      this.port = await freePort();
      // prettier-ignore
      const command = [
        this.binary,
        '--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir,
        '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', 'redis.log',
        ...(this.module ? ['--loadmodule', this.module] : []),
        ...this.args,
      ];
      const [file, ...args] = SETPRIV ? ['setpriv', '--pdeathsig', 'KILL', ...command] : command;
      this.process = spawn(file, args, { cwd: this.dir, stdio: 'ignore' });
      this.exited = new Promise((resolve) => this.process.once('exit', resolve));
      if (await this.ready()) return this;
      await this.kill();
    }
    throw new Error(`${this.binary} would not start; its log:\n${this.log()}`);
  }

  /** Ready once our process answers on our port (another one may have taken the port). */
  async ready() {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (this.process.exitCode !== null) return false;
      const client = createClient({ url: this.url, socket: { reconnectStrategy: false, connectTimeout: 1000 } });
      client.on('error', () => {});
      try {
        await client.connect();
        const info = await client.info('server');
        return Number(/process_id:(\d+)/.exec(info)[1]) === this.pid;
      } catch {
        await sleep(20);
      } finally {
        if (client.isOpen) client.destroy();
      }
    }
    return false;
  }

  log() {
    try {
      return readFileSync(path.join(this.dir, 'redis.log'), 'utf8');
    } catch {
      return '(no log)';
    }
  }

  get alive() {
    return this.process !== null && this.process.exitCode === null && this.process.signalCode === null;
  }

  /** SIGKILLs the server (by its process id) and waits for it to end. */
  async kill() {
    if (this.process === null) return;
    if (this.alive) this.process.kill('SIGKILL');
    await this.exited;
  }

  /** SIGSTOP (true) or SIGCONT (false): a frozen server reads and acknowledges nothing. */
  freeze(frozen) {
    this.process.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
  }

  async stop() {
    await this.kill();
    this.process = null;
    removeUnlessKept(this.dir);
  }
}

/** One line of CLUSTER NODES. */
function parseNodes(text) {
  return text
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => {
      const fields = line.trim().split(/\s+/);
      const address = fields[1].split(',')[0].split('@')[0];
      const slots = fields
        .slice(8)
        .filter((field) => !field.startsWith('['))
        .map((field) => field.split('-').map(Number))
        .map(([low, high]) => [low, high ?? low]);
      const flags = new Set(fields[2].split(','));
      flags.delete('myself');
      return {
        id: fields[0],
        port: Number(address.slice(address.lastIndexOf(':') + 1)),
        flags,
        master: fields[3] === '-' ? null : fields[3],
        slots: slots.sort((a, b) => a[0] - b[0]),
      };
    });
}

export const MASTERS = 3;

/** `await new RedisCluster('name').start()`: six nodes, the layout as redis-cli chose it. */
export class RedisCluster {
  constructor(name, { nodeTimeout = 1000, args = [] } = {}) {
    started += 1;
    this.name = name;
    this.dir = path.join(SERVERS_DIR, `${name}-${process.pid}-${started}`);
    this.nodeTimeout = nodeTimeout;
    this.nodes = Array.from({ length: MASTERS * 2 }, (_, i) => {
      const node = new RedisServer(`${name}-node${i}`, { args });
      node.dir = path.join(this.dir, `node${i}`);
      return node;
    });
    this.ids = new Map(); // node id -> node
    this.admin = new Map(); // node -> a plain client on it
  }

  async start() {
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
    try {
      for (const node of this.nodes) {
        // prettier-ignore
        node.args = [
          '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
          '--cluster-node-timeout', String(this.nodeTimeout), '--cluster-port', String(await freePort()),
          '--cluster-replica-validity-factor', '0', '--repl-diskless-sync-delay', '0',
          ...node.args,
        ];
        await node.start();
        this.ids.set(await this.command(node, 'CLUSTER', 'MYID'), node);
      }
      const addresses = this.nodes.map((node) => `127.0.0.1:${node.port}`);
      const { stdout, stderr } = await run(
        'redis-cli',
        ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'],
        {
          timeout: 60_000,
        },
      );
      const output = (stdout + stderr).replace(/\x1b\[[0-9;]*m/g, '');
      if (!output.includes('[OK] All 16384 slots covered.'))
        throw new Error(`redis-cli --cluster create failed:\n${output}`);
      await this.wait('the cluster to form', 30_000, () => this.formed());
    } catch (error) {
      await this.stop();
      throw error;
    }
    return this;
  }

  async stop() {
    for (const client of this.admin.values()) client.destroy();
    this.admin.clear();
    for (const node of this.nodes) await node.stop();
    removeUnlessKept(this.dir);
  }

  /** A connected node-redis cluster client (RESP2 unless told), started from the first master. */
  async client(options = {}) {
    const [first] = await this.masters();
    const cluster = createCluster({ rootNodes: [{ url: first.url }], RESP: 2, ...options });
    cluster.on('error', () => {});
    await cluster.connect();
    return cluster;
  }

  async url() {
    return (await this.masters())[0].url;
  }

  async adminClient(node) {
    let client = this.admin.get(node);
    if (client === undefined) {
      client = await node.client();
      this.admin.set(node, client);
    }
    return client;
  }

  /** A command on one node directly, its reply as text. */
  async command(node, ...args) {
    return String(await (await this.adminClient(node)).sendCommand(args));
  }

  /** CLUSTER NODES as a live node sees it. */
  async view(node = this.nodes.find((candidate) => candidate.alive)) {
    return parseNodes(await this.command(node, 'CLUSTER', 'NODES'));
  }

  live(seen) {
    const node = this.ids.get(seen.id);
    return node !== undefined && node.alive && !seen.flags.has('fail') && !seen.flags.has('fail?');
  }

  /** The live masters that serve slots, the one with the lowest slot first. */
  async masters() {
    const view = (await this.view()).filter((seen) => seen.flags.has('master') && seen.slots.length && this.live(seen));
    view.sort((a, b) => a.slots[0][0] - b.slots[0][0]);
    return view.map((seen) => this.ids.get(seen.id));
  }

  /** The live replicas of `master`. */
  async replicasOf(master) {
    const id = [...this.ids].find(([, node]) => node === master)[0];
    return (await this.view())
      .filter((seen) => seen.master === id && this.live(seen))
      .map((seen) => this.ids.get(seen.id));
  }

  /** The live master that serves `slot`. */
  async masterOfSlot(slot) {
    for (const seen of await this.view()) {
      if (
        seen.flags.has('master') &&
        this.live(seen) &&
        seen.slots.some(([low, high]) => low <= slot && slot <= high)
      ) {
        return this.ids.get(seen.id);
      }
    }
    throw new Error(`no live master serves slot ${slot}`);
  }

  /** Null once every live node agrees on a healthy layout; else what is missing. */
  async healthy() {
    const layouts = new Set();
    for (const node of this.nodes.filter((candidate) => candidate.alive)) {
      if (!(await this.command(node, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return `${node.url} is not ok`;
      const view = await this.view(node);
      if (view.length !== this.nodes.length) return `${node.url} knows ${view.length} nodes`;
      let covered = 0;
      const layout = [];
      for (const seen of view) {
        if (!this.ids.get(seen.id)?.alive) {
          if (!seen.flags.has('fail')) return `${node.url} does not yet see ${seen.port} as failed`;
          continue;
        }
        if (seen.flags.has('fail') || seen.flags.has('fail?')) return `${node.url} suspects ${seen.port}`;
        layout.push(`${seen.id}:${seen.flags.has('master')}:${seen.master}:${JSON.stringify(seen.slots)}`);
        if (seen.flags.has('master')) covered += seen.slots.reduce((sum, [low, high]) => sum + high - low + 1, 0);
      }
      if (covered !== 16384) return `${node.url} sees ${covered} slots served`;
      layouts.add(layout.sort().join(' '));
      const replication = await this.command(node, 'INFO', 'replication');
      if (!replication.includes('role:master') && !replication.includes('master_link_status:up')) {
        return `${node.url} is a replica not in sync`;
      }
    }
    return layouts.size === 1 ? null : 'the live nodes disagree on the layout';
  }

  async formed() {
    const unhealthy = await this.healthy();
    if (unhealthy) return unhealthy;
    const view = await this.view();
    const masters = view.filter((seen) => seen.flags.has('master') && seen.slots.length);
    if (masters.length !== MASTERS) return `${masters.length} masters`;
    for (const master of masters) {
      if (view.filter((seen) => seen.master === master.id).length !== 1)
        return `the master on ${master.port} has no replica`;
    }
    return null;
  }

  /** SIGKILLs `node`; then `waitForFailover(node)` waits for its replica to take its slots. */
  async kill(node) {
    this.admin.get(node)?.destroy();
    this.admin.delete(node);
    await node.kill();
  }

  /** Waits until the cluster is healthy again with `dead` failed; the master of its first slot. */
  async waitForFailover(slot, timeout = 30_000) {
    await this.wait('a replica to take over', timeout, () => this.healthy());
    return this.masterOfSlot(slot);
  }

  async wait(what, timeout, missing) {
    const deadline = Date.now() + timeout;
    for (;;) {
      let reason;
      try {
        reason = await missing();
      } catch (error) {
        reason = `${error.name}: ${error.message}`;
      }
      if (reason === null) return;
      if (Date.now() > deadline) throw new Error(`gave up after ${timeout} ms waiting for ${what}: ${reason}`);
      await sleep(100);
    }
  }
}

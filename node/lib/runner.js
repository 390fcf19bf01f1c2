/**
 * The one room that talks to Redis: runs the operations of a filter's core (lib/core.js) on a
 * node-redis v6 client (`createClient`), client pool (`createClientPool`) or cluster
 * (`createCluster`). It sends each request an operation yields and hands back the replies, a
 * server's error replies as values (the core decides what they mean); a failure to talk to a
 * server (a closed socket, a timeout) is thrown as node-redis threw it.
 *
 * Commands sent together are pipelined: node-redis writes the commands queued in one tick to a
 * connection at once, so a batch costs one round trip per node, all nodes at once (a pool
 * sends each request on one of its connections). Writes that must reach replicas
 * (`waitForReplicas`) go, with the marker `SET`, its `DEL` and `WAIT`, on one connection per
 * node: the client's, the pool connection of the request, or the cluster's own connection to the
 * node, never through its redirections (which may resend a command elsewhere, where a `WAIT`
 * confirms nothing).
 */

import { Call } from './core.js';
import { UNKNOWN_ADDRESS, isErrorReply, serverAddress } from './errors.js';
import { Waited } from './replies.js';
import { keySlot } from './shards.js';

/**
 * The decoding of every reply: node-redis's defaults (numbers, strings, RESP3 maps as objects),
 * whatever type mapping the application gave its client.
 */
const COMMAND_OPTIONS = Object.freeze({ typeMapping: Object.freeze({}) });

/** The commands that only read, which a cluster client may send to a replica. */
const READONLY = new Set([
  'BF.EXISTS',
  'BF.MEXISTS',
  'BF.CARD',
  'BF.INFO',
  'CF.EXISTS',
  'CF.MEXISTS',
  'CF.COUNT',
  'CF.INFO',
  'GET',
  'TYPE',
  'EXISTS',
]);

/** True for node-redis's cluster client (it routes each key to its node). */
export function isCluster(client) {
  return typeof client?.nodeClient === 'function' && 'slots' in client;
}

/** A server's error reply as a value; anything else thrown on. */
function replyOrError(promise) {
  return promise.catch((error) => {
    if (isErrorReply(error)) return error;
    throw error;
  });
}

/** Sends the requests of a filter's operations for one client. */
export class Runner {
  constructor(client, core) {
    // ioredis's clients have a sendCommand too, of another shape: they are told apart by their
    // call() and their connection status, which node-redis's have not.
    if (typeof client?.call === 'function' && typeof client?.status === 'string') {
      throw new TypeError(
        'ioredis clients are not supported: give a node-redis client, pool or cluster (createClient, createClientPool, createCluster)',
      );
    }
    if (typeof client?.sendCommand !== 'function') {
      throw new TypeError(
        'the client must be a node-redis client, pool or cluster (createClient, createClientPool, createCluster)',
      );
    }
    this.client = client;
    this.core = core;
    this.cluster = isCluster(client);
    this.pool = !this.cluster && typeof client.execute === 'function';
  }

  /** Runs an operation of the core: sends each request it yields, and returns its answer. */
  async run(operation) {
    let step = operation.next();
    while (!step.done) step = operation.next(await this.send(step.value));
    return step.value;
  }

  /** One command (its key is its second argument): the reply or error reply. */
  command(args, connection = this.client) {
    if (this.cluster) {
      return replyOrError(connection.sendCommand(args[1], READONLY.has(args[0]), args, COMMAND_OPTIONS));
    }
    return replyOrError(connection.sendCommand(args, COMMAND_OPTIONS));
  }

  send(request) {
    if (this.pool) {
      // A pool: each request on one of its connections, so that a batch is one round trip and
      // its WAIT follows its own writes; the first one says where the pool connects.
      return this.client.execute((connection) => {
        if (this.core.address === UNKNOWN_ADDRESS) this.core.address = serverAddress(connection);
        return this.sendOn(connection, request);
      });
    }
    if (request.wait && this.cluster) return this.sendWaited(request);
    return this.sendOn(this.client, request);
  }

  /** A request on a client (not a cluster's waited batch). */
  sendOn(connection, request) {
    if (request instanceof Call) return this.command(request.args, connection);
    if (!request.wait) return Promise.all(request.commands.map((args) => this.command(args, connection)));
    return this.onConnection(connection, request.commands, this.core.address);
  }

  /**
   * `commands`, then the core's wait commands, on one connection (a client, or a cluster's node
   * client): their replies, then a `Waited` for `address`.
   */
  async onConnection(connection, commands, address) {
    const all = [...commands, ...this.core.waitCommands(commands[0][1])];
    const replies = await Promise.all(all.map((args) => replyOrError(connection.sendCommand(args, COMMAND_OPTIONS))));
    return [...replies.slice(0, commands.length), new Waited(address, replies.slice(commands.length))];
  }

  /**
   * Writes that must reach replicas, on a cluster: each node's on the cluster's connection to
   * that node, followed by the wait commands there, all nodes at once; the replies in the
   * commands' order, then a `Waited` per node.
   */
  async sendWaited(request) {
    const groups = new Map(); // address -> { node, positions }
    request.commands.forEach((args, position) => {
      const node = this.client.slots[keySlot(args[1])]?.master;
      if (node === undefined)
        throw new Error(
          `the cluster client knows no primary for '${args[1]}': connect it first (await cluster.connect())`,
        );
      if (!groups.has(node.address)) groups.set(node.address, { node, positions: [] });
      groups.get(node.address).positions.push(position);
    });
    const replies = new Array(request.commands.length);
    const waits = new Array(groups.size);
    try {
      await Promise.all(
        [...groups.values()].map(async ({ node, positions }, group) => {
          const connection = await this.client.nodeClient(node);
          const out = await this.onConnection(
            connection,
            positions.map((p) => request.commands[p]),
            node.address,
          );
          positions.forEach((p, i) => {
            replies[p] = out[i];
          });
          waits[group] = out[positions.length];
          if (out.slice(0, positions.length).some(isErrorReply)) await this.refresh(request.commands[positions[0]][1]);
        }),
      );
    } catch (error) {
      await this.refresh(request.commands[0][1]);
      throw error;
    }
    return [...replies, ...waits];
  }

  /**
   * Lets the cluster client find where `key` lives now (after a failover or a moved slot): a
   * command through it, which follows redirections and reloads the slots on failures.
   */
  async refresh(key) {
    try {
      await this.client.sendCommand(key, true, ['EXISTS', key], COMMAND_OPTIONS);
    } catch {
      // The next command finds out for itself.
    }
  }
}

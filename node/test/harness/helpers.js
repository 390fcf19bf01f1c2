// What the tests ask of a server directly, besides the package under test.

import { cuckooInfo, infoObject } from '../../lib/replies.js';

/** BF.INFO as an object, in either protocol. */
export async function bloomInfo(client, key) {
  return infoObject(await client.sendCommand(['BF.INFO', key]));
}

/** CF.INFO as an object (its error rate a number). */
export async function cuckooInfoOf(client, key) {
  return cuckooInfo(await client.sendCommand(['CF.INFO', key]));
}

/** CF.DEBUG: the filter's shape in one line. */
export async function cuckooDebug(client, key) {
  return String(await client.sendCommand(['CF.DEBUG', key]));
}

/** Calls per command, names in lower case. */
export async function commandstats(client) {
  const text = String(await client.sendCommand(['INFO', 'commandstats']));
  const calls = {};
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1].toLowerCase()] = Number(match[2]);
  return calls;
}

/** The size of a filter reserved explicitly with these parameters, on the same server. */
export async function referenceSize(client, errorRate, capacity) {
  await client.sendCommand(['BF.RESERVE', 'reference', String(errorRate), String(capacity)]);
  const size = (await bloomInfo(client, 'reference')).Size;
  await client.del('reference');
  return size;
}

/** `call()`, again while it throws `NotReplicatedError` (20 s at most): a short WAIT may time out. */
export async function eventually(call, NotReplicatedError) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof NotReplicatedError) || Date.now() > deadline) throw error;
    }
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

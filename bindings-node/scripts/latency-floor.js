'use strict';
// What one uncontended lock cycle (acquire + release, one handle, one request at a
// time) can cost at best, per request, with the client's overhead taken away: each
// request is sent by a client that does nothing but write its bytes to a socket and
// wait for the reply's first line (all replies here are one line), and by ioredis (the
// client stack of redis-semaphore and node-redlock), next to ferrolock's own calls.
// Every kind of request takes its turn in each of many rounds, so the VM's drift
// touches them all alike; the medians are printed.
//
//   node scripts/latency-floor.js        (~20 s)
//
// The last lines bound bench.js's one-handle ratio against redis-semaphore: Redisson's
// protocol (our acquire and release scripts, with the unlock latch of the idempotent
// release) sent by the bare client, set against redis-semaphore's two requests sent by
// ioredis as redis-semaphore sends them. No client of our protocol can do better than
// the bare one, so if that bound is under 1.00 the one-handle target is out of reach
// for any client of this protocol on this machine.

const Redis = require('ioredis');
const { Client } = require('..');
const { ourScripts, bareClient } = require('./libraries');
const { startRedis } = require('../test/helpers');

const ROUNDS = Number(process.env.FLOOR_ROUNDS || 3000);

// redis-semaphore's Mutex release (lib/mutex/release.js), verbatim in effect.
const DEL_IF_EQUAL = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

async function main() {
  const server = await startRedis();
  const bare = bareClient(server.port);
  const ioredis = new Redis(server.port, '127.0.0.1');
  const client = await Client.connect(server.url);
  try {
    await bare.ready;
    const scripts = ourScripts();
    const sha = {};
    for (const [name, lua] of [['acquire', scripts.acquire], ['release', scripts.release], ['delIfEqual', DEL_IF_EQUAL]]) {
      sha[name] = await ioredis.script('LOAD', lua);
    }
    const lock = client.lock('floor:ferrolock');
    const owner = 'floor-client:1';
    let request = 0;
    const requests = {
      'PING, bare': () => bare.send(['PING']),
      'PING, ioredis': () => ioredis.ping(),
      'SET NX PX (redis-semaphore acquire), bare': () => bare.send(['SET', 'floor:semaphore', 'me', 'PX', '10000', 'NX']),
      'del-if-equal script (redis-semaphore release), bare': () => bare.send(['EVALSHA', sha.delIfEqual, '1', 'floor:semaphore', 'me']),
      'SET NX PX (redis-semaphore acquire), ioredis': () => ioredis.set('floor:semaphore', 'me', 'PX', 10000, 'NX'),
      'del-if-equal script (redis-semaphore release), ioredis': () => ioredis.evalsha(sha.delIfEqual, 1, 'floor:semaphore', 'me'),
      'our acquire script, bare': () => bare.send(['EVALSHA', sha.acquire, '1', 'floor:ours', '30000', owner]),
      'our release script, bare': () => bare.send(['EVALSHA', sha.release, '3', 'floor:ours', 'redisson_lock__channel:{floor:ours}',
        `redisson_unlock_latch:{floor:ours}:floor-client:${++request}`, owner, '30000', 'publish', '5000', '1']),
      'ferrolock acquire()': () => lock.acquire(),
      'ferrolock release()': (hold) => hold.release(),
    };
    const times = Object.fromEntries(Object.keys(requests).map((k) => [k, []]));
    // The ferrolock release takes the hold its acquire answered; the others need nothing.
    let last;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, send] of Object.entries(requests)) {
        const t0 = process.hrtime.bigint();
        last = await send(last);
        times[name].push(Number(process.hrtime.bigint() - t0) / 1000);
      }
    }
    // The latches our bare release wrote (ferrolock deletes its own).
    const latches = await ioredis.keys('redisson_unlock_latch:{floor:ours}:*');
    for (let i = 0; i < latches.length; i += 500) await ioredis.unlink(...latches.slice(i, i + 500));

    const p50 = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
    console.log(`Requests one at a time, ${ROUNDS} rounds, every kind in each; median latency:`);
    for (const [name, us] of Object.entries(p50)) console.log(`  ${name.padEnd(56)} ${us.toFixed(1).padStart(7)} us`);
    const semIoredis = p50['SET NX PX (redis-semaphore acquire), ioredis'] + p50['del-if-equal script (redis-semaphore release), ioredis'];
    const semBare = p50['SET NX PX (redis-semaphore acquire), bare'] + p50['del-if-equal script (redis-semaphore release), bare'];
    const oursBare = p50['our acquire script, bare'] + p50['our release script, bare'];
    const ferrolock = p50['ferrolock acquire()'] + p50['ferrolock release()'];
    const overhead = p50['PING, ioredis'] - p50['PING, bare'];
    console.log('Cycle (acquire + release):');
    console.log(`  redis-semaphore's requests, sent by ioredis  ${semIoredis.toFixed(1)} us; by the bare client ${semBare.toFixed(1)} us`);
    console.log(`  our scripts, sent by the bare client         ${oursBare.toFixed(1)} us (the server's extra work: ${(oursBare - semBare).toFixed(1)} us per cycle)`);
    console.log(`  ferrolock                                    ${ferrolock.toFixed(1)} us`);
    console.log(`  ioredis's own overhead per request (PING):   ${overhead.toFixed(1)} us`);
    console.log(`bound: one handle, the best any client of our protocol can do against redis-semaphore: ${(semIoredis / oursBare).toFixed(2)}x ` +
      `(ferrolock here: ${(semIoredis / ferrolock).toFixed(2)}x)`);
  } finally {
    bare.close();
    ioredis.disconnect();
    await client.close();
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

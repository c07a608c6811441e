'use strict';
// What one uncontended lock cycle (acquire + release) costs redis-server, in instructions
// counted by callgrind: repeatable to a few tenths of a percent whatever else the machine
// does, where the CPU seconds bench.js reads from INFO drift with the VM. redis-server runs
// under valgrind (started and stopped here); each library in turn runs 8 async workers on
// their own names; the counters are zeroed before and dumped after each library's cycles.
//
//   node scripts/server-cost.js        (needs valgrind; ~1 minute)
//
// Besides ferrolock, node-redlock v5 and redis-semaphore's Mutex, it runs the protocol's
// floor (scripts/libraries.js: our scripts sent by ioredis) and two variants of it that take
// the cost apart: the same EVALSHA calls with the same keys and arguments whose scripts do
// nothing (what Redis charges to call a script at all), and the release without its unlock
// latch (what the idempotent release costs); and two PINGs, what any two requests cost.
// Only user-space instructions are counted: the kernel's socket work per request (the
// same two requests per cycle for all of them) is not, which is why bench.js's
// CPU-second ratios are closer together than these.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const Redis = require('ioredis');
const { Client } = require('..');
const { cycles, ferrolock, nodeRedlock, redisSemaphore, protocolFloor, ourScripts } = require('./libraries');
const { startRedis } = require('../test/helpers');

const WORKERS = 8;
const CYCLES = Number(process.env.COST_CYCLES || 250); // per worker

// Variants of our scripts for taking the floor apart (benchmark-only Lua, never the library's).
const NOTHING = { acquire: 'return 1', release: 'return 1' };
const NO_LATCH_RELEASE = `
if not redis.call('hget', KEYS[1], ARGV[1]) then return nil end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`;

// Instructions since the last zeroing: a dump named `label`, read back from its file.
function dump(pid, dir, label) {
  execFileSync('callgrind_control', [`--dump=${label}`, String(pid)], { stdio: 'ignore' });
  const files = fs.readdirSync(dir).filter((f) => f.startsWith('callgrind.out.'));
  for (const f of files) {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    if (!text.includes(`Trigger: dump ${label}\n`)) continue;
    const m = text.match(/^(?:summary|totals): (\d+)/m);
    fs.unlinkSync(path.join(dir, f));
    return Number(m[1]);
  }
  throw new Error(`no callgrind dump named ${label} in ${dir}`);
}

async function main() {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('server-cost.js needs valgrind (apt-get install valgrind)');
  }
  const server = await startRedis([], { under: (dir) => ['valgrind', '--tool=callgrind', `--callgrind-out-file=${path.join(dir, 'callgrind.out')}`] });
  const { dir } = server;
  const conns = [];
  const ioredis = () => {
    const r = new Redis(server.port, '127.0.0.1');
    conns.push(r);
    return r;
  };
  const client = await Client.connect(server.url);
  try {
    const pinger = ioredis();
    const libraries = [
      ferrolock(client),
      protocolFloor(ioredis()),
      nodeRedlock(ioredis()),
      redisSemaphore(ioredis()),
      protocolFloor(ioredis(), { name: 'floor, scripts doing nothing', scripts: NOTHING }),
      { name: 'two PINGs, no lock', handle: async () => ({ acquire: () => pinger.ping(), release: () => pinger.ping() }) },
      protocolFloor(ioredis(), { name: 'floor, release without latch', scripts: { ...ourScripts(), release: NO_LATCH_RELEASE } }),
    ];
    const perCycle = {};
    for (const [i, lib] of libraries.entries()) {
      const handles = await Promise.all(Array.from({ length: WORKERS }, (_, w) => lib.handle(`cost:${i}:${w}`)));
      await Promise.all(handles.map((h) => cycles(h, 20))); // scripts loaded, connections made
      // Let what the warm-up left (batched latch deletions) land before zeroing.
      await new Promise((resolve) => setTimeout(resolve, 50));
      execFileSync('callgrind_control', ['-z', String(server.proc.pid)], { stdio: 'ignore' });
      await Promise.all(handles.map((h) => cycles(h, CYCLES)));
      await new Promise((resolve) => setTimeout(resolve, 50)); // this run's latch deletions
      perCycle[lib.name] = dump(server.proc.pid, dir, `lib${i}`) / (WORKERS * CYCLES);
    }
    console.log(`redis-server instructions per uncontended cycle (callgrind), ${WORKERS} workers x ${CYCLES} cycles each:`);
    for (const [name, n] of Object.entries(perCycle)) console.log(`  ${name.padEnd(30)} ${n.toFixed(0).padStart(8)}`);
    const f = perCycle.ferrolock;
    const floor = perCycle['floor: ioredis + our Lua'];
    const redlock = perCycle['node-redlock v5'];
    const semaphore = perCycle['redis-semaphore Mutex'];
    const nothing = perCycle['floor, scripts doing nothing'];
    const noLatch = perCycle['floor, release without latch'];
    const pings = perCycle['two PINGs, no lock'];
    console.log(`  of the floor: two requests as such ${(pings / floor * 100).toFixed(0)}%, calling two scripts with our keys and arguments ${((nothing - pings) / floor * 100).toFixed(0)}% more, the unlock latch ${((floor - noLatch) / floor * 100).toFixed(0)}%, ` +
      `the rest (Redisson's hash, lease and publish) ${((noLatch - nothing) / floor * 100).toFixed(0)}%`);
    console.log(`server instructions: ferrolock / floor ${(f / floor).toFixed(2)}, ferrolock / node-redlock ${(f / redlock).toFixed(2)}, ` +
      `floor / node-redlock ${(floor / redlock).toFixed(2)}, floor / redis-semaphore ${(floor / semaphore).toFixed(2)}`);
  } finally {
    await client.close();
    for (const r of conns) r.disconnect();
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

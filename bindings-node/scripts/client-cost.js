'use strict';
// What one uncontended lock cycle (acquire + release) costs the client process, in
// user-space instructions counted by callgrind: repeatable to a tenth of a percent
// whatever else the machine does, where the CPU seconds bench.js reads drift with the VM.
// Each library runs 8 async workers on their own names in a child process under valgrind,
// twice: with the warm-up only, and with CYCLES more cycles; the difference over CYCLES is
// its cost per cycle, split by where the instructions ran (Node and V8, the ferrolock
// addon, libc: malloc and memcpy mostly).
//
//   node scripts/client-cost.js        (needs valgrind; about 5 minutes)
//   COST_LIBRARIES=ferrolock node scripts/client-cost.js     (some of them, by name)
//
// Libraries: ferrolock, the peers (node-redlock v5, redis-semaphore's Mutex, both on
// ioredis), the protocol's floor on ioredis, and the bare floor (our scripts sent by a
// client that does nothing but write requests and read reply lines, scripts/libraries.js):
// the least any Node client of our protocol must spend. The kernel's socket work is not
// counted (the same two requests per cycle for all of them).

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const WORKERS = 8;
const WARMUP = 200; // cycles per worker, in both runs (JIT, connections, scripts loaded)
const CYCLES = Number(process.env.COST_CYCLES || 40000); // in all, over the workers
const ALL = ['ferrolock', 'floor: bare client + our Lua', 'floor: ioredis + our Lua', 'node-redlock v5', 'redis-semaphore Mutex'];
const LIBRARIES = process.env.COST_LIBRARIES ? ALL.filter((name) => process.env.COST_LIBRARIES.split(',').some((n) => name.startsWith(n))) : ALL;

/** In the child: `cycles` cycles (after the warm-up) of `library` against `port`. */
async function child(library, port, cycles) {
  const Redis = require('ioredis');
  const { Client } = require('..');
  const libs = require('./libraries');
  const closers = [];
  const ioredis = () => {
    const r = new Redis(Number(port), '127.0.0.1');
    closers.push(() => r.disconnect());
    return r;
  };
  let lib;
  if (library === 'ferrolock') {
    const client = await Client.connect(`redis://127.0.0.1:${port}`);
    closers.push(() => client.close());
    lib = libs.ferrolock(client);
  } else if (library === 'floor: bare client + our Lua') {
    const bare = libs.bareClient(Number(port));
    closers.push(() => bare.close());
    await bare.ready;
    lib = libs.protocolFloor(ioredis(), { bare });
  } else {
    const make = { 'floor: ioredis + our Lua': libs.protocolFloor, 'node-redlock v5': libs.nodeRedlock, 'redis-semaphore Mutex': libs.redisSemaphore }[library];
    lib = make(ioredis());
  }
  const handles = await Promise.all(Array.from({ length: WORKERS }, (_, i) => lib.handle(`cost:${i}`)));
  await Promise.all(handles.map((h) => libs.cycles(h, WARMUP)));
  await Promise.all(handles.map((h) => libs.cycles(h, Number(cycles) / WORKERS)));
  for (const close of closers) await close();
}

/** Instructions of one child run, in all and by object file. */
function run(library, port, cycles, dir) {
  const out = path.join(dir, `callgrind.${cycles}`);
  execFileSync('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath, __filename, '--child', library, String(port), String(cycles)],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', out], { maxBuffer: 1 << 28 }).toString();
  fs.unlinkSync(out);
  const byObject = {};
  let total = 0;
  for (const line of annotated.split('\n')) {
    const m = line.match(/^\s*([\d,]+) \([^)]*\)\s+\S.*\[([^\]]+)\]\s*$/);
    if (!m) continue;
    const n = Number(m[1].replaceAll(',', ''));
    const object = path.basename(m[2]);
    byObject[object] = (byObject[object] || 0) + n;
    total += n;
  }
  return { total, byObject };
}

async function main() {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('client-cost.js needs valgrind (apt-get install valgrind)');
  }
  const { startRedis } = require('../test/helpers');
  const server = await startRedis();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferrolock-client-cost-'));
  try {
    console.log(`client instructions per uncontended cycle (callgrind), ${WORKERS} workers, ${CYCLES} cycles over the warm-up's:`);
    const groups = { node: 'node', 'ferrolock.node': 'addon', 'libc.so.6': 'libc' };
    console.log(`  ${'library'.padEnd(30)} ${'total'.padStart(8)} ${Object.values(groups).map((g) => g.padStart(8)).join(' ')} ${'other'.padStart(8)}`);
    const perCycle = {};
    for (const library of LIBRARIES) {
      const base = run(library, server.port, 0, dir);
      const full = run(library, server.port, CYCLES, dir);
      const per = (object) => ((full.byObject[object] || 0) - (base.byObject[object] || 0)) / CYCLES;
      const total = (full.total - base.total) / CYCLES;
      const parts = Object.keys(groups).map(per);
      perCycle[library] = total;
      console.log(`  ${library.padEnd(30)} ${total.toFixed(0).padStart(8)} ${parts.map((n) => n.toFixed(0).padStart(8)).join(' ')} ` +
        `${(total - parts.reduce((a, b) => a + b, 0)).toFixed(0).padStart(8)}`);
    }
    const f = perCycle.ferrolock;
    if (LIBRARIES.length < ALL.length) return;
    console.log(`client instructions: ferrolock / bare floor ${(f / perCycle['floor: bare client + our Lua']).toFixed(2)}, ` +
      `/ ioredis floor ${(f / perCycle['floor: ioredis + our Lua']).toFixed(2)}, / node-redlock ${(f / perCycle['node-redlock v5']).toFixed(2)}, ` +
      `/ redis-semaphore ${(f / perCycle['redis-semaphore Mutex']).toFixed(2)}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await server.stop();
  }
}

if (process.argv[2] === '--child') {
  child(...process.argv.slice(3)).catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
} else {
  main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}

'use strict';
// Load for profiling (scripts/flamegraph.sh node): WORKERS async workers, each
// acquiring and releasing its own lock name in a loop, for SECONDS; prints cycles/s
// and this process's CPU per cycle.
//
//   node scripts/workers.js redis://127.0.0.1:6379 [workers=8] [seconds=5]

const { Client } = require('..');

async function main() {
  const [url, workers = '8', seconds = '5'] = process.argv.slice(2);
  if (!url) throw new Error('usage: node scripts/workers.js URL [workers] [seconds]');
  const client = await Client.connect(url);
  try {
    const locks = Array.from({ length: Number(workers) }, (_, i) => client.lock(`profile:${i}`));
    let cycles = 0;
    const loop = async (lock, until) => {
      while (performance.now() < until) {
        await (await lock.acquire()).release();
        cycles++;
      }
    };
    await Promise.all(locks.map((l) => loop(l, performance.now() + 500))); // warm-up
    cycles = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(locks.map((l) => loop(l, t0 + Number(seconds) * 1000)));
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    console.log(`${workers} workers: ${((cycles / ms) * 1000).toFixed(0)} cycles/s, ` +
      `${((cpu.user + cpu.system) / cycles).toFixed(1)} us of this process's CPU per cycle`);
  } finally {
    await client.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});

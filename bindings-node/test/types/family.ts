// Type-level check (tsc, run by test.sh): the family's shapes as a TypeScript user
// writes them, `await using` included. Compiles or fails; never runs.

import {
  Client, CountDownLatch, Lock, Permit, PermitExpirableSemaphore, Permits, ReadWriteLock, Semaphore,
} from '../..';

declare const client: Client;

export async function family(signal: AbortSignal): Promise<number> {
  const fair: Lock = client.fairLock('jobs', { holderId: 1 });
  const rw: ReadWriteLock = client.readWriteLock('config');
  const reader: Lock = rw.readLock();
  const writer: Lock = rw.writeLock();
  const kinds: Array<'reentrant' | 'fenced' | 'fair' | 'read' | 'write'> = [fair.kind, reader.kind, writer.kind];
  {
    await using _held = await reader.acquire({ signal });
  }

  const gpu: Semaphore = client.semaphore('gpu');
  const set: boolean = await gpu.trySetPermits(4);
  const taken: Permits | null = await gpu.acquire({ permits: 2, waitMs: 1000, signal });
  if (taken) {
    await using _permits = taken;
    const n: number = taken.count;
    void n;
  }
  const free: number = await gpu.release(1);
  const drained: number = await gpu.drain();
  const ran: string = await gpu.using(async (p) => String(p.count), { permits: 1 });

  const quota: PermitExpirableSemaphore = client.permitExpirableSemaphore('api');
  const permit: Permit | null = await quota.acquire({ waitMs: 10, leaseMs: 60_000, signal });
  if (permit) {
    await using p = permit;
    const id: string = p.id;
    const lease: number | null = p.leaseMs;
    void id;
    void lease;
  }
  const released: boolean = await quota.release('0'.repeat(32));
  const inTime: boolean = permit ? await quota.release(permit) : false;

  const ready: CountDownLatch = client.countDownLatch('ready');
  const open: boolean = await ready.wait({ waitMs: 10_000, signal });
  const left: number = await ready.countDown();
  void [kinds, set, drained, ran, released, inTime, open];
  return free + left + (await ready.count()) + (await quota.available()) + (await gpu.available());
}

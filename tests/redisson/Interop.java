// A Redisson process for ferrolock's interop tests (tests/redisson.rs), built against
// org.redisson:redisson 4.7.0 and 3.52.0 (tests/redisson/build.sh). Started as
//
//   java -cp ... Interop WATCHDOG_MS URL [URL...]
//
// with one RedissonClient per URL (lockWatchdogTimeout = WATCHDOG_MS; a URL
// "cluster:redis://h:p,redis://h:p..." is a Cluster client on those seeds,
// "sentinel:MASTER:redis://h:p,..." a client behind those sentinels). It prints
// "ready", then reads one command per line on stdin and answers each with one line:
// the result, or "error <what>". Numbers are decimal, booleans "true"/"false", a
// timed wait that ran out answers "busy" (latch: "closed").
//
// Everything runs on the main thread, one command at a time: Redisson's locks
// belong to the thread that took them, so the same thread must unlock. A blocking
// command (a wait) answers when it is done; the test writes it, does its part, then
// reads the answer.
//
// Objects are named per command, on the first client (multi-locks: every client).
// WAIT_MS -1 waits as long as it takes, 0 tries once.
//
//   id                              this thread's owner field: "<client uuid>:<thread id>"
//   quit                            shuts the clients down: "bye"
//
//   KIND try NAME WAIT_MS           tryLock with the watchdog lease: "ok" | "busy"
//   KIND unlock NAME                "ok"
//   KIND holds NAME                 this thread's hold count
//   KIND locked NAME                isLocked: "true" | "false"
//       KIND: lock (RLock), fenced (RFencedLock), fair (RFairLock),
//             read / write (the two sides of RReadWriteLock NAME)
//   lock lease NAME WAIT_MS LEASE_MS  RLock.tryLock(wait, lease): "ok" | "busy"
//   lock force NAME                 forceUnlock: "true" | "false"
//   lock ttl NAME                   remainTimeToLive (ms; -2 free, -1 no expiry)
//   lock tryunlock NAME             unlock: "ok" | "refused <exception class>" (IllegalMonitorStateException)
//   lock mine NAME                  isHeldByCurrentThread: "true" | "false"
//   lock heldby NAME THREAD_ID      isHeldByThread: "true" | "false"
//   lock interruptibly NAME         lockInterruptibly (waits as long as it takes): "ok"
//   lock tryasync NAME WAIT_MS      tryLockAsync(wait), awaited: "ok" | "busy"
//   lock unlockasync NAME           unlockAsync, awaited: "ok"
//   thread                          this thread's id
//   config synced                   a new Config's isCheckLockSyncedSlaves: "true" | "false"
//   fenced try NAME WAIT_MS         (instead of the above) tryLockAndGetToken: the token | "busy"
//   fenced token NAME               getToken: the last token | "none"
//
//   semaphore set NAME N            trySetPermits: "true" | "false"
//   semaphore acquire NAME N WAIT_MS  tryAcquire(N, wait): "ok" | "busy"
//   semaphore release NAME N        "ok"
//   semaphore available NAME        availablePermits
//   semaphore drain NAME            drainPermits: how many
//
//   expirable set NAME N            RPermitExpirableSemaphore.trySetPermits: "true" | "false"
//   expirable acquire NAME WAIT_MS LEASE_MS  tryAcquire(wait, lease; -1 no lease): the permit id | "busy"
//   expirable acquiren NAME N WAIT_MS LEASE_MS  tryAcquire(N, wait, lease): the ids, comma-separated | "busy"
//   expirable update NAME ID LEASE_MS  updateLeaseTime: "true" | "false"
//   expirable release NAME ID       "ok"
//   expirable available NAME        availablePermits
//
//   latch set NAME N                RCountDownLatch.trySetCount: "true" | "false"
//   latch down NAME                 countDown: "ok"
//   latch count NAME                getCount
//   latch await NAME WAIT_MS        await(wait): "open" | "closed"
//
//   redlock try NAME WAIT_MS        RedissonRedLock over NAME on every client: "ok" | "busy"
//   multilock try NAME WAIT_MS      RedissonMultiLock, the same way
//   multi unlock                    releases what the last redlock/multilock try took: "ok"
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;

public class Interop {
    /** One command: its arguments (after the command words) in, the reply line out. */
    interface Command {
        String run(String[] args) throws Exception;
    }

    private static final TimeUnit MS = TimeUnit.MILLISECONDS;

    private final List<RedissonClient> clients = new ArrayList<>();
    private final RedissonClient redisson;
    private final Map<String, Command> commands = new LinkedHashMap<>();
    private RLock multiHeld;

    Interop(long watchdogMs, List<String> urls) {
        for (String url : urls) {
            Config config = new Config();
            config.setLockWatchdogTimeout(watchdogMs);
            config.setThreads(2);
            config.setNettyThreads(4);
            if (url.startsWith("cluster:")) {
                // Cluster mode: Redisson learns the nodes from these seeds, and its pub/sub
                // flavour (sharded or classic) from the server.
                var cluster = config.useClusterServers()
                        .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(4)
                        .setSlaveConnectionMinimumIdleSize(1).setSlaveConnectionPoolSize(2)
                        .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(2);
                for (String node : url.substring("cluster:".length()).split(",")) {
                    cluster.addNodeAddress(node);
                }
            } else if (url.startsWith("sentinel:")) {
                // "sentinel:MASTER:redis://h:p,...": behind Sentinel, the master named MASTER
                // on those sentinels (checkLockSyncedSlaves stays at its default, on).
                String[] parts = url.substring("sentinel:".length()).split(":", 2);
                var sentinel = config.useSentinelServers().setMasterName(parts[0])
                        .setReadMode(ReadMode.MASTER)
                        .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(4)
                        .setSlaveConnectionMinimumIdleSize(1).setSlaveConnectionPoolSize(2)
                        .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(2);
                for (String node : parts[1].split(",")) {
                    sentinel.addSentinelAddress(node);
                }
            } else {
                config.useSingleServer().setAddress(url).setConnectionMinimumIdleSize(2).setConnectionPoolSize(4);
            }
            clients.add(Redisson.create(config));
        }
        redisson = clients.get(0);

        on("id", a -> redisson.getId() + ":" + Thread.currentThread().getId());

        locks("lock", redisson::getLock);
        locks("fenced", redisson::getFencedLock);
        locks("fair", redisson::getFairLock);
        locks("read", name -> redisson.getReadWriteLock(name).readLock());
        locks("write", name -> redisson.getReadWriteLock(name).writeLock());
        on("lock lease", a -> redisson.getLock(a[0]).tryLock(ms(a[1]), ms(a[2]), MS) ? "ok" : "busy");
        on("lock force", a -> Boolean.toString(redisson.getLock(a[0]).forceUnlock()));
        on("lock ttl", a -> Long.toString(redisson.getLock(a[0]).remainTimeToLive()));
        on("lock tryunlock", a -> {
            try {
                redisson.getLock(a[0]).unlock();
                return "ok";
            } catch (IllegalMonitorStateException e) {
                return "refused " + e.getClass().getSimpleName();
            }
        });
        on("lock mine", a -> Boolean.toString(redisson.getLock(a[0]).isHeldByCurrentThread()));
        on("lock heldby", a -> Boolean.toString(redisson.getLock(a[0]).isHeldByThread(Long.parseLong(a[1]))));
        on("lock interruptibly", a -> {
            redisson.getLock(a[0]).lockInterruptibly();
            return "ok";
        });
        on("lock tryasync", a -> redisson.getLock(a[0]).tryLockAsync(ms(a[1]), MS).toCompletableFuture().get() ? "ok" : "busy");
        on("lock unlockasync", a -> {
            redisson.getLock(a[0]).unlockAsync().toCompletableFuture().get();
            return "ok";
        });
        on("thread", a -> Long.toString(Thread.currentThread().getId()));
        on("config synced", a -> Boolean.toString(new Config().isCheckLockSyncedSlaves()));
        on("fenced try", this::fencedTry);
        on("fenced token", this::fencedToken);

        on("semaphore set", this::semaphoreSet);
        on("semaphore acquire", this::semaphoreAcquire);
        on("semaphore release", this::semaphoreRelease);
        on("semaphore available", this::semaphoreAvailable);
        on("semaphore drain", this::semaphoreDrain);

        on("expirable set", this::expirableSet);
        on("expirable acquire", this::expirableAcquire);
        on("expirable acquiren", a -> {
            List<String> ids = redisson.getPermitExpirableSemaphore(a[0]).tryAcquire(count(a[1]), ms(a[2]), ms(a[3]), MS);
            return ids.isEmpty() ? "busy" : String.join(",", ids);
        });
        on("expirable update", a -> Boolean.toString(redisson.getPermitExpirableSemaphore(a[0]).updateLeaseTime(a[1], ms(a[2]), MS)));
        on("expirable release", this::expirableRelease);
        on("expirable available", this::expirableAvailable);

        on("latch set", this::latchSet);
        on("latch down", this::latchDown);
        on("latch count", this::latchCount);
        on("latch await", this::latchAwait);

        on("redlock try", a -> multiTry(true, a));
        on("multilock try", a -> multiTry(false, a));
        on("multi unlock", this::multiUnlock);
    }

    private void on(String words, Command command) {
        commands.put(words, command);
    }

    /** The four commands every lock kind has. */
    private void locks(String kind, Function<String, RLock> get) {
        on(kind + " try", a -> lockTry(get.apply(a[0]), ms(a[1])));
        on(kind + " unlock", a -> lockUnlock(get.apply(a[0])));
        on(kind + " holds", a -> Integer.toString(get.apply(a[0]).getHoldCount()));
        on(kind + " locked", a -> Boolean.toString(get.apply(a[0]).isLocked()));
    }

    // ---- locks (RLock, RFencedLock, RFairLock, read and write locks)

    private String lockTry(RLock lock, long waitMs) throws Exception {
        return lock.tryLock(waitMs, -1, MS) ? "ok" : "busy";
    }

    private String lockUnlock(RLock lock) {
        lock.unlock();
        return "ok";
    }

    private String fencedTry(String[] a) throws Exception {
        Long token = redisson.getFencedLock(a[0]).tryLockAndGetToken(ms(a[1]), MS);
        return token == null ? "busy" : token.toString();
    }

    private String fencedToken(String[] a) {
        Long token = redisson.getFencedLock(a[0]).getToken();
        return token == null ? "none" : token.toString();
    }

    // ---- RSemaphore

    private String semaphoreSet(String[] a) {
        return Boolean.toString(redisson.getSemaphore(a[0]).trySetPermits(count(a[1])));
    }

    private String semaphoreAcquire(String[] a) throws Exception {
        RSemaphore semaphore = redisson.getSemaphore(a[0]);
        long waitMs = ms(a[2]);
        if (waitMs < 0) {
            semaphore.acquire(count(a[1]));
            return "ok";
        }
        return semaphore.tryAcquire(count(a[1]), Duration.ofMillis(waitMs)) ? "ok" : "busy";
    }

    private String semaphoreRelease(String[] a) {
        redisson.getSemaphore(a[0]).release(count(a[1]));
        return "ok";
    }

    private String semaphoreAvailable(String[] a) {
        return Integer.toString(redisson.getSemaphore(a[0]).availablePermits());
    }

    private String semaphoreDrain(String[] a) {
        return Integer.toString(redisson.getSemaphore(a[0]).drainPermits());
    }

    // ---- RPermitExpirableSemaphore

    private String expirableSet(String[] a) {
        return Boolean.toString(redisson.getPermitExpirableSemaphore(a[0]).trySetPermits(count(a[1])));
    }

    private String expirableAcquire(String[] a) throws Exception {
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(a[0]);
        long waitMs = ms(a[1]);
        String id = waitMs < 0 ? semaphore.acquire(ms(a[2]), MS) : semaphore.tryAcquire(waitMs, ms(a[2]), MS);
        return id == null ? "busy" : id;
    }

    private String expirableRelease(String[] a) {
        redisson.getPermitExpirableSemaphore(a[0]).release(a[1]);
        return "ok";
    }

    private String expirableAvailable(String[] a) {
        return Integer.toString(redisson.getPermitExpirableSemaphore(a[0]).availablePermits());
    }

    // ---- RCountDownLatch

    private String latchSet(String[] a) {
        return Boolean.toString(redisson.getCountDownLatch(a[0]).trySetCount(Long.parseLong(a[1])));
    }

    private String latchDown(String[] a) {
        redisson.getCountDownLatch(a[0]).countDown();
        return "ok";
    }

    private String latchCount(String[] a) {
        return Long.toString(redisson.getCountDownLatch(a[0]).getCount());
    }

    private String latchAwait(String[] a) throws Exception {
        RCountDownLatch latch = redisson.getCountDownLatch(a[0]);
        long waitMs = ms(a[1]);
        if (waitMs < 0) {
            latch.await();
            return "open";
        }
        return latch.await(waitMs, MS) ? "open" : "closed";
    }

    // ---- RedissonRedLock / RedissonMultiLock over every client

    @SuppressWarnings("deprecation") // RedissonRedLock: deprecated, still what Redlock users run
    private String multiTry(boolean red, String[] a) throws Exception {
        RLock[] members = new RLock[clients.size()];
        for (int i = 0; i < members.length; i++) {
            members[i] = clients.get(i).getLock(a[0]);
        }
        RLock lock = red ? new RedissonRedLock(members) : new RedissonMultiLock(members);
        if (!lock.tryLock(ms(a[1]), -1, MS)) {
            return "busy";
        }
        multiHeld = lock;
        return "ok";
    }

    private String multiUnlock(String[] a) {
        multiHeld.unlock();
        multiHeld = null;
        return "ok";
    }

    // ---- the loop

    private static long ms(String s) {
        return Long.parseLong(s);
    }

    private static int count(String s) {
        return Integer.parseInt(s);
    }

    /** Runs one line: the longest known command prefix (two words, then one), the rest as arguments. */
    String execute(String line) {
        String[] w = line.trim().split("\\s+");
        for (int n = Math.min(2, w.length); n >= 1; n--) {
            Command command = commands.get(String.join(" ", Arrays.copyOfRange(w, 0, n)));
            if (command != null) {
                try {
                    return command.run(Arrays.copyOfRange(w, n, w.length));
                } catch (ArrayIndexOutOfBoundsException e) {
                    return "error missing arguments: " + line;
                } catch (Exception e) {
                    return ("error " + e).replace('\n', ' ');
                }
            }
        }
        return "error unknown command: " + line;
    }

    void shutdown() {
        for (RedissonClient c : clients) {
            c.shutdown();
        }
    }

    public static void main(String[] args) throws Exception {
        Interop driver = new Interop(Long.parseLong(args[0]), Arrays.asList(args).subList(1, args.length));
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("quit")) {
                break;
            }
            System.out.println(driver.execute(line));
            System.out.flush();
        }
        driver.shutdown();
        System.out.println("bye");
        System.out.flush();
    }
}

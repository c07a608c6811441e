/* Eight threads on one lock handle, each over its own connection, through fault-proxy
 * while the main thread resets connections, refuses new ones, delays and splits
 * replies, and holds all traffic for a moment (issue 29 item 5). Every call returns a
 * documented status within its bounds, the client's counters match what the threads
 * saw, nothing is left in Redis, and each thread's connection closes when the thread
 * ends (CLIENT LIST). test.sh runs it under ASan + UBSan (LeakSanitizer included). */
#include "fault_proxy.h"

#define THREADS 8
#define ROUNDS 12
#define WAIT_MS 3000
/* An acquire's wait, plus a retry window and a connect and response timeout or two. */
#define SLACK_MS (1000 + 2 * (500 + 500) + 3000)

typedef struct worker {
    ferrolock_lock *lock;
    int acquired, not_acquired, failed, released, release_failed, release_lost;
    int64_t slowest_acquire, slowest_release;
    char unexpected[256];
} worker;

static int settled; /* rounds settled, all threads */
static int inside;  /* threads in the critical section */
static int overlaps;

static void *rounds(void *arg) {
    worker *w = arg;
    for (int i = 0; i < ROUNDS; i++) {
        int64_t t0 = now_ms();
        ferrolock_status s = ferrolock_lock_acquire(w->lock, WAIT_MS, -1);
        int64_t took = now_ms() - t0;
        if (took > w->slowest_acquire) w->slowest_acquire = took;
        if (s == FERROLOCK_OK) {
            w->acquired++;
            /* The section is a moment long: far shorter than the 3 s lease a loss needs. */
            if (__atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST) != 1) __atomic_add_fetch(&overlaps, 1, __ATOMIC_SEQ_CST);
            __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
            t0 = now_ms();
            ferrolock_status r = ferrolock_lock_release(w->lock);
            took = now_ms() - t0;
            if (took > w->slowest_release) w->slowest_release = took;
            if (r == FERROLOCK_OK) w->released++;
            else if (r == FERROLOCK_ERR_CONNECTION) w->release_failed++;
            else if (r == FERROLOCK_ERR_LOCK_LOST) w->release_lost++;
            else snprintf(w->unexpected, sizeof w->unexpected, "release: %s (%s)", ferrolock_status_str(r), ferrolock_last_error());
            /* A level left held (ERR_CONNECTION) is given back before the next round. */
            for (int tries = 0; r == FERROLOCK_ERR_CONNECTION && tries < 20; tries++) {
                r = ferrolock_lock_release(w->lock);
                if (r == FERROLOCK_OK || r == FERROLOCK_ERR_LOCK_LOST || r == FERROLOCK_ERR_NOT_OWNER) break;
            }
        } else if (s == FERROLOCK_NOT_ACQUIRED) {
            w->not_acquired++;
        } else if (s == FERROLOCK_ERR_CONNECTION) {
            w->failed++;
        } else {
            snprintf(w->unexpected, sizeof w->unexpected, "acquire: %s (%s)", ferrolock_status_str(s), ferrolock_last_error());
        }
        __atomic_add_fetch(&settled, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* Connections named after client `id` (CLIENT LIST). */
static int named(const char *id) {
    static char list[1 << 16];
    redis_query(list, sizeof list, "CLIENT", "LIST", NULL);
    char name[128];
    snprintf(name, sizeof name, " name=ferrolock:%s ", id);
    int n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, name)) n++;
    return n;
}

/* Waits until `more` rounds settled, or `ms` passed (a fault under which nothing can
 * settle is lifted anyway), or every round settled. */
static void progress(int more, int64_t ms) {
    int from = __atomic_load_n(&settled, __ATOMIC_SEQ_CST);
    int64_t deadline = now_ms() + ms;
    while (now_ms() < deadline) {
        int now = __atomic_load_n(&settled, __ATOMIC_SEQ_CST);
        if (now >= from + more || now == THREADS * ROUNDS) return;
        usleep(5 * 1000);
    }
}

typedef struct caller {
    ferrolock_lock *lock;
    event called, done;
    ferrolock_status status;
} caller;

static void *call_twice_then_wait(void *arg) {
    caller *c = arg;
    bool locked;
    c->status = ferrolock_lock_is_locked(c->lock, &locked);
    if (c->status == FERROLOCK_OK) c->status = ferrolock_lock_is_locked(c->lock, &locked);
    event_signal(&c->called);
    event_wait(&c->done, 1, 30000);
    return NULL;
}

int main(void) {
    redis_start();
    fault_proxy *p = proxy_start(harness_server.port);
    ferrolock_client *c = connect_with(p->url, 3000, 500, 500, 1000, -1);
    const char *id = ferrolock_client_id(c);
    ferrolock_lock *l = new_lock(c, "fault-threads");

    worker ws[THREADS];
    pthread_t ts[THREADS];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < THREADS; i++) {
        ws[i].lock = l;
        CHECK(pthread_create(&ts[i], NULL, rounds, &ws[i]) == 0);
    }
    static const char *const faults[][3] = {
        {"delay 20"}, {"reset"}, {"refuse on", "reset"}, {"refuse off", "split on"}, {"delay 60", "reset"},
        {"split off", "delay-next-reply-to fault-threads 1500"}, {"delay 0", "refuse on", "reset"}, {"refuse off"},
        {"blackhole on"}, {"blackhole off", "reset"},
    };
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++) {
        bool stalling = false; /* nothing settles under it but errors: lift it sooner */
        for (int k = 0; k < 3 && faults[f][k]; k++) {
            proxy_send(p, "%s", faults[f][k]);
            stalling |= strcmp(faults[f][k], "refuse on") == 0 || strcmp(faults[f][k], "blackhole on") == 0;
        }
        progress(8, stalling ? 1500 : 4000);
    }
    proxy_send(p, "blackhole off");
    proxy_send(p, "refuse off");
    proxy_send(p, "split off");
    proxy_send(p, "delay 0");
    int acquired = 0, not_acquired = 0, failed = 0, released = 0, release_failed = 0, release_lost = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(ts[i], NULL) == 0);
        worker *w = &ws[i];
        if (w->unexpected[0]) FAIL("thread %d: %s", i, w->unexpected);
        if (w->slowest_acquire > WAIT_MS + SLACK_MS) FAIL("thread %d: an acquire took %lld ms", i, (long long)w->slowest_acquire);
        if (w->slowest_release > SLACK_MS) FAIL("thread %d: a release took %lld ms", i, (long long)w->slowest_release);
        acquired += w->acquired;
        not_acquired += w->not_acquired;
        failed += w->failed;
        released += w->released;
        release_failed += w->release_failed;
        release_lost += w->release_lost;
    }
    printf("rounds: %d acquired (%d released, %d release errors, %d lost), %d not acquired, %d failed\n", acquired,
           released, release_failed, release_lost, not_acquired, failed);
    CHECK(acquired + not_acquired + failed == THREADS * ROUNDS);
    CHECK(acquired > 0);
    if (overlaps) FAIL("%d acquisitions overlapped another thread's hold", overlaps);
    ferrolock_metrics m = metrics_of(c);
    if ((int)m.acquired != acquired || (int)m.not_acquired != not_acquired || (int)m.failed != failed)
        FAIL("metrics %llu/%llu/%llu, the threads saw %d/%d/%d (acquired/not acquired/failed)",
             (unsigned long long)m.acquired, (unsigned long long)m.not_acquired, (unsigned long long)m.failed, acquired,
             not_acquired, failed);
    CHECK(m.cancelled == 0 && m.waiters_now == 0);
    CHECK(m.holds_now == 0);
    CHECK((int)m.losses >= release_lost);
    WAIT_FOR(!key_exists("fault-threads"), 5000, "nothing left of the lock in Redis");

    /* The eight threads' connections ended with them: left are the client's own
     * connection and its pub/sub connection (made for the waits)... */
    WAIT_FOR(named(id) <= 2, 10000, "the faulted threads' connections closed");
    /* ...and fresh threads add one connection each, gone again when they end. */
    int base = named(id);
    caller cs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        cs[i] = (caller){.lock = l, .status = FERROLOCK_ERR_INTERNAL};
        event_init(&cs[i].called);
        event_init(&cs[i].done);
        CHECK(pthread_create(&ts[i], NULL, call_twice_then_wait, &cs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        if (!event_wait(&cs[i].called, 1, 30000)) FAIL("thread %d's calls did not return", i);
        if (cs[i].status != FERROLOCK_OK) FAIL("thread %d: %s", i, ferrolock_status_str(cs[i].status));
    }
    int during = named(id);
    if (during != base + THREADS) FAIL("%d connections with %d threads calling, %d before", during, THREADS, base);
    for (int i = 0; i < THREADS; i++) event_signal(&cs[i].done);
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(ts[i], NULL) == 0);
        event_destroy(&cs[i].called);
        event_destroy(&cs[i].done);
    }
    WAIT_FOR(named(id) == base, 10000, "the threads' connections closed");

    char saved[64];
    snprintf(saved, sizeof saved, "%s", id);
    OK(ferrolock_lock_free(l));
    OK(ferrolock_client_free(c));
    WAIT_FOR(named(saved) == 0, 10000, "every connection of the freed client closed");
    printf("fault threads: %d threads x %d rounds on one handle through faults, counters exact, connections closed\n",
           THREADS, ROUNDS);
    return 0;
}

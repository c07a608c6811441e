/* Exclusion under process and network faults (issue 29 item 5):
 * - a holder process killed with SIGKILL mid-section: another client, already waiting,
 *   gets the lock when the dead holder's lease ends, never before;
 * - a holder cut off by a blackhole (fault-proxy) is told of its loss (on_lost) before
 *   another client's winning attempt is even sent, and its late renewals, delivered
 *   when the link heals, leave the new holder's field and lease alone.
 * Run with `hold <url> <name>` it is the holder process of the first part. */
#include "fault_proxy.h"

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int hold_forever(const char *url, const char *name) {
    ferrolock_client *c = connect_client(url, 2000);
    ferrolock_lock *l = new_lock(c, name);
    OK(ferrolock_lock_acquire(l, -1, -1));
    printf("held\n");
    fflush(stdout);
    for (;;) pause(); /* in the section until killed */
}

typedef struct waiter {
    ferrolock_lock *lock;
    const char *name;
    ferrolock_status status, released;
    int64_t done_ms;
    long fields; /* of the lock, right after the acquire */
} waiter;

/* A hold belongs to (handle, thread): this thread acquires, looks, and releases. */
static void *acquire_waiting(void *arg) {
    waiter *w = arg;
    w->status = ferrolock_lock_acquire(w->lock, 15000, -1);
    w->done_ms = now_ms();
    w->fields = hlen_of(w->name);
    w->released = ferrolock_lock_release(w->lock);
    return NULL;
}

static void killed_holder(const char *self, const char *url) {
    const char *name = "fault-killed";
    int out[2];
    CHECK(pipe(out) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execl(self, self, "hold", url, name, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char line[32] = {0};
    FILE *from_child = fdopen(out[0], "r");
    if (!fgets(line, sizeof line, from_child) || strcmp(line, "held\n") != 0) FAIL("the holder process did not hold");

    ferrolock_client *b = connect_client(url, -1);
    ferrolock_lock *lb = new_lock(b, name);
    EXPECT(ferrolock_lock_acquire(lb, 0, -1), FERROLOCK_NOT_ACQUIRED);
    waiter w = {.lock = lb, .name = name};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, acquire_waiting, &w) == 0);
    WAIT_FOR(metrics_of(b).waiters_now == 1, 10000, "the other client waiting");
    CHECK(kill(child, SIGKILL) == 0);
    CHECK(waitpid(child, NULL, 0) == child);
    fclose(from_child);
    /* From here only the lease ends the dead holder's hold. */
    long pttl = pttl_of(name);
    int64_t dead = now_ms();
    CHECK(pttl > 0);
    CHECK(hlen_of(name) == 1);
    CHECK(pthread_join(t, NULL) == 0);
    if (w.status != FERROLOCK_OK) FAIL("the waiting acquire returned %s", ferrolock_status_str(w.status));
    int64_t after = w.done_ms - dead;
    if (after < pttl - 50) FAIL("acquired %lld ms after the kill with %ld ms of lease left", (long long)after, pttl);
    CHECK(w.fields == 1); /* only the new holder */
    CHECK(w.released == FERROLOCK_OK);
    CHECK(!key_exists(name));
    printf("kill -9: the waiter acquired %lld ms after the holder died, its lease had %ld ms left\n", (long long)after, pttl);
    OK(ferrolock_lock_free(lb));
    OK(ferrolock_client_free(b));
}

static event lost_event;
static int64_t lost_at_us;

static void on_lost(const char *name, void *user) {
    (void)name;
    (void)user;
    lost_at_us = now_us();
    event_signal(&lost_event);
}

static void blackholed_holder(const char *url) {
    const char *name = "fault-blackholed";
    fault_proxy *p = proxy_start(harness_server.port);
    event_init(&lost_event);
    /* A 1 s lease, counted as lost 5 % early (52 ms before Redis expires it). */
    ferrolock_client *a = connect_with(p->url, 1000, -1, -1, -1, 0.05);
    ferrolock_client *b = connect_client(url, -1);
    ferrolock_lock *la = new_lock(a, name);
    ferrolock_lock *lb = new_lock(b, name);
    OK(ferrolock_lock_on_lost(la, on_lost, NULL));
    OK(ferrolock_lock_acquire(la, -1, -1));
    proxy_send(p, "blackhole on");
    int64_t cut = now_ms();
    /* Each attempt's send time: the winning one's is no later than Redis granting it. */
    int64_t sent;
    for (;;) {
        sent = now_us();
        ferrolock_status s = ferrolock_lock_acquire(lb, 0, 5000);
        if (s == FERROLOCK_OK) break;
        if (s != FERROLOCK_NOT_ACQUIRED) FAIL("the other client's attempt: %s", ferrolock_status_str(s));
        if (now_ms() - cut > 5000) FAIL("the other client never got in");
    }
    if (!event_wait(&lost_event, 1, 5000)) FAIL("the holder was not told of its loss");
    if (lost_at_us >= sent)
        FAIL("told %lld us after the other client's winning attempt was sent", (long long)(lost_at_us - sent));
    long calls = script_calls();
    proxy_send(p, "blackhole off");
    WAIT_FOR(script_calls() > calls, 5000, "the late renewals reaching Redis");
    CHECK(hlen_of(name) == 1);
    long pttl = pttl_of(name);
    if (pttl <= 1000) FAIL("the late renewals touched the new holder's lease: PTTL %ld", pttl);
    bool lost = false;
    OK(ferrolock_lock_is_lost(la, &lost));
    CHECK(lost);
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_LOCK_LOST);
    OK(ferrolock_lock_release(lb));
    printf("blackholed holder: told %lld us before the other client's winning attempt\n", (long long)(sent - lost_at_us));
    OK(ferrolock_lock_free(la));
    OK(ferrolock_lock_free(lb));
    OK(ferrolock_client_free(a));
    OK(ferrolock_client_free(b));
    event_destroy(&lost_event);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "hold") == 0) return hold_forever(argv[2], argv[3]);
    const char *url = redis_start();
    killed_holder("/proc/self/exe", url);
    blackholed_holder(url);
    printf("fault exclusion: a killed holder's lease and a blackholed holder's loss both keep others out\n");
    return 0;
}

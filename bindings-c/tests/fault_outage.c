/* A release whose reply is lost, then Redis unreachable for longer than the retry
 * window (the unlock latch's TTL): issue 29 items 1-2, through fault-proxy.
 * - plain: the release reports success, or an error other than a loss; once Redis
 *   answers the client counts no level as held, releasing again reports no loss, and
 *   on_lost is never called;
 * - hand-off to a waiter of the same client (another handle, another thread): within
 *   2 s of the heal nothing is left in Redis that no live hold accounts for, and
 *   another client acquires within 2.5 s of the heal.
 * Client: response and connect timeouts 500 ms, retry window 1 s, watchdog lease 10 s. */
#include "fault_proxy.h"

static fault_proxy *proxy;
static int losses;

static void count_loss(const char *name, void *user) {
    (void)name;
    (void)user;
    __atomic_add_fetch(&losses, 1, __ATOMIC_SEQ_CST);
}

/* Turns the blackhole on once the release's reply was cut, so the link goes down right
 * after the release ran on the server; the main thread is inside the release meanwhile. */
typedef struct darkener {
    long cuts_before;
    event dark;
} darkener;

static void *darken_after_cut(void *arg) {
    darkener *d = arg;
    int64_t deadline = now_ms() + 10000;
    while (proxy_send(proxy, "cuts") <= d->cuts_before && now_ms() < deadline) usleep(2 * 1000);
    proxy_send(proxy, "blackhole on");
    event_signal(&d->dark);
    return NULL;
}

/* Releases one level of `l` on this thread with its reply cut and the link down until
 * the release gave up (longer than the retry window by construction); heals the link
 * and returns the release's status and the moment of the heal in *healed. */
static ferrolock_status release_in_long_outage(ferrolock_lock *l, const char *name, int64_t *healed, char *message,
                                               size_t cap) {
    darkener d = {.cuts_before = proxy_send(proxy, "cuts")};
    event_init(&d.dark);
    proxy_send(proxy, "cut-next-reply-to redisson_unlock_latch:{%s}", name);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, darken_after_cut, &d) == 0);
    ferrolock_status s = ferrolock_lock_release(l);
    snprintf(message, cap, "%s", ferrolock_last_error());
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(proxy_send(proxy, "cuts") == d.cuts_before + 1);
    proxy_send(proxy, "blackhole off");
    *healed = now_ms();
    event_destroy(&d.dark);
    return s;
}

static void plain(void) {
    const char *name = "fault-outage-plain";
    ferrolock_client *c = connect_with(proxy->url, 10000, 500, 500, 1000, -1);
    ferrolock_lock *l = new_lock(c, name);
    OK(ferrolock_lock_on_lost(l, count_loss, NULL));
    OK(ferrolock_lock_acquire(l, -1, -1));
    int64_t healed;
    char message[512];
    ferrolock_status s = release_in_long_outage(l, name, &healed, message, sizeof message);
    printf("plain: the release returned %s (%s)\n", ferrolock_status_str(s), message);
    CHECK(!key_exists(name)); /* Redis ran it */
    if (s == FERROLOCK_ERR_LOCK_LOST) FAIL("a released hold reported lost: %s", message);
    /* Whatever it said, the client stops counting the level as held once Redis answers... */
    WAIT_FOR(metrics_of(c).holds_now == 0, 3000, "the client to stop counting the released level as held");
    /* ...and releasing again (what a caller told it still holds would do) reports no loss. */
    ferrolock_status again = ferrolock_lock_release(l);
    if (again == FERROLOCK_ERR_LOCK_LOST) FAIL("releasing again reported a loss: %s", ferrolock_last_error());
    bool lost = true;
    OK(ferrolock_lock_is_lost(l, &lost));
    CHECK(!lost);
    /* A fresh hold and release work; no loss was told at any point. */
    OK(ferrolock_lock_acquire(l, 10000, -1));
    OK(ferrolock_lock_release(l));
    CHECK(__atomic_load_n(&losses, __ATOMIC_SEQ_CST) == 0);
    CHECK(metrics_of(c).losses == 0);
    OK(ferrolock_lock_free(l));
    OK(ferrolock_client_free(c));
}

/* The same client's waiter: acquires on its own thread through its own handle and gives
 * the lock back at once. */
typedef struct successor {
    ferrolock_lock *lock;
    ferrolock_status acquired, released;
    bool done;
} successor;

static void *wait_then_release(void *arg) {
    successor *s = arg;
    s->acquired = ferrolock_lock_acquire(s->lock, 20000, -1);
    if (s->acquired == FERROLOCK_OK) s->released = ferrolock_lock_release(s->lock);
    __atomic_store_n(&s->done, true, __ATOMIC_SEQ_CST);
    return NULL;
}

static void hand_off(const char *url) {
    const char *name = "fault-outage-handoff";
    ferrolock_client *c = connect_with(proxy->url, 10000, 500, 500, 1000, -1);
    ferrolock_client *other = connect_client(url, -1);
    ferrolock_lock *a = new_lock(c, name);
    ferrolock_lock *b = new_lock(c, name);
    ferrolock_lock *o = new_lock(other, name);
    OK(ferrolock_lock_acquire(a, -1, -1));
    successor s = {.lock = b, .acquired = FERROLOCK_ERR_INTERNAL, .released = FERROLOCK_ERR_INTERNAL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_then_release, &s) == 0);
    WAIT_FOR(metrics_of(c).waiters_now == 1, 10000, "b waiting");
    char channel[128], numsub[256];
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    WAIT_FOR((redis_query(numsub, sizeof numsub, "PUBSUB", "NUMSUB", channel, NULL), strstr(numsub, "\n1\n") != NULL),
             10000, "b subscribed");
    int64_t healed;
    char message[512];
    ferrolock_status r = release_in_long_outage(a, name, &healed, message, sizeof message);
    printf("hand-off: a's release returned %s (%s)\n", ferrolock_status_str(r), message);
    /* Within 2 s of the heal nothing is left that no live hold accounts for: b gives the
     * lock back as soon as it has it, so a field may stay only while b holds. */
    int64_t settled_by = healed + 2000;
    for (;;) {
        bool b_holds = s.acquired == FERROLOCK_OK && !__atomic_load_n(&s.done, __ATOMIC_SEQ_CST);
        long fields = hlen_of(name);
        if (fields == 0 || (fields == 1 && b_holds && metrics_of(c).holds_now > 0)) break;
        if (now_ms() > settled_by)
            FAIL("%ld field(s) of %s left %lld ms after the heal, no live hold accounts for them", fields, name,
                 (long long)(now_ms() - healed));
        usleep(5 * 1000);
    }
    int64_t wait = healed + 2500 - now_ms();
    ferrolock_status got = ferrolock_lock_acquire(o, wait > 0 ? wait : 0, -1);
    if (got != FERROLOCK_OK)
        FAIL("another client did not acquire within 2.5 s of the heal: %s", ferrolock_status_str(got));
    printf("hand-off: another client acquired %lld ms after the heal\n", (long long)(now_ms() - healed));
    OK(ferrolock_lock_release(o));
    CHECK(pthread_join(t, NULL) == 0);
    printf("hand-off: b's acquire returned %s, its release %s\n", ferrolock_status_str(s.acquired),
           s.acquired == FERROLOCK_OK ? ferrolock_status_str(s.released) : "-");
    OK(ferrolock_lock_free(a));
    OK(ferrolock_lock_free(b));
    OK(ferrolock_lock_free(o));
    OK(ferrolock_client_free(c));
    OK(ferrolock_client_free(other));
}

int main(void) {
    const char *url = redis_start();
    proxy = proxy_start(harness_server.port);
    plain();
    hand_off(url);
    printf("fault outage: long-outage releases settle truthfully, plain and handed off\n");
    return 0;
}

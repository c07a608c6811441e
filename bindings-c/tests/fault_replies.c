/* Lost, late and split replies through fault-proxy (issue 29 item 5), over the calling
 * thread's own connection:
 * - an acquire reply delayed past the response timeout is read back: one field, and
 *   the release leaves nothing;
 * - an acquire whose outcome stays unknown (its reply late, then the link down) fails
 *   with ERR_CONNECTION and is undone in the background: no orphan field;
 * - a release whose reply is cut is retried and reported released, with no loss;
 * - replies cut into pieces at random points are read right. */
#include "fault_proxy.h"

static int losses;
static void count_loss(const char *name, void *user) {
    (void)name;
    (void)user;
    __atomic_add_fetch(&losses, 1, __ATOMIC_SEQ_CST);
}

static void delayed_acquire_reply(fault_proxy *p, ferrolock_client *c, ferrolock_client *other) {
    const int64_t waits[] = {-1, 0, 3000};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "fault-delayed-%d", i);
        ferrolock_lock *l = new_lock(c, name);
        ferrolock_lock *o = new_lock(other, name);
        proxy_send(p, "delay-next-reply-to %s 4000", name);
        int64_t t0 = now_ms();
        OK(ferrolock_lock_acquire(l, waits[i], -1));
        int64_t took = now_ms() - t0;
        if (took >= 3500) FAIL("settled by the delayed reply, not a read-back: %lld ms", (long long)took);
        uint32_t count = 0;
        OK(ferrolock_lock_hold_count(l, &count));
        CHECK(count == 1);
        CHECK(hlen_of(name) == 1);
        EXPECT(ferrolock_lock_acquire(o, 0, -1), FERROLOCK_NOT_ACQUIRED);
        OK(ferrolock_lock_release(l));
        CHECK(!key_exists(name));
        OK(ferrolock_lock_free(l));
        OK(ferrolock_lock_free(o));
    }
    printf("delayed acquire replies: read back, one field, released cleanly\n");
}

typedef struct attempt {
    ferrolock_lock *lock;
    int64_t wait_ms;
    ferrolock_status status;
    char message[512];
} attempt;

static void *acquire_once(void *arg) {
    attempt *a = arg;
    a->status = ferrolock_lock_acquire(a->lock, a->wait_ms, -1);
    snprintf(a->message, sizeof a->message, "%s", ferrolock_last_error());
    return NULL;
}

static void unknown_acquire(fault_proxy *p, ferrolock_client *c, ferrolock_client *other) {
    const char *name = "fault-unknown";
    ferrolock_lock *l = new_lock(c, name);
    ferrolock_lock *o = new_lock(other, name);
    proxy_send(p, "delay-next-reply-to %s 6000", name);
    attempt a = {.lock = l, .wait_ms = 3000};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, acquire_once, &a) == 0);
    /* Once the script ran, cut the link so that no read-back can answer either. */
    WAIT_FOR(hlen_of(name) == 1, 5000, "the acquire run on Redis");
    proxy_send(p, "blackhole on");
    CHECK(pthread_join(t, NULL) == 0);
    proxy_send(p, "blackhole off");
    if (a.status != FERROLOCK_ERR_CONNECTION)
        FAIL("the acquire of unknown outcome returned %s (%s)", ferrolock_status_str(a.status), a.message);
    CHECK(metrics_of(c).holds_now == 0);
    /* Redis agrees once it answers, long before the 30 s lease. */
    WAIT_FOR(!key_exists(name), 10000, "the unknown acquisition undone");
    OK(ferrolock_lock_acquire(o, 5000, -1));
    OK(ferrolock_lock_release(o));
    OK(ferrolock_lock_free(l));
    OK(ferrolock_lock_free(o));
    printf("unknown acquire: ERR_CONNECTION to the caller, undone on the server, no orphan\n");
}

static void dropped_release_reply(fault_proxy *p, ferrolock_client *c, ferrolock_client *other) {
    const char *name = "fault-dropped-release";
    ferrolock_lock *l = new_lock(c, name);
    ferrolock_lock *o = new_lock(other, name);
    OK(ferrolock_lock_on_lost(l, count_loss, NULL));
    OK(ferrolock_lock_acquire(l, -1, -1));
    long cuts = proxy_send(p, "cuts");
    proxy_send(p, "cut-next-reply-to redisson_unlock_latch:{%s}", name);
    OK(ferrolock_lock_release(l));
    CHECK(proxy_send(p, "cuts") == cuts + 1);
    CHECK(!key_exists(name));
    OK(ferrolock_lock_acquire(o, 0, -1)); /* free at once */
    OK(ferrolock_lock_release(o));
    bool lost = true;
    OK(ferrolock_lock_is_lost(l, &lost));
    CHECK(!lost);
    CHECK(__atomic_load_n(&losses, __ATOMIC_SEQ_CST) == 0);
    CHECK(metrics_of(c).losses == 0);
    OK(ferrolock_lock_free(l));
    OK(ferrolock_lock_free(o));
    printf("dropped release reply: retried, released, no loss\n");
}

static void split_replies(fault_proxy *p, ferrolock_client *c) {
    proxy_send(p, "split on");
    ferrolock_lock *l = new_lock(c, "fault-split");
    ferrolock_lock *rival = new_lock(c, "fault-split");
    ferrolock_lock *f = new_fenced_lock(c, "fault-split-fenced");
    uint64_t last = 0;
    for (int i = 0; i < 25; i++) {
        OK(ferrolock_lock_acquire(l, -1, -1));
        uint32_t count = 0;
        OK(ferrolock_lock_hold_count(l, &count));
        CHECK(count == 1);
        CHECK(is_locked(l));
        EXPECT(ferrolock_lock_acquire(rival, 0, -1), FERROLOCK_NOT_ACQUIRED);
        int64_t lease = 0;
        OK(ferrolock_lock_remaining_lease_ms(l, &lease));
        CHECK(lease > 0);
        OK(ferrolock_lock_release(l));
        OK(ferrolock_lock_acquire(f, -1, -1));
        uint64_t token = 0;
        OK(ferrolock_lock_token(f, &token));
        CHECK(token > last);
        last = token;
        OK(ferrolock_lock_release(f));
    }
    proxy_send(p, "split off");
    CHECK(!key_exists("fault-split") && !key_exists("fault-split-fenced"));
    OK(ferrolock_lock_free(l));
    OK(ferrolock_lock_free(rival));
    OK(ferrolock_lock_free(f));
    printf("split replies: 25 rounds of acquire, queries, contention and fenced tokens read right\n");
}

int main(void) {
    const char *url = redis_start();
    fault_proxy *p = proxy_start(harness_server.port);
    ferrolock_client *c = connect_with(p->url, -1, 1000, 1000, -1, -1);
    ferrolock_client *other = connect_client(url, -1);
    delayed_acquire_reply(p, c, other);
    unknown_acquire(p, c, other);
    dropped_release_reply(p, c, other);
    split_replies(p, c);
    OK(ferrolock_client_free(c));
    OK(ferrolock_client_free(other));
    printf("fault replies: late, unknown, cut and split replies settle truthfully\n");
    return 0;
}

/* FERROLOCK_ERR_CLIENT_CLOSED (10): once a client is freed, every call on a lock
 * handle made from it returns it with the same message, an acquire that was waiting
 * returns it at once, and the handles are still freed normally. */
#include "harness.h"

typedef struct {
    ferrolock_lock *lock;
    ferrolock_status status;
    char message[512];
} waiter;

static void *wait_forever(void *arg) {
    waiter *w = arg;
    w->status = ferrolock_lock_acquire(w->lock, -1, -1);
    snprintf(w->message, sizeof w->message, "%s", ferrolock_last_error());
    return NULL;
}

/* Subscribers of the lock's channel: a waiting acquire subscribes before it waits. */
static long subscribers(const char *name) {
    char channel[256], out[256];
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    redis_query(out, sizeof out, "PUBSUB", "NUMSUB", channel, NULL);
    const char *count = strchr(out, '\n');
    return count ? strtol(count + 1, NULL, 10) : -1;
}

static void expect_closed(void) {
    expect_message("the ferrolock client is closed");
}

int main(void) {
    const char *url = redis_start();
    CHECK(FERROLOCK_ERR_CLIENT_CLOSED == 10);
    CHECK(strcmp(ferrolock_status_str(FERROLOCK_ERR_CLIENT_CLOSED), "FERROLOCK_ERR_CLIENT_CLOSED") == 0);

    ferrolock_client *other = connect_client(url, -1);
    ferrolock_lock *taken = new_lock(other, "closed");
    OK(ferrolock_lock_acquire(taken, 0, -1));

    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *c2 = connect_client(url, -1);
    waiter w = {.lock = new_lock(c, "closed"), .status = FERROLOCK_OK};
    ferrolock_lock *held = new_fenced_lock(c, "closed-held");
    OK(ferrolock_lock_acquire(held, 0, -1));
    ferrolock_lock *mine = new_lock(c, "closed-m1"), *theirs = new_lock(c2, "closed-m2");
    ferrolock_lock *members[2] = {mine, theirs}, *multi = NULL;
    OK(ferrolock_multilock_new(members, 2, FERROLOCK_QUORUM_ALL, &multi));

    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_forever, &w) == 0);
    int64_t give_up = now_ms() + 20000;
    while (subscribers("closed") < 1) {
        if (now_ms() > give_up) FAIL("the waiting acquire never subscribed");
        struct timespec step = {0, 5 * 1000 * 1000};
        nanosleep(&step, NULL); /* polling Redis for the waiter's subscription */
    }
    int64_t t0 = now_ms();
    OK(ferrolock_client_free(c)); /* releases "closed-held", stops the waiter */
    CHECK(pthread_join(t, NULL) == 0);
    if (w.status != FERROLOCK_ERR_CLIENT_CLOSED)
        FAIL("the waiting acquire returned %s: %s", ferrolock_status_str(w.status), w.message);
    CHECK(strstr(w.message, "the ferrolock client is closed"));
    CHECK(now_ms() - t0 < 10000);
    ferrolock_lock *probe = new_lock(other, "closed-held");
    CHECK(!is_locked(probe));

    /* Every call on its handles, single and multi-lock, held or not. */
    ferrolock_lock *handles[3] = {w.lock, held, multi};
    for (int i = 0; i < 3; i++) {
        ferrolock_lock *l = handles[i];
        bool b = false;
        uint32_t n;
        int64_t ms;
        uint64_t token;
        EXPECT(ferrolock_lock_acquire(l, 0, -1), FERROLOCK_ERR_CLIENT_CLOSED);
        expect_closed();
        EXPECT(ferrolock_lock_acquire(l, 1000, 5000), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_CLIENT_CLOSED);
        expect_closed();
        EXPECT(ferrolock_lock_is_locked(l, &b), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_is_held(l, &b), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_hold_count(l, &n), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_remaining_lease_ms(l, &ms), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_force_unlock(l, &b), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_token(l, &token), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_is_lost(l, &b), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_on_lost(l, NULL, NULL), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_extend(l, 1000, &ms), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_set_lease(l, 1000, &ms), FERROLOCK_ERR_CLIENT_CLOSED);
        EXPECT(ferrolock_lock_reacquire(l, &ms), FERROLOCK_ERR_CLIENT_CLOSED);
        expect_closed();
    }
    /* A new multi-lock over a member of the closed client. */
    ferrolock_lock *again = NULL;
    EXPECT(ferrolock_multilock_new(members, 2, FERROLOCK_QUORUM_MAJORITY, &again), FERROLOCK_ERR_CLIENT_CLOSED);
    expect_closed();
    CHECK(again == NULL);
    /* The other client's member is unaffected. */
    OK(ferrolock_lock_acquire(theirs, 0, -1));
    OK(ferrolock_lock_release(theirs));

    for (int i = 0; i < 3; i++) OK(ferrolock_lock_free(handles[i]));
    OK(ferrolock_lock_free(mine));
    OK(ferrolock_lock_free(theirs));
    OK(ferrolock_lock_release(taken));
    OK(ferrolock_lock_free(taken));
    OK(ferrolock_lock_free(probe));
    OK(ferrolock_client_free(c2));
    OK(ferrolock_client_free(other));
    printf("closed: every call on a freed client's handles is FERROLOCK_ERR_CLIENT_CLOSED, a waiter too\n");
    return 0;
}

/* Reentrancy within a thread; another thread (same handle) is another holder: its
 * release gets NOT_OWNER and its try gets NOT_ACQUIRED; another handle on the same
 * thread is another holder too. Also the read-only queries. */
#include "harness.h"

typedef struct other_result {
    ferrolock_lock *lock;
    ferrolock_status release, try_acquire, is_held_status, hold_count_status;
    bool held;
    uint32_t count;
} other_result;

static void *other_thread(void *arg) {
    other_result *r = arg;
    r->release = ferrolock_lock_release(r->lock);
    r->try_acquire = ferrolock_lock_acquire(r->lock, 0, -1);
    r->is_held_status = ferrolock_lock_is_held(r->lock, &r->held);
    r->hold_count_status = ferrolock_lock_hold_count(r->lock, &r->count);
    return NULL;
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, 5000);
    ferrolock_lock *l = new_lock(c, "reentrant");
    bool b = true;
    uint32_t n = 99;
    int64_t left = 0;

    OK(ferrolock_lock_remaining_lease_ms(l, &left));
    CHECK(left == -1);
    OK(ferrolock_lock_is_held(l, &b));
    CHECK(!b);

    OK(ferrolock_lock_acquire(l, 0, -1));
    OK(ferrolock_lock_acquire(l, -1, -1)); /* re-entry never waits */
    OK(ferrolock_lock_acquire(l, 1000, -1));
    OK(ferrolock_lock_hold_count(l, &n));
    CHECK(n == 3);
    OK(ferrolock_lock_is_held(l, &b));
    CHECK(b);
    CHECK(is_locked(l));
    OK(ferrolock_lock_remaining_lease_ms(l, &left));
    CHECK(left > 0 && left <= 5000);

    /* Another thread through the same handle is another holder. */
    other_result r;
    memset(&r, 0, sizeof r);
    r.lock = l;
    r.held = true;
    r.count = 99;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &r) == 0);
    pthread_join(t, NULL);
    if (r.release != FERROLOCK_ERR_NOT_OWNER) FAIL("other thread's release: %s", ferrolock_status_str(r.release));
    if (r.try_acquire != FERROLOCK_NOT_ACQUIRED) FAIL("other thread's try: %s", ferrolock_status_str(r.try_acquire));
    CHECK(r.is_held_status == FERROLOCK_OK && !r.held);
    CHECK(r.hold_count_status == FERROLOCK_OK && r.count == 0);

    /* Another handle on this thread is another holder as well. */
    ferrolock_lock *l2 = new_lock(c, "reentrant");
    EXPECT(ferrolock_lock_acquire(l2, 0, -1), FERROLOCK_NOT_ACQUIRED);
    EXPECT(ferrolock_lock_release(l2), FERROLOCK_ERR_NOT_OWNER);
    ferrolock_lock_free(l2);

    /* Release level by level; the lock stays ours until the last one. */
    OK(ferrolock_lock_release(l));
    OK(ferrolock_lock_hold_count(l, &n));
    CHECK(n == 2);
    OK(ferrolock_lock_release(l));
    OK(ferrolock_lock_hold_count(l, &n));
    CHECK(n == 1);
    CHECK(is_locked(l));
    OK(ferrolock_lock_release(l));
    CHECK(!is_locked(l));
    OK(ferrolock_lock_is_held(l, &b));
    CHECK(!b);
    EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_NOT_OWNER);

    /* Not fenced: no token. */
    uint64_t token = 0;
    OK(ferrolock_lock_acquire(l, 0, -1));
    EXPECT(ferrolock_lock_token(l, &token), FERROLOCK_ERR_INVALID_ARGUMENT);
    bool lost = true;
    OK(ferrolock_lock_is_lost(l, &lost));
    CHECK(!lost);
    OK(ferrolock_lock_release(l));

    /* Explicit lease: PTTL follows it. */
    OK(ferrolock_lock_acquire(l, 0, 60000));
    OK(ferrolock_lock_remaining_lease_ms(l, &left));
    CHECK(left > 5000 && left <= 60000);
    OK(ferrolock_lock_release(l));

    CHECK(strlen(ferrolock_client_id(c)) == 36);
    ferrolock_lock_free(l);
    ferrolock_client_free(c);
    printf("reentrancy: ok\n");
    return 0;
}

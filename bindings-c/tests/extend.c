/* ferrolock_lock_extend(), _set_lease() and _reacquire() on holds with an explicit
 * lease: the new lease is what Redis has (PTTL), it keeps others out that long,
 * and each is refused with the right status when this thread does not hold, the
 * hold is watchdog-renewed, the duration is out of range or the hold was lost. */
#include "harness.h"

static int64_t pttl(ferrolock_lock *l) {
    int64_t ms = 0;
    OK(ferrolock_lock_remaining_lease_ms(l, &ms));
    return ms;
}

typedef struct {
    ferrolock_lock *lock;
    ferrolock_status status;
} other_thread;

static void *extend_from_other_thread(void *arg) {
    other_thread *o = arg;
    o->status = ferrolock_lock_extend(o->lock, 1000, NULL);
    return NULL;
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *other = connect_client(url, -1);
    ferrolock_lock *l = new_lock(c, "extend");
    ferrolock_lock *rival = new_lock(other, "extend");
    int64_t left = -7;

    /* Extend adds to what is left; set_lease replaces it; reacquire goes back to the
     * lease the hold was taken with. Each answer matches the key's PTTL. */
    OK(ferrolock_lock_acquire(l, 0, 2000));
    OK(ferrolock_lock_extend(l, 3000, &left));
    CHECK(left > 4000 && left <= 5000);
    CHECK(pttl(l) > 4000 && pttl(l) <= left);
    OK(ferrolock_lock_set_lease(l, 60000, &left));
    CHECK(left > 59000 && left <= 60000);
    CHECK(pttl(l) > 59000);
    OK(ferrolock_lock_reacquire(l, &left));
    CHECK(left > 1000 && left <= 2000);
    CHECK(pttl(l) <= 2000);
    OK(ferrolock_lock_extend(l, 1, NULL)); /* the output is optional */

    /* The longer lease keeps others out: a 300 ms lease set to 30 s is still held
     * after a 600 ms bounded wait of another client. */
    OK(ferrolock_lock_set_lease(l, 300, &left));
    CHECK(left <= 300);
    OK(ferrolock_lock_set_lease(l, 30000, NULL));
    EXPECT(ferrolock_lock_acquire(rival, 600, -1), FERROLOCK_NOT_ACQUIRED);

    /* Re-entry takes the lease it asks for (as in Redisson), and the levels share it. */
    OK(ferrolock_lock_acquire(l, 0, 2000));
    OK(ferrolock_lock_extend(l, 1000, &left));
    CHECK(left > 2000 && left <= 3000);

    /* Another thread does not hold it through this handle. */
    other_thread o = {.lock = l, .status = FERROLOCK_OK};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, extend_from_other_thread, &o) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(o.status == FERROLOCK_ERR_NOT_OWNER);

    /* Out of range: refused, the lease unchanged. */
    EXPECT(ferrolock_lock_extend(l, -5, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("-5");
    EXPECT(ferrolock_lock_set_lease(l, INT64_C(8) * 24 * 3600 * 1000, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_extend(NULL, 1000, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(pttl(l) > 1000);
    OK(ferrolock_lock_release(l));
    OK(ferrolock_lock_release(l));

    /* Not held at all. */
    EXPECT(ferrolock_lock_extend(l, 1000, &left), FERROLOCK_ERR_NOT_OWNER);
    expect_message("extend");
    EXPECT(ferrolock_lock_set_lease(l, 1000, &left), FERROLOCK_ERR_NOT_OWNER);
    EXPECT(ferrolock_lock_reacquire(l, &left), FERROLOCK_ERR_NOT_OWNER);

    /* A watchdog-renewed hold has no lease to change. */
    OK(ferrolock_lock_acquire(l, 0, -1));
    EXPECT(ferrolock_lock_extend(l, 1000, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("watchdog");
    EXPECT(ferrolock_lock_reacquire(l, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_lock_release(l));

    /* A lost hold: its lease ran out and another client took the lock. */
    OK(ferrolock_lock_acquire(l, 0, 100));
    OK(ferrolock_lock_acquire(rival, 10000, -1)); /* wakes when the 100 ms lease ends */
    EXPECT(ferrolock_lock_extend(l, 5000, &left), FERROLOCK_ERR_LOCK_LOST);
    bool lost = false;
    OK(ferrolock_lock_is_lost(l, &lost));
    CHECK(lost);
    CHECK(pttl(rival) > 25000); /* the rival's watchdog hold was not touched */
    EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_LOCK_LOST);
    OK(ferrolock_lock_release(rival));

    /* A multi-lock: every member's lease follows. */
    ferrolock_lock *m1 = new_lock(c, "extend-m1"), *m2 = new_lock(c, "extend-m2"), *m3 = new_lock(c, "extend-m3");
    ferrolock_lock *members[3] = {m1, m2, m3}, *red = NULL;
    OK(ferrolock_multilock_new(members, 3, FERROLOCK_QUORUM_MAJORITY, &red));
    OK(ferrolock_lock_acquire(red, 0, 2000));
    OK(ferrolock_lock_extend(red, 8000, &left));
    CHECK(left > 8000 && left <= 10000);
    CHECK(pttl(m1) > 8000 && pttl(m3) > 8000);
    OK(ferrolock_lock_reacquire(red, &left));
    CHECK(left <= 2000 && pttl(m2) <= 2000);
    OK(ferrolock_lock_release(red));
    CHECK(!is_locked(m1));

    OK(ferrolock_lock_free(red));
    OK(ferrolock_lock_free(m1));
    OK(ferrolock_lock_free(m2));
    OK(ferrolock_lock_free(m3));
    OK(ferrolock_lock_free(l));
    OK(ferrolock_lock_free(rival));
    OK(ferrolock_client_free(other));
    OK(ferrolock_client_free(c));
    printf("extend: extend, set_lease and reacquire change the lease Redis has, refused when they must be\n");
    return 0;
}

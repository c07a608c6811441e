/* Fair locks (FERROLOCK_LOCK_FAIR): granted in the order of arrival across clients
 * (three waiting clients served first come, first served), a waiter that times out
 * leaves the queue, re-entrancy and every ferrolock_lock_* call, wrong-type keys. */
#include "family.h"

#include <stdatomic.h>

static atomic_int served;

typedef struct fair_waiter {
    ferrolock_lock *lock;
    int order; /* when it got the lock: 1, 2, 3 */
    ferrolock_status status;
    pthread_t thread;
} fair_waiter;

static void *wait_turn(void *arg) {
    fair_waiter *f = (fair_waiter *)arg;
    f->status = ferrolock_lock_acquire(f->lock, 60000, -1);
    if (f->status != FERROLOCK_OK) return NULL;
    f->order = atomic_fetch_add(&served, 1) + 1;
    f->status = ferrolock_lock_release(f->lock);
    return NULL;
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *clients[4];
    ferrolock_lock *locks[4];
    for (int i = 0; i < 4; i++) {
        clients[i] = connect_client(url, -1);
        locks[i] = new_lock_kind(clients[i], "fair", FERROLOCK_LOCK_FAIR);
    }
    bool b = false;
    uint32_t count = 0;
    int64_t left = 0;
    uint64_t token = 0;
    char reply[128];

    /* First come, first served across clients: each waiter joins the queue only once
     * the one before it is in, then the holder lets go. */
    atomic_init(&served, 0);
    OK(ferrolock_lock_acquire(locks[0], 0, -1));
    fair_waiter waiters[3];
    for (int i = 0; i < 3; i++) {
        waiters[i] = (fair_waiter){.lock = locks[i + 1], .status = FERROLOCK_ERR_INTERNAL};
        CHECK(pthread_create(&waiters[i].thread, NULL, wait_turn, &waiters[i]) == 0);
        wait_llen("redisson_lock_queue:{fair}", i + 1);
    }
    OK(ferrolock_lock_release(locks[0]));
    for (int i = 0; i < 3; i++) {
        CHECK(pthread_join(waiters[i].thread, NULL) == 0);
        if (waiters[i].status != FERROLOCK_OK) FAIL("waiter %d got %s", i, ferrolock_status_str(waiters[i].status));
        if (waiters[i].order != i + 1) FAIL("waiter %d (queued %d) was served %d", i, i + 1, waiters[i].order);
    }
    CHECK(!is_locked(locks[0]));
    CHECK(redis_int("LLEN", "redisson_lock_queue:{fair}") == 0);

    /* A waiter that runs out of time leaves the queue (and the next comes first). */
    OK(ferrolock_lock_acquire(locks[0], 0, -1));
    int64_t t0 = now_ms();
    EXPECT(ferrolock_lock_acquire(locks[1], 150, -1), FERROLOCK_NOT_ACQUIRED);
    CHECK(now_ms() - t0 >= 150);
    wait_llen("redisson_lock_queue:{fair}", 0); /* its leaving may finish after the call returns */
    OK(ferrolock_lock_release(locks[0]));
    OK(ferrolock_lock_acquire(locks[1], 0, 30000));

    /* Re-entrant, and every call of a lock handle. */
    OK(ferrolock_lock_acquire(locks[1], 0, 30000));
    OK(ferrolock_lock_hold_count(locks[1], &count));
    CHECK(count == 2);
    OK(ferrolock_lock_is_held(locks[1], &b));
    CHECK(b);
    OK(ferrolock_lock_is_held(locks[2], &b));
    CHECK(!b);
    OK(ferrolock_lock_remaining_lease_ms(locks[2], &left));
    CHECK(left > 0 && left <= 30000);
    OK(ferrolock_lock_extend(locks[1], 10000, &left));
    CHECK(left > 30000);
    OK(ferrolock_lock_set_lease(locks[1], 5000, &left));
    CHECK(left <= 5000);
    OK(ferrolock_lock_reacquire(locks[1], &left));
    CHECK(left > 5000);
    EXPECT(ferrolock_lock_token(locks[1], &token), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("it is fair");
    EXPECT(ferrolock_lock_release(locks[2]), FERROLOCK_ERR_NOT_OWNER);
    OK(ferrolock_lock_release(locks[1]));
    OK(ferrolock_lock_release(locks[1]));
    OK(ferrolock_lock_acquire(locks[2], 0, -1));
    OK(ferrolock_lock_force_unlock(locks[3], &b));
    CHECK(b);
    OK(ferrolock_lock_is_lost(locks[2], &b));
    EXPECT(ferrolock_lock_release(locks[2]), FERROLOCK_ERR_LOCK_LOST);

    /* A fair lock and a reentrant lock of one name share the key: they exclude each other. */
    ferrolock_lock *plain = new_lock(clients[0], "fair");
    OK(ferrolock_lock_acquire(plain, 0, -1));
    EXPECT(ferrolock_lock_acquire(locks[1], 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(plain));
    OK(ferrolock_lock_free(plain));

    /* Wrong type. */
    ferrolock_lock *wrong = new_lock_kind(clients[0], "fair-wrong", FERROLOCK_LOCK_FAIR);
    redis_cmd(reply, sizeof reply, "SET", "fair-wrong", "x", NULL);
    EXPECT(ferrolock_lock_acquire(wrong, 0, -1), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_lock_acquire(wrong, 100, -1), FERROLOCK_ERR_WRONG_TYPE);
    wait_llen("redisson_lock_queue:{fair-wrong}", 0);
    OK(ferrolock_lock_free(wrong));

    for (int i = 0; i < 4; i++) {
        OK(ferrolock_lock_free(locks[i]));
        ferrolock_client_free(clients[i]);
    }
    printf("fair: three clients served in arrival order, a timed-out waiter leaves the queue, every call\n");
    return 0;
}

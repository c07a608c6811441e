/* A thread that exits while holding keeps its hold, renewed by the watchdog, like a
 * recursive pthread mutex it left locked: another client cannot take the lock, and
 * no other thread can release it. ferrolock_client_free() releases it, and so does
 * ferrolock_lock_free() of its handle. */
#include "harness.h"

typedef struct holder_thread {
    ferrolock_lock *lock;
    ferrolock_status first, second;
} holder_thread;

/* Acquires twice (re-entrant) and exits without releasing. */
static void *acquire_and_exit(void *arg) {
    holder_thread *h = arg;
    h->first = ferrolock_lock_acquire(h->lock, 0, -1);
    h->second = ferrolock_lock_acquire(h->lock, 0, -1);
    return NULL;
}

static void hold_in_exited_thread(ferrolock_lock *lock) {
    holder_thread h = {lock, FERROLOCK_ERR_INTERNAL, FERROLOCK_ERR_INTERNAL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, acquire_and_exit, &h) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    if (h.first != FERROLOCK_OK || h.second != FERROLOCK_OK)
        FAIL("the thread's acquires returned %s, %s", ferrolock_status_str(h.first),
             ferrolock_status_str(h.second));
}

static int64_t lease_left(ferrolock_lock *l) {
    int64_t left = 0;
    OK(ferrolock_lock_remaining_lease_ms(l, &left));
    return left;
}

int main(void) {
    const char *url = redis_start();
    /* A 1 s watchdog lease, renewed every third of it. */
    ferrolock_client *a = connect_client(url, 1000);
    ferrolock_client *b = connect_client(url, -1);
    ferrolock_lock *la = new_lock(a, "exited");
    ferrolock_lock *lb = new_lock(b, "exited");

    hold_in_exited_thread(la);

    /* Held, and not by this thread: another client cannot take it, this thread
     * cannot release it. */
    EXPECT(ferrolock_lock_acquire(lb, 0, -1), FERROLOCK_NOT_ACQUIRED);
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_NOT_OWNER);
    bool held = true;
    OK(ferrolock_lock_is_held(la, &held));
    CHECK(!held);

    /* Renewed after the thread is gone: the lease left goes back up, three times,
     * so the lock outlives its first lease. */
    int64_t start = now_ms(), previous = lease_left(lb), renewals = 0;
    CHECK(previous > 0 && previous <= 1000);
    while (renewals < 3) {
        if (now_ms() - start > 10000) FAIL("the exited thread's hold was not renewed within 10 s");
        int64_t left = lease_left(lb);
        if (left <= 0) FAIL("the exited thread's hold expired (PTTL %lld)", (long long)left);
        if (left > previous) renewals++;
        previous = left;
        struct timespec step = {0, 10 * 1000 * 1000};
        nanosleep(&step, NULL); /* polling the lease (a state), not waiting for one */
    }
    EXPECT(ferrolock_lock_acquire(lb, 0, -1), FERROLOCK_NOT_ACQUIRED);

    /* ferrolock_client_free() releases it: the other client gets it at once. */
    ferrolock_client_free(a);
    OK(ferrolock_lock_acquire(lb, 0, -1));
    OK(ferrolock_lock_release(lb));
    EXPECT(ferrolock_lock_acquire(la, 0, -1), FERROLOCK_ERR_CLIENT_CLOSED); /* client freed */
    ferrolock_lock_free(la);

    /* ferrolock_lock_free() releases the hold of an exited thread too. */
    a = connect_client(url, 1000);
    la = new_lock(a, "exited");
    hold_in_exited_thread(la);
    EXPECT(ferrolock_lock_acquire(lb, 0, -1), FERROLOCK_NOT_ACQUIRED);
    ferrolock_lock_free(la);
    OK(ferrolock_lock_acquire(lb, 0, -1));
    OK(ferrolock_lock_release(lb));
    CHECK(!is_locked(lb));

    ferrolock_lock_free(lb);
    ferrolock_client_free(a);
    ferrolock_client_free(b);
    printf("thread_exit: an exited thread's hold stays until the handle or client is freed\n");
    return 0;
}

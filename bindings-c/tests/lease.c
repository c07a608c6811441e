/* An explicit lease expires without renewal: another client gets the lock after it,
 * the holder is told (on_lost callback, is_lost) and its release says LOCK_LOST. */
#include "harness.h"

#define LEASE_MS 500

static event lost_event;
static pthread_t main_thread;
static bool lost_on_library_thread;

static void on_lost(const char *name, void *user) {
    lost_on_library_thread = !pthread_equal(pthread_self(), main_thread);
    if (strcmp(name, "leased") == 0 && user == &lost_event) event_signal(&lost_event);
}

int main(void) {
    const char *url = redis_start();
    main_thread = pthread_self();
    event_init(&lost_event);
    ferrolock_client *a = connect_client(url, -1);
    ferrolock_client *b = connect_client(url, -1);
    ferrolock_lock *la = new_lock(a, "leased");
    ferrolock_lock *lb = new_lock(b, "leased");
    OK(ferrolock_lock_on_lost(la, on_lost, &lost_event));

    int64_t t0 = now_ms();
    OK(ferrolock_lock_acquire(la, 0, LEASE_MS));
    int64_t left = 0;
    OK(ferrolock_lock_remaining_lease_ms(la, &left));
    CHECK(left > 0 && left <= LEASE_MS);

    /* B waits; it gets the lock when A's lease runs out (nothing is published then). */
    OK(ferrolock_lock_acquire(lb, 5000, -1));
    int64_t got_after = now_ms() - t0;
    if (got_after < LEASE_MS - 50 || got_after > LEASE_MS + 2000)
        FAIL("B acquired %lld ms after A took a %d ms lease", (long long)got_after, LEASE_MS);

    /* A is told. */
    if (!event_wait(&lost_event, 1, 5000)) FAIL("on_lost was not called within 5 s of the lease expiry");
    CHECK(lost_on_library_thread);
    bool lost = false;
    OK(ferrolock_lock_is_lost(la, &lost));
    CHECK(lost);
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_LOCK_LOST);
    CHECK(strstr(ferrolock_last_error(), "leased") != NULL);
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_NOT_OWNER);
    OK(ferrolock_lock_is_lost(la, &lost));
    CHECK(lost); /* stays lost until A acquires again */

    OK(ferrolock_lock_release(lb));
    OK(ferrolock_lock_acquire(la, 0, -1));
    OK(ferrolock_lock_is_lost(la, &lost));
    CHECK(!lost);
    OK(ferrolock_lock_release(la));
    CHECK(lost_event.count == 1);
    printf("lease: %d ms lease expired, B acquired after %lld ms, on_lost called\n", LEASE_MS,
           (long long)got_after);

    ferrolock_lock_free(la);
    ferrolock_lock_free(lb);
    ferrolock_client_free(a);
    ferrolock_client_free(b);
    event_destroy(&lost_event);
    return 0;
}

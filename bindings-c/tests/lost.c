/* Force unlock from a second client: the holder's on_lost callback runs (on a
 * library thread, with the name and user pointer) and is_lost turns true; its
 * release then says LOCK_LOST. Also: freeing a handle or a client releases what
 * it still holds, and a handle outliving its client fails cleanly. */
#include "harness.h"

typedef struct lost_state {
    event ev;
    pthread_t main_thread;
    bool other_thread;
    char name[64];
    ferrolock_lock *own;   /* the handle the callback is registered on */
    ferrolock_lock *probe; /* another handle the callback queries (a blocking call) */
    ferrolock_status probe_status, reregister_status;
    bool probe_locked;
} lost_state;

static void on_lost(const char *name, void *user) {
    lost_state *s = user;
    s->other_thread = !pthread_equal(pthread_self(), s->main_thread);
    snprintf(s->name, sizeof s->name, "%s", name);
    /* Documented as allowed: blocking calls on other handles, re-registering itself. */
    s->probe_status = ferrolock_lock_is_locked(s->probe, &s->probe_locked);
    s->reregister_status = ferrolock_lock_on_lost(s->own, on_lost, user);
    event_signal(&s->ev);
}

static void never_called(const char *name, void *user) {
    (void)name;
    *(int *)user += 1;
}

int main(void) {
    const char *url = redis_start();
    lost_state s;
    memset(&s, 0, sizeof s);
    event_init(&s.ev);
    s.main_thread = pthread_self();

    /* 3 s watchdog: renewals every second find the force-unlocked hold gone. Not
     * shorter: under valgrind on a loaded machine a renewal can come late enough for
     * the hold to be declared lost by its own deadline while the key still lives (the
     * probe below would then see it locked). */
    ferrolock_client *a = connect_client(url, 3000);
    ferrolock_client *b = connect_client(url, -1);
    ferrolock_lock *la = new_lock(a, "victim");
    ferrolock_lock *lb = new_lock(b, "victim");
    s.own = la;
    s.probe = lb;
    s.probe_status = s.reregister_status = FERROLOCK_ERR_INTERNAL;
    s.probe_locked = true;
    OK(ferrolock_lock_on_lost(la, on_lost, &s));
    OK(ferrolock_lock_acquire(la, -1, -1));
    OK(ferrolock_lock_acquire(la, -1, -1));

    bool was_locked = false, lost = true;
    OK(ferrolock_lock_is_lost(la, &lost));
    CHECK(!lost);
    int64_t t0 = now_ms();
    OK(ferrolock_lock_force_unlock(lb, &was_locked));
    CHECK(was_locked);
    OK(ferrolock_lock_force_unlock(lb, &was_locked));
    CHECK(!was_locked);
    OK(ferrolock_lock_force_unlock(lb, NULL));

    if (!event_wait(&s.ev, 1, 5000)) FAIL("on_lost not called within 5 s of the force unlock");
    int64_t told_after = now_ms() - t0;
    CHECK(s.other_thread);
    CHECK(strcmp(s.name, "victim") == 0);
    if (s.probe_status != FERROLOCK_OK) FAIL("is_locked in the callback: %s", ferrolock_status_str(s.probe_status));
    CHECK(!s.probe_locked);
    CHECK(s.reregister_status == FERROLOCK_OK);
    OK(ferrolock_lock_is_lost(la, &lost));
    CHECK(lost);
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_LOCK_LOST); /* one per level held */
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_LOCK_LOST);
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_NOT_OWNER);
    printf("lost: force unlock reported to the holder after %lld ms\n", (long long)told_after);

    /* A removed callback is not called. */
    int calls = 0;
    OK(ferrolock_lock_on_lost(la, never_called, &calls));
    OK(ferrolock_lock_on_lost(la, NULL, NULL));
    OK(ferrolock_lock_acquire(la, 0, 100)); /* expires: lost, but nobody to tell */
    OK(ferrolock_lock_acquire(lb, 5000, -1));
    OK(ferrolock_lock_release(lb));
    EXPECT(ferrolock_lock_release(la), FERROLOCK_ERR_LOCK_LOST);
    CHECK(calls == 0);

    /* Freeing a handle releases what it holds. */
    ferrolock_lock *lc = new_lock(a, "freed-handle");
    ferrolock_lock *watch = new_lock(b, "freed-handle");
    OK(ferrolock_lock_acquire(lc, 0, -1));
    OK(ferrolock_lock_acquire(lc, 0, -1));
    CHECK(is_locked(watch));
    ferrolock_lock_free(lc);
    CHECK(!is_locked(watch));
    ferrolock_lock_free(watch);

    /* Freeing a client releases what it holds; its handles then fail cleanly. */
    ferrolock_client *c = connect_client(url, -1);
    ferrolock_lock *ld = new_lock(c, "freed-client");
    ferrolock_lock *watch2 = new_lock(b, "freed-client");
    OK(ferrolock_lock_acquire(ld, 0, -1));
    CHECK(is_locked(watch2));
    ferrolock_client_free(c);
    CHECK(!is_locked(watch2));
    EXPECT(ferrolock_lock_acquire(ld, 0, -1), FERROLOCK_ERR_CLIENT_CLOSED);
    ferrolock_lock_free(ld);
    ferrolock_lock_free(watch2);

    ferrolock_lock_free(la);
    ferrolock_lock_free(lb);
    ferrolock_client_free(a);
    ferrolock_client_free(b);
    event_destroy(&s.ev);
    return 0;
}

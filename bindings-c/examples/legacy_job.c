/*
 * legacy_job: a cron-style job that must not run twice at the same time, even
 * when cron starts it on several machines.
 *
 *   cc legacy_job.c $(pkg-config --cflags --libs ferrolock) -o legacy_job
 *   FERROLOCK_URL=redis://127.0.0.1:6379 ./legacy_job
 *
 * Exit status: 0 = work done, 3 = another instance is running (skipped), 1 = error.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ferrolock.h>

static int fail(const char *what, ferrolock_status s) {
    fprintf(stderr, "legacy_job: %s: %s: %s\n", what, ferrolock_status_str(s), ferrolock_last_error());
    return 1;
}

static int do_the_work(void) {
    /* ... the job's real work: here it just says what it would do ... */
    printf("legacy_job: nightly report generated\n");
    return 0;
}

int main(void) {
    const char *url = getenv("FERROLOCK_URL");
    if (!url) url = "redis://127.0.0.1:6379";

    ferrolock_client *client = NULL;
    ferrolock_status s = ferrolock_client_connect(url, -1 /* default 30 s watchdog */, &client);
    if (s != FERROLOCK_OK) return fail("connect", s);

    ferrolock_lock *lock = NULL;
    s = ferrolock_lock_new(client, "legacy-job:nightly-report", &lock);
    if (s != FERROLOCK_OK) {
        ferrolock_client_free(client);
        return fail("lock", s);
    }

    int rc;
    /* Wait up to 10 s for an earlier run to finish; the watchdog keeps the lock while we work. */
    s = ferrolock_lock_acquire(lock, 10000, -1);
    if (s == FERROLOCK_NOT_ACQUIRED) {
        printf("legacy_job: another instance is running, skipping\n");
        rc = 3;
    } else if (s != FERROLOCK_OK) {
        rc = fail("acquire", s);
    } else {
        rc = do_the_work();
        bool lost = false;
        if (ferrolock_lock_is_lost(lock, &lost) == FERROLOCK_OK && lost)
            fprintf(stderr, "legacy_job: the lock was lost while working; check the output\n");
        s = ferrolock_lock_release(lock);
        if (s != FERROLOCK_OK) rc = fail("release", s);
    }

    ferrolock_lock_free(lock);
    ferrolock_client_free(client);
    return rc;
}

/* ferrolock_semaphore_*: every verb against a real server (Redisson's keys), at most
 * N holders among threads of two clients (and exactly N reachable), a waiter woken by
 * the release message, timeouts, wrong-type keys, bad arguments, freed / mixed
 * handles and a closed client (also while a call waits). */
#include "family.h"

#include <stdatomic.h>
#include <stdint.h>

static ferrolock_status sem_acquire_call(call_thread *t) {
    return ferrolock_semaphore_acquire((ferrolock_semaphore *)t->handle, t->n, t->wait_ms);
}

/* Who is inside, counted across every thread. */
static atomic_int inside_now, inside_most, failures;

static void *worker(void *arg) {
    ferrolock_semaphore *sem = (ferrolock_semaphore *)arg;
    for (int i = 0; i < 15; i++) {
        if (ferrolock_semaphore_acquire(sem, 1, -1) != FERROLOCK_OK) {
            atomic_fetch_add(&failures, 1);
            return NULL;
        }
        int n = atomic_fetch_add(&inside_now, 1) + 1;
        for (int most = atomic_load(&inside_most); n > most && !atomic_compare_exchange_weak(&inside_most, &most, n);) {
        }
        struct timespec work = {0, 2 * 1000 * 1000};
        nanosleep(&work, NULL); /* the critical section's work */
        atomic_fetch_sub(&inside_now, 1);
        if (ferrolock_semaphore_release(sem, 1, NULL) != FERROLOCK_OK) atomic_fetch_add(&failures, 1);
    }
    return NULL;
}

/* Three threads inside at once, each waiting for the others before leaving. */
typedef struct together {
    ferrolock_semaphore *sem;
    event *in;
    event *leave;
    ferrolock_status status;
} together;

static void *take_and_stay(void *arg) {
    together *t = (together *)arg;
    t->status = ferrolock_semaphore_acquire(t->sem, 1, 20000);
    if (t->status != FERROLOCK_OK) return NULL;
    event_signal(t->in);
    if (!event_wait(t->leave, 1, 60000)) t->status = FERROLOCK_ERR_INTERNAL;
    if (ferrolock_semaphore_release(t->sem, 1, NULL) != FERROLOCK_OK) t->status = FERROLOCK_ERR_INTERNAL;
    return NULL;
}

static void expect_freed(const char *what) {
    expect_message("not a live");
    expect_message(what);
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *c2 = connect_client(url, -1);
    ferrolock_semaphore *sem = NULL, *other = NULL;
    bool set = false;
    uint64_t n = 99;
    char reply[64];

    /* The verbs. */
    OK(ferrolock_semaphore_new(c, "sem", &sem));
    OK(ferrolock_semaphore_new(c2, "sem", &other));
    CHECK(sem != NULL && other != NULL && sem != other);
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 0); /* never set: no permits */
    EXPECT(ferrolock_semaphore_acquire(sem, 1, 0), FERROLOCK_NOT_ACQUIRED);
    expect_message("semaphore \"sem\"");
    OK(ferrolock_semaphore_try_set_permits(sem, 3, &set));
    CHECK(set);
    OK(ferrolock_semaphore_try_set_permits(other, 5, &set));
    CHECK(!set); /* exists: its count stays */
    OK(ferrolock_semaphore_try_set_permits(other, 5, NULL));
    redis_query(reply, sizeof reply, "GET", "sem", NULL);
    CHECK(strtol(reply, NULL, 10) == 3); /* Redisson's RSemaphore: the count at the name */
    OK(ferrolock_semaphore_available(other, &n));
    CHECK(n == 3);
    OK(ferrolock_semaphore_acquire(sem, 2, 0));
    OK(ferrolock_semaphore_available(other, &n));
    CHECK(n == 1);
    int64_t t0 = now_ms();
    EXPECT(ferrolock_semaphore_acquire(other, 2, 150), FERROLOCK_NOT_ACQUIRED); /* all or nothing */
    CHECK(now_ms() - t0 >= 150);
    expect_message("150 ms");
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 1);
    OK(ferrolock_semaphore_release(other, 2, &n)); /* anyone gives back: not owned */
    CHECK(n == 3);
    OK(ferrolock_semaphore_drain(sem, &n));
    CHECK(n == 3);
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 0);
    OK(ferrolock_semaphore_drain(sem, NULL));
    OK(ferrolock_semaphore_release(sem, 3, NULL));
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 3);

    /* Exactly N reachable: three threads inside at once, a fourth refused. */
    event in, leave;
    event_init(&in);
    event_init(&leave);
    together three[3];
    pthread_t threads[8];
    for (int i = 0; i < 3; i++) {
        three[i] = (together){.sem = i % 2 ? other : sem, .in = &in, .leave = &leave, .status = FERROLOCK_ERR_INTERNAL};
        CHECK(pthread_create(&threads[i], NULL, take_and_stay, &three[i]) == 0);
    }
    CHECK(event_wait(&in, 3, 30000));
    EXPECT(ferrolock_semaphore_acquire(sem, 1, 0), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 0);
    event_signal(&leave);
    for (int i = 0; i < 3; i++) {
        CHECK(pthread_join(threads[i], NULL) == 0);
        CHECK(three[i].status == FERROLOCK_OK);
    }
    event_destroy(&in);
    event_destroy(&leave);

    /* At most N: eight threads over two clients (one handle each), 3 permits. */
    for (int i = 0; i < 8; i++) CHECK(pthread_create(&threads[i], NULL, worker, i % 2 ? other : sem) == 0);
    for (int i = 0; i < 8; i++) CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(atomic_load(&failures) == 0);
    if (atomic_load(&inside_most) > 3) FAIL("%d threads were inside a semaphore of 3 permits", atomic_load(&inside_most));
    CHECK(atomic_load(&inside_most) >= 1);
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 3);

    /* A waiter wakes on the release message (it waits up to 60 s, so a timeout or
     * poll would show), and a release of 2 lets a waiter for 2 in. */
    OK(ferrolock_semaphore_drain(sem, NULL));
    call_thread w;
    call_start(&w, sem_acquire_call, other, 60000, 2);
    wait_subscribed("redisson_sc:{sem}");
    wait_parked(c2, 1); /* the count may still be the eight threads' (100 ms after they waited) */
    OK(ferrolock_semaphore_release(sem, 1, &n));
    CHECK(n == 1); /* not enough for the waiter: it waits on */
    CHECK(!event_wait(&w.done, 1, 100));
    int64_t released = now_ms();
    OK(ferrolock_semaphore_release(sem, 1, NULL));
    CHECK(call_join(&w) == FERROLOCK_OK);
    CHECK(w.returned_ms - released < 10000);
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 0);
    OK(ferrolock_semaphore_release(sem, 3, NULL));

    /* Bad arguments. */
    ferrolock_semaphore *bad = (ferrolock_semaphore *)&bad;
    EXPECT(ferrolock_semaphore_new(c, NULL, &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(bad == NULL);
    expect_message("semaphore name is NULL");
    EXPECT(ferrolock_semaphore_new(c, "", &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("empty");
    EXPECT(ferrolock_semaphore_new(NULL, "x", &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("client is NULL");
    EXPECT(ferrolock_semaphore_new(c, "x", NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_new(c, "\xff", &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("UTF-8");
    EXPECT(ferrolock_semaphore_acquire(sem, 0, 0), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("permits = 0");
    EXPECT(ferrolock_semaphore_acquire(sem, UINT64_MAX, 0), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("out of range");
    EXPECT(ferrolock_semaphore_acquire(sem, 1, -2), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("wait_ms = -2");
    EXPECT(ferrolock_semaphore_acquire(sem, 1, 8LL * 24 * 3600 * 1000), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_release(sem, 0, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_release(sem, (uint64_t)INT64_MAX + 1, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_try_set_permits(sem, UINT64_MAX, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_available(sem, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("out is NULL");
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 3); /* none of these changed anything */

    /* Wrong type: a key that is not a count. */
    ferrolock_semaphore *wrong = NULL;
    OK(ferrolock_semaphore_new(c, "sem-wrong", &wrong));
    redis_cmd(reply, sizeof reply, "HSET", "sem-wrong", "f", "v", NULL);
    EXPECT(ferrolock_semaphore_available(wrong, &n), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_semaphore_acquire(wrong, 1, 0), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_semaphore_release(wrong, 1, NULL), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_semaphore_try_set_permits(wrong, 1, NULL), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_semaphore_drain(wrong, NULL), FERROLOCK_ERR_WRONG_TYPE);
    redis_cmd(reply, sizeof reply, "SET", "sem-wrong", "lots", NULL);
    EXPECT(ferrolock_semaphore_available(wrong, &n), FERROLOCK_ERR_WRONG_TYPE);
    expect_message("not a number of permits");
    OK(ferrolock_semaphore_free(wrong));

    /* Freed and mixed handles. */
    ferrolock_semaphore *gone = NULL;
    OK(ferrolock_semaphore_new(c, "sem", &gone));
    OK(ferrolock_semaphore_free(gone));
    EXPECT(ferrolock_semaphore_free(gone), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_freed("ferrolock_semaphore_free");
    EXPECT(ferrolock_semaphore_available(gone, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_freed("ferrolock_semaphore");
    EXPECT(ferrolock_semaphore_acquire(gone, 1, 0), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_release(gone, 1, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_try_set_permits(gone, 1, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_drain(gone, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_semaphore_acquire(NULL, 1, 0), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("sem is NULL");
    OK(ferrolock_semaphore_free(NULL));
    ferrolock_lock *lock = new_lock(c, "sem-lock");
    EXPECT(ferrolock_semaphore_acquire((ferrolock_semaphore *)lock, 1, 0), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_lock handle, not a ferrolock_semaphore");
    EXPECT(ferrolock_semaphore_free((ferrolock_semaphore *)c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_client handle, not a ferrolock_semaphore");
    EXPECT(ferrolock_lock_acquire((ferrolock_lock *)sem, 0, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_semaphore handle, not a ferrolock_lock");
    EXPECT(ferrolock_latch_count((ferrolock_latch *)sem, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_semaphore handle, not a ferrolock_latch");
    EXPECT(ferrolock_semaphore_new((ferrolock_client *)sem, "x", &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_semaphore handle, not a ferrolock_client");
    OK(ferrolock_lock_free(lock));
    OK(ferrolock_semaphore_available(sem, &n)); /* the real one still works */

    /* A closed client: its waiting acquire returns, then every call is refused. */
    OK(ferrolock_semaphore_drain(other, NULL));
    call_start(&w, sem_acquire_call, other, -1, 1);
    wait_subscribed("redisson_sc:{sem}");
    wait_parked(c2, 1); /* the count may still be the previous waiter's (100 ms after it) */
    OK(ferrolock_client_free(c2));
    CHECK(call_join(&w) == FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_semaphore_available(other, &n), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_semaphore_release(other, 1, NULL), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_semaphore_acquire(other, 1, 0), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_semaphore_new(c2, "x", &bad), FERROLOCK_ERR_INVALID_ARGUMENT); /* the client handle is gone */
    OK(ferrolock_semaphore_free(other));
    OK(ferrolock_semaphore_available(sem, &n));
    CHECK(n == 0); /* nothing was taken by the closed waiter */

    OK(ferrolock_semaphore_free(sem));
    ferrolock_client_free(c);
    printf("semaphore: every verb, at most 3 of 8 threads inside (3 at once reached), woken by message, errors\n");
    return 0;
}

/* Handles survive misuse (run under ASan + UBSan, which abort on any read of freed
 * memory): a double free, any call on a freed client, lock or multi-lock handle, a
 * handle of the wrong type and a pointer that never was a handle each return
 * FERROLOCK_ERR_INVALID_ARGUMENT with a message, and nothing else changes. */
#include "harness.h"

static void expect_freed(const char *what) {
    expect_message("not a live");
    expect_message(what);
}

/* Every call that takes a lock handle, on a freed one. */
static void every_lock_call_refused(ferrolock_lock *l) {
    bool b = true;
    uint32_t n = 7;
    int64_t ms = 7;
    uint64_t token = 7;
    EXPECT(ferrolock_lock_acquire(l, 0, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_freed("ferrolock_lock_free");
    EXPECT(ferrolock_lock_acquire(l, -1, 1000), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_is_locked(l, &b), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_is_held(l, &b), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_hold_count(l, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_remaining_lease_ms(l, &ms), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_force_unlock(l, &b), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_token(l, &token), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_is_lost(l, &b), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_on_lost(l, NULL, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_free(l), FERROLOCK_ERR_INVALID_ARGUMENT); /* double free */
    expect_freed("ferrolock_lock");
    CHECK(b && n == 7 && ms == 7 && token == 7); /* outputs untouched */
}

typedef struct {
    ferrolock_lock *lock;
    event started;
    ferrolock_status status;
} waiter;

static void *wait_for_lock(void *arg) {
    waiter *w = arg;
    event_signal(&w->started);
    w->status = ferrolock_lock_acquire(w->lock, 20000, -1);
    return NULL;
}

/* Makes and frees handles until told to stop, so that fork() often lands while
 * this thread is inside the handle registry. */
typedef struct {
    ferrolock_client *client;
    volatile int stop;
    long rounds;
} churn;

static void *churn_handles(void *arg) {
    churn *ch = arg;
    while (!ch->stop) {
        ferrolock_lock *h = NULL;
        bool b;
        if (ferrolock_lock_new(ch->client, "churn", &h) != FERROLOCK_OK) FAIL("lock_new in churn");
        if (ferrolock_lock_is_lost(h, &b) != FERROLOCK_OK) FAIL("is_lost in churn");
        if (ferrolock_lock_free(h) != FERROLOCK_OK) FAIL("free in churn");
        ch->rounds++;
    }
    return NULL;
}

/* fork() while another thread uses the registry: the child never inherits its lock
 * taken (a child that did would hang on its first handle call; it has 10 s). */
static void fork_during_registry_use(ferrolock_client *c) {
    churn ch = {.client = c, .stop = 0, .rounds = 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, churn_handles, &ch) == 0);
    ferrolock_lock *inherited = new_lock(c, "forked-handles");
    for (int i = 0; i < 100; i++) {
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0) {
            alarm(10);
            ferrolock_lock *h = NULL;
            bool b;
            /* Every call goes through the registry; the parent's client refuses to
             * work here. */
            if (ferrolock_lock_new(c, "x", &h) != FERROLOCK_ERR_INVALID_ARGUMENT || h != NULL) _exit(10);
            if (ferrolock_lock_is_lost(inherited, &b) != FERROLOCK_OK) _exit(11);
            if (ferrolock_lock_acquire(inherited, 0, -1) != FERROLOCK_ERR_INVALID_ARGUMENT) _exit(14);
            if (ferrolock_lock_free(inherited) != FERROLOCK_OK) _exit(12);
            if (ferrolock_lock_free(inherited) != FERROLOCK_ERR_INVALID_ARGUMENT) _exit(13);
            _exit(0);
        }
        int status = 0;
        CHECK(waitpid(child, &status, 0) == child);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            FAIL("forked child %d failed: %s %d", i, WIFSIGNALED(status) ? "signal" : "exit",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    ch.stop = 1;
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(ch.rounds > 0);
    OK(ferrolock_lock_free(inherited)); /* the parent's handle is its own */
    printf("handles: 100 forks while another thread made and freed %ld handles\n", ch.rounds);
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *other = connect_client(url, -1);
    ferrolock_lock *probe = new_lock(other, "handles");

    /* A lock handle: freeing it releases its hold; then every call is refused. */
    ferrolock_lock *l = new_lock(c, "handles");
    OK(ferrolock_lock_acquire(l, 0, -1));
    CHECK(is_locked(probe));
    OK(ferrolock_lock_free(l));
    CHECK(!is_locked(probe));
    every_lock_call_refused(l);

    /* A fenced lock freed while it holds. */
    ferrolock_lock *f = new_fenced_lock(c, "handles-fenced");
    OK(ferrolock_lock_acquire(f, 0, 5000));
    OK(ferrolock_lock_free(f));
    every_lock_call_refused(f);

    /* A freed handle stays refused after its slot is reused by a new handle. */
    ferrolock_lock *fresh = new_lock(c, "handles");
    CHECK(fresh != l);
    EXPECT(ferrolock_lock_acquire(l, 0, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_lock_acquire(fresh, 0, -1));
    EXPECT(ferrolock_lock_free(l), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_lock_release(fresh)); /* the stale free touched nothing */

    /* A multi-lock handle (and a multi-lock over a freed member). */
    ferrolock_lock *m1 = new_lock(c, "handles-m1"), *m2 = new_lock(c, "handles-m2");
    ferrolock_lock *members[2] = {m1, m2};
    ferrolock_lock *multi = NULL;
    OK(ferrolock_multilock_new(members, 2, FERROLOCK_QUORUM_ALL, &multi));
    OK(ferrolock_lock_acquire(multi, 0, -1));
    OK(ferrolock_lock_free(multi));
    ferrolock_lock *m1_probe = new_lock(other, "handles-m1");
    CHECK(!is_locked(m1_probe)); /* freeing the multi-lock released its members */
    every_lock_call_refused(multi);
    OK(ferrolock_lock_free(m2));
    ferrolock_lock *again = (ferrolock_lock *)&again;
    EXPECT(ferrolock_multilock_new(members, 2, FERROLOCK_QUORUM_ALL, &again), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("members[1]");
    CHECK(again == NULL);

    /* Wrong type, and pointers that never were handles (not even read). */
    EXPECT(ferrolock_lock_acquire((ferrolock_lock *)c, 0, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_client handle, not a ferrolock_lock");
    EXPECT(ferrolock_lock_new((ferrolock_client *)m1, "x", &again), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_lock handle, not a ferrolock_client");
    int on_stack = 0;
    EXPECT(ferrolock_lock_release((ferrolock_lock *)&on_stack), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_free((ferrolock_lock *)&on_stack), FERROLOCK_ERR_INVALID_ARGUMENT);
    char *heap = malloc(64);
    CHECK(heap != NULL);
    EXPECT(ferrolock_client_free((ferrolock_client *)heap), FERROLOCK_ERR_INVALID_ARGUMENT);
    free(heap);

    /* A handle freed while another thread waits on it: the waiting call keeps it
     * alive until it returns, and what it took is released then. */
    ferrolock_lock *busy = new_lock(other, "handles-busy");
    OK(ferrolock_lock_acquire(busy, 0, -1));
    waiter w = {.lock = new_lock(c, "handles-busy"), .status = FERROLOCK_ERR_INTERNAL};
    event_init(&w.started);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_for_lock, &w) == 0);
    CHECK(event_wait(&w.started, 1, 10000));
    int64_t give_up = now_ms() + 20000;
    for (;;) { /* until the acquire is waiting: it subscribes to the lock's channel first */
        char out[256];
        redis_query(out, sizeof out, "PUBSUB", "NUMSUB", "redisson_lock__channel:{handles-busy}", NULL);
        const char *count = strchr(out, '\n');
        if (count && strtol(count + 1, NULL, 10) >= 1) break;
        if (now_ms() > give_up) FAIL("the waiting acquire never subscribed");
        struct timespec step = {0, 5 * 1000 * 1000};
        nanosleep(&step, NULL); /* polling Redis for the waiter's subscription */
    }
    OK(ferrolock_lock_free(w.lock));
    EXPECT(ferrolock_lock_is_locked(w.lock, &(bool){false}), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_lock_release(busy));
    CHECK(pthread_join(t, NULL) == 0);
    if (w.status != FERROLOCK_OK) FAIL("the waiter on the freed handle got %s", ferrolock_status_str(w.status));
    CHECK(!is_locked(busy)); /* released with the last use of the freed handle */
    event_destroy(&w.started);

    /* A client: double free, and every call on a freed one. */
    ferrolock_client *gone = connect_client(url, -1);
    ferrolock_lock *orphan = new_lock(gone, "handles-orphan");
    OK(ferrolock_client_free(gone));
    EXPECT(ferrolock_client_free(gone), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_freed("ferrolock_client_free");
    CHECK(strcmp(ferrolock_client_id(gone), "") == 0);
    expect_freed("ferrolock_client");
    EXPECT(ferrolock_lock_new(gone, "x", &again), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(again == NULL);
    EXPECT(ferrolock_fenced_lock_new(gone, "x", &again), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_new_kind(gone, "x", FERROLOCK_LOCK_REENTRANT, &again), FERROLOCK_ERR_INVALID_ARGUMENT);
    /* Its lock handle stays a live handle (to be freed) on a closed client. */
    EXPECT(ferrolock_lock_acquire(orphan, 0, -1), FERROLOCK_ERR_CLIENT_CLOSED);
    OK(ferrolock_lock_free(orphan));
    EXPECT(ferrolock_lock_free(orphan), FERROLOCK_ERR_INVALID_ARGUMENT);

    fork_during_registry_use(c);

    OK(ferrolock_lock_free(fresh));
    OK(ferrolock_lock_free(m1));
    OK(ferrolock_lock_free(m1_probe));
    OK(ferrolock_lock_free(busy));
    OK(ferrolock_lock_free(probe));
    OK(ferrolock_client_free(other));
    OK(ferrolock_client_free(c));
    EXPECT(ferrolock_client_free(c), FERROLOCK_ERR_INVALID_ARGUMENT);
    printf("handles: double frees and freed, foreign and mistyped handles refused, no crash\n");
    return 0;
}

/* Read-write locks: ferrolock_rwlock_new() (two lock handles, one holder per thread on
 * both), FERROLOCK_LOCK_READ / _WRITE handles on their own. Readers together (threads
 * and clients), a writer alone, a waiting writer woken when the last reader leaves,
 * downgrade (a writer also reads), an upgrade that waits, every ferrolock_lock_* call
 * on both sides, wrong-type keys, bad arguments, freed handles, a closed client. */
#include "family.h"

static ferrolock_status acquire_call(call_thread *t) {
    return ferrolock_lock_acquire((ferrolock_lock *)t->handle, t->wait_ms, -1);
}

/* A reader that takes the read side on its own thread, stays until told, and leaves. */
typedef struct reader {
    ferrolock_lock *read;
    event *in;
    event *leave;
    ferrolock_status status;
    pthread_t thread;
} reader;

static void *read_and_stay(void *arg) {
    reader *r = (reader *)arg;
    r->status = ferrolock_lock_acquire(r->read, 0, -1);
    if (r->status != FERROLOCK_OK) return NULL;
    event_signal(r->in);
    if (!event_wait(r->leave, 1, 60000)) r->status = FERROLOCK_ERR_INTERNAL;
    ferrolock_status s = ferrolock_lock_release(r->read);
    if (s != FERROLOCK_OK) r->status = s;
    return NULL;
}

/* Runs `acquire` then `release` of `l` on a thread of its own (a holder of its own). */
static ferrolock_status try_on_other_thread(ferrolock_lock *l) {
    call_thread t;
    call_start(&t, acquire_call, l, 0, 0);
    ferrolock_status s = call_join(&t);
    return s;
}

static ferrolock_status release_call(call_thread *t) { return ferrolock_lock_release((ferrolock_lock *)t->handle); }

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *c2 = connect_client(url, -1);
    ferrolock_lock *r = NULL, *w = NULL, *r2 = NULL, *w2 = NULL;
    bool b = false;
    uint32_t count = 0;
    int64_t left = 0;
    uint64_t token = 0;
    char reply[256];

    OK(ferrolock_rwlock_new(c, "rw", &r, &w));
    OK(ferrolock_rwlock_new(c2, "rw", &r2, &w2));
    CHECK(r && w && r != w);
    ferrolock_lock *lone_reader = new_lock_kind(c2, "rw", FERROLOCK_LOCK_READ);
    ferrolock_lock *lone_writer = new_lock_kind(c2, "rw", FERROLOCK_LOCK_WRITE);

    /* Readers together: two threads on one handle, another client, a lone reader. */
    event in, leave;
    event_init(&in);
    event_init(&leave);
    reader readers[2] = {{.read = r, .in = &in, .leave = &leave}, {.read = r2, .in = &in, .leave = &leave}};
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&readers[i].thread, NULL, read_and_stay, &readers[i]) == 0);
    CHECK(event_wait(&in, 2, 30000));
    OK(ferrolock_lock_acquire(r, 0, -1)); /* the main thread: a third reader */
    OK(ferrolock_lock_acquire(lone_reader, 0, -1));
    redis_query(reply, sizeof reply, "HGET", "rw", "mode", NULL);
    CHECK(strncmp(reply, "read", 4) == 0); /* Redisson's RReadWriteLock hash */
    /* ... and no writer: not this thread's own write side while it reads (an upgrade
     * waits), not another client's, not a lone writer. */
    EXPECT(ferrolock_lock_acquire(w, 100, -1), FERROLOCK_NOT_ACQUIRED);
    EXPECT(ferrolock_lock_acquire(w2, 0, -1), FERROLOCK_NOT_ACQUIRED);
    EXPECT(ferrolock_lock_acquire(lone_writer, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(r));
    OK(ferrolock_lock_release(lone_reader));

    /* A writer waiting (60 s) wakes when the last reader leaves. */
    call_thread writer;
    call_start(&writer, acquire_call, w2, 60000, 0);
    wait_subscribed("redisson_rwlock:{rw}");
    wait_parked(c2, 1); /* the count may still be w's bounded wait's (100 ms after it) */
    event_signal(&leave);
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_join(readers[i].thread, NULL) == 0);
        CHECK(readers[i].status == FERROLOCK_OK);
    }
    int64_t last_left = now_ms();
    CHECK(call_join(&writer) == FERROLOCK_OK);
    CHECK(writer.returned_ms - last_left < 10000);
    event_destroy(&in);
    event_destroy(&leave);

    /* A writer alone: no reader, no other writer (the writer's thread has exited and
     * still holds, like a pthread mutex left locked). */
    redis_query(reply, sizeof reply, "HGET", "rw", "mode", NULL);
    CHECK(strncmp(reply, "write", 5) == 0);
    EXPECT(ferrolock_lock_acquire(r, 0, -1), FERROLOCK_NOT_ACQUIRED);
    EXPECT(ferrolock_lock_acquire(w, 0, -1), FERROLOCK_NOT_ACQUIRED);
    EXPECT(ferrolock_lock_acquire(lone_reader, 0, -1), FERROLOCK_NOT_ACQUIRED);
    CHECK(try_on_other_thread(r2) == FERROLOCK_NOT_ACQUIRED); /* same handle, other thread */
    CHECK(try_on_other_thread(w2) == FERROLOCK_NOT_ACQUIRED);
    EXPECT(ferrolock_lock_release(w2), FERROLOCK_ERR_NOT_OWNER); /* not this thread's hold */
    OK(ferrolock_lock_force_unlock(w2, &b));
    CHECK(b);
    CHECK(!is_locked(r));

    /* Downgrade: the writer also reads (one holder on both handles), and keeps the
     * read hold after it stops writing; then others read with it, nobody writes. */
    OK(ferrolock_lock_acquire(w, 0, -1));
    OK(ferrolock_lock_acquire(w, 0, -1)); /* re-entrant */
    OK(ferrolock_lock_acquire(r, 0, -1));
    OK(ferrolock_lock_hold_count(w, &count));
    CHECK(count == 2);
    OK(ferrolock_lock_hold_count(r, &count));
    CHECK(count == 1);
    CHECK(try_on_other_thread(r) == FERROLOCK_NOT_ACQUIRED); /* another thread: another holder */
    OK(ferrolock_lock_release(w));
    OK(ferrolock_lock_release(w));
    OK(ferrolock_lock_is_held(w, &b));
    CHECK(!b);
    OK(ferrolock_lock_is_held(r, &b));
    CHECK(b);
    OK(ferrolock_lock_acquire(lone_reader, 0, -1));
    OK(ferrolock_lock_release(lone_reader));
    EXPECT(ferrolock_lock_acquire(lone_writer, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(r));
    EXPECT(ferrolock_lock_release(r), FERROLOCK_ERR_NOT_OWNER);
    CHECK(!is_locked(w));

    /* Every ferrolock_lock_* call on both sides. */
    ferrolock_lock *sides[2] = {r, w};
    for (int i = 0; i < 2; i++) {
        ferrolock_lock *l = sides[i];
        OK(ferrolock_lock_acquire(l, 0, 20000));
        OK(ferrolock_lock_is_locked(l, &b));
        CHECK(b);
        OK(ferrolock_lock_remaining_lease_ms(l, &left));
        CHECK(left > 0 && left <= 20000);
        if (i == 0) { /* the core refuses: every read hold keeps the lease it was taken with */
            EXPECT(ferrolock_lock_extend(l, 10000, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
            expect_message("each read hold keeps the lease it was taken with");
            EXPECT(ferrolock_lock_set_lease(l, 5000, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
            expect_message("each read hold keeps the lease it was taken with");
            EXPECT(ferrolock_lock_reacquire(l, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
            expect_message("each read hold keeps the lease it was taken with");
        } else {
            OK(ferrolock_lock_extend(l, 10000, &left));
            CHECK(left > 20000);
            OK(ferrolock_lock_set_lease(l, 5000, &left));
            CHECK(left <= 5000);
            OK(ferrolock_lock_reacquire(l, &left));
            CHECK(left > 5000);
        }
        EXPECT(ferrolock_lock_token(l, &token), FERROLOCK_ERR_INVALID_ARGUMENT);
        expect_message(i == 0 ? "it is read" : "it is write");
        OK(ferrolock_lock_is_lost(l, &b));
        CHECK(!b);
        OK(ferrolock_lock_force_unlock(l, &b));
        CHECK(b);
        EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_LOCK_LOST);
        OK(ferrolock_lock_remaining_lease_ms(l, &left));
        CHECK(left == -1);
    }
    /* The thread's holder identity on both: the owner field of the read hold is the
     * one the write hold uses. */
    OK(ferrolock_lock_acquire(w, 0, -1));
    OK(ferrolock_lock_acquire(r, 0, -1));
    redis_query(reply, sizeof reply, "HKEYS", "rw", NULL); /* mode, OWNER:write, OWNER */
    char *write_field = strstr(reply, ":write\n");
    CHECK(write_field != NULL);
    char *start = write_field;
    while (start > reply && start[-1] != '\n') start--;
    char owner[200];
    snprintf(owner, sizeof owner, "\n%.*s\n", (int)(write_field - start), start);
    char lines[300];
    snprintf(lines, sizeof lines, "\n%s", reply);
    if (!strstr(lines, owner)) FAIL("the read hold is not the write holder's: %s", reply);
    call_thread rel;
    call_start(&rel, release_call, r, 0, 0);
    CHECK(call_join(&rel) == FERROLOCK_ERR_NOT_OWNER); /* another thread holds nothing */
    OK(ferrolock_lock_release(r));
    OK(ferrolock_lock_release(w));

    /* Wrong type. */
    ferrolock_lock *wr = NULL, *ww = NULL;
    OK(ferrolock_rwlock_new(c, "rw-wrong", &wr, &ww));
    redis_cmd(reply, sizeof reply, "SET", "rw-wrong", "x", NULL);
    EXPECT(ferrolock_lock_acquire(wr, 0, -1), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_lock_acquire(ww, 0, -1), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_lock_is_locked(wr, &b), FERROLOCK_ERR_WRONG_TYPE);

    /* Bad arguments: both outputs cleared. */
    ferrolock_lock *a = (ferrolock_lock *)&a, *z = (ferrolock_lock *)&z;
    EXPECT(ferrolock_rwlock_new(c, "rw", &a, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(a == NULL);
    expect_message("out_write is NULL");
    EXPECT(ferrolock_rwlock_new(c, "rw", NULL, &z), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(z == NULL);
    expect_message("out_read is NULL");
    EXPECT(ferrolock_rwlock_new(c, "rw", &a, &a), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(a == NULL);
    expect_message("same pointer");
    a = z = (ferrolock_lock *)&a;
    EXPECT(ferrolock_rwlock_new(c, "", &a, &z), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(a == NULL && z == NULL);
    expect_message("empty");
    EXPECT(ferrolock_rwlock_new(c, NULL, &a, &z), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_rwlock_new(NULL, "rw", &a, &z), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("client is NULL");
    EXPECT(ferrolock_rwlock_new((ferrolock_client *)r, "rw", &a, &z), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_lock handle, not a ferrolock_client");

    /* Freed handles: the freed side is refused, the other goes on (freeing the read
     * side while this thread reads releases that read hold). */
    OK(ferrolock_lock_acquire(r, 0, -1));
    OK(ferrolock_lock_free(r));
    CHECK(!is_locked(w));
    EXPECT(ferrolock_lock_acquire(r, 0, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("not a live ferrolock_lock");
    EXPECT(ferrolock_lock_free(r), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_lock_acquire(w, 0, -1));
    OK(ferrolock_lock_release(w));

    /* A closed client. */
    OK(ferrolock_lock_acquire(r2, 0, -1));
    OK(ferrolock_client_free(c2));
    CHECK(!is_locked(w)); /* freeing the client released its read hold */
    EXPECT(ferrolock_lock_acquire(r2, 0, -1), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_lock_acquire(w2, 0, -1), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_lock_is_locked(lone_reader, &b), FERROLOCK_ERR_CLIENT_CLOSED);
    OK(ferrolock_lock_free(r2));
    OK(ferrolock_lock_free(w2));
    OK(ferrolock_lock_free(lone_reader));
    OK(ferrolock_lock_free(lone_writer));
    EXPECT(ferrolock_rwlock_new(c2, "rw", &a, &z), FERROLOCK_ERR_INVALID_ARGUMENT);

    OK(ferrolock_lock_free(wr));
    OK(ferrolock_lock_free(ww));
    OK(ferrolock_lock_free(w));
    ferrolock_client_free(c);
    printf("rwlock: readers together, a writer alone and woken, downgrade, every call on both sides, errors\n");
    return 0;
}

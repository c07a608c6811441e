/* Multi-locks (ferrolock_multilock_new) over three redis-servers of their own, one
 * client per server: two Redlock handles from different clients exclude each other;
 * re-entry, per-thread holders, a member re-entered by the thread that holds the
 * Redlock; the single-server calls and the token are INVALID_ARGUMENT; a lost
 * majority is told (on_lost, is_lost, LOCK_LOST); a MultiLock needs every member
 * while a Redlock makes do with a majority; a member handle may be freed before the
 * multi-lock; bad input is INVALID_ARGUMENT; with 1 of 3 servers killed a Redlock
 * still acquires (a MultiLock fails), with 2 of 3 killed it fails with
 * FERROLOCK_ERR_CONNECTION and leaves nothing on the live one. */
#include "harness.h"

#define N 3

static redis_server *servers[N];

/* The first line of `argv` run on server i. */
static void on_server(int i, char *reply, size_t cap, int argc, const char **argv) {
    if (redis_call_argv(servers[i]->port, reply, cap, argc, argv) != 0)
        FAIL("redis command %s on server %d failed: server unreachable", argv[0], i);
}

/* Whether the key `name` exists on server i. */
static bool exists_on(int i, const char *name) {
    char reply[64];
    const char *argv[] = {"EXISTS", name};
    on_server(i, reply, sizeof reply, 2, argv);
    return strcmp(reply, ":1") == 0;
}

/* The number of owner fields in the lock hash `name` on server i. */
static int holders_on(int i, const char *name) {
    char reply[64];
    const char *argv[] = {"HLEN", name};
    on_server(i, reply, sizeof reply, 2, argv);
    return atoi(reply + 1);
}

/* How many of the live servers in [0, N) hold the key `name`. */
static int held_on(const char *name, const bool *alive) {
    int n = 0;
    for (int i = 0; i < N; i++)
        if ((!alive || alive[i]) && exists_on(i, name)) n++;
    return n;
}

static ferrolock_lock *multilock(ferrolock_lock **members, size_t n, ferrolock_quorum q) {
    ferrolock_lock *m = NULL;
    OK(ferrolock_multilock_new(members, n, q, &m));
    CHECK(m != NULL);
    return m;
}

typedef struct other_result {
    ferrolock_lock *lock;
    ferrolock_status release, try_acquire;
} other_result;

static void *other_thread(void *arg) {
    other_result *r = arg;
    r->release = ferrolock_lock_release(r->lock);
    r->try_acquire = ferrolock_lock_acquire(r->lock, 0, -1);
    return NULL;
}

typedef struct lost_state {
    event ev;
    char name[64];
} lost_state;

static void on_lost(const char *name, void *user) {
    lost_state *s = user;
    snprintf(s->name, sizeof s->name, "%s", name);
    event_signal(&s->ev);
}

static void expect_invalid_multi(ferrolock_lock *const *members, size_t n, int quorum, const char *mentions) {
    ferrolock_lock *out = (ferrolock_lock *)(uintptr_t)1; /* must become NULL */
    EXPECT(ferrolock_multilock_new(members, n, (ferrolock_quorum)quorum, &out), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message(mentions);
    CHECK(out == NULL);
}

int main(void) {
    for (int i = 0; i < N; i++) servers[i] = redis_start_more(NULL, NULL);
    ferrolock_client *a[N], *b[N];
    ferrolock_lock *la[N], *lb[N];
    for (int i = 0; i < N; i++) {
        a[i] = connect_client(servers[i]->url, 2000); /* renewed every ~667 ms */
        b[i] = connect_client(servers[i]->url, -1);
        la[i] = new_lock(a[i], "jobs");
        lb[i] = new_lock(b[i], "jobs");
    }
    ferrolock_lock *ra = multilock(la, N, FERROLOCK_QUORUM_MAJORITY);
    ferrolock_lock *rb = multilock(lb, N, FERROLOCK_QUORUM_MAJORITY);

    /* Exclusion between two Redlocks of different clients; nothing left by the loser. */
    OK(ferrolock_lock_acquire(ra, 0, -1));
    CHECK(held_on("jobs", NULL) >= 2);
    EXPECT(ferrolock_lock_acquire(rb, 0, -1), FERROLOCK_NOT_ACQUIRED);
    expect_message("jobs");
    int64_t t0 = now_ms();
    EXPECT(ferrolock_lock_acquire(rb, 300, -1), FERROLOCK_NOT_ACQUIRED);
    int64_t waited = now_ms() - t0;
    if (waited < 250) FAIL("a 300 ms wait returned after %lld ms", (long long)waited);
    for (int i = 0; i < N; i++) CHECK(holders_on(i, "jobs") <= 1);
    EXPECT(ferrolock_lock_release(rb), FERROLOCK_ERR_NOT_OWNER);

    /* Re-entry; another thread through the same handle is another holder. */
    OK(ferrolock_lock_acquire(ra, -1, -1));
    other_result r = {ra, FERROLOCK_OK, FERROLOCK_OK};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &r) == 0);
    pthread_join(t, NULL);
    if (r.release != FERROLOCK_ERR_NOT_OWNER) FAIL("other thread's release: %s", ferrolock_status_str(r.release));
    if (r.try_acquire != FERROLOCK_NOT_ACQUIRED) FAIL("other thread's try: %s", ferrolock_status_str(r.try_acquire));
    OK(ferrolock_lock_release(ra));
    CHECK(held_on("jobs", NULL) >= 2);

    /* The holding thread re-enters a member it took: the same holder. */
    int member = exists_on(0, "jobs") ? 0 : 1;
    OK(ferrolock_lock_acquire(la[member], 0, -1));
    uint32_t count = 0;
    OK(ferrolock_lock_hold_count(la[member], &count));
    CHECK(count == 2);
    OK(ferrolock_lock_release(la[member]));

    /* Calls that read or change one server, and the token, do not apply. */
    bool flag = false;
    uint32_t n32 = 0;
    int64_t left = 0;
    uint64_t token = 0;
    EXPECT(ferrolock_lock_is_locked(ra, &flag), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("redlock");
    expect_message("member");
    EXPECT(ferrolock_lock_is_held(ra, &flag), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_hold_count(ra, &n32), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_remaining_lease_ms(ra, &left), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_force_unlock(ra, &flag), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_token(ra, &token), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("token");
    OK(ferrolock_lock_is_lost(ra, &flag));
    CHECK(!flag);

    OK(ferrolock_lock_release(ra));
    CHECK(held_on("jobs", NULL) == 0);
    EXPECT(ferrolock_lock_release(ra), FERROLOCK_ERR_NOT_OWNER);
    OK(ferrolock_lock_acquire(rb, 0, -1)); /* free for the other client now */
    EXPECT(ferrolock_lock_acquire(ra, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(rb));
    CHECK(held_on("jobs", NULL) == 0);
    printf("redlock: two Redlocks exclude each other; re-entry and per-thread holders work\n");

    /* A lost majority is told: force-unlock two members' keys. */
    lost_state s;
    memset(&s, 0, sizeof s);
    event_init(&s.ev);
    OK(ferrolock_lock_on_lost(ra, on_lost, &s));
    OK(ferrolock_lock_acquire(ra, 0, -1));
    int forced = 0;
    for (int i = 0; i < N && forced < 2; i++) {
        OK(ferrolock_lock_force_unlock(lb[i], &flag));
        if (flag) forced++;
    }
    CHECK(forced == 2);
    if (!event_wait(&s.ev, 1, 10000)) FAIL("on_lost not called within 10 s of losing the majority");
    CHECK(strstr(s.name, "jobs") != NULL);
    OK(ferrolock_lock_is_lost(ra, &flag));
    CHECK(flag);
    EXPECT(ferrolock_lock_release(ra), FERROLOCK_ERR_LOCK_LOST);
    EXPECT(ferrolock_lock_release(ra), FERROLOCK_ERR_NOT_OWNER);
    OK(ferrolock_lock_on_lost(ra, NULL, NULL));
    CHECK(held_on("jobs", NULL) == 0);
    printf("redlock: losing the majority is reported\n");

    /* A MultiLock needs every member; a Redlock a majority. */
    ferrolock_lock *ma = multilock(la, N, FERROLOCK_QUORUM_ALL);
    OK(ferrolock_lock_acquire(lb[1], 0, -1));
    EXPECT(ferrolock_lock_acquire(ma, 200, -1), FERROLOCK_NOT_ACQUIRED);
    CHECK(!exists_on(0, "jobs") && !exists_on(2, "jobs"));
    OK(ferrolock_lock_acquire(ra, 0, -1));
    CHECK(exists_on(0, "jobs") && exists_on(2, "jobs") && holders_on(1, "jobs") == 1);
    OK(ferrolock_lock_release(ra));
    OK(ferrolock_lock_release(lb[1]));
    OK(ferrolock_lock_acquire(ma, 0, -1));
    CHECK(held_on("jobs", NULL) == N);
    EXPECT(ferrolock_lock_acquire(rb, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(ma));
    CHECK(held_on("jobs", NULL) == 0);
    printf("redlock: a MultiLock needs all members, a Redlock a majority\n");

    /* Bad input. */
    ferrolock_lock *twice[] = {la[0], la[1], la[0]};
    ferrolock_lock *with_null[] = {la[0], NULL, la[2]};
    ferrolock_lock *nested[] = {ra, lb[1], lb[2]};
    ferrolock_lock *same_name = new_lock(a[0], "jobs"); /* another handle, same client and name */
    ferrolock_lock *same_key[] = {la[0], same_name, la[2]};
    ferrolock_lock *out = NULL;
    expect_invalid_multi(NULL, N, FERROLOCK_QUORUM_MAJORITY, "members is NULL");
    expect_invalid_multi(la, 0, FERROLOCK_QUORUM_MAJORITY, "n = 0");
    expect_invalid_multi(twice, 3, FERROLOCK_QUORUM_MAJORITY, "same handle");
    expect_invalid_multi(with_null, 3, FERROLOCK_QUORUM_ALL, "members[1] is NULL");
    expect_invalid_multi(nested, 3, FERROLOCK_QUORUM_MAJORITY, "multi-lock");
    expect_invalid_multi(same_key, 3, FERROLOCK_QUORUM_MAJORITY, "twice");
    expect_invalid_multi(la, N, 2, "ferrolock_quorum");
    expect_invalid_multi(la, N, -1, "ferrolock_quorum");
    EXPECT(ferrolock_multilock_new(la, N, FERROLOCK_QUORUM_MAJORITY, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    ferrolock_lock_free(same_name);
    /* One member is allowed (a MultiLock of one is that lock). */
    ferrolock_lock *one = NULL;
    OK(ferrolock_multilock_new(lb, 1, FERROLOCK_QUORUM_ALL, &one));
    OK(ferrolock_lock_acquire(one, 0, -1));
    CHECK(exists_on(0, "jobs"));
    ferrolock_lock_free(one); /* releases */
    CHECK(!exists_on(0, "jobs"));
    (void)out;
    printf("redlock: bad input is FERROLOCK_ERR_INVALID_ARGUMENT\n");

    /* A member handle freed before its multi-lock: the multi-lock keeps it, and
     * freeing the multi-lock releases everything. */
    ferrolock_lock *tmp[N];
    for (int i = 0; i < N; i++) tmp[i] = new_lock(b[i], "keep-alive");
    ferrolock_lock *rk = multilock(tmp, N, FERROLOCK_QUORUM_MAJORITY);
    OK(ferrolock_lock_acquire(rk, 0, -1));
    for (int i = 0; i < N; i++) ferrolock_lock_free(tmp[i]);
    CHECK(held_on("keep-alive", NULL) >= 2); /* still held through the multi-lock */
    OK(ferrolock_lock_acquire(rk, 0, -1));   /* re-entry works on the freed members */
    OK(ferrolock_lock_release(rk));
    CHECK(held_on("keep-alive", NULL) >= 2);
    ferrolock_lock_free(rk);
    CHECK(held_on("keep-alive", NULL) == 0);
    printf("redlock: a multi-lock keeps its members alive\n");

    /* 1 of 3 servers down: a Redlock still acquires (and releases), a MultiLock fails. */
    bool alive[N] = {true, true, true};
    redis_stop_server(servers[0]);
    alive[0] = false;
    t0 = now_ms();
    OK(ferrolock_lock_acquire(ra, 5000, -1));
    CHECK(held_on("jobs", alive) == 2);
    EXPECT(ferrolock_lock_acquire(rb, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(ra));
    CHECK(held_on("jobs", alive) == 0);
    printf("redlock: acquired and released with 1 of 3 servers down in %lld ms\n", (long long)(now_ms() - t0));
    EXPECT(ferrolock_lock_acquire(ma, 5000, -1), FERROLOCK_ERR_CONNECTION);
    CHECK(held_on("jobs", alive) == 0);

    /* 2 of 3 down: the quorum is out of reach, at once; nothing stays on the live one. */
    redis_stop_server(servers[2]);
    alive[2] = false;
    t0 = now_ms();
    EXPECT(ferrolock_lock_acquire(ra, 10000, -1), FERROLOCK_ERR_CONNECTION);
    int64_t took = now_ms() - t0;
    expect_message("quorum");
    CHECK(!exists_on(1, "jobs"));
    if (took > 8000) FAIL("the failed acquire took %lld ms", (long long)took);
    EXPECT(ferrolock_lock_release(ra), FERROLOCK_ERR_NOT_OWNER);
    CHECK(!exists_on(1, "jobs"));
    printf("redlock: 2 of 3 servers down is FERROLOCK_ERR_CONNECTION after %lld ms\n", (long long)took);

    ferrolock_lock_free(ma);
    ferrolock_lock_free(ra);
    ferrolock_lock_free(rb);
    for (int i = 0; i < N; i++) {
        ferrolock_lock_free(la[i]);
        ferrolock_lock_free(lb[i]);
        ferrolock_client_free(a[i]);
        ferrolock_client_free(b[i]);
    }
    event_destroy(&s.ev);
    return 0;
}

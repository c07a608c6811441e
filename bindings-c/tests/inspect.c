/* ferrolock_inspect() and ferrolock_scan_*(): a lock held (twice) by another client's
 * thread with a note, a fenced lock, a fair lock with a waiter in its queue, a
 * read-write lock, a semaphore and a latch with and without waiters (a number nothing
 * waits on cannot tell which it is), a permit-expirable semaphore with permits out;
 * a scan listing them; wrong-type keys, bad arguments, freed and mixed handles; the
 * eviction policy of a server that may evict lock keys. */
#include "family.h"

static ferrolock_inspection *inspect(ferrolock_client *c, const char *name) {
    ferrolock_inspection *in = NULL;
    OK(ferrolock_inspect(c, name, &in));
    CHECK(in != NULL);
    return in;
}

static ferrolock_inspection *inspect_as(ferrolock_client *c, const char *name, ferrolock_object_kind kind) {
    ferrolock_inspection *in = NULL;
    OK(ferrolock_inspect_as(c, name, kind, &in));
    CHECK(in != NULL);
    return in;
}

static ferrolock_object_kind kind_of(const ferrolock_inspection *in) {
    ferrolock_object_kind kind = (ferrolock_object_kind)99;
    OK(ferrolock_inspection_kind(in, &kind));
    return kind;
}

#define EXPECT_KIND(in, want)                                                                  \
    do {                                                                                       \
        ferrolock_object_kind k_ = kind_of(in);                                                \
        if (k_ != (want))                                                                      \
            FAIL("kind %s, expected %s", ferrolock_object_kind_str(k_), ferrolock_object_kind_str(want)); \
    } while (0)

static size_t holders_len(const ferrolock_inspection *in) {
    size_t n = 99;
    OK(ferrolock_inspection_holders_len(in, &n));
    return n;
}

static uint64_t waiters(const ferrolock_inspection *in) {
    uint64_t n = 99;
    OK(ferrolock_inspection_waiters(in, &n));
    return n;
}

static int64_t lease_left(const ferrolock_inspection *in) {
    int64_t ms = -99;
    OK(ferrolock_inspection_lease_left_ms(in, &ms));
    return ms;
}

static bool busy(const ferrolock_inspection *in) {
    bool b = false;
    OK(ferrolock_inspection_is_busy(in, &b));
    return b;
}

static bool starts_with(const char *s, const char *prefix) {
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A thread that takes a lock twice (re-entering) and holds it until told to let go. */
typedef struct holder_thread {
    ferrolock_lock *lock;
    event held, release;
    ferrolock_status status;
    pthread_t thread;
} holder_thread;

static void *hold(void *arg) {
    holder_thread *h = (holder_thread *)arg;
    h->status = ferrolock_lock_acquire(h->lock, 0, -1);
    if (h->status == FERROLOCK_OK) h->status = ferrolock_lock_acquire(h->lock, 0, -1);
    event_signal(&h->held);
    if (h->status != FERROLOCK_OK) return NULL;
    if (!event_wait(&h->release, 1, 60000)) {
        h->status = FERROLOCK_ERR_INTERNAL;
        return NULL;
    }
    h->status = ferrolock_lock_release(h->lock);
    if (h->status == FERROLOCK_OK) h->status = ferrolock_lock_release(h->lock);
    return NULL;
}

static ferrolock_status acquire_call(call_thread *t) {
    ferrolock_status s = ferrolock_lock_acquire((ferrolock_lock *)t->handle, t->wait_ms, -1);
    return s == FERROLOCK_OK ? ferrolock_lock_release((ferrolock_lock *)t->handle) : s;
}

static ferrolock_status semaphore_call(call_thread *t) {
    return ferrolock_semaphore_acquire((ferrolock_semaphore *)t->handle, t->n, t->wait_ms);
}

static ferrolock_status latch_call(call_thread *t) {
    return ferrolock_latch_wait((ferrolock_latch *)t->handle, t->wait_ms);
}

/* Every name `ferrolock_scan_new(c, prefix)` lists, joined by spaces, into buf. */
static void scan_all(ferrolock_client *c, const char *prefix, char *buf, size_t cap) {
    ferrolock_scan *it = NULL;
    OK(ferrolock_scan_new(c, prefix, &it));
    CHECK(it != NULL);
    buf[0] = '\0';
    const char *name;
    ferrolock_status s;
    while ((s = ferrolock_scan_next(it, &name)) == FERROLOCK_OK && name) {
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, "%s%s", used ? " " : "", name);
    }
    CHECK(s == FERROLOCK_OK);
    OK(ferrolock_scan_next(it, &name)); /* past the end stays there */
    CHECK(name == NULL);
    OK(ferrolock_scan_free(it));
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);  /* inspects */
    ferrolock_client *c2 = connect_client(url, -1); /* holds and waits */
    const char *c2_id = ferrolock_client_id(c2);
    ferrolock_inspection *in;
    const char *s, *owner, *note;
    uint64_t n, count;
    int64_t v;
    size_t len;
    char reply[256];

    /* A free name is a free lock: no keys, nothing to tell. */
    in = inspect(c, "insp:free");
    EXPECT_KIND(in, FERROLOCK_OBJECT_LOCK);
    CHECK(holders_len(in) == 0 && waiters(in) == 0 && lease_left(in) == -1 && !busy(in));
    OK(ferrolock_inspection_name(in, &s));
    CHECK(strcmp(s, "insp:free") == 0);
    OK(ferrolock_inspection_last_token(in, &n));
    CHECK(n == 0);
    OK(ferrolock_inspection_mode(in, &s));
    CHECK(s == NULL);
    s = "unset";
    OK(ferrolock_inspection_eviction_policy(in, &s)); /* the test server: no maxmemory */
    CHECK(s == NULL);
    OK(ferrolock_inspection_queue_len(in, &len));
    CHECK(len == 0);
    OK(ferrolock_inspection_permits_out_len(in, &len));
    CHECK(len == 0);
    EXPECT(ferrolock_inspection_permits(in, &v), FERROLOCK_ERR_WRONG_TYPE);
    expect_message("which has no permits");
    EXPECT(ferrolock_inspection_count(in, &v), FERROLOCK_ERR_WRONG_TYPE);
    expect_message("\"insp:free\" is a lock, which has no count");
    OK(ferrolock_inspection_free(in));

    /* A lock held twice by another client's thread, then with a note. */
    holder_thread h = {.lock = new_lock(c2, "insp:held"), .status = FERROLOCK_ERR_INTERNAL};
    event_init(&h.held);
    event_init(&h.release);
    CHECK(pthread_create(&h.thread, NULL, hold, &h) == 0);
    CHECK(event_wait(&h.held, 1, 60000));
    CHECK(h.status == FERROLOCK_OK);
    in = inspect(c, "insp:held");
    EXPECT_KIND(in, FERROLOCK_OBJECT_LOCK);
    CHECK(holders_len(in) == 1 && busy(in));
    owner = NULL;
    count = 0;
    note = "unset";
    OK(ferrolock_inspection_holder(in, 0, &owner, &count, &note));
    if (!starts_with(owner, c2_id) || owner[strlen(c2_id)] != ':') FAIL("owner %s is not client %s's", owner, c2_id);
    CHECK(count == 2);
    CHECK(note == NULL); /* a short hold leaves none */
    OK(ferrolock_inspection_holder(in, 0, NULL, NULL, NULL)); /* every out is optional */
    v = lease_left(in);
    if (v <= 0 || v > 30000) FAIL("lease left %lld ms, expected within the 30 s watchdog lease", (long long)v);
    CHECK(waiters(in) == 0);
    EXPECT(ferrolock_inspection_holder(in, 1, &owner, &count, &note), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("index = 1 is out of range: the inspection has 1 holders");
    char key[256];
    snprintf(key, sizeof key, "ferrolock_holder_info:{insp:held}:%s", owner);
    OK(ferrolock_inspection_free(in)); /* `owner` pointed into it */
    redis_cmd(reply, sizeof reply, "SET", key, "{\"app\":\"billing\",\"pid\":4242}", NULL);
    in = inspect(c, "insp:held");
    OK(ferrolock_inspection_holder(in, 0, NULL, NULL, &note));
    CHECK(note != NULL && strcmp(note, "{\"app\":\"billing\",\"pid\":4242}") == 0);
    OK(ferrolock_inspection_free(in));

    /* A fenced lock: its last token. */
    ferrolock_lock *fenced = new_fenced_lock(c, "insp:fenced");
    uint64_t token = 0;
    OK(ferrolock_lock_acquire(fenced, 0, 60000));
    OK(ferrolock_lock_token(fenced, &token));
    in = inspect(c, "insp:fenced");
    EXPECT_KIND(in, FERROLOCK_OBJECT_FENCED_LOCK);
    OK(ferrolock_inspection_last_token(in, &n));
    CHECK(n == token && n >= 1);
    v = lease_left(in);
    CHECK(v > 0 && v <= 60000);
    OK(ferrolock_inspection_free(in));
    OK(ferrolock_lock_release(fenced));

    /* A fair lock with a waiter of another client in its queue. */
    ferrolock_lock *fair = new_lock_kind(c, "insp:fair", FERROLOCK_LOCK_FAIR);
    ferrolock_lock *fair2 = new_lock_kind(c2, "insp:fair", FERROLOCK_LOCK_FAIR);
    OK(ferrolock_lock_acquire(fair, 0, -1));
    call_thread fair_waiter;
    call_start(&fair_waiter, acquire_call, fair2, 60000, 0);
    wait_llen("redisson_lock_queue:{insp:fair}", 1);
    in = inspect(c, "insp:fair");
    EXPECT_KIND(in, FERROLOCK_OBJECT_FAIR_LOCK);
    CHECK(holders_len(in) == 1 && waiters(in) == 1);
    OK(ferrolock_inspection_holder(in, 0, &owner, NULL, NULL));
    CHECK(starts_with(owner, ferrolock_client_id(c)));
    OK(ferrolock_inspection_queue_len(in, &len));
    CHECK(len == 1);
    OK(ferrolock_inspection_queue_at(in, 0, &s));
    CHECK(starts_with(s, c2_id));
    EXPECT(ferrolock_inspection_queue_at(in, 1, &s), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_inspection_free(in));

    /* A read-write lock held for reading. */
    ferrolock_lock *reader = new_lock_kind(c, "insp:rw", FERROLOCK_LOCK_READ);
    OK(ferrolock_lock_acquire(reader, 0, -1));
    in = inspect(c, "insp:rw");
    EXPECT_KIND(in, FERROLOCK_OBJECT_READ_WRITE_LOCK);
    OK(ferrolock_inspection_mode(in, &s));
    CHECK(s != NULL && strcmp(s, "read") == 0);
    CHECK(holders_len(in) == 1);
    OK(ferrolock_inspection_free(in));

    /* A semaphore nothing waits on is a number: a semaphore or a latch. */
    ferrolock_semaphore *sem = NULL, *sem2 = NULL;
    OK(ferrolock_semaphore_new(c, "insp:sem", &sem));
    OK(ferrolock_semaphore_new(c2, "insp:sem", &sem2));
    OK(ferrolock_semaphore_try_set_permits(sem, 3, NULL));
    OK(ferrolock_semaphore_acquire(sem, 1, 0));
    in = inspect(c, "insp:sem");
    EXPECT_KIND(in, FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH);
    OK(ferrolock_inspection_permits(in, &v));
    CHECK(v == 2);
    OK(ferrolock_inspection_count(in, &v));
    CHECK(v == 2);
    CHECK(holders_len(in) == 0 && lease_left(in) == -1);
    OK(ferrolock_inspection_free(in));
    in = inspect_as(c, "insp:sem", FERROLOCK_OBJECT_SEMAPHORE);
    EXPECT_KIND(in, FERROLOCK_OBJECT_SEMAPHORE);
    OK(ferrolock_inspection_permits(in, &v));
    CHECK(v == 2);
    EXPECT(ferrolock_inspection_count(in, &v), FERROLOCK_ERR_WRONG_TYPE);
    OK(ferrolock_inspection_free(in));
    /* ... and a semaphore once a client waits on it. */
    call_thread sem_waiter;
    call_start(&sem_waiter, semaphore_call, sem2, 60000, 3);
    wait_subscribed("redisson_sc:{insp:sem}");
    in = inspect(c, "insp:sem");
    EXPECT_KIND(in, FERROLOCK_OBJECT_SEMAPHORE);
    CHECK(waiters(in) == 1);
    OK(ferrolock_inspection_free(in));

    /* A latch: a number until someone waits, then a latch with its count. */
    ferrolock_latch *latch = NULL, *latch2 = NULL;
    OK(ferrolock_latch_new(c, "insp:ready", &latch));
    OK(ferrolock_latch_new(c2, "insp:ready", &latch2));
    OK(ferrolock_latch_try_set_count(latch, 2, NULL));
    in = inspect(c, "insp:ready");
    EXPECT_KIND(in, FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH);
    OK(ferrolock_inspection_free(in));
    in = inspect_as(c, "insp:ready", FERROLOCK_OBJECT_COUNT_DOWN_LATCH);
    EXPECT_KIND(in, FERROLOCK_OBJECT_COUNT_DOWN_LATCH);
    OK(ferrolock_inspection_count(in, &v));
    CHECK(v == 2 && busy(in));
    EXPECT(ferrolock_inspection_permits(in, &v), FERROLOCK_ERR_WRONG_TYPE);
    OK(ferrolock_inspection_free(in));
    call_thread latch_waiter;
    call_start(&latch_waiter, latch_call, latch2, 60000, 0);
    wait_subscribed("redisson_countdownlatch__channel__{insp:ready}");
    in = inspect(c, "insp:ready");
    EXPECT_KIND(in, FERROLOCK_OBJECT_COUNT_DOWN_LATCH);
    OK(ferrolock_inspection_count(in, &v));
    CHECK(v == 2 && waiters(in) == 1);
    OK(ferrolock_inspection_free(in));

    /* A permit-expirable semaphore with two permits out, one with a lease. */
    ferrolock_permits *pes = NULL;
    char leased[FERROLOCK_PERMIT_ID_SIZE], kept[FERROLOCK_PERMIT_ID_SIZE];
    OK(ferrolock_permits_new(c, "insp:pes", &pes));
    OK(ferrolock_permits_try_set_permits(pes, 3, NULL));
    OK(ferrolock_permits_acquire(pes, 0, 60000, leased, sizeof leased));
    OK(ferrolock_permits_acquire(pes, 0, -1, kept, sizeof kept));
    in = inspect(c, "insp:pes");
    EXPECT_KIND(in, FERROLOCK_OBJECT_PERMIT_EXPIRABLE_SEMAPHORE);
    OK(ferrolock_inspection_permits(in, &v));
    CHECK(v == 1);
    OK(ferrolock_inspection_permits_out_len(in, &len));
    CHECK(len == 2 && busy(in));
    int seen = 0;
    for (size_t i = 0; i < len; i++) {
        const char *id = NULL;
        OK(ferrolock_inspection_permit_out(in, i, &id, &v));
        if (strcmp(id, leased) == 0) {
            if (v <= 0 || v > 60000) FAIL("the leased permit has %lld ms left", (long long)v);
            seen |= 1;
        } else if (strcmp(id, kept) == 0) {
            CHECK(v == INT64_MAX);
            seen |= 2;
        }
    }
    CHECK(seen == 3);
    EXPECT(ferrolock_inspection_permit_out(in, 2, NULL, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_inspection_free(in));

    /* The scan lists every one of them (not the free name, not a list, not other prefixes). */
    redis_cmd(reply, sizeof reply, "RPUSH", "insp:list", "x", NULL);
    redis_cmd(reply, sizeof reply, "SET", "other:lock", "5", NULL);
    char names[1024];
    scan_all(c, "insp:", names, sizeof names);
    const char *want = "insp:fair insp:fenced insp:held insp:pes insp:ready insp:rw insp:sem";
    if (strcmp(names, want) != 0) FAIL("scan listed \"%s\", expected \"%s\"", names, want);
    scan_all(c, "insp:f", names, sizeof names);
    CHECK(strcmp(names, "insp:fair insp:fenced") == 0);
    scan_all(c, "nothing-here", names, sizeof names);
    CHECK(names[0] == '\0');
    scan_all(c, "", names, sizeof names);
    CHECK(strstr(names, "other:lock") && strstr(names, "insp:held"));
    /* Every name listed can be inspected. */
    ferrolock_scan *it = NULL;
    OK(ferrolock_scan_new(c, "insp:", &it));
    while (ferrolock_scan_next(it, &s) == FERROLOCK_OK && s) {
        in = inspect(c, s);
        OK(ferrolock_inspection_free(in));
    }

    /* Wrong type, bad arguments, freed and mixed handles. */
    in = (ferrolock_inspection *)&in;
    EXPECT(ferrolock_inspect(c, "insp:list", &in), FERROLOCK_ERR_WRONG_TYPE);
    CHECK(in == NULL);
    expect_message("insp:list");
    in = (ferrolock_inspection *)&in;
    EXPECT(ferrolock_inspect(c, "", &in), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(in == NULL);
    expect_message("empty");
    EXPECT(ferrolock_inspect(c, NULL, &in), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("name is NULL");
    EXPECT(ferrolock_inspect(NULL, "x", &in), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("client is NULL");
    EXPECT(ferrolock_inspect(c, "x", NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    in = (ferrolock_inspection *)&in;
    EXPECT(ferrolock_inspect_as(c, "x", (ferrolock_object_kind)8, &in), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(in == NULL);
    expect_message("kind = 8 is not a ferrolock_object_kind");
    EXPECT(ferrolock_inspect_as(c, "insp:held", FERROLOCK_OBJECT_SEMAPHORE, &in), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_inspect((ferrolock_client *)sem, "x", &in), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_semaphore handle, not a ferrolock_client");
    EXPECT(ferrolock_inspection_kind(NULL, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    in = inspect(c, "insp:held");
    EXPECT(ferrolock_inspection_kind(in, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_inspection_name(in, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_inspection_holders_len(in, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_inspection_lease_left_ms(in, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_inspection_waiters(in, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_inspection_permits(in, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_inspection_last_token(in, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_free((ferrolock_lock *)in), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_inspection handle, not a ferrolock_lock");
    EXPECT(ferrolock_scan_next((ferrolock_scan *)in, &s), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_inspection handle, not a ferrolock_scan");
    EXPECT(ferrolock_inspection_free((ferrolock_inspection *)it), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_inspection_free(in));
    EXPECT(ferrolock_inspection_free(in), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("ferrolock_inspection_free");
    EXPECT(ferrolock_inspection_holders_len(in, &len), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("not a live ferrolock_inspection");
    OK(ferrolock_inspection_free(NULL));
    OK(ferrolock_scan_free(it));
    EXPECT(ferrolock_scan_free(it), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_scan_next(it, &s), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("not a live ferrolock_scan");
    OK(ferrolock_scan_free(NULL));
    it = (ferrolock_scan *)&it;
    EXPECT(ferrolock_scan_new(c, NULL, &it), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(it == NULL);
    expect_message("prefix is NULL");
    EXPECT(ferrolock_scan_new(NULL, "", &it), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_scan_new(c, "", NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_scan_next(NULL, &s), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_scan_new(c, "", &it));
    EXPECT(ferrolock_scan_next(it, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_scan_free(it));
    CHECK(strcmp(ferrolock_object_kind_str(FERROLOCK_OBJECT_FAIR_LOCK), "fair_lock") == 0);
    CHECK(strcmp(ferrolock_object_kind_str(FERROLOCK_OBJECT_SEMAPHORE_OR_LATCH), "semaphore_or_latch") == 0);
    CHECK(strcmp(ferrolock_object_kind_str(-1), "unknown") == 0);
    /* A freed client's handle is refused. */
    ferrolock_client *gone = connect_client(url, -1);
    OK(ferrolock_client_free(gone));
    EXPECT(ferrolock_inspect(gone, "x", &in), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_scan_new(gone, "", &it), FERROLOCK_ERR_INVALID_ARGUMENT);

    /* Let everyone go. */
    event_signal(&h.release);
    CHECK(pthread_join(h.thread, NULL) == 0);
    CHECK(h.status == FERROLOCK_OK);
    OK(ferrolock_lock_release(fair));
    CHECK(call_join(&fair_waiter) == FERROLOCK_OK);
    OK(ferrolock_semaphore_release(sem, 3, NULL));
    CHECK(call_join(&sem_waiter) == FERROLOCK_OK);
    OK(ferrolock_latch_count_down(latch, NULL));
    OK(ferrolock_latch_count_down(latch, NULL));
    CHECK(call_join(&latch_waiter) == FERROLOCK_OK);
    OK(ferrolock_permits_release(pes, kept, NULL));
    OK(ferrolock_lock_release(reader));
    event_destroy(&h.held);
    event_destroy(&h.release);
    OK(ferrolock_lock_free(h.lock));
    OK(ferrolock_lock_free(fenced));
    OK(ferrolock_lock_free(fair));
    OK(ferrolock_lock_free(fair2));
    OK(ferrolock_lock_free(reader));
    OK(ferrolock_semaphore_free(sem));
    OK(ferrolock_semaphore_free(sem2));
    OK(ferrolock_latch_free(latch));
    OK(ferrolock_latch_free(latch2));
    OK(ferrolock_permits_free(pes));
    OK(ferrolock_client_free(c2));

    /* A server that may evict lock keys: a client connected then says which policy. */
    redis_cmd(reply, sizeof reply, "CONFIG", "SET", "maxmemory", "1gb", NULL);
    CHECK(strcmp(reply, "+OK") == 0);
    redis_cmd(reply, sizeof reply, "CONFIG", "SET", "maxmemory-policy", "volatile-lru", NULL);
    CHECK(strcmp(reply, "+OK") == 0);
    ferrolock_client *evicting = connect_client(url, -1);
    in = inspect(evicting, "insp:free");
    OK(ferrolock_inspection_eviction_policy(in, &s));
    CHECK(s != NULL && strcmp(s, "volatile-lru") == 0);
    OK(ferrolock_inspection_free(in));
    OK(ferrolock_client_free(evicting));
    redis_cmd(reply, sizeof reply, "CONFIG", "SET", "maxmemory", "0", NULL);
    EXPECT(ferrolock_inspection_eviction_policy(NULL, &s), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_client_free(c));
    puts("inspect: locks (held by another thread, fenced, fair with a waiter, read-write), semaphores, latch, "
         "permits out, scan, bad input: ok");
    return 0;
}

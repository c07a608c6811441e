/* ferrolock_lock_new_kind(): each kind makes the lock its shorthand makes (the same
 * lock on the same name: they exclude each other, and fenced tokens keep increasing
 * across both), the fair / read / write kinds write Redisson's keys for them, and a
 * value that is not a ferrolock_lock_kind is refused with *out cleared, whatever int
 * C passes. (fair.c and rwlock.c test those kinds in depth.) */
#include "harness.h"

#include <limits.h>

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    uint64_t token = 0, first = 0;
    uint32_t n = 0;
    char reply[256];

    /* FERROLOCK_LOCK_REENTRANT: re-entrant, no tokens; the same lock as ferrolock_lock_new(). */
    ferrolock_lock *r = new_lock_kind(c, "kind-reentrant", FERROLOCK_LOCK_REENTRANT);
    ferrolock_lock *rs = new_lock(c, "kind-reentrant");
    OK(ferrolock_lock_acquire(r, 0, -1));
    OK(ferrolock_lock_acquire(r, 0, -1));
    OK(ferrolock_lock_hold_count(r, &n));
    CHECK(n == 2);
    EXPECT(ferrolock_lock_token(r, &token), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("not a fenced lock");
    EXPECT(ferrolock_lock_acquire(rs, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(r));
    OK(ferrolock_lock_release(r));
    OK(ferrolock_lock_acquire(rs, 0, -1));
    EXPECT(ferrolock_lock_acquire(r, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(rs));
    redis_cmd(reply, sizeof reply, "EXISTS", "redisson_lock_token:{kind-reentrant}", NULL);
    CHECK(strcmp(reply, ":0") == 0);

    /* FERROLOCK_LOCK_FENCED: tokens; the same lock and counter as ferrolock_fenced_lock_new(). */
    ferrolock_lock *f = new_lock_kind(c, "kind-fenced", FERROLOCK_LOCK_FENCED);
    ferrolock_lock *fs = new_fenced_lock(c, "kind-fenced");
    OK(ferrolock_lock_acquire(f, 0, -1));
    OK(ferrolock_lock_token(f, &first));
    CHECK(first > 0);
    EXPECT(ferrolock_lock_acquire(fs, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(f));
    OK(ferrolock_lock_acquire(fs, 0, -1));
    OK(ferrolock_lock_token(fs, &token));
    CHECK(token > first);
    OK(ferrolock_lock_release(fs));
    OK(ferrolock_lock_acquire(f, 0, -1));
    OK(ferrolock_lock_token(f, &first));
    CHECK(first > token);
    OK(ferrolock_lock_release(f));

    /* FERROLOCK_LOCK_FAIR / _READ / _WRITE: Redisson's RFairLock / RReadWriteLock keys. */
    ferrolock_lock *fair = new_lock_kind(c, "kind-fair", FERROLOCK_LOCK_FAIR);
    OK(ferrolock_lock_acquire(fair, 0, -1));
    redis_cmd(reply, sizeof reply, "TYPE", "kind-fair", NULL);
    CHECK(strcmp(reply, "+hash") == 0);
    OK(ferrolock_lock_release(fair));
    ferrolock_lock *read = new_lock_kind(c, "kind-rw", FERROLOCK_LOCK_READ);
    ferrolock_lock *write = new_lock_kind(c, "kind-rw", FERROLOCK_LOCK_WRITE);
    OK(ferrolock_lock_acquire(read, 0, -1));
    redis_query(reply, sizeof reply, "HGET", "kind-rw", "mode", NULL);
    CHECK(strncmp(reply, "read", 4) == 0);
    EXPECT(ferrolock_lock_acquire(write, 0, -1), FERROLOCK_NOT_ACQUIRED); /* handles of their own: two holders */
    OK(ferrolock_lock_release(read));
    OK(ferrolock_lock_acquire(write, 0, -1));
    redis_query(reply, sizeof reply, "HGET", "kind-rw", "mode", NULL);
    CHECK(strncmp(reply, "write", 5) == 0);
    OK(ferrolock_lock_release(write));
    ferrolock_lock_free(fair);
    ferrolock_lock_free(read);
    ferrolock_lock_free(write);

    /* Not a kind: refused before anything is made, *out cleared, nothing sent. */
    const int bad[] = {5, 6, -1, 42, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ferrolock_lock *l = (ferrolock_lock *)&l;
        EXPECT(ferrolock_lock_new_kind(c, "kind-bad", (ferrolock_lock_kind)bad[i], &l),
               FERROLOCK_ERR_INVALID_ARGUMENT);
        CHECK(l == NULL);
        expect_message("kind-bad");
        expect_message("FERROLOCK_LOCK_REENTRANT (0), FERROLOCK_LOCK_FENCED (1), FERROLOCK_LOCK_FAIR (2), "
                       "FERROLOCK_LOCK_READ (3), FERROLOCK_LOCK_WRITE (4)");
    }
    redis_cmd(reply, sizeof reply, "EXISTS", "kind-bad", NULL);
    CHECK(strcmp(reply, ":0") == 0);

    /* The other arguments are checked as by the shorthands. */
    ferrolock_lock *l = (ferrolock_lock *)&l;
    EXPECT(ferrolock_lock_new_kind(NULL, "x", FERROLOCK_LOCK_FENCED, &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(l == NULL);
    expect_message("client is NULL");
    EXPECT(ferrolock_lock_new_kind(c, NULL, FERROLOCK_LOCK_FENCED, &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("lock name is NULL");
    EXPECT(ferrolock_lock_new_kind(c, "", FERROLOCK_LOCK_REENTRANT, &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("empty");
    EXPECT(ferrolock_lock_new_kind(c, "x", FERROLOCK_LOCK_REENTRANT, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(l == NULL);

    ferrolock_lock_free(r);
    ferrolock_lock_free(rs);
    ferrolock_lock_free(f);
    ferrolock_lock_free(fs);
    ferrolock_client_free(c);
    printf("kind: every kind, %zu bad kinds refused\n", sizeof bad / sizeof bad[0]);
    return 0;
}

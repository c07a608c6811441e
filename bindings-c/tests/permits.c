/* ferrolock_permits_* (permit-expirable semaphore): acquire with wait and lease into a
 * caller buffer, release by id (also from another client), available, try_set_permits;
 * a leased permit coming back by itself wakes a waiter, a waiter woken by a release;
 * timeouts, wrong-type keys, bad ids and buffers, freed / mixed handles, closed client. */
#include "family.h"

#include <ctype.h>

static ferrolock_status permit_call(call_thread *t) {
    char id[FERROLOCK_PERMIT_ID_SIZE];
    return ferrolock_permits_acquire((ferrolock_permits *)t->handle, t->wait_ms, -1, id, sizeof id);
}

static bool is_id(const char *id) {
    if (strlen(id) != 32) return false;
    for (const char *p = id; *p; p++)
        if (!isxdigit((unsigned char)*p)) return false;
    return true;
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *c2 = connect_client(url, -1);
    ferrolock_permits *ps = NULL, *other = NULL;
    char id[FERROLOCK_PERMIT_ID_SIZE], id2[FERROLOCK_PERMIT_ID_SIZE], leased[FERROLOCK_PERMIT_ID_SIZE];
    bool b = false;
    uint64_t n = 99;

    OK(ferrolock_permits_new(c, "quota", &ps));
    OK(ferrolock_permits_new(c2, "quota", &other));
    OK(ferrolock_permits_available(ps, &n));
    CHECK(n == 0);
    EXPECT(ferrolock_permits_acquire(ps, 0, -1, id, sizeof id), FERROLOCK_NOT_ACQUIRED);
    expect_message("quota");
    OK(ferrolock_permits_try_set_permits(ps, 2, &b));
    CHECK(b);
    OK(ferrolock_permits_try_set_permits(other, 7, &b));
    CHECK(!b);
    OK(ferrolock_permits_available(other, &n));
    CHECK(n == 2);

    /* Acquire into the buffer; release by id from another client (permits are nobody's). */
    memset(id, 'x', sizeof id);
    OK(ferrolock_permits_acquire(ps, 0, -1, id, sizeof id));
    CHECK(is_id(id));
    OK(ferrolock_permits_acquire(ps, 1000, -1, id2, sizeof id2));
    CHECK(is_id(id2) && strcmp(id, id2) != 0);
    OK(ferrolock_permits_available(ps, &n));
    CHECK(n == 0);
    int64_t t0 = now_ms();
    EXPECT(ferrolock_permits_acquire(other, 120, -1, leased, sizeof leased), FERROLOCK_NOT_ACQUIRED);
    CHECK(now_ms() - t0 >= 120);
    expect_message("120 ms");
    OK(ferrolock_permits_release(other, id, &b));
    CHECK(b);
    OK(ferrolock_permits_release(ps, id, &b));
    CHECK(!b); /* released already */
    OK(ferrolock_permits_release(ps, id, NULL));
    OK(ferrolock_permits_available(ps, &n));
    CHECK(n == 1);

    /* A leased permit comes back by itself and wakes a waiter (who waits 60 s). */
    OK(ferrolock_permits_acquire(ps, 0, 1500, leased, sizeof leased));
    OK(ferrolock_permits_available(ps, &n));
    CHECK(n == 0);
    call_thread w;
    call_start(&w, permit_call, other, 60000, 0);
    CHECK(call_join(&w) == FERROLOCK_OK);
    OK(ferrolock_permits_release(ps, leased, &b));
    CHECK(!b); /* it had expired */

    /* A waiter woken by a release message. */
    call_start(&w, permit_call, other, 60000, 0);
    wait_subscribed("redisson_sc:{quota}");
    wait_parked(c2, 1); /* the count may still be the previous waiter's (100 ms after it) */
    int64_t released = now_ms();
    OK(ferrolock_permits_release(ps, id2, &b));
    CHECK(b);
    CHECK(call_join(&w) == FERROLOCK_OK);
    CHECK(w.returned_ms - released < 10000);
    OK(ferrolock_permits_available(ps, &n));
    CHECK(n == 0); /* the two waiters' permits are out (their ids were dropped) */

    /* Bad arguments: nothing is taken when the buffer is wrong. */
    ferrolock_permits *tmp = NULL;
    OK(ferrolock_permits_new(c, "quota-args", &tmp));
    OK(ferrolock_permits_try_set_permits(tmp, 1, NULL));
    EXPECT(ferrolock_permits_acquire(tmp, 0, -1, NULL, 33), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("id_buf is NULL");
    EXPECT(ferrolock_permits_acquire(tmp, 0, -1, id, 32), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("id_buf_size = 32");
    EXPECT(ferrolock_permits_acquire(tmp, -2, -1, id, sizeof id), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("wait_ms = -2");
    EXPECT(ferrolock_permits_acquire(tmp, 0, 0, id, sizeof id), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("lease_ms = 0");
    EXPECT(ferrolock_permits_acquire(tmp, 0, 8LL * 24 * 3600 * 1000, id, sizeof id), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_permits_available(tmp, &n));
    CHECK(n == 1);
    EXPECT(ferrolock_permits_release(tmp, "not-an-id", NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("32 hex digits");
    EXPECT(ferrolock_permits_release(tmp, "0123456789abcdef0123456789abcdeg", NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_permits_release(tmp, NULL, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("id is NULL");
    EXPECT(ferrolock_permits_try_set_permits(tmp, UINT64_MAX, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_permits_available(tmp, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    ferrolock_permits *bad = (ferrolock_permits *)&bad;
    EXPECT(ferrolock_permits_new(c, "", &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(bad == NULL);
    EXPECT(ferrolock_permits_new(c, NULL, &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("permit-expirable semaphore name is NULL");
    OK(ferrolock_permits_free(tmp));

    /* Wrong type. */
    ferrolock_permits *wrong = NULL;
    char reply[64];
    OK(ferrolock_permits_new(c, "quota-wrong", &wrong));
    redis_cmd(reply, sizeof reply, "HSET", "quota-wrong", "f", "v", NULL);
    EXPECT(ferrolock_permits_acquire(wrong, 0, -1, id, sizeof id), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_permits_available(wrong, &n), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_permits_try_set_permits(wrong, 1, NULL), FERROLOCK_ERR_WRONG_TYPE);
    OK(ferrolock_permits_free(wrong));

    /* Freed and mixed handles. */
    ferrolock_permits *gone = NULL;
    OK(ferrolock_permits_new(c, "quota", &gone));
    OK(ferrolock_permits_free(gone));
    EXPECT(ferrolock_permits_free(gone), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("ferrolock_permits_free");
    EXPECT(ferrolock_permits_available(gone, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("not a live ferrolock_permits");
    EXPECT(ferrolock_permits_acquire(gone, 0, -1, id, sizeof id), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_permits_release(gone, id2, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_permits_try_set_permits(gone, 1, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    ferrolock_semaphore *sem = NULL;
    OK(ferrolock_semaphore_new(c, "quota", &sem));
    EXPECT(ferrolock_permits_available((ferrolock_permits *)sem, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_semaphore handle, not a ferrolock_permits");
    EXPECT(ferrolock_semaphore_available((ferrolock_semaphore *)ps, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_permits handle, not a ferrolock_semaphore");
    OK(ferrolock_semaphore_free(sem));

    /* A closed client. */
    OK(ferrolock_client_free(c2));
    EXPECT(ferrolock_permits_available(other, &n), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_permits_acquire(other, 0, -1, id, sizeof id), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_permits_release(other, id2, NULL), FERROLOCK_ERR_CLIENT_CLOSED);
    OK(ferrolock_permits_free(other));

    OK(ferrolock_permits_free(ps));
    ferrolock_client_free(c);
    printf("permits: ids, release by id, lease expiry and release wake waiters, errors\n");
    return 0;
}

/* Every status from a real cause, each with a message; nothing crashes. */
#include "harness.h"

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = NULL;
    ferrolock_lock *l = NULL;
    bool b;
    uint32_t n;
    int64_t ms;
    uint64_t token;

    /* Names and versions. */
    CHECK(strcmp(ferrolock_status_str(FERROLOCK_OK), "FERROLOCK_OK") == 0);
    CHECK(strcmp(ferrolock_status_str(FERROLOCK_ERR_WRONG_TYPE), "FERROLOCK_ERR_WRONG_TYPE") == 0);
    CHECK(strcmp(ferrolock_status_str((ferrolock_status)42), "FERROLOCK_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(ferrolock_status_str((ferrolock_status)-1), "FERROLOCK_UNKNOWN_STATUS") == 0);
    CHECK(ferrolock_version()[0] >= '0' && ferrolock_version()[0] <= '9');
    CHECK(strcmp(ferrolock_last_error(), "") == 0);

    /* FERROLOCK_ERR_INVALID_ARGUMENT: NULLs, bad URLs, bad settings. */
    c = (ferrolock_client *)&c;
    EXPECT(ferrolock_client_connect(NULL, -1, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(c == NULL); /* constructors clear *out on failure */
    expect_message("url is NULL");
    EXPECT(ferrolock_client_connect(url, -1, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_client_connect("not a url", -1, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("invalid Redis URL");
    EXPECT(ferrolock_client_connect("http://127.0.0.1:1", -1, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_client_connect("redis://:s3cret-pw@127.0.0.1:0:0", -1, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    if (strstr(ferrolock_last_error(), "s3cret-pw")) FAIL("the password leaked into the message");
    EXPECT(ferrolock_client_connect(url, 10, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("watchdog_timeout");
    EXPECT(ferrolock_client_connect("redis://127.0.0.1\xff", -1, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("UTF-8");
    CHECK(strcmp(ferrolock_client_id(NULL), "") == 0);
    expect_message("client is NULL");
    ferrolock_client_free(NULL);
    ferrolock_lock_free(NULL);

    /* FERROLOCK_ERR_CONNECTION: nothing listens on a fresh free port. */
    char dead[64];
    snprintf(dead, sizeof dead, "redis://127.0.0.1:%d", free_port());
    int64_t t0 = now_ms();
    EXPECT(ferrolock_client_connect(dead, -1, &c), FERROLOCK_ERR_CONNECTION);
    CHECK(c == NULL);
    CHECK(now_ms() - t0 < 5000);
    expect_message("127.0.0.1");

    c = connect_client(url, -1);
    CHECK(strcmp(ferrolock_last_error(), "") == 0); /* success clears the message */

    /* Bad lock names. */
    char long_name[4098];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    EXPECT(ferrolock_lock_new(NULL, "x", &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_new(c, NULL, &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_new(c, "x", NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_new(c, "", &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("empty");
    EXPECT(ferrolock_lock_new(c, "caf\xc3", &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("UTF-8");
    EXPECT(ferrolock_fenced_lock_new(c, long_name, &l), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("4096");
    CHECK(l == NULL);
    long_name[4096] = '\0'; /* exactly 4096 bytes is fine */
    l = new_lock(c, long_name);
    ferrolock_lock_free(l);

    /* NULL handles and outputs, out-of-range durations. */
    l = new_lock(c, "statuses");
    EXPECT(ferrolock_lock_acquire(NULL, 0, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("lock is NULL");
    EXPECT(ferrolock_lock_release(NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_is_locked(l, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_is_held(NULL, &b), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_hold_count(l, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_remaining_lease_ms(l, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_force_unlock(NULL, &b), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_token(l, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_is_lost(l, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_on_lost(NULL, NULL, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_acquire(l, -2, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("wait_ms = -2");
    EXPECT(ferrolock_lock_acquire(l, 0, 0), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("lease_ms = 0");
    EXPECT(ferrolock_lock_acquire(l, 0, -7), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_lock_acquire(l, 0, INT64_C(7) * 24 * 3600 * 1000 + 1), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("7 days");
    EXPECT(ferrolock_lock_acquire(l, INT64_MAX, -1), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(!is_locked(l)); /* nothing was sent */

    /* FERROLOCK_NOT_ACQUIRED, FERROLOCK_ERR_NOT_OWNER, FERROLOCK_ERR_LOCK_LOST. */
    ferrolock_client *other = connect_client(url, -1);
    ferrolock_lock *ol = new_lock(other, "statuses");
    OK(ferrolock_lock_acquire(ol, 0, -1));
    EXPECT(ferrolock_lock_acquire(l, 0, -1), FERROLOCK_NOT_ACQUIRED);
    expect_message("statuses");
    EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_NOT_OWNER);
    expect_message("statuses");
    OK(ferrolock_lock_force_unlock(l, &b));
    CHECK(b);
    EXPECT(ferrolock_lock_release(ol), FERROLOCK_ERR_LOCK_LOST);
    expect_message("statuses");

    /* FERROLOCK_ERR_WRONG_TYPE: the key at the name is a string, not a lock. */
    char reply[64];
    redis_cmd(reply, sizeof reply, "SET", "plain-string", "hello", NULL);
    CHECK(strcmp(reply, "+OK") == 0);
    ferrolock_lock *wl = new_lock(c, "plain-string");
    EXPECT(ferrolock_lock_acquire(wl, 0, -1), FERROLOCK_ERR_WRONG_TYPE);
    expect_message("plain-string");
    EXPECT(ferrolock_lock_is_locked(wl, &b), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_lock_remaining_lease_ms(wl, &ms), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_lock_hold_count(wl, &n), FERROLOCK_ERR_WRONG_TYPE);
    redis_cmd(reply, sizeof reply, "GET", "plain-string", NULL);
    CHECK(strcmp(reply, "$5") == 0); /* untouched */
    ferrolock_lock_free(wl);

    /* FERROLOCK_ERR_INTERNAL: a fencing counter that is not a number (a reply the
     * lock script cannot handle). */
    redis_cmd(reply, sizeof reply, "SET", "redisson_lock_token:{corrupt}", "not-a-number", NULL);
    ferrolock_lock *fl = new_fenced_lock(c, "corrupt");
    EXPECT(ferrolock_lock_acquire(fl, 0, 1000), FERROLOCK_ERR_INTERNAL);
    EXPECT(ferrolock_lock_token(fl, &token), FERROLOCK_ERR_NOT_OWNER);
    ferrolock_lock_free(fl);

    /* After fork(): the parent's client refuses to run in the child (its threads and
     * sockets stayed in the parent); a client made in the child works. The child
     * reports by exit code only (exit() would run the parent's atexit cleanup). */
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        if (ferrolock_lock_acquire(l, 0, -1) != FERROLOCK_ERR_INVALID_ARGUMENT) _exit(10);
        if (!strstr(ferrolock_last_error(), "fork")) _exit(11);
        if (ferrolock_lock_is_locked(l, &b) != FERROLOCK_ERR_INVALID_ARGUMENT) _exit(12);
        ferrolock_client *mine = NULL;
        ferrolock_lock *ml = NULL;
        if (ferrolock_client_connect(url, -1, &mine) != FERROLOCK_OK) _exit(13);
        if (ferrolock_lock_new(mine, "forked", &ml) != FERROLOCK_OK) _exit(14);
        if (ferrolock_lock_acquire(ml, 0, -1) != FERROLOCK_OK) _exit(15);
        if (ferrolock_lock_release(ml) != FERROLOCK_OK) _exit(16);
        ferrolock_lock_free(ml);
        ferrolock_client_free(mine);
        ferrolock_lock_free(l); /* inherited: freed without touching the parent's locks */
        ferrolock_client_free(c);
        _exit(0);
    }
    int child_status = 0;
    CHECK(waitpid(child, &child_status, 0) == child);
    if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0)
        FAIL("forked child failed with status %d", child_status);
    OK(ferrolock_lock_acquire(l, 0, -1)); /* the parent's client still works */
    OK(ferrolock_lock_release(l));

    /* FERROLOCK_ERR_CONNECTION on a live client: the server goes away. */
    redis_stop();
    EXPECT(ferrolock_lock_is_locked(l, &b), FERROLOCK_ERR_CONNECTION);
    expect_message("statuses");
    t0 = now_ms();
    EXPECT(ferrolock_lock_acquire(l, 0, -1), FERROLOCK_ERR_CONNECTION);
    CHECK(now_ms() - t0 < 15000);

    ferrolock_lock_free(l);
    ferrolock_lock_free(ol);
    ferrolock_client_free(other);
    ferrolock_client_free(c);
    printf("statuses: every status from a real cause\n");
    return 0;
}

/* FERROLOCK_ERR_PERMISSION from real Redis ACL users: the lock scripts need
 * HINCRBY, and the read-only queries need PTTL. The message names the ACL rule
 * to add; a refused acquire leaves nothing behind. */
#include "harness.h"

static ferrolock_client *connect_as(const char *user) {
    char url[128];
    snprintf(url, sizeof url, "redis://%s:pw@127.0.0.1:%d", user, harness_server.port);
    return connect_client(url, -1);
}

int main(void) {
    redis_start();
    char reply[256];
    bool b = true;

    CHECK(FERROLOCK_ERR_PERMISSION == 8); /* appended: older values keep their numbers */
    CHECK(FERROLOCK_ERR_INTERNAL == 7);
    CHECK(strcmp(ferrolock_status_str(FERROLOCK_ERR_PERMISSION), "FERROLOCK_ERR_PERMISSION") == 0);
    CHECK(strcmp(ferrolock_status_str((ferrolock_status)11), "FERROLOCK_UNKNOWN_STATUS") == 0);

    /* Everything but HINCRBY: the acquire script is refused. */
    redis_cmd(reply, sizeof reply, "ACL", "SETUSER", "limited", "on", ">pw", "~*", "&*", "+@all",
              "-hincrby", NULL);
    CHECK(strcmp(reply, "+OK") == 0);
    ferrolock_client *c = connect_as("limited");
    ferrolock_lock *l = new_lock(c, "guarded");
    EXPECT(ferrolock_lock_acquire(l, 0, -1), FERROLOCK_ERR_PERMISSION);
    expect_message("+hincrby");
    expect_message("guarded");
    EXPECT(ferrolock_lock_acquire(l, 1000, 5000), FERROLOCK_ERR_PERMISSION);
    expect_message("+hincrby");
    redis_cmd(reply, sizeof reply, "EXISTS", "guarded", NULL);
    if (strcmp(reply, ":0") != 0) FAIL("a refused acquire left the lock key behind (EXISTS: %s)", reply);
    OK(ferrolock_lock_is_locked(l, &b)); /* reads are allowed */
    CHECK(!b);
    OK(ferrolock_lock_is_held(l, &b));
    CHECK(!b);
    EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_NOT_OWNER); /* nothing was held */
    ferrolock_lock_free(l);
    ferrolock_client_free(c);

    /* Everything but PTTL: the queries that read the lease are refused. */
    redis_cmd(reply, sizeof reply, "ACL", "SETUSER", "nopttl", "on", ">pw", "~*", "&*", "+@all",
              "-pttl", NULL);
    CHECK(strcmp(reply, "+OK") == 0);
    c = connect_as("nopttl");
    l = new_lock(c, "guarded");
    int64_t left = 0;
    EXPECT(ferrolock_lock_is_locked(l, &b), FERROLOCK_ERR_PERMISSION);
    expect_message("+pttl");
    expect_message("guarded");
    EXPECT(ferrolock_lock_remaining_lease_ms(l, &left), FERROLOCK_ERR_PERMISSION);
    expect_message("+pttl");
    ferrolock_lock_free(l);
    ferrolock_client_free(c);

    printf("acl: ACL refusals are FERROLOCK_ERR_PERMISSION with the rule to add\n");
    return 0;
}

/* Behind a real Sentinel (a master, a replica, and a sentinel with a password of its
 * own): the sentinels' credentials come from the options (never from the URL, never
 * in a message), the acquire waits for the replica, and with the replica stopped it
 * fails with FERROLOCK_ERR_NOT_REPLICATED and leaves nothing held, unless
 * replica_ack is FERROLOCK_REPLICA_ACK_OFF. */
#include "harness.h"

#define SENTINEL_PASSWORD "s3cret-sentinel-pw"

static void expect_no_secret(void) {
    if (strstr(ferrolock_last_error(), "s3cret")) FAIL("a password leaked into the message");
}

/* Waits until the master has `n` replicas that acknowledge (WAIT n). */
static void wait_for_replicas(int n) {
    char want[16], count[16], reply[64];
    snprintf(want, sizeof want, ":%d", n);
    snprintf(count, sizeof count, "%d", n);
    int64_t give_up = now_ms() + 30000;
    for (;;) {
        redis_cmd(reply, sizeof reply, "WAIT", count, "100", NULL);
        if (strcmp(reply, want) == 0) return;
        if (now_ms() > give_up) FAIL("the replica did not link up within 30 s (WAIT: %s)", reply);
    }
}

static ferrolock_status connect_with(const char *url, const ferrolock_options *o, ferrolock_client **c) {
    *c = (ferrolock_client *)c;
    ferrolock_status s = ferrolock_client_connect_opts(url, o, c);
    if (s != FERROLOCK_OK) CHECK(*c == NULL);
    return s;
}

int main(void) {
    redis_start();
    char master_port[16];
    snprintf(master_port, sizeof master_port, "%d", harness_server.port);
    const char *replica_args[] = {"--replicaof", "127.0.0.1", master_port, NULL};
    redis_server *replica = redis_start_more(NULL, replica_args);
    char config[256];
    snprintf(config, sizeof config, "sentinel monitor mymaster 127.0.0.1 %d 1\nrequirepass " SENTINEL_PASSWORD "\n",
             harness_server.port);
    const char *sentinel_args[] = {"--sentinel", NULL};
    redis_server *sentinel = redis_start_more(config, sentinel_args);
    wait_for_replicas(1);

    char url[128];
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d/mymaster", sentinel->port);
    ferrolock_options o;
    ferrolock_client *c = NULL;

    /* Without the sentinel's password, or with a wrong one: refused, nothing shown. */
    ferrolock_options_init(&o);
    EXPECT(connect_with(url, &o, &c), FERROLOCK_ERR_CONNECTION);
    expect_message("mymaster");
    o.sentinel_password = "wrong-s3cret";
    EXPECT(connect_with(url, &o, &c), FERROLOCK_ERR_CONNECTION);
    expect_no_secret();
    /* The URL's credentials are the data nodes', not the sentinels'. */
    char url_with_pw[160];
    snprintf(url_with_pw, sizeof url_with_pw, "redis+sentinel://:" SENTINEL_PASSWORD "@127.0.0.1:%d/mymaster",
             sentinel->port);
    ferrolock_options_init(&o);
    EXPECT(connect_with(url_with_pw, &o, &c), FERROLOCK_ERR_CONNECTION);
    expect_no_secret();

    /* The right password (and user): connected to the master; the replica acknowledges. */
    ferrolock_options_init(&o);
    o.sentinel_username = "default";
    o.sentinel_password = SENTINEL_PASSWORD;
    o.replica_ack_timeout_ms = 5000;
    OK(connect_with(url, &o, &c));
    ferrolock_lock *l = new_lock(c, "sentinel-lock");
    OK(ferrolock_lock_acquire(l, 0, -1));
    char reply[64];
    redis_cmd(reply, sizeof reply, "EXISTS", "sentinel-lock", NULL); /* on the master */
    CHECK(strcmp(reply, ":1") == 0);
    OK(ferrolock_lock_release(l));
    ferrolock_lock_free(l);
    ferrolock_client_free(c);

    /* The replica stops answering: no acknowledgement, the acquire is undone. */
    CHECK(kill(replica->pid, SIGSTOP) == 0);
    ferrolock_options_init(&o);
    o.sentinel_password = SENTINEL_PASSWORD;
    o.replica_ack_timeout_ms = 200;
    OK(connect_with(url, &o, &c));
    l = new_lock(c, "sentinel-lock");
    int64_t t0 = now_ms();
    EXPECT(ferrolock_lock_acquire(l, 0, -1), FERROLOCK_ERR_NOT_REPLICATED);
    CHECK(now_ms() - t0 < 5000);
    expect_message("replica");
    expect_message("sentinel-lock");
    bool b = true;
    OK(ferrolock_lock_is_held(l, &b));
    CHECK(!b);
    int64_t give_up = now_ms() + 5000;
    for (;;) { /* the undo runs in the background */
        OK(ferrolock_lock_is_locked(l, &b));
        if (!b) break;
        if (now_ms() > give_up) FAIL("the undone acquire left the lock behind");
        struct timespec step = {0, 10 * 1000 * 1000};
        nanosleep(&step, NULL);
    }
    ferrolock_lock_free(l);
    ferrolock_client_free(c);

    /* FERROLOCK_REPLICA_ACK_OFF: the same acquire goes through. */
    o.replica_ack = FERROLOCK_REPLICA_ACK_OFF;
    OK(connect_with(url, &o, &c));
    l = new_lock(c, "sentinel-lock");
    OK(ferrolock_lock_acquire(l, 0, -1));
    OK(ferrolock_lock_release(l));
    ferrolock_lock_free(l);
    ferrolock_client_free(c);
    CHECK(kill(replica->pid, SIGCONT) == 0);

    printf("sentinel: credentials from the options, FERROLOCK_ERR_NOT_REPLICATED with the replica stopped\n");
    return 0;
}

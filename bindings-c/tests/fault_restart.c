/* Waiters through faults of the server and of the pub/sub link (issue 29 item 5):
 * - Redis restarted (killed, an empty one on the same port) while three threads of a
 *   client behind fault-proxy wait: they acquire once it is back, not at the end of
 *   the 20 s lease of a holder whose hold the restart wiped;
 * - the waiting client's pub/sub connection killed (CLIENT KILL): the waiter still
 *   wakes on the release, not at the end of the holder's 30 s lease. */
#include "fault_proxy.h"

typedef struct waiter {
    ferrolock_lock *lock;
    ferrolock_status acquired, released;
    int64_t done_ms;
} waiter;

static void *acquire_release(void *arg) {
    waiter *w = arg;
    w->acquired = ferrolock_lock_acquire(w->lock, 15000, -1);
    w->done_ms = now_ms();
    if (w->acquired == FERROLOCK_OK) w->released = ferrolock_lock_release(w->lock);
    return NULL;
}

static void restart_with_waiters(fault_proxy *p) {
    const char *name = "fault-restart";
    ferrolock_client *holder = connect_client(harness_server.url, 20000);
    ferrolock_client *w = connect_client(p->url, -1);
    ferrolock_lock *h = new_lock(holder, name);
    OK(ferrolock_lock_acquire(h, -1, -1));
    waiter ws[3];
    pthread_t ts[3];
    for (int i = 0; i < 3; i++) {
        ws[i] = (waiter){.lock = new_lock(w, name), .acquired = FERROLOCK_ERR_INTERNAL};
        CHECK(pthread_create(&ts[i], NULL, acquire_release, &ws[i]) == 0);
    }
    WAIT_FOR(metrics_of(w).waiters_now == 3, 10000, "three waiters");
    redis_restart_same_port();
    int64_t restarted = now_ms();
    for (int i = 0; i < 3; i++) {
        CHECK(pthread_join(ts[i], NULL) == 0);
        if (ws[i].acquired != FERROLOCK_OK) FAIL("waiter %d: %s", i, ferrolock_status_str(ws[i].acquired));
        CHECK(ws[i].released == FERROLOCK_OK);
        int64_t after = ws[i].done_ms - restarted;
        if (after > 5000) FAIL("waiter %d acquired %lld ms after the restart", i, (long long)after);
        OK(ferrolock_lock_free(ws[i].lock));
    }
    CHECK(metrics_of(w).acquired == 3);
    printf("restart: three waiters acquired within %lld ms of the restart\n", (long long)(now_ms() - restarted));
    OK(ferrolock_lock_free(h));
    OK(ferrolock_client_free(holder));
    OK(ferrolock_client_free(w));
}

/* The id of `client_id`'s connection subscribed to something (CLIENT LIST), or 0. */
static long subscriber_of(const char *client_id) {
    static char list[1 << 16];
    redis_query(list, sizeof list, "CLIENT", "LIST", NULL);
    char name[128];
    snprintf(name, sizeof name, " name=ferrolock:%s ", client_id);
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        const char *sub = strstr(line, " sub=");
        if (strstr(line, name) && sub && sub[5] != '0') return strtol(line + 3, NULL, 10);
    }
    return 0;
}

static void killed_pubsub(fault_proxy *p) {
    const char *name = "fault-pubsub";
    ferrolock_client *holder = connect_client(harness_server.url, -1);
    ferrolock_client *w = connect_client(p->url, -1);
    ferrolock_lock *h = new_lock(holder, name);
    OK(ferrolock_lock_acquire(h, -1, -1));
    waiter ws = {.lock = new_lock(w, name), .acquired = FERROLOCK_ERR_INTERNAL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, acquire_release, &ws) == 0);
    long id = 0;
    WAIT_FOR((id = subscriber_of(ferrolock_client_id(w))) != 0, 10000, "the waiter's subscription");
    char kill_id[32], reply[64];
    snprintf(kill_id, sizeof kill_id, "%ld", id);
    redis_cmd(reply, sizeof reply, "CLIENT", "KILL", "ID", kill_id, NULL);
    CHECK(strcmp(reply, ":1") == 0); /* one connection killed */
    int64_t released = now_ms();
    OK(ferrolock_lock_release(h));
    CHECK(pthread_join(t, NULL) == 0);
    if (ws.acquired != FERROLOCK_OK) FAIL("the waiter: %s", ferrolock_status_str(ws.acquired));
    CHECK(ws.released == FERROLOCK_OK);
    int64_t after = ws.done_ms - released;
    if (after > 5000) FAIL("the waiter woke %lld ms after the release (lease 30 s)", (long long)after);
    CHECK(!key_exists(name));
    printf("killed pub/sub connection: the waiter woke %lld ms after the release\n", (long long)after);
    OK(ferrolock_lock_free(ws.lock));
    OK(ferrolock_lock_free(h));
    OK(ferrolock_client_free(holder));
    OK(ferrolock_client_free(w));
}

int main(void) {
    redis_start();
    fault_proxy *p = proxy_start(harness_server.port);
    killed_pubsub(p);
    restart_with_waiters(p);
    printf("fault restart: waiters wake after a restart and after their subscription is killed\n");
    return 0;
}

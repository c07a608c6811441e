/* Each thread's calls go over a connection of its own (core's `blocking`): a call
 * does its I/O on the calling thread, as redis-py does, over a connection that thread
 * makes on its first call (which itself goes over the client's connection). The
 * connection closes when its thread ends, and every one of them when the client is
 * freed. Read from CLIENT LIST: connections are named ferrolock:<client id>. */
#include "harness.h"

/* Connections named after client `id`, and how many of them last sent `cmd`
 * ("client|setname": Redis 6.2 lists it without its subcommand, as "client"). */
static int named(const char *id, const char *cmd, int *with_cmd) {
    static char list[1 << 16];
    redis_query(list, sizeof list, "CLIENT", "LIST", NULL);
    char name[128], last[64], last_62[64];
    snprintf(name, sizeof name, " name=ferrolock:%s ", id);
    snprintf(last, sizeof last, " cmd=%s ", cmd);
    snprintf(last_62, sizeof last_62, " cmd=%.*s ", (int)strcspn(cmd, "|"), cmd);
    int n = 0;
    *with_cmd = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, name)) continue;
        n++;
        if (strstr(line, last) || strstr(line, last_62)) (*with_cmd)++;
    }
    return n;
}

/* Waits until `id` has `want` named connections (they close asynchronously). */
static void wait_named(const char *id, int want, const char *what) {
    int64_t deadline = now_ms() + 10000;
    int with_cmd, n;
    while ((n = named(id, "-", &with_cmd)) != want) {
        if (now_ms() > deadline) FAIL("%s: %d connections of the client, expected %d", what, n, want);
        usleep(10 * 1000);
    }
}

typedef struct worker {
    ferrolock_lock *lock;
    const char *id;
    int before, after_first, after_second; /* connections left on client|setname */
    int total_first, total_second;
    event called, done;
} worker;

static void *calls_then_waits(void *arg) {
    worker *w = arg;
    bool locked = true;
    if (ferrolock_lock_is_locked(w->lock, &locked) != FERROLOCK_OK || locked) return NULL;
    w->total_first = named(w->id, "client|setname", &w->after_first);
    if (ferrolock_lock_is_locked(w->lock, &locked) != FERROLOCK_OK || locked) return NULL;
    w->total_second = named(w->id, "client|setname", &w->after_second);
    event_signal(&w->called);
    event_wait(&w->done, 1, 30000);
    return NULL;
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    const char *id = ferrolock_client_id(c);
    ferrolock_lock *l = new_lock(c, "thread-connection");

    /* The main thread's first calls: the client's connection, then this thread's own. */
    CHECK(!is_locked(l));
    CHECK(!is_locked(l));
    int base_setname;
    int base = named(id, "client|setname", &base_setname);

    worker w = {.lock = l, .id = id};
    event_init(&w.called);
    event_init(&w.done);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, calls_then_waits, &w) == 0);
    if (!event_wait(&w.called, 1, 30000)) FAIL("the worker thread's calls did not return");
    /* Its first call made it a connection (the handshake, CLIENT SETNAME, its last
     * command so far); its second call went over that connection. */
    CHECK(w.total_first == base + 1);
    CHECK(w.after_first == base_setname + 1);
    CHECK(w.total_second == base + 1);
    CHECK(w.after_second == base_setname);

    /* The thread's connection ends with it. */
    event_signal(&w.done);
    CHECK(pthread_join(t, NULL) == 0);
    wait_named(id, base, "after the worker thread ended");

    /* And every connection of the client ends when it is freed. */
    char saved[64];
    snprintf(saved, sizeof saved, "%s", id);
    OK(ferrolock_lock_free(l));
    OK(ferrolock_client_free(c));
    wait_named(saved, 0, "after ferrolock_client_free");
    event_destroy(&w.called);
    event_destroy(&w.done);
    printf("thread connection: a connection per calling thread, used from its second call, closed with its thread and its client\n");
    return 0;
}

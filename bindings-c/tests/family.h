/*
 * Helpers of the tests of the family (issue 17): waiting for a Redis state, integer
 * replies, and a thread that makes one blocking call and reports its status.
 */
#ifndef FERROLOCK_TEST_FAMILY_H
#define FERROLOCK_TEST_FAMILY_H

#include "harness.h"

/* The integer reply of a command (":N"), e.g. redis_int("LLEN", "q", NULL). */
static inline long long redis_int_argv(int argc, const char **argv) {
    char reply[256];
    if (redis_call_argv(harness_server.port, reply, sizeof reply, argc, argv) != 0)
        FAIL("redis command %s failed: server unreachable", argv[0]);
    if (reply[0] != ':') FAIL("redis command %s replied \"%s\", not an integer", argv[0], reply);
    return strtoll(reply + 1, NULL, 10);
}
#define redis_int(...) redis_int_argv(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *), \
                                      (const char *[]){__VA_ARGS__})

/* How many connections are subscribed to `channel`. */
static inline long subscribers(const char *channel) {
    char out[512];
    redis_query(out, sizeof out, "PUBSUB", "NUMSUB", channel, NULL);
    const char *count = strchr(out, '\n');
    return count ? strtol(count + 1, NULL, 10) : 0;
}

static inline void poll_step(void) {
    struct timespec step = {0, 5 * 1000 * 1000};
    nanosleep(&step, NULL);
}

/* Until someone waits on `channel` (a waiting call subscribes before it waits). */
static inline void wait_subscribed(const char *channel) {
    int64_t give_up = now_ms() + 20000;
    while (subscribers(channel) < 1) {
        if (now_ms() > give_up) FAIL("nobody subscribed to %s within 20 s", channel);
        poll_step(); /* polling Redis for the waiter's subscription */
    }
}

/* Until `client` has n waiting calls parked for a wake-up (its metrics' waiters_now:
 * tried, subscribed and waiting). A subscriber count alone does not say a new waiter
 * is there: a client stays subscribed 100 ms after its last waiter left. */
static inline void wait_parked(ferrolock_client *client, uint64_t n) {
    int64_t give_up = now_ms() + 20000;
    uint64_t now;
    while ((now = metrics_of(client).waiters_now) != n) {
        if (now_ms() > give_up) FAIL("%llu waiting calls parked, not %llu, after 20 s", (unsigned long long)now, (unsigned long long)n);
        poll_step(); /* polling the client's count of parked waiters */
    }
}

/* Until `LLEN key` is n (a fair lock's queue). */
static inline void wait_llen(const char *key, long long n) {
    int64_t give_up = now_ms() + 20000;
    while (redis_int("LLEN", key) != n) {
        if (now_ms() > give_up) FAIL("LLEN %s never became %lld", key, n);
        poll_step(); /* polling Redis for the queue's length */
    }
}

/* A thread that runs one call and keeps its status; `done` is signalled after it. */
typedef struct call_thread {
    pthread_t thread;
    ferrolock_status (*fn)(struct call_thread *);
    void *handle;
    int64_t wait_ms;
    uint64_t n;
    ferrolock_status status;
    int64_t returned_ms;
    event done;
} call_thread;

static inline void *call_thread_main(void *arg) {
    call_thread *t = (call_thread *)arg;
    t->status = t->fn(t);
    t->returned_ms = now_ms();
    event_signal(&t->done);
    return NULL;
}

static inline void call_start(call_thread *t, ferrolock_status (*fn)(call_thread *), void *handle, int64_t wait_ms,
                              uint64_t n) {
    t->fn = fn;
    t->handle = handle;
    t->wait_ms = wait_ms;
    t->n = n;
    t->status = FERROLOCK_ERR_INTERNAL;
    event_init(&t->done);
    CHECK(pthread_create(&t->thread, NULL, call_thread_main, t) == 0);
}

/* Joins the thread and returns the status of its call. */
static inline ferrolock_status call_join(call_thread *t) {
    if (!event_wait(&t->done, 1, 60000)) FAIL("a waiting call did not return within 60 s");
    CHECK(pthread_join(t->thread, NULL) == 0);
    event_destroy(&t->done);
    return t->status;
}

#endif

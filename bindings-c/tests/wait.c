/* A bounded wait gives NOT_ACQUIRED within its bound; a waiting acquire wakes on
 * the holder's release (pub/sub), long before the holder's 30 s lease would end. */
#include "harness.h"

#define WAIT_MS 400

typedef struct waiter {
    ferrolock_lock *lock;
    ferrolock_status status;
    int64_t acquired_at;
} waiter;

static void *wait_forever(void *arg) {
    waiter *w = arg;
    w->status = ferrolock_lock_acquire(w->lock, -1, -1);
    w->acquired_at = now_ms();
    if (w->status == FERROLOCK_OK) w->status = ferrolock_lock_release(w->lock);
    return NULL;
}

static int subscribers(const char *channel) {
    /* PUBSUB NUMSUB <channel> replies *2 / $len / channel / :n; read the count line. */
    int fd = redis_connect_fd(harness_server.port);
    CHECK(fd >= 0);
    char cmd[256], buf[512];
    int n = snprintf(cmd, sizeof cmd, "*3\r\n$6\r\nPUBSUB\r\n$6\r\nNUMSUB\r\n$%zu\r\n%s\r\n", strlen(channel), channel);
    CHECK(write(fd, cmd, (size_t)n) == n);
    size_t got = 0;
    int lines = 0;
    while (got + 1 < sizeof buf && lines < 4) {
        ssize_t r = read(fd, buf + got, 1);
        CHECK(r == 1);
        if (buf[got] == '\n') lines++;
        got++;
    }
    buf[got] = '\0';
    close(fd);
    char *count = strrchr(buf, ':');
    CHECK(count != NULL);
    return atoi(count + 1);
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *holder_client = connect_client(url, -1);
    ferrolock_client *waiter_client = connect_client(url, -1);
    ferrolock_lock *held = new_lock(holder_client, "busy");
    ferrolock_lock *wanted = new_lock(waiter_client, "busy");
    OK(ferrolock_lock_acquire(held, 0, -1));

    /* Try once: no wait at all. */
    int64_t t0 = now_ms();
    EXPECT(ferrolock_lock_acquire(wanted, 0, -1), FERROLOCK_NOT_ACQUIRED);
    int64_t try_ms = now_ms() - t0;
    CHECK(try_ms < 1000);

    /* Bounded wait: not before the bound, not much after it. */
    t0 = now_ms();
    EXPECT(ferrolock_lock_acquire(wanted, WAIT_MS, -1), FERROLOCK_NOT_ACQUIRED);
    int64_t waited = now_ms() - t0;
    if (waited < WAIT_MS || waited > WAIT_MS + 1500)
        FAIL("bounded wait of %d ms took %lld ms", WAIT_MS, (long long)waited);
    CHECK(strstr(ferrolock_last_error(), "busy") != NULL);

    /* Wake on release: once the waiter is subscribed and parked, release and time the
     * hand-over. The bounded wait above stays subscribed 100 ms after it ended, so the
     * subscriber count alone would not show the new waiter: its client's parked count does. */
    waiter w = {wanted, FERROLOCK_ERR_INTERNAL, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_forever, &w) == 0);
    int64_t give_up = now_ms() + 10000;
    while (!(metrics_of(waiter_client).waiters_now == 1 && subscribers("redisson_lock__channel:{busy}") >= 1)) {
        if (now_ms() > give_up) FAIL("the waiter never subscribed to the lock channel and parked");
        struct timespec step = {0, 5 * 1000 * 1000};
        nanosleep(&step, NULL); /* polling an observable condition */
    }
    int64_t released_at = now_ms();
    OK(ferrolock_lock_release(held));
    pthread_join(t, NULL);
    if (w.status != FERROLOCK_OK) FAIL("waiter: %s", ferrolock_status_str(w.status));
    int64_t handover = w.acquired_at - released_at;
    if (handover > 2000) FAIL("waiter woke %lld ms after the release (no pub/sub wake?)", (long long)handover);
    printf("wait: try-once %lld ms, bounded %d ms wait took %lld ms, wake after release %lld ms\n",
           (long long)try_ms, WAIT_MS, (long long)waited, (long long)handover);

    ferrolock_lock_free(held);
    ferrolock_lock_free(wanted);
    ferrolock_client_free(holder_client);
    ferrolock_client_free(waiter_client);
    return 0;
}

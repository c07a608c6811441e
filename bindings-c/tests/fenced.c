/* Fenced locks: every acquisition's token is greater than any before it on the
 * name, across threads, handles and clients. */
#include "harness.h"

typedef struct thread_take {
    ferrolock_lock *lock;
    ferrolock_status status;
    uint64_t token;
} thread_take;

static void *take_in_thread(void *arg) {
    thread_take *t = arg;
    t->status = ferrolock_lock_acquire(t->lock, 5000, -1);
    if (t->status == FERROLOCK_OK) t->status = ferrolock_lock_token(t->lock, &t->token);
    if (t->status == FERROLOCK_OK) t->status = ferrolock_lock_release(t->lock);
    return NULL;
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *a = connect_client(url, -1);
    ferrolock_client *b = connect_client(url, -1);
    ferrolock_lock *fa = new_fenced_lock(a, "fenced");
    ferrolock_lock *fb = new_fenced_lock(b, "fenced");
    uint64_t token = 0, previous = 0;

    EXPECT(ferrolock_lock_token(fa, &token), FERROLOCK_ERR_NOT_OWNER);
    for (int i = 0; i < 5; i++) {
        ferrolock_lock *l = i % 2 ? fb : fa;
        OK(ferrolock_lock_acquire(l, 5000, -1));
        OK(ferrolock_lock_token(l, &token));
        if (token <= previous) FAIL("token %llu after %llu", (unsigned long long)token, (unsigned long long)previous);
        previous = token;
        OK(ferrolock_lock_release(l));
        EXPECT(ferrolock_lock_token(l, &token), FERROLOCK_ERR_NOT_OWNER);
    }

    /* Another thread through the same handle. */
    thread_take t = {fa, FERROLOCK_ERR_INTERNAL, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, take_in_thread, &t) == 0);
    pthread_join(th, NULL);
    if (t.status != FERROLOCK_OK) FAIL("thread: %s", ferrolock_status_str(t.status));
    CHECK(t.token > previous);
    previous = t.token;

    /* Tokens agree with the server's counter. */
    char reply[64];
    redis_cmd(reply, sizeof reply, "GET", "redisson_lock_token:{fenced}", NULL);
    CHECK(strcmp(reply, "$1") == 0 || strcmp(reply, "$2") == 0);

    /* A lost fenced hold reports LOCK_LOST for its token. */
    OK(ferrolock_lock_acquire(fa, 0, 50));
    OK(ferrolock_lock_acquire(fb, 5000, -1)); /* after fa's lease ran out */
    OK(ferrolock_lock_token(fb, &token));
    CHECK(token > previous);
    OK(ferrolock_lock_release(fb));
    EXPECT(ferrolock_lock_release(fa), FERROLOCK_ERR_LOCK_LOST);
    EXPECT(ferrolock_lock_token(fa, &token), FERROLOCK_ERR_LOCK_LOST);
    printf("fenced: tokens strictly increasing up to %llu\n", (unsigned long long)token);

    ferrolock_lock_free(fa);
    ferrolock_lock_free(fb);
    ferrolock_client_free(a);
    ferrolock_client_free(b);
    return 0;
}

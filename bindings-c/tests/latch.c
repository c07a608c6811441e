/* ferrolock_latch_*: try_set_count, count_down, count, wait; waiters on two clients
 * woken together by the last count-down's message, a wait that times out, wrong-type
 * keys, bad arguments, freed / mixed handles, a closed client (also while waiting). */
#include "family.h"

static ferrolock_status latch_wait_call(call_thread *t) {
    return ferrolock_latch_wait((ferrolock_latch *)t->handle, t->wait_ms);
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *c2 = connect_client(url, -1);
    ferrolock_latch *l = NULL, *other = NULL;
    bool set = false;
    uint64_t n = 99;
    char reply[64];

    OK(ferrolock_latch_new(c, "ready", &l));
    OK(ferrolock_latch_new(c2, "ready", &other));
    OK(ferrolock_latch_count(l, &n));
    CHECK(n == 0);
    OK(ferrolock_latch_wait(l, 0)); /* never set: open */
    OK(ferrolock_latch_count_down(l, &n));
    CHECK(n == 0); /* open stays open */
    OK(ferrolock_latch_try_set_count(l, 2, &set));
    CHECK(set);
    OK(ferrolock_latch_try_set_count(other, 5, &set));
    CHECK(!set);
    OK(ferrolock_latch_count(other, &n));
    CHECK(n == 2);
    int64_t t0 = now_ms();
    EXPECT(ferrolock_latch_wait(other, 150), FERROLOCK_NOT_ACQUIRED);
    CHECK(now_ms() - t0 >= 150);
    expect_message("still counting down");

    /* Two waiters (two clients, 60 s each) wake on the last count-down's message. */
    call_thread w1, w2;
    call_start(&w1, latch_wait_call, l, 60000, 0);
    call_start(&w2, latch_wait_call, other, -1, 0);
    const char *channel = "redisson_countdownlatch__channel__{ready}";
    int64_t give_up = now_ms() + 20000;
    while (subscribers(channel) < 2) { /* one subscription per client */
        if (now_ms() > give_up) FAIL("the waiters never subscribed");
        poll_step();
    }
    /* c2's bounded wait above may still be subscribed (100 ms after it ends): the
     * count is no proof that w2 waits; each client's parked count is. */
    wait_parked(c, 1);
    wait_parked(c2, 1);
    OK(ferrolock_latch_count_down(other, &n));
    CHECK(n == 1);
    CHECK(!event_wait(&w1.done, 1, 100)); /* still closed */
    int64_t opened = now_ms();
    OK(ferrolock_latch_count_down(l, &n));
    CHECK(n == 0);
    CHECK(call_join(&w1) == FERROLOCK_OK);
    CHECK(call_join(&w2) == FERROLOCK_OK);
    CHECK(w1.returned_ms - opened < 10000 && w2.returned_ms - opened < 10000);
    OK(ferrolock_latch_count(l, &n));
    CHECK(n == 0);
    redis_cmd(reply, sizeof reply, "EXISTS", "ready", NULL);
    CHECK(strcmp(reply, ":0") == 0); /* Redisson deletes an open latch */
    OK(ferrolock_latch_try_set_count(other, 1, NULL)); /* reusable once open */
    OK(ferrolock_latch_count_down(other, NULL));
    OK(ferrolock_latch_wait(l, -1));

    /* Bad arguments. */
    EXPECT(ferrolock_latch_try_set_count(l, 0, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("count = 0");
    EXPECT(ferrolock_latch_try_set_count(l, UINT64_MAX, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_latch_wait(l, -5), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("wait_ms = -5");
    EXPECT(ferrolock_latch_count(l, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    ferrolock_latch *bad = (ferrolock_latch *)&bad;
    EXPECT(ferrolock_latch_new(c, NULL, &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(bad == NULL);
    expect_message("latch name is NULL");
    EXPECT(ferrolock_latch_new(NULL, "x", &bad), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_latch_new(c, "x", NULL), FERROLOCK_ERR_INVALID_ARGUMENT);

    /* Wrong type. */
    ferrolock_latch *wrong = NULL;
    OK(ferrolock_latch_new(c, "ready-wrong", &wrong));
    redis_cmd(reply, sizeof reply, "RPUSH", "ready-wrong", "x", NULL);
    EXPECT(ferrolock_latch_count(wrong, &n), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_latch_count_down(wrong, NULL), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_latch_try_set_count(wrong, 1, &set), FERROLOCK_ERR_WRONG_TYPE);
    EXPECT(ferrolock_latch_wait(wrong, 0), FERROLOCK_ERR_WRONG_TYPE);
    redis_cmd(reply, sizeof reply, "DEL", "ready-wrong", NULL);
    redis_cmd(reply, sizeof reply, "SET", "ready-wrong", "many", NULL);
    EXPECT(ferrolock_latch_count(wrong, &n), FERROLOCK_ERR_WRONG_TYPE);
    expect_message("not a count");
    OK(ferrolock_latch_free(wrong));

    /* Freed and mixed handles. */
    ferrolock_latch *gone = NULL;
    OK(ferrolock_latch_new(c, "ready", &gone));
    OK(ferrolock_latch_free(gone));
    EXPECT(ferrolock_latch_free(gone), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("ferrolock_latch_free");
    EXPECT(ferrolock_latch_count(gone, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("not a live ferrolock_latch");
    EXPECT(ferrolock_latch_wait(gone, 0), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_latch_count_down(gone, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_latch_try_set_count(gone, 1, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_latch_count((ferrolock_latch *)c, &n), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_client handle, not a ferrolock_latch");
    EXPECT(ferrolock_lock_free((ferrolock_lock *)l), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("is a ferrolock_latch handle, not a ferrolock_lock");
    OK(ferrolock_latch_count(l, &n)); /* the refused free left it alone */

    /* A closed client: its waiting call returns, then every call is refused. */
    OK(ferrolock_latch_try_set_count(l, 1, NULL));
    call_start(&w2, latch_wait_call, other, -1, 0);
    wait_subscribed(channel);
    wait_parked(c2, 1); /* not the earlier waits' subscriptions, still there 100 ms after */
    OK(ferrolock_client_free(c2));
    CHECK(call_join(&w2) == FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_latch_count(other, &n), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_latch_count_down(other, NULL), FERROLOCK_ERR_CLIENT_CLOSED);
    EXPECT(ferrolock_latch_wait(other, 0), FERROLOCK_ERR_CLIENT_CLOSED);
    OK(ferrolock_latch_free(other));
    OK(ferrolock_latch_count(l, &n));
    CHECK(n == 1);

    OK(ferrolock_latch_free(l));
    ferrolock_client_free(c);
    printf("latch: every verb, two clients' waiters woken by the last count-down, errors\n");
    return 0;
}

/* A hold over a link slower than the response timeout, through fault-proxy: 250 ms
 * each way against a 300 ms response timeout and a 1.5 s watchdog lease. A renewal
 * waits up to a lease for its answer, so for four leases the hold stays on the
 * server and on_lost is never called. (Requests on the renewals' connection that time
 * out, the holder notes written once a hold lasts a second, used to retire it, and the
 * next renewal waited for a new connection's set-up: the hold was lost about 2 s in.) */
#include "fault_proxy.h"

static int losses;

static void count_loss(const char *name, void *user) {
    (void)name;
    (void)user;
    __atomic_add_fetch(&losses, 1, __ATOMIC_SEQ_CST);
}

int main(void) {
    redis_start();
    fault_proxy *proxy = proxy_start(harness_server.port);
    const char *name = "fault-slow-link";
    ferrolock_client *c = connect_with(proxy->url, 1500, 300, -1, -1, -1);
    ferrolock_lock *l = new_lock(c, name);
    OK(ferrolock_lock_on_lost(l, count_loss, NULL));
    OK(ferrolock_lock_acquire(l, -1, -1));
    proxy_send(proxy, "delay 250");
    int64_t until = now_ms() + 6000;
    while (now_ms() < until) {
        if (hlen_of(name) != 1 || pttl_of(name) <= 0) FAIL("the hold left the server over the slow link");
        bool lost = true;
        OK(ferrolock_lock_is_lost(l, &lost));
        if (lost || __atomic_load_n(&losses, __ATOMIC_SEQ_CST) != 0) FAIL("told lost over the slow link");
        usleep(25 * 1000);
    }
    proxy_send(proxy, "delay 0");
    OK(ferrolock_lock_release(l));
    CHECK(__atomic_load_n(&losses, __ATOMIC_SEQ_CST) == 0);
    CHECK(!key_exists(name));
    OK(ferrolock_lock_free(l));
    OK(ferrolock_client_free(c));
    printf("fault slow link: a hold over a link slower than the response timeout is kept\n");
    return 0;
}

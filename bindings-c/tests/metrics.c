/* The app name of ferrolock_options (connections named ferrolock:<id>:<app> in
 * CLIENT LIST; older, smaller structs keep working), a client's metrics snapshot
 * (ferrolock_client_metrics()) following real acquires, waits, releases and a loss,
 * and the Prometheus text (ferrolock_client_metrics_text() + ferrolock_string_free()). */
#include "harness.h"

#include <stddef.h>

static char list[1 << 16];

/* Whether CLIENT LIST shows a connection of `c` named exactly `name` (after a
 * command of `c`, so that its command connection is open). */
static bool has_connection_named(ferrolock_client *c, const char *name) {
    ferrolock_lock *l = new_lock(c, "app-name-probe");
    is_locked(l);
    OK(ferrolock_lock_free(l));
    char want[256];
    snprintf(want, sizeof want, " name=%s ", name);
    redis_query(list, sizeof list, "CLIENT", "LIST", NULL);
    return strstr(list, want) != NULL;
}

typedef struct {
    ferrolock_lock *lock;
    ferrolock_status status;
} waiter;

static void *wait_then_release(void *arg) {
    waiter *w = arg;
    w->status = ferrolock_lock_acquire(w->lock, 20000, -1);
    if (w->status == FERROLOCK_OK) w->status = ferrolock_lock_release(w->lock);
    return NULL;
}

static void app_names(const char *url) {
    ferrolock_options o;
    ferrolock_options_init(&o);
    CHECK(o.app_name == NULL);
    o.app_name = "billing-1.a_B";
    ferrolock_client *c = NULL;
    OK(ferrolock_client_connect_opts(url, &o, &c));
    char name[128];
    snprintf(name, sizeof name, "ferrolock:%s:billing-1.a_B", ferrolock_client_id(c));
    if (!has_connection_named(c, name)) FAIL("no connection named %s in CLIENT LIST:\n%s", name, list);
    OK(ferrolock_client_free(c));

    /* None: NULL (the default) and "". */
    o.app_name = "";
    OK(ferrolock_client_connect_opts(url, &o, &c));
    snprintf(name, sizeof name, "ferrolock:%s", ferrolock_client_id(c));
    if (!has_connection_named(c, name)) FAIL("no connection named %s in CLIENT LIST:\n%s", name, list);
    OK(ferrolock_client_free(c));

    /* Refused before anything is sent, naming the field. */
    const char *bad[] = {"has space", "caf\xc3\xa9", "x/y",
                         "a1234567890123456789012345678901234567890123456789012345678901234"}; /* 65 */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.app_name = bad[i];
        c = (ferrolock_client *)&c;
        EXPECT(ferrolock_client_connect_opts(url, &o, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
        expect_message("app_name");
        CHECK(c == NULL);
    }
    o.app_name = "a123456789012345678901234567890123456789012345678901234567890123"; /* 64 */
    OK(ferrolock_client_connect_opts(url, &o, &c));
    OK(ferrolock_client_free(c));

    /* A program built against the header before app_name existed passes the older
     * size: the bytes where app_name now is are not its, and are never read. */
    ferrolock_options old;
    memset(&old, 0xab, sizeof old);
    ferrolock_options_init_sized(&old, (uint32_t)offsetof(ferrolock_options, app_name));
    CHECK(old.size == offsetof(ferrolock_options, app_name));
    OK(ferrolock_client_connect_opts(url, &old, &c));
    snprintf(name, sizeof name, "ferrolock:%s", ferrolock_client_id(c));
    CHECK(has_connection_named(c, name));
    OK(ferrolock_client_free(c));
    printf("app names: named connections, bad names refused, the older struct size works\n");
}

int main(void) {
    const char *url = redis_start();
    app_names(url);

    ferrolock_client *c = connect_client(url, -1);
    ferrolock_client *other = connect_client(url, -1);
    ferrolock_metrics m = metrics_of(c);
    CHECK(m.acquired == 0 && m.not_acquired == 0 && m.failed == 0 && m.cancelled == 0);
    CHECK(m.holds_now == 0 && m.waiters_now == 0 && m.losses == 0 && m.wait_count == 0 && m.hold_count == 0);
    CHECK(m.failovers_noticed == 0 && m.failover_loss_count == 0 && m.failover_loss_sum_seconds == 0.0);

    /* An acquire, a refused try of another client, a release. */
    ferrolock_lock *l = new_lock(c, "metrics");
    ferrolock_lock *rival = new_lock(other, "metrics");
    OK(ferrolock_lock_acquire(l, 0, -1));
    m = metrics_of(c);
    CHECK(m.acquired == 1 && m.holds_now == 1 && m.wait_count == 1 && m.hold_count == 0);
    EXPECT(ferrolock_lock_acquire(rival, 0, -1), FERROLOCK_NOT_ACQUIRED);
    ferrolock_metrics mo = metrics_of(other);
    CHECK(mo.not_acquired == 1 && mo.acquired == 0 && mo.wait_count == 1);

    /* A waiter of the other client shows in waiters_now while it waits. */
    waiter w = {.lock = rival, .status = FERROLOCK_ERR_INTERNAL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_then_release, &w) == 0);
    int64_t give_up = now_ms() + 20000;
    while (metrics_of(other).waiters_now != 1) {
        if (now_ms() > give_up) FAIL("the waiter never showed in waiters_now");
        struct timespec step = {0, 2 * 1000 * 1000};
        nanosleep(&step, NULL); /* polling the waiter's counter */
    }
    OK(ferrolock_lock_release(l));
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(w.status == FERROLOCK_OK);
    m = metrics_of(c);
    CHECK(m.holds_now == 0 && m.hold_count == 1 && m.hold_sum_seconds > 0);
    mo = metrics_of(other);
    CHECK(mo.acquired == 1 && mo.not_acquired == 1 && mo.waiters_now == 0 && mo.wait_count == 2);
    CHECK(mo.wait_sum_seconds > 0);

    /* A loss: a 100 ms lease runs out and the other client takes the lock. */
    OK(ferrolock_lock_acquire(l, 0, 100));
    OK(ferrolock_lock_acquire(rival, 10000, -1));
    bool lost = false;
    OK(ferrolock_lock_is_lost(l, &lost));
    CHECK(lost);
    m = metrics_of(c);
    CHECK(m.losses == 1 && m.acquired == 2 && m.holds_now == 0 && m.hold_count == 2);
    EXPECT(ferrolock_lock_release(l), FERROLOCK_ERR_LOCK_LOST);
    OK(ferrolock_lock_release(rival));

    /* An older, smaller snapshot struct: only its fields are written. */
    unsigned char raw[sizeof(ferrolock_metrics) + 16];
    memset(raw, 0xab, sizeof raw);
    uint32_t older = (uint32_t)offsetof(ferrolock_metrics, losses);
    OK(ferrolock_client_metrics_sized(c, (ferrolock_metrics *)(void *)raw, older));
    ferrolock_metrics copy;
    memcpy(&copy, raw, sizeof copy);
    CHECK(copy.size == older && copy.acquired == 2);
    CHECK(raw[older] == 0xab);
    EXPECT(ferrolock_client_metrics_sized(c, &copy, 2), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_client_metrics(NULL, &copy), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_client_metrics(c, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);

    /* The Prometheus text. */
    char *text = NULL;
    OK(ferrolock_client_metrics_text(c, &text));
    CHECK(text != NULL);
    char label[128];
    snprintf(label, sizeof label, "client=\"%s\"", ferrolock_client_id(c));
    if (!strstr(text, label) || !strstr(text, "# TYPE ferrolock_") || !strstr(text, "_bucket{") ||
        !strstr(text, "le=\"+Inf\""))
        FAIL("unexpected metrics text:\n%s", text);
    printf("%.*s...\n", 200, text);
    ferrolock_string_free(text);
    ferrolock_string_free(NULL);
    EXPECT(ferrolock_client_metrics_text(c, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_client_metrics_text(NULL, &text), FERROLOCK_ERR_INVALID_ARGUMENT);

    OK(ferrolock_lock_free(l));
    OK(ferrolock_lock_free(rival));
    OK(ferrolock_client_free(other));
    OK(ferrolock_client_free(c));
    EXPECT(ferrolock_client_metrics_text(c, &text), FERROLOCK_ERR_INVALID_ARGUMENT); /* freed */
    EXPECT(ferrolock_client_metrics(c, &copy), FERROLOCK_ERR_INVALID_ARGUMENT);
    printf("metrics: the snapshot follows acquires, waits, releases and a loss; the text has it all\n");
    return 0;
}

/* Holder notes and slow-wait logs in C (issue 31): 1 ms holds with the default
 * options write nothing (the notes script, the only caller of TIME, never runs) and
 * "off" never writes, while "always" does (so that check can fail); a long hold's note
 * (app, host, pid, label + OS thread id) shows in ferrolock_inspection_holder_info();
 * an acquire that times out names the holder (ferrolock_lock_holder_info() and the
 * message); the slow-wait INFO line reaches a ferrolock_set_logger() callback, on a
 * thread of the library's; bad option values, filters and labels are refused. */
#include <sys/syscall.h>

#include "harness.h"

static ferrolock_client *connect_with(const char *url, ferrolock_options *o) {
    ferrolock_client *c = NULL;
    OK(ferrolock_client_connect_opts(url, o, &c));
    CHECK(c != NULL);
    return c;
}

/* TIME's calls on the server since CONFIG RESETSTAT (the notes script stamps "since"). */
static long time_calls(void) {
    char info[16384];
    redis_query(info, sizeof info, "INFO", "commandstats", NULL);
    const char *at = strstr(info, "cmdstat_time:calls=");
    return at ? atol(at + strlen("cmdstat_time:calls=")) : 0;
}

static uint64_t renewals(ferrolock_client *c) {
    ferrolock_metrics m;
    OK(ferrolock_client_metrics(c, &m));
    return m.renewals;
}

/* Waits (polling, with a deadline) until `name`'s first holder has a note, into *h;
 * the inspection that owns its strings goes to *keep. */
static void wait_for_note(ferrolock_client *c, const char *name, ferrolock_holder *h, ferrolock_inspection **keep) {
    int64_t deadline = now_ms() + 15000;
    for (;;) {
        ferrolock_inspection *in = NULL;
        size_t n = 0;
        OK(ferrolock_inspect(c, name, &in));
        OK(ferrolock_inspection_holders_len(in, &n));
        if (n == 1) {
            OK(ferrolock_inspection_holder_info(in, 0, h));
            if (h->info) {
                *keep = in;
                return;
            }
        }
        ferrolock_inspection_free(in);
        if (now_ms() > deadline) FAIL("no note on %s within 15 s", name);
        usleep(20000);
    }
}

/* What the log callback saw: the latest slow-wait line and the thread it came on. */
static struct {
    pthread_mutex_t mu;
    char line[2048];
    char target[256];
    ferrolock_log_level level;
    bool on_caller_thread;
    event seen;
} logged = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_t main_thread;

static void on_log(ferrolock_log_level level, const char *target, const char *message, const char *fields, void *user) {
    CHECK(user == &logged && fields != NULL);
    if (strncmp(message, "waiting ", 8) != 0 || !strstr(message, "\"notes:long\"")) return;
    pthread_mutex_lock(&logged.mu);
    snprintf(logged.line, sizeof logged.line, "%s", message);
    snprintf(logged.target, sizeof logged.target, "%s", target);
    logged.level = level;
    logged.on_caller_thread = pthread_equal(pthread_self(), main_thread);
    pthread_mutex_unlock(&logged.mu);
    event_signal(&logged.seen);
}

int main(void) {
    const char *url = redis_start();
    char reply[256], host[256], want[512];
    main_thread = pthread_self();
    event_init(&logged.seen);
    CHECK(gethostname(host, sizeof host) == 0);
    long tid = (long)syscall(SYS_gettid);
    ferrolock_options o;
    ferrolock_client *c = NULL;

    /* Bad values: typed errors naming the field, and no client. */
    ferrolock_options_init(&o);
    CHECK(o.holder_notes == NULL && o.holder_note_after_ms == 1000 && o.slow_wait_log_ms == 10000);
    o.holder_notes = "sometimes";
    EXPECT(ferrolock_client_connect_opts(url, &o, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("holder_notes = \"sometimes\"");
    CHECK(c == NULL);
    ferrolock_options_init(&o);
    o.holder_note_after_ms = -1;
    EXPECT(ferrolock_client_connect_opts(url, &o, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("holder_note_after_ms");
    ferrolock_options_init(&o);
    o.slow_wait_log_ms = 0;
    EXPECT(ferrolock_client_connect_opts(url, &o, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("slow_wait_log_ms");
    o.slow_wait_log_ms = -2;
    EXPECT(ferrolock_client_connect_opts(url, &o, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("slow_wait_log_ms");
    EXPECT(ferrolock_set_logger(on_log, "ferrolock=loud", &logged), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("not a valid filter");

    /* Default options: 1 ms holds write nothing (watchdog 300 ms: it looks every 100 ms). */
    redis_cmd(reply, sizeof reply, "CONFIG", "RESETSTAT", NULL);
    ferrolock_client *dflt = connect_client(url, 300);
    ferrolock_lock *quick = new_lock(dflt, "notes:quick");
    for (int i = 0; i < 50; i++) {
        OK(ferrolock_lock_acquire(quick, -1, -1));
        usleep(1000);
        OK(ferrolock_lock_release(quick));
    }
    /* Off: a long hold neither, across renewals, with a 0 ms threshold. */
    ferrolock_options_init(&o);
    o.watchdog_timeout_ms = 300;
    o.holder_notes = "off";
    o.holder_note_after_ms = 0;
    ferrolock_client *off = connect_with(url, &o);
    ferrolock_lock *quiet = new_lock(off, "notes:off");
    OK(ferrolock_lock_acquire(quiet, 0, -1));
    int64_t deadline = now_ms() + 10000;
    while (renewals(off) < 3) {
        if (now_ms() > deadline) FAIL("no renewals within 10 s");
        usleep(20000);
    }
    CHECK(time_calls() == 0);
    redis_query(reply, sizeof reply, "KEYS", "ferrolock_holder_info*", NULL);
    CHECK(reply[0] == '\0');
    OK(ferrolock_lock_release(quiet));

    /* Always: written before the acquire returns (and TIME counted: the check above can fail). */
    ferrolock_options_init(&o);
    o.holder_notes = "always";
    ferrolock_client *always = connect_with(url, &o);
    ferrolock_lock *noted = new_lock(always, "notes:always");
    OK(ferrolock_lock_acquire(noted, 0, -1));
    ferrolock_inspection *in = NULL;
    ferrolock_holder h;
    OK(ferrolock_inspect(always, "notes:always", &in));
    OK(ferrolock_inspection_holder_info(in, 0, &h));
    CHECK(h.info != NULL && h.thread != NULL && h.app == NULL);
    snprintf(want, sizeof want, "tid %ld", tid); /* no label: the OS thread id */
    CHECK(strcmp(h.thread, want) == 0);
    CHECK(time_calls() > 0);
    EXPECT(ferrolock_inspection_holder_info(in, 1, &h), FERROLOCK_ERR_INVALID_ARGUMENT);
    ferrolock_inspection_free(in);
    OK(ferrolock_lock_release(noted));

    /* A long hold (app "billing", label "worker-3", note after 100 ms) and its note. */
    ferrolock_options_init(&o);
    o.watchdog_timeout_ms = 900;
    o.app_name = "billing";
    o.holder_note_after_ms = 100;
    ferrolock_client *billing = connect_with(url, &o);
    ferrolock_lock *held = new_lock(billing, "notes:long");
    char long_label[600];
    memset(long_label, 'x', sizeof long_label - 1);
    long_label[sizeof long_label - 1] = '\0';
    EXPECT(ferrolock_lock_set_label(held, long_label), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_lock_set_label(held, "worker-3"));
    OK(ferrolock_lock_acquire(held, 0, -1));
    wait_for_note(billing, "notes:long", &h, &in);
    snprintf(want, sizeof want, "worker-3, tid %ld", tid);
    CHECK(h.owner != NULL && h.count == 1);
    CHECK(h.app && strcmp(h.app, "billing") == 0);
    CHECK(h.host && strcmp(h.host, host) == 0);
    CHECK(h.pid == (int64_t)getpid());
    CHECK(h.thread && strcmp(h.thread, want) == 0);
    CHECK(h.command == NULL && h.renewed == 1 && h.since_ms > 1600000000000 && h.held_for_ms >= 0);
    snprintf(want, sizeof want, "billing on %s pid %ld (thread worker-3, tid %ld) for ", host, (long)getpid(), tid);
    if (strncmp(h.description, want, strlen(want)) != 0) FAIL("description \"%s\"", h.description);
    ferrolock_inspection_free(in);

    /* Another client times out on it: the holder comes with the timeout. */
    ferrolock_lock *waiter = new_lock(dflt, "notes:long");
    OK(ferrolock_lock_holder_info(waiter, &h));
    CHECK(h.owner == NULL && h.description == NULL && h.pid == -1); /* nothing timed out yet */
    EXPECT(ferrolock_lock_acquire(waiter, 300, -1), FERROLOCK_NOT_ACQUIRED);
    expect_message("held by billing on ");
    OK(ferrolock_lock_holder_info(waiter, &h));
    CHECK(h.owner != NULL && h.app && strcmp(h.app, "billing") == 0 && h.pid == (int64_t)getpid());
    if (strncmp(h.description, want, strlen(want)) != 0) FAIL("description \"%s\"", h.description);
    const char *kept = h.description;
    EXPECT(ferrolock_lock_acquire(waiter, 0, -1), FERROLOCK_NOT_ACQUIRED); /* a try keeps nothing new */
    OK(ferrolock_lock_holder_info(waiter, &h));
    CHECK(h.description == kept);

    /* The slow-wait INFO line reaches the callback, on the library's log thread. */
    ferrolock_options_init(&o);
    o.slow_wait_log_ms = 200;
    ferrolock_client *slow = connect_with(url, &o);
    ferrolock_lock *patient = new_lock(slow, "notes:long");
    OK(ferrolock_set_logger(on_log, "info", &logged));
    EXPECT(ferrolock_lock_acquire(patient, 1500, -1), FERROLOCK_NOT_ACQUIRED);
    CHECK(event_wait(&logged.seen, 1, 10000));
    pthread_mutex_lock(&logged.mu);
    /* The latest line: 200 ms, then again as the wait doubles (400, 800 ms). */
    if (strncmp(logged.line, "waiting ", 8) != 0 || !strstr(logged.line, " ms for lock \"notes:long\": held by billing on "))
        FAIL("log line \"%s\"", logged.line);
    CHECK(strstr(logged.line, "(thread worker-3, tid ") && strstr(logged.line, "client(s) waiting"));
    CHECK(strcmp(logged.target, "ferrolock::lock::slow_wait") == 0 && logged.level == FERROLOCK_LOG_INFO);
    CHECK(!logged.on_caller_thread);
    pthread_mutex_unlock(&logged.mu);
    OK(ferrolock_set_logger(NULL, NULL, NULL));

    OK(ferrolock_lock_release(held));
    ferrolock_lock_free(patient);
    ferrolock_lock_free(waiter);
    ferrolock_lock_free(held);
    ferrolock_lock_free(noted);
    ferrolock_lock_free(quiet);
    ferrolock_lock_free(quick);
    ferrolock_client_free(slow);
    ferrolock_client_free(billing);
    ferrolock_client_free(always);
    ferrolock_client_free(off);
    ferrolock_client_free(dflt);
    event_destroy(&logged.seen);
    printf("notes: ok\n");
    return 0;
}

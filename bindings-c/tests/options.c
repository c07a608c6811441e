/* ferrolock_options and ferrolock_client_connect_opts(): the defaults, every bad
 * value refused naming its field (before anything is sent), malformed Sentinel and
 * Cluster URLs refused without the password in the message, the size rule of the
 * struct (fields past `size` take their defaults, unknown fields of a newer header
 * must stay zero), and a client with options that takes a lock. */
#include "harness.h"

#include <math.h>
#include <stddef.h>

#define URL_PASSWORD "s3cret-url-pw"
#define SENTINEL_PASSWORD "s3cret-sentinel-pw"

/* The last error names nothing secret. */
static void expect_no_secret(void) {
    const char *e = ferrolock_last_error();
    if (strstr(e, URL_PASSWORD) || strstr(e, SENTINEL_PASSWORD) || strstr(e, "s3cret"))
        FAIL("a password leaked into the message");
}

/* Connecting with `o` fails with INVALID_ARGUMENT, naming `field`, and leaves *out NULL. */
static void expect_refused(const char *url, const ferrolock_options *o, const char *field) {
    ferrolock_client *c = (ferrolock_client *)&c;
    EXPECT(ferrolock_client_connect_opts(url, o, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(c == NULL);
    expect_message(field);
    expect_no_secret();
}

static void defaults(void) {
    ferrolock_options o;
    memset(&o, 0xab, sizeof o); /* garbage, as on the stack */
    ferrolock_options_init(&o);
    CHECK(strcmp(ferrolock_last_error(), "") == 0);
    CHECK(o.size == sizeof(ferrolock_options));
    CHECK(o.watchdog_timeout_ms == 30000);
    CHECK(o.connect_timeout_ms == 2000);
    CHECK(o.response_timeout_ms == 2000);
    CHECK(o.retry_window_ms == 5000);
    CHECK(o.drift_factor == 0.01);
    CHECK(o.sentinel_username == NULL);
    CHECK(o.sentinel_password == NULL);
    CHECK(o.replica_ack == FERROLOCK_REPLICA_ACK_ONE);
    CHECK(o.replica_ack_timeout_ms == 1000);
    CHECK(o.replica_ack_aof == 0);

    /* Not a struct: nothing written, a message. */
    ferrolock_options_init_sized(NULL, sizeof o);
    expect_message("NULL");
    memset(&o, 0xab, sizeof o);
    ferrolock_options_init_sized(&o, 2);
    expect_message("size = 2");
    CHECK(o.size == 0xabababab);
    ferrolock_options_init_sized(&o, 1u << 20);
    expect_message("size");
    CHECK(o.size == 0xabababab);

    /* An older, smaller struct (what an older header had): only what fits is written. */
    memset(&o, 0xab, sizeof o);
    ferrolock_options_init_sized(&o, (uint32_t)offsetof(ferrolock_options, replica_ack));
    CHECK(strcmp(ferrolock_last_error(), "") == 0);
    CHECK(o.size == offsetof(ferrolock_options, replica_ack));
    CHECK(o.sentinel_password == NULL);
    CHECK(o.replica_ack == (int32_t)0xabababab); /* past the given size: untouched */

    /* A newer, larger struct (a newer header on this library): the fields this
     * library does not know are zeroed. */
    struct newer {
        ferrolock_options known;
        int64_t added_later;
        char more[24];
    } n;
    memset(&n, 0xab, sizeof n);
    ferrolock_options_init_sized(&n.known, sizeof n);
    CHECK(n.known.size == sizeof n);
    CHECK(n.known.watchdog_timeout_ms == 30000 && n.known.replica_ack == 1);
    CHECK(n.added_later == 0 && n.more[0] == 0 && n.more[23] == 0);
    printf("options: defaults ok (struct of %zu bytes)\n", sizeof o);
}

static void bad_values(void) {
    /* Nothing listens here: each refusal must come before any connection. */
    char dead[64];
    snprintf(dead, sizeof dead, "redis://127.0.0.1:%d", free_port());
    ferrolock_options o;
    int cases = 0;
#define REFUSED(assignment, field)            \
    do {                                      \
        ferrolock_options_init(&o);           \
        o.sentinel_password = SENTINEL_PASSWORD; \
        assignment;                           \
        expect_refused(dead, &o, field);      \
        cases++;                              \
    } while (0)
    REFUSED(o.watchdog_timeout_ms = 10, "watchdog_timeout");
    REFUSED(o.watchdog_timeout_ms = -1, "watchdog_timeout_ms = -1");
    REFUSED(o.watchdog_timeout_ms = INT64_MAX, "watchdog_timeout_ms");
    REFUSED(o.connect_timeout_ms = 0, "connect_timeout");
    REFUSED(o.connect_timeout_ms = -5, "connect_timeout_ms = -5");
    REFUSED(o.connect_timeout_ms = 600001, "connect_timeout");
    REFUSED(o.response_timeout_ms = 0, "response_timeout");
    REFUSED(o.response_timeout_ms = INT64_MIN, "response_timeout_ms");
    REFUSED(o.retry_window_ms = 0, "retry_window");
    REFUSED(o.retry_window_ms = -2, "retry_window_ms = -2");
    REFUSED(o.drift_factor = 0.6, "drift_factor");
    REFUSED(o.drift_factor = -0.1, "drift_factor");
    REFUSED(o.drift_factor = NAN, "drift_factor");
    REFUSED(o.drift_factor = INFINITY, "drift_factor");
    REFUSED(o.replica_ack = 4, "replica_ack = 4");
    REFUSED(o.replica_ack = -1, "replica_ack = -1");
    REFUSED(o.replica_ack_aof = 2, "replica_ack_aof = 2");
    REFUSED(o.replica_ack_aof = -1, "replica_ack_aof = -1");
    REFUSED(o.replica_ack_timeout_ms = 0, "replica_ack_timeout");
    REFUSED(o.replica_ack_timeout_ms = 600001, "replica_ack_timeout");
    REFUSED(o.replica_ack_timeout_ms = -1, "replica_ack_timeout_ms = -1");
    REFUSED(o.sentinel_username = "caf\xc3", "sentinel_username is not valid UTF-8");
    REFUSED(o.sentinel_password = "s3cret\xff", "sentinel_password is not valid UTF-8");
    /* Never initialised, or a size no ferrolock_options has. */
    REFUSED(o.size = 0, "ferrolock_options.size = 0");
    REFUSED(o.size = 3, "ferrolock_options.size = 3");
    REFUSED(o.size = 0xabababab, "ferrolock_options.size");
#undef REFUSED

    /* A newer header's struct that sets a field this library does not know. */
    struct newer {
        ferrolock_options known;
        int64_t added_later;
    } n;
    ferrolock_options_init_sized(&n.known, sizeof n);
    n.added_later = 42;
    expect_refused(dead, &n.known, "upgrade libferrolock");
    expect_message("does not know");

    /* NULL url / out, with options. */
    ferrolock_options_init(&o);
    ferrolock_client *c = (ferrolock_client *)&c;
    EXPECT(ferrolock_client_connect_opts(NULL, &o, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
    CHECK(c == NULL);
    expect_message("url is NULL");
    EXPECT(ferrolock_client_connect_opts(dead, &o, NULL), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("out is NULL");
    printf("options: %d bad values refused, each naming its field\n", cases);
}

static void malformed_urls(void) {
    static const char *const urls[] = {
        "redis+sentinel://:" URL_PASSWORD "@127.0.0.1:1",            /* no master name */
        "redis+sentinel://:" URL_PASSWORD "@127.0.0.1:1/",           /* empty master name */
        "redis+sentinel://u:" URL_PASSWORD "@127.0.0.1:1/mymaster/x", /* db not a number */
        "redis+sentinel://u:" URL_PASSWORD "@127.0.0.1:1/m/0/extra",  /* too many parts */
        "rediss+sentinel://:" URL_PASSWORD "@127.0.0.1:1,,127.0.0.1:2/m", /* empty address */
        "redis+sentinel://:" URL_PASSWORD "@127.0.0.1:1/m?db=1",      /* query */
        "redis+cluster://:" URL_PASSWORD "@127.0.0.1:7000/3",        /* a database */
        "rediss+cluster://:" URL_PASSWORD "@127.0.0.1:7000,",        /* empty address */
        "redis+cluster://:" URL_PASSWORD "@127.0.0.1:7000?x=1",      /* query */
        "redis+cluster://:" URL_PASSWORD "@127.0.0.1:notaport",      /* bad port */
        "redis+sentinel:/" URL_PASSWORD "@127.0.0.1:1/m",            /* no :// */
        "redis+nonsense://:" URL_PASSWORD "@127.0.0.1:1/m",          /* unknown scheme */
    };
    ferrolock_options o;
    ferrolock_options_init(&o);
    o.sentinel_username = "sentinel-user";
    o.sentinel_password = SENTINEL_PASSWORD;
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        ferrolock_client *c = (ferrolock_client *)&c;
        int64_t t0 = now_ms();
        ferrolock_status s = ferrolock_client_connect_opts(urls[i], &o, &c);
        if (s != FERROLOCK_ERR_INVALID_ARGUMENT)
            FAIL("malformed URL #%zu returned %s", i, ferrolock_status_str(s));
        CHECK(c == NULL);
        CHECK(now_ms() - t0 < 1000); /* refused, not tried */
        expect_no_secret();
        if (!strstr(ferrolock_last_error(), "URL")) FAIL("URL #%zu: the message does not say the URL is wrong", i);
        /* The same through the plain connect. */
        EXPECT(ferrolock_client_connect(urls[i], -1, &c), FERROLOCK_ERR_INVALID_ARGUMENT);
        expect_no_secret();
    }
    /* The message says which forms are accepted. */
    EXPECT(ferrolock_client_connect_opts(urls[0], &o, &(ferrolock_client *){NULL}), FERROLOCK_ERR_INVALID_ARGUMENT);
    expect_message("master");
    expect_message("redis+sentinel://");
    expect_message("redis+cluster://");

    /* Well-formed, but nothing listens: a connection error, still without secrets. */
    char url[160];
    snprintf(url, sizeof url, "redis+sentinel://:" URL_PASSWORD "@127.0.0.1:%d/mymaster", free_port());
    ferrolock_client *c = NULL;
    o.connect_timeout_ms = 500;
    o.response_timeout_ms = 500;
    int64_t t0 = now_ms();
    EXPECT(ferrolock_client_connect_opts(url, &o, &c), FERROLOCK_ERR_CONNECTION);
    CHECK(c == NULL);
    CHECK(now_ms() - t0 < 5000);
    expect_no_secret();
    expect_message("mymaster");
    printf("options: %zu malformed Sentinel/Cluster URLs refused without the password\n",
           sizeof urls / sizeof urls[0]);
}

static void connect_and_lock(const char *url) {
    ferrolock_options o;
    ferrolock_options_init(&o);
    o.watchdog_timeout_ms = 3000;
    o.connect_timeout_ms = 1000;
    o.response_timeout_ms = 1000;
    o.retry_window_ms = 2000;
    o.drift_factor = 0.02;
    o.replica_ack = FERROLOCK_REPLICA_ACK_OFF;
    o.replica_ack_timeout_ms = 500;
    /* Sentinel credentials with a one-server URL: not used, not a problem. */
    char user[32], password[32];
    snprintf(user, sizeof user, "nobody");
    snprintf(password, sizeof password, SENTINEL_PASSWORD);
    o.sentinel_username = user;
    o.sentinel_password = password;
    ferrolock_client *c = NULL;
    OK(ferrolock_client_connect_opts(url, &o, &c));
    CHECK(c != NULL);
    /* The options were copied: changing them afterwards changes nothing. */
    memset(user, 'x', sizeof user - 1);
    memset(password, 'x', sizeof password - 1);
    ferrolock_options_init(&o);

    ferrolock_lock *l = new_lock(c, "opts-lock");
    OK(ferrolock_lock_acquire(l, 0, -1));
    int64_t left = 0;
    OK(ferrolock_lock_remaining_lease_ms(l, &left));
    if (left <= 0 || left > 3000) FAIL("watchdog lease %lld ms, expected at most 3000 (watchdog_timeout_ms)", (long long)left);
    bool held = false;
    OK(ferrolock_lock_is_held(l, &held));
    CHECK(held);
    /* Another client, with all defaults (NULL options), waits and gets it. */
    ferrolock_client *d = NULL;
    OK(ferrolock_client_connect_opts(url, NULL, &d));
    ferrolock_lock *dl = new_lock(d, "opts-lock");
    EXPECT(ferrolock_lock_acquire(dl, 0, -1), FERROLOCK_NOT_ACQUIRED);
    OK(ferrolock_lock_release(l));
    OK(ferrolock_lock_acquire(dl, 2000, -1));
    OK(ferrolock_lock_remaining_lease_ms(dl, &left));
    if (left <= 3000 || left > 30000) FAIL("default watchdog lease %lld ms, expected up to 30000", (long long)left);
    OK(ferrolock_lock_release(dl));
    ferrolock_lock_free(dl);
    ferrolock_client_free(d);
    ferrolock_lock_free(l);
    ferrolock_client_free(c);

    /* An older, smaller struct: the fields past its size are never read, even garbage. */
    ferrolock_options_init(&o);
    o.watchdog_timeout_ms = 4000;
    o.size = (uint32_t)offsetof(ferrolock_options, connect_timeout_ms);
    o.connect_timeout_ms = -1;
    o.drift_factor = NAN;
    o.sentinel_password = (const char *)(uintptr_t)1; /* would crash if read */
    o.replica_ack = 99;
    c = NULL;
    OK(ferrolock_client_connect_opts(url, &o, &c));
    l = new_lock(c, "opts-small");
    OK(ferrolock_lock_acquire(l, 0, -1));
    OK(ferrolock_lock_remaining_lease_ms(l, &left));
    if (left <= 0 || left > 4000) FAIL("watchdog lease %lld ms, expected at most 4000", (long long)left);
    OK(ferrolock_lock_release(l));
    ferrolock_lock_free(l);
    ferrolock_client_free(c);

    /* A newer header's struct whose unknown fields stay as ferrolock_options_init() left them. */
    struct newer {
        ferrolock_options known;
        int64_t added_later;
    } n;
    ferrolock_options_init_sized(&n.known, sizeof n);
    n.known.watchdog_timeout_ms = 4000;
    OK(ferrolock_client_connect_opts(url, &n.known, &c));
    ferrolock_client_free(c);

    /* The plain connect is the same connect, with its watchdog argument. */
    c = connect_client(url, 5000);
    l = new_lock(c, "opts-plain");
    OK(ferrolock_lock_acquire(l, 0, -1));
    OK(ferrolock_lock_remaining_lease_ms(l, &left));
    if (left <= 3000 || left > 5000) FAIL("watchdog lease %lld ms, expected up to 5000", (long long)left);
    OK(ferrolock_lock_release(l));
    ferrolock_lock_free(l);
    ferrolock_client_free(c);
    printf("options: a client with options takes and releases a lock\n");
}

int main(void) {
    const char *url = redis_start();
    /* Appended: older statuses keep their numbers. */
    CHECK(FERROLOCK_ERR_NOT_REPLICATED == 9);
    CHECK(strcmp(ferrolock_status_str(FERROLOCK_ERR_NOT_REPLICATED), "FERROLOCK_ERR_NOT_REPLICATED") == 0);
    CHECK(strcmp(ferrolock_status_str((ferrolock_status)11), "FERROLOCK_UNKNOWN_STATUS") == 0);
    defaults();
    bad_values();
    malformed_urls();
    connect_and_lock(url);
    printf("options: ok\n");
    return 0;
}

/*
 * Test harness for the C binding: starts a private redis-server (from PATH, on a
 * free 127.0.0.1 port, in a temp dir) and stops it at exit; a test may start more
 * (replicas, sentinels) the same way. The server gets
 * PR_SET_PDEATHSIG so it dies with the test even when the test aborts (ASan).
 * Also a minimal RESP client to set up and inspect keys, and check macros.
 */
#ifndef FERROLOCK_TEST_HARNESS_H
#define FERROLOCK_TEST_HARNESS_H

#ifndef _GNU_SOURCE /* g++ defines it already (tests/cxx_raii.cpp includes this too) */
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ferrolock.h"

#define FAIL(...)                                                                  \
    do {                                                                           \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
        fprintf(stderr, __VA_ARGS__);                                              \
        fprintf(stderr, " [last error: %s]\n", ferrolock_last_error());            \
        exit(1);                                                                   \
    } while (0)

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) FAIL("check failed: %s", #cond);                              \
    } while (0)

/* Runs a ferrolock call and checks its status; a non-OK status must come with a message. */
#define EXPECT(call, want)                                                         \
    do {                                                                           \
        ferrolock_status got_ = (call);                                            \
        if (got_ != (want))                                                        \
            FAIL("%s returned %s, expected %s", #call, ferrolock_status_str(got_), \
                 ferrolock_status_str(want));                                      \
        if ((want) != FERROLOCK_OK && ferrolock_last_error()[0] == '\0')           \
            FAIL("%s returned %s without a message", #call, ferrolock_status_str(got_)); \
        if ((want) == FERROLOCK_OK && ferrolock_last_error()[0] != '\0')           \
            FAIL("%s succeeded but left a message", #call);                        \
    } while (0)

#define OK(call) EXPECT(call, FERROLOCK_OK)

/* Checks that the calling thread's last error mentions `needle`. */
static inline void expect_message(const char *needle) {
    if (!strstr(ferrolock_last_error(), needle))
        FAIL("last error does not mention \"%s\"", needle);
}

static inline int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct redis_server {
    pid_t pid;
    int port;
    char dir[256];
    char url[64];
} redis_server;

static redis_server harness_server;

/* A port nobody listens on right now (the kernel's choice of a free one). */
static inline int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        FAIL("cannot find a free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

static inline int redis_connect_fd(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends one command (argv) and reads the first line of the reply into `reply`.
 * Returns 0, or -1 when the server cannot be reached. */
static inline int redis_call_argv(int port, char *reply, size_t cap, int argc, const char **argv) {
    char buf[8192];
    size_t n = 0;
    int fd = redis_connect_fd(port);
    if (fd < 0) return -1;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    if (n >= sizeof buf || write(fd, buf, n) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t r = read(fd, reply + got, 1);
        if (r <= 0) break;
        if (reply[got] == '\n') break;
        got++;
    }
    reply[got] = '\0';
    if (got > 0 && reply[got - 1] == '\r') reply[got - 1] = '\0';
    close(fd);
    return got > 0 ? 0 : -1;
}

/* redis_cmd(reply, "SET", "k", "v", NULL): first reply line, e.g. "+OK", ":1", "$3". */
static inline void redis_cmd(char *reply, size_t cap, ...) {
    const char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, cap);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 16;) argv[argc++] = a;
    va_end(ap);
    if (redis_call_argv(harness_server.port, reply, cap, argc, argv) != 0)
        FAIL("redis command %s failed: server unreachable", argv[0]);
}

/* Reads one RESP value from fd into out (appended at *len, NUL-terminated), nested
 * arrays flattened: each simple string, integer and bulk string on a line of its
 * own, errors too ("-ERR ..."). Returns 0, or -1 on EOF or overflow. */
static inline int resp_read_line(int fd, char *line, size_t cap) {
    size_t n = 0;
    for (;;) {
        char ch;
        if (read(fd, &ch, 1) != 1) return -1;
        if (ch == '\n') break;
        if (n + 1 >= cap) return -1;
        line[n++] = ch;
    }
    if (n > 0 && line[n - 1] == '\r') n--;
    line[n] = '\0';
    return 0;
}

static inline int resp_read_value(int fd, char *out, size_t cap, size_t *len) {
    char line[256];
    if (resp_read_line(fd, line, sizeof line) != 0) return -1;
    if (line[0] == '*') {
        long count = strtol(line + 1, NULL, 10);
        for (long i = 0; i < count; i++)
            if (resp_read_value(fd, out, cap, len) != 0) return -1;
        return 0;
    }
    const char *text = line[0] == '-' ? line : line + 1;
    size_t tlen = strlen(text);
    if (line[0] == '$') {
        long blen = strtol(line + 1, NULL, 10);
        if (blen < 0) { text = "(nil)"; tlen = 5; }
        else {
            if (*len + (size_t)blen + 2 >= cap) return -1;
            size_t got = 0;
            while (got < (size_t)blen) {
                ssize_t r = read(fd, out + *len + got, (size_t)blen - got);
                if (r <= 0) return -1;
                got += (size_t)r;
            }
            *len += got;
            out[(*len)++] = '\n';
            out[*len] = '\0';
            char crlf[2];
            return read(fd, crlf, 2) == 2 ? 0 : -1;
        }
    }
    if (*len + tlen + 2 >= cap) return -1;
    memcpy(out + *len, text, tlen);
    *len += tlen;
    out[(*len)++] = '\n';
    out[*len] = '\0';
    return 0;
}

/* redis_query(out, cap, "CLIENT", "LIST", NULL): the whole reply, flattened (see
 * resp_read_value()), from the harness's server. */
static inline void redis_query(char *out, size_t cap, ...) {
    const char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, cap);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 16;) argv[argc++] = a;
    va_end(ap);
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    int fd = redis_connect_fd(harness_server.port);
    size_t len = 0;
    out[0] = '\0';
    if (fd < 0 || n >= sizeof buf || write(fd, buf, n) != (ssize_t)n || resp_read_value(fd, out, cap, &len) != 0)
        FAIL("redis command %s failed (server unreachable or reply over %zu bytes)", argv[0], cap);
    close(fd);
}

/* Stops a server started by redis_spawn() (also a SIGSTOPped one) and removes its dir. */
static inline void redis_stop_server(redis_server *s) {
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        kill(s->pid, SIGCONT); /* a stopped process handles the SIGTERM once continued */
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
    if (s->dir[0]) {
        static const char *const files[] = {"redis.log", "dump.rdb", "redis.conf", "temp-redis.conf"};
        char path[512];
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", s->dir, files[i]);
            unlink(path);
        }
        rmdir(s->dir);
        s->dir[0] = '\0';
    }
}

static inline void redis_stop(void) {
    redis_stop_server(&harness_server);
}

/* Starts redis-server into `s` on a free 127.0.0.1 port, in a temp dir of its own:
 * `config` (may be NULL) is written to redis.conf there and given first (Sentinel needs
 * a writable config file), then the harness's settings, then `extra` (NULL-terminated,
 * may be NULL), e.g. "--replicaof" or "--sentinel". Returns once it answers PING (a
 * NOAUTH refusal counts: it is up, and wants a password). The caller stops it. */
static inline void redis_spawn(redis_server *s, const char *config, const char *const *extra) {
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/ferrolock-c-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(s->dir)) FAIL("mkdtemp: %s", strerror(errno));
    char conf[512];
    snprintf(conf, sizeof conf, "%s/redis.conf", s->dir);
    for (int attempt = 0; attempt < 5; attempt++) {
        if (config) {
            FILE *f = fopen(conf, "w");
            if (!f || fputs(config, f) < 0 || fclose(f) != 0) FAIL("cannot write %s", conf);
        }
        s->port = free_port();
        char port[16], log[512];
        snprintf(port, sizeof port, "%d", s->port);
        snprintf(log, sizeof log, "%s/redis.log", s->dir);
        const char *argv[40];
        int argc = 0;
        argv[argc++] = "redis-server";
        if (config) argv[argc++] = conf;
        const char *base[] = {"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                              "--dir", s->dir, "--daemonize", "no"};
        for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) argv[argc++] = base[i];
        for (int i = 0; extra && extra[i] && argc < 39; i++) argv[argc++] = extra[i];
        argv[argc] = NULL;
        pid_t pid = fork();
        if (pid < 0) FAIL("fork: %s", strerror(errno));
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            execvp("redis-server", (char *const *)argv);
            _exit(127);
        }
        s->pid = pid;
        /* Ready when it answers PING; give up if it exits (port taken) or after 10 s. */
        int64_t give_up = now_ms() + 10000;
        while (now_ms() < give_up) {
            char reply[64];
            const char *ping[] = {"PING"};
            if (redis_call_argv(s->port, reply, sizeof reply, 1, ping) == 0 &&
                (strcmp(reply, "+PONG") == 0 || strncmp(reply, "-NOAUTH", 7) == 0)) {
                snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
                return;
            }
            if (waitpid(pid, NULL, WNOHANG) == pid) {
                s->pid = 0;
                break;
            }
            struct timespec step = {0, 10 * 1000 * 1000};
            nanosleep(&step, NULL); /* waiting for an external process to come up */
        }
        if (s->pid > 0) FAIL("redis-server on port %d did not answer PING within 10 s", s->port);
    }
    FAIL("redis-server did not start (see %s/redis.log)", s->dir);
}

/* Starts a private redis-server and returns its URL; stopped at exit. */
static inline const char *redis_start(void) {
    atexit(redis_stop);
    redis_spawn(&harness_server, NULL, NULL);
    return harness_server.url;
}

/* More servers for one test (replicas, sentinels): started by redis_start_more(), all
 * stopped at exit. */
static redis_server harness_more[8];
static int harness_more_count;

static inline void redis_stop_more(void) {
    for (int i = 0; i < harness_more_count; i++) redis_stop_server(&harness_more[i]);
}

/* Starts one more redis-server (see redis_spawn()); stopped at exit. */
static inline redis_server *redis_start_more(const char *config, const char *const *extra) {
    if (harness_more_count == (int)(sizeof harness_more / sizeof harness_more[0])) FAIL("too many servers");
    if (harness_more_count == 0) atexit(redis_stop_more);
    redis_server *s = &harness_more[harness_more_count++];
    redis_spawn(s, config, extra);
    return s;
}

static inline ferrolock_client *connect_client(const char *url, int64_t watchdog_ms) {
    ferrolock_client *c = NULL;
    OK(ferrolock_client_connect(url, watchdog_ms, &c));
    CHECK(c != NULL);
    return c;
}

/* A snapshot of `c`'s metrics (ferrolock_client_metrics), filled with junk first so
 * that a field the library left unwritten shows. */
static inline ferrolock_metrics metrics_of(ferrolock_client *c) {
    ferrolock_metrics m;
    memset(&m, 0xab, sizeof m);
    OK(ferrolock_client_metrics(c, &m));
    CHECK(m.size == sizeof m);
    return m;
}

static inline ferrolock_lock *new_lock(ferrolock_client *c, const char *name) {
    ferrolock_lock *l = NULL;
    OK(ferrolock_lock_new(c, name, &l));
    CHECK(l != NULL);
    return l;
}

static inline ferrolock_lock *new_fenced_lock(ferrolock_client *c, const char *name) {
    ferrolock_lock *l = NULL;
    OK(ferrolock_fenced_lock_new(c, name, &l));
    CHECK(l != NULL);
    return l;
}

static inline ferrolock_lock *new_lock_kind(ferrolock_client *c, const char *name, ferrolock_lock_kind kind) {
    ferrolock_lock *l = NULL;
    OK(ferrolock_lock_new_kind(c, name, kind, &l));
    CHECK(l != NULL);
    return l;
}

static inline bool is_locked(ferrolock_lock *l) {
    bool b = false;
    OK(ferrolock_lock_is_locked(l, &b));
    return b;
}

/* A one-shot event a thread (or a library callback) can signal and another can wait for. */
typedef struct event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
} event;

static inline void event_init(event *e) {
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cv, &attr);
    pthread_condattr_destroy(&attr);
    e->count = 0;
}

static inline void event_signal(event *e) {
    pthread_mutex_lock(&e->mu);
    e->count++;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Waits until the event was signalled at least `n` times; false after `timeout_ms`. */
static inline bool event_wait(event *e, int n, int64_t timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&e->mu);
    int rc = 0;
    while (e->count < n && rc == 0) rc = pthread_cond_timedwait(&e->cv, &e->mu, &deadline);
    bool ok = e->count >= n;
    pthread_mutex_unlock(&e->mu);
    return ok;
}

static inline void event_destroy(event *e) {
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
}

#endif

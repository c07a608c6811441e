/*
 * The fault tests' helpers (tests/fault_*.c): tests/harness's fault-proxy program in
 * front of the harness's redis-server (its path in FERROLOCK_FAULT_PROXY, as test.sh
 * sets it; see tests/harness/README.md for its commands), a restart of a server on
 * its own port, and waits for states.
 */
#ifndef FERROLOCK_TEST_FAULT_PROXY_H
#define FERROLOCK_TEST_FAULT_PROXY_H

#include "harness.h"

typedef struct fault_proxy {
    pid_t pid;
    int port;
    char url[64];
    FILE *in;  /* commands */
    FILE *out; /* answers */
    pthread_mutex_t mu;
} fault_proxy;

static fault_proxy harness_proxy;

static inline void proxy_stop(void) {
    if (harness_proxy.pid > 0) {
        fclose(harness_proxy.in); /* it exits when its stdin closes */
        fclose(harness_proxy.out);
        waitpid(harness_proxy.pid, NULL, 0);
        harness_proxy.pid = 0;
        pthread_mutex_destroy(&harness_proxy.mu);
    }
}

/* Starts the proxy in front of 127.0.0.1:upstream_port; stopped at exit. */
static inline fault_proxy *proxy_start(int upstream_port) {
    const char *bin = getenv("FERROLOCK_FAULT_PROXY");
    if (!bin || !bin[0]) FAIL("FERROLOCK_FAULT_PROXY is not set (test.sh builds fault-proxy and sets it)");
    int to_child[2], from_child[2];
    /* Close-on-exec: no other child (a restarted redis-server) may keep its stdin open. */
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) FAIL("pipe: %s", strerror(errno));
    char port[16];
    snprintf(port, sizeof port, "%d", upstream_port);
    pid_t pid = fork();
    if (pid < 0) FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        execl(bin, bin, port, (char *)NULL);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    fault_proxy *p = &harness_proxy;
    p->pid = pid;
    p->in = fdopen(to_child[1], "w");
    p->out = fdopen(from_child[0], "r");
    pthread_mutex_init(&p->mu, NULL);
    char line[128];
    if (!fgets(line, sizeof line, p->out) || sscanf(line, "port %d", &p->port) != 1)
        FAIL("fault-proxy (%s) did not say its port", bin);
    snprintf(p->url, sizeof p->url, "redis://127.0.0.1:%d", p->port);
    atexit(proxy_stop);
    return p;
}

/* Sends one command (printf-style); returns once the proxy answered `ok [n]`, with n (or 0). */
static inline long proxy_send(fault_proxy *p, const char *fmt, ...) {
    char cmd[256], line[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&p->mu);
    fprintf(p->in, "%s\n", cmd);
    fflush(p->in);
    char *got = fgets(line, sizeof line, p->out);
    pthread_mutex_unlock(&p->mu);
    if (!got || strncmp(line, "ok", 2) != 0) FAIL("fault-proxy: %s: %s", cmd, got ? line : "(no answer)");
    return strtol(line + 2, NULL, 10);
}

/* Polls `cond` every 5 ms until true; fails after timeout_ms with `what`. */
#define WAIT_FOR(cond, timeout_ms, what)                                           \
    do {                                                                           \
        int64_t wait_deadline_ = now_ms() + (timeout_ms);                          \
        while (!(cond)) {                                                          \
            if (now_ms() > wait_deadline_) FAIL("timed out waiting for %s", what); \
            usleep(5 * 1000);                                                      \
        }                                                                          \
    } while (0)

/* Kills the harness's server (SIGKILL, as a crash) and starts an empty one on the same
 * port and directory; returns once it answers PING. */
static inline void redis_restart_same_port(void) {
    redis_server *s = &harness_server;
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
    }
    char port[16], log[512];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    int64_t give_up = now_ms() + 10000;
    for (;;) {
        pid_t pid = fork();
        if (pid < 0) FAIL("fork: %s", strerror(errno));
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", s->dir, "--daemonize", "no", (char *)NULL);
            _exit(127);
        }
        s->pid = pid;
        while (now_ms() < give_up) {
            char reply[64];
            const char *ping[] = {"PING"};
            if (redis_call_argv(s->port, reply, sizeof reply, 1, ping) == 0 && strcmp(reply, "+PONG") == 0) return;
            if (waitpid(pid, NULL, WNOHANG) == pid) break; /* the old socket lingers: try again */
            usleep(10 * 1000);
        }
        if (now_ms() >= give_up) FAIL("redis-server did not restart on port %d", s->port);
    }
}

/* Script calls the server ran so far (INFO commandstats). */
static inline long script_calls(void) {
    static char info[1 << 14];
    redis_query(info, sizeof info, "INFO", "commandstats", NULL);
    long n = 0;
    for (const char *at = info; (at = strstr(at, "cmdstat_eval")) != NULL; at++) {
        const char *calls = strstr(at, "calls=");
        if (calls) n += strtol(calls + 6, NULL, 10);
    }
    return n;
}

/* The first line of `HGET name field`'s reply as a number (-1 when absent). */
static inline long hget_count(const char *name, const char *field) {
    char out[256];
    redis_query(out, sizeof out, "HGET", name, field, NULL);
    return strncmp(out, "(nil)", 5) == 0 ? -1 : strtol(out, NULL, 10);
}

static inline bool key_exists(const char *name) {
    char reply[64];
    redis_cmd(reply, sizeof reply, "EXISTS", name, NULL);
    return strcmp(reply, ":1") == 0;
}

static inline long pttl_of(const char *name) {
    char reply[64];
    redis_cmd(reply, sizeof reply, "PTTL", name, NULL);
    return strtol(reply + 1, NULL, 10);
}

/* Number of fields of hash `name`. */
static inline long hlen_of(const char *name) {
    char reply[64];
    redis_cmd(reply, sizeof reply, "HLEN", name, NULL);
    return strtol(reply + 1, NULL, 10);
}

static inline ferrolock_client *connect_with(const char *url, int64_t watchdog_ms, int64_t response_ms,
                                             int64_t connect_ms, int64_t retry_window_ms, double drift) {
    ferrolock_options o;
    ferrolock_options_init(&o);
    if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
    if (response_ms > 0) o.response_timeout_ms = response_ms;
    if (connect_ms > 0) o.connect_timeout_ms = connect_ms;
    if (retry_window_ms > 0) o.retry_window_ms = retry_window_ms;
    if (drift >= 0) o.drift_factor = drift;
    ferrolock_client *c = NULL;
    OK(ferrolock_client_connect_opts(url, &o, &c));
    return c;
}

#endif

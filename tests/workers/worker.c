/*
 * The C worker of the cross-language tests and of `ferrolock demo`: a thin user of
 * bindings-c (include/ferrolock.h) that speaks the line protocol of
 * tests/workers/README.md. Every command runs on the main thread, which is the
 * holder (with the lock handle) of every lock this worker takes.
 *
 *     ferrolock-worker-c URL [WATCHDOG_MS]
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ferrolock.h"

/* The one lock handle (one holder) this worker keeps per lock name. */
struct entry {
    char *name;
    ferrolock_lock *lock;
    unsigned depth; /* levels acquired and not yet released (a lost hold counts until it is released) */
    struct entry *next;
};

static ferrolock_client *client;
static struct entry *entries;
/* The on_lost callback signals this condition; `lost` waits on it. */
static pthread_mutex_t lost_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lost_cond = PTHREAD_COND_INITIALIZER;

static void on_lost(const char *name, void *user) {
    (void)name;
    (void)user;
    pthread_mutex_lock(&lost_mutex);
    pthread_cond_broadcast(&lost_cond);
    pthread_mutex_unlock(&lost_mutex);
}

/* CLOCK_MONOTONIC in nanoseconds, comparable with the other workers' clocks. */
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* `err CODE MESSAGE` (or `fail ...`) on one line. */
static void say_error(const char *kind, const char *code, const char *fmt, ...) {
    char message[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    for (char *c = message; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    say("%s %s %s", kind, code, message);
}

/* A failed ferrolock call: FERROLOCK_ERR_X -> ERR_X, with the library's message. */
static void say_status(ferrolock_status status) {
    say_error("err", ferrolock_status_str(status) + strlen("FERROLOCK_"), "%s", ferrolock_last_error());
}

/* A non-negative decimal integer field (at most 15 digits), as every worker parses them. */
static bool number(const char *field, const char *what, int64_t *out) {
    size_t n = strlen(field);
    if (n == 0 || n > 15 || strspn(field, "0123456789") != n) {
        say_error("err", "ERR_INVALID_ARGUMENT", "%s must be a non-negative integer, not \"%s\"", what, field);
        return false;
    }
    *out = strtoll(field, NULL, 10);
    return true;
}

/* Valid UTF-8 without NUL bytes: what every worker accepts as a command line. */
static bool valid_text(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t len = s[i] < 0x80 ? 1 : (s[i] & 0xE0) == 0xC0 ? 2 : (s[i] & 0xF0) == 0xE0 ? 3 : (s[i] & 0xF8) == 0xF0 ? 4 : 0;
        if (s[i] == 0 || len == 0 || i + len > n) return false;
        uint32_t cp = len == 1 ? s[i] : s[i] & (0x7Fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* The handle for `name`, created on first use (fenced or plain); NULL after replying an error. */
static struct entry *entry_for(const char *name, bool fenced) {
    for (struct entry *e = entries; e; e = e->next)
        if (strcmp(e->name, name) == 0) return e;
    ferrolock_lock *lock = NULL;
    ferrolock_status st = fenced ? ferrolock_fenced_lock_new(client, name, &lock) : ferrolock_lock_new(client, name, &lock);
    if (st == FERROLOCK_OK) st = ferrolock_lock_on_lost(lock, on_lost, NULL);
    struct entry *e = st == FERROLOCK_OK ? calloc(1, sizeof *e) : NULL;
    if (!e || !(e->name = strdup(name))) {
        if (st == FERROLOCK_OK) say_error("err", "ERR_INTERNAL", "out of memory");
        else say_status(st);
        ferrolock_lock_free(lock);
        free(e);
        return NULL;
    }
    e->lock = lock;
    e->next = entries;
    entries = e;
    return e;
}

/* Acquires one level; on FERROLOCK_OK `token` holds the token (`-` for a plain lock). */
static ferrolock_status acquire(struct entry *e, int64_t wait_ms, char token[24]) {
    bool lost = false;
    ferrolock_lock_is_lost(e->lock, &lost);
    unsigned depth = lost ? 0 : e->depth; /* a lost hold is over: this starts a new one */
    ferrolock_status st = ferrolock_lock_acquire(e->lock, wait_ms, -1);
    if (st != FERROLOCK_OK) return st;
    e->depth = depth + 1;
    uint64_t t;
    if (ferrolock_lock_token(e->lock, &t) == FERROLOCK_OK) snprintf(token, 24, "%" PRIu64, t);
    else strcpy(token, "-");
    return FERROLOCK_OK;
}

static ferrolock_status release(struct entry *e) {
    ferrolock_status st = ferrolock_lock_release(e->lock);
    if ((st == FERROLOCK_OK || st == FERROLOCK_ERR_LOCK_LOST) && e->depth > 0) e->depth--;
    if (st == FERROLOCK_ERR_NOT_OWNER) e->depth = 0;
    return st;
}

/* The deliberately non-atomic counter update: read, then truncate and write. Returns an
 * error message, or NULL. */
static const char *bump_counter(const char *path) {
    static char problem[512];
    char text[64] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        bool whole = !ferror(f) && fgetc(f) == EOF && !ferror(f);
        fclose(f);
        if (!whole) {
            snprintf(problem, sizeof problem, "counter file \"%s\" is unreadable or does not hold an integer", path);
            return problem;
        }
        text[n] = '\0';
    } else if (errno != ENOENT) {
        snprintf(problem, sizeof problem, "file \"%s\": %s", path, strerror(errno));
        return problem;
    }
    char *start = text, *end = text + strlen(text);
    while (isspace((unsigned char)*start)) start++;
    while (end > start && isspace((unsigned char)end[-1])) *--end = '\0';
    size_t digits = strlen(start) - (*start == '-');
    if (*start && (digits == 0 || digits > 18 || strspn(start + (*start == '-'), "0123456789") != digits)) {
        snprintf(problem, sizeof problem, "counter file \"%s\" does not hold an integer", path);
        return problem;
    }
    f = fopen(path, "w");
    bool ok = f && fprintf(f, "%lld", strtoll(start, NULL, 10) + 1) > 0;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) {
        snprintf(problem, sizeof problem, "file \"%s\": %s", path, strerror(errno));
        return problem;
    }
    return NULL;
}

static void sleep_us(int64_t us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void count(struct entry *e, const char *counter, const char *log, int64_t max, int64_t seconds, int64_t hold_us) {
    FILE *logf = fopen(log, "a");
    if (!logf) {
        say_error("err", "ERR_INVALID_ARGUMENT", "file \"%s\": %s", log, strerror(errno));
        return;
    }
    uint64_t start = now_ns();
    int64_t done = 0;
    while ((max == 0 || done < max) && (seconds == 0 || now_ns() - start < (uint64_t)seconds * 1000000000u)) {
        char token[24];
        uint64_t t0 = now_ns();
        ferrolock_status st = acquire(e, -1, token);
        if (st != FERROLOCK_OK) {
            say_status(st);
            goto out;
        }
        uint64_t t1 = now_ns();
        const char *problem = bump_counter(counter);
        sleep_us(hold_us);
        uint64_t t2 = now_ns();
        if ((st = release(e)) != FERROLOCK_OK) {
            say_status(st);
            goto out;
        }
        if (problem) {
            say_error("err", "ERR_INVALID_ARGUMENT", "%s", problem);
            goto out;
        }
        if (fprintf(logf, "%s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", token, t0, t1, t2) < 0 || fflush(logf) != 0) {
            say_error("err", "ERR_INVALID_ARGUMENT", "file \"%s\": %s", log, strerror(errno));
            goto out;
        }
        done++;
    }
    say("ok %" PRId64, done);
out:
    fclose(logf);
}

/* Runs one command line (split in place) and prints its one reply. */
static void run(char *line) {
    char *f[8];
    int n = 0;
    for (char *p = line; n < 8; p++) {
        f[n++] = p;
        if (!(p = strchr(p, ' '))) break;
        *p = '\0';
    }
    bool plain_or_fenced = n >= 3 && (strcmp(f[2], "plain") == 0 || strcmp(f[2], "fenced") == 0);
    struct entry *e;
    if (strcmp(f[0], "acquire") == 0 && (n == 3 || n == 4) && plain_or_fenced) {
        int64_t wait_ms = -1;
        char token[24];
        if (n == 4 && !number(f[3], "WAIT_MS", &wait_ms)) return;
        if (!(e = entry_for(f[1], strcmp(f[2], "fenced") == 0))) return;
        ferrolock_status st = acquire(e, wait_ms, token);
        if (st == FERROLOCK_OK) say("ok %s", token);
        else if (st == FERROLOCK_NOT_ACQUIRED) say("timeout");
        else say_status(st);
    } else if (strcmp(f[0], "release") == 0 && n == 2) {
        if (!(e = entry_for(f[1], false))) return;
        ferrolock_status st = release(e);
        if (st == FERROLOCK_OK) say("ok");
        else say_status(st);
    } else if (strcmp(f[0], "force_unlock") == 0 && n == 2) {
        bool was_locked = false;
        if (!(e = entry_for(f[1], false))) return;
        ferrolock_status st = ferrolock_lock_force_unlock(e->lock, &was_locked);
        if (st == FERROLOCK_OK) say("ok %s", was_locked ? "true" : "false");
        else say_status(st);
    } else if (strcmp(f[0], "lost") == 0 && n == 2) {
        if (!(e = entry_for(f[1], false))) return;
        if (e->depth == 0) {
            say_error("err", "ERR_NOT_OWNER", "lock \"%s\" is not held by this worker", f[1]);
            return;
        }
        bool lost = false;
        pthread_mutex_lock(&lost_mutex);
        while (ferrolock_lock_is_lost(e->lock, &lost) == FERROLOCK_OK && !lost) pthread_cond_wait(&lost_cond, &lost_mutex);
        pthread_mutex_unlock(&lost_mutex);
        say("lost");
    } else if (strcmp(f[0], "count") == 0 && n == 7) {
        int64_t max, seconds, hold_us;
        if (!number(f[4], "MAX", &max) || !number(f[5], "SECONDS", &seconds) || !number(f[6], "HOLD_US", &hold_us)) return;
        if (!(e = entry_for(f[1], true))) return;
        count(e, f[2], f[3], max, seconds, hold_us);
    } else {
        for (int i = 1; i < n; i++) f[i][-1] = ' '; /* undo the split */
        say_error("err", "ERR_INVALID_ARGUMENT", "malformed command \"%s\"; see tests/workers/README.md", line);
    }
}

int main(int argc, char **argv) {
    int64_t watchdog_ms = 30000;
    if (argc < 2 || argc > 3) {
        say_error("fail", "ERR_INVALID_ARGUMENT", "usage: ferrolock-worker-c URL [WATCHDOG_MS]");
        return 1;
    }
    if (argc == 3) {
        size_t n = strlen(argv[2]);
        /* ferrolock_client_connect takes 0 as "the default": the other workers refuse it. */
        if (n == 0 || n > 15 || strspn(argv[2], "0123456789") != n || (watchdog_ms = strtoll(argv[2], NULL, 10)) == 0) {
            say_error("fail", "ERR_INVALID_ARGUMENT", "WATCHDOG_MS must be a positive integer, not \"%s\"", argv[2]);
            return 1;
        }
    }
    ferrolock_status st = ferrolock_client_connect(argv[1], watchdog_ms, &client);
    if (st != FERROLOCK_OK) {
        say_error("fail", ferrolock_status_str(st) + strlen("FERROLOCK_"), "%s", ferrolock_last_error());
        return 1;
    }
    say("ready c %ld", (long)getpid());

    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n') line[--len] = '\0';
        if (!valid_text((const unsigned char *)line, (size_t)len)) say_error("err", "ERR_INVALID_ARGUMENT", "the command is not valid UTF-8 text");
        else if (strcmp(line, "quit") == 0) break;
        else run(line);
    }
    free(line);
    /* Freeing the client releases whatever this worker still holds; the handles follow. */
    ferrolock_client_free(client);
    while (entries) {
        struct entry *next = entries->next;
        ferrolock_lock_free(entries->lock);
        free(entries->name);
        free(entries);
        entries = next;
    }
    say("bye");
    return 0;
}

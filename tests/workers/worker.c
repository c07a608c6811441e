/*
 * The C worker of the cross-language tests and of `ferrolock demo`: a thin user of
 * bindings-c (include/ferrolock.h) that speaks the line protocol of
 * tests/workers/README.md (with "The family": every lock kind, semaphores,
 * permit-expirable semaphores, latches, and the holder notes of issue 31: `label`,
 * `holder`, `waitlog`). Every command runs on the main thread, which is the holder
 * (with the lock handle) of every lock this worker takes.
 *
 * Optional start-up environment: FERROLOCK_WORKER_APP (app_name),
 * FERROLOCK_WORKER_NOTE_AFTER_MS (holder_note_after_ms), FERROLOCK_WORKER_SLOW_WAIT_MS
 * (slow_wait_log_ms).
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "ferrolock.h"

/* Lock kinds as the protocol names them, in ferrolock_lock_kind order. */
static const char *const kind_names[] = {"plain", "fenced", "fair", "read", "write"};
enum { KINDS = sizeof kind_names / sizeof kind_names[0] };

/* The one lock handle (one holder) this worker keeps per (lock name, kind). The read
 * and write entries of a name are the two sides of one ferrolock_rwlock_new(). */
struct entry {
    char *name;
    ferrolock_lock_kind kind;
    ferrolock_lock *lock;
    unsigned depth; /* levels acquired and not yet released (a lost hold counts until it is released) */
    struct entry *next;
};

/* The one handle this worker keeps per semaphore, permit-expirable semaphore or latch name. */
enum shape { SEMAPHORE, PERMITS, LATCH };
struct counted {
    char *name;
    enum shape shape;
    void *handle;
    struct counted *next;
};

/* The label `label NAME TEXT` gave NAME: set on its handles, also those made later. */
struct label {
    char *name;
    char *text;
    struct label *next;
};

static ferrolock_client *client;
static struct entry *entries; /* in order of first use */
static struct label *labels;

/* The latest INFO lines of the library's log (ferrolock_set_logger), newest at
 * `logged_next - 1`, for `waitlog`. The callback runs on the library's log thread. */
enum { LOGGED = 64 };
static char *logged[LOGGED];
static unsigned logged_next;
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;

static void on_log(ferrolock_log_level level, const char *target, const char *message, const char *fields, void *user) {
    (void)target;
    (void)fields;
    (void)user;
    if (level != FERROLOCK_LOG_INFO || strncmp(message, "waiting ", 8) != 0) return;
    char *copy = strdup(message);
    if (!copy) return;
    pthread_mutex_lock(&log_mutex);
    free(logged[logged_next % LOGGED]);
    logged[logged_next++ % LOGGED] = copy;
    pthread_mutex_unlock(&log_mutex);
}
static struct counted *counteds;
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

static struct entry *find_entry(const char *name, int kind) {
    for (struct entry *e = entries; e; e = e->next)
        if (strcmp(e->name, name) == 0 && (kind < 0 || (int)e->kind == kind)) return e;
    return NULL;
}

/* Appends an entry (the caller made its handle); NULL when out of memory. */
static struct entry *add_entry(const char *name, ferrolock_lock_kind kind, ferrolock_lock *lock) {
    struct entry *e = calloc(1, sizeof *e);
    if (!e || !(e->name = strdup(name))) {
        free(e);
        return NULL;
    }
    e->kind = kind;
    e->lock = lock;
    struct entry **tail = &entries;
    while (*tail) tail = &(*tail)->next;
    *tail = e;
    return e;
}

/* The handle for (`name`, `kind`), created on first use (read and write together, as
 * one read-write lock); NULL after replying an error. */
static struct entry *entry_for(const char *name, ferrolock_lock_kind kind) {
    struct entry *e = find_entry(name, (int)kind);
    if (e) return e;
    bool rw = kind == FERROLOCK_LOCK_READ || kind == FERROLOCK_LOCK_WRITE;
    ferrolock_lock *locks[2] = {NULL, NULL}; /* the kind asked for, then its other side */
    ferrolock_status st = !rw ? ferrolock_lock_new_kind(client, name, kind, &locks[0])
                          : kind == FERROLOCK_LOCK_READ ? ferrolock_rwlock_new(client, name, &locks[0], &locks[1])
                                                        : ferrolock_rwlock_new(client, name, &locks[1], &locks[0]);
    for (int i = 0; i < 2 && st == FERROLOCK_OK; i++)
        if (locks[i]) st = ferrolock_lock_on_lost(locks[i], on_lost, NULL);
    if (st != FERROLOCK_OK) {
        say_status(st);
        ferrolock_lock_free(locks[0]);
        ferrolock_lock_free(locks[1]);
        return NULL;
    }
    for (struct label *l = labels; l && st == FERROLOCK_OK; l = l->next)
        if (strcmp(l->name, name) == 0)
            for (int i = 0; i < 2 && st == FERROLOCK_OK; i++)
                if (locks[i]) st = ferrolock_lock_set_label(locks[i], l->text);
    if (st != FERROLOCK_OK) {
        say_status(st);
        ferrolock_lock_free(locks[0]);
        ferrolock_lock_free(locks[1]);
        return NULL;
    }
    ferrolock_lock_kind other = kind == FERROLOCK_LOCK_READ ? FERROLOCK_LOCK_WRITE : FERROLOCK_LOCK_READ;
    if (!(e = add_entry(name, kind, locks[0])) || (locks[1] && !add_entry(name, other, locks[1]))) {
        say_error("err", "ERR_INTERNAL", "out of memory");
        if (!e) ferrolock_lock_free(locks[0]);
        ferrolock_lock_free(locks[1]);
        return NULL;
    }
    return e;
}

/* The entry of `name` for release / lost / force_unlock: of `kind_field` when given,
 * else of the kind NAME was first used with (plain for a name never used). */
static struct entry *entry_named(const char *name, const char *kind_field);

/* A KIND field: its ferrolock_lock_kind, or -1 after replying an error. */
static int parse_kind(const char *field) {
    for (int k = 0; k < KINDS; k++)
        if (strcmp(field, kind_names[k]) == 0) return k;
    say_error("err", "ERR_INVALID_ARGUMENT", "KIND must be plain, fenced, fair, read or write, not \"%s\"", field);
    return -1;
}

static struct entry *entry_named(const char *name, const char *kind_field) {
    if (kind_field) {
        int kind = parse_kind(kind_field);
        return kind < 0 ? NULL : entry_for(name, (ferrolock_lock_kind)kind);
    }
    struct entry *e = find_entry(name, -1);
    return e ? e : entry_for(name, FERROLOCK_LOCK_REENTRANT);
}

/* The semaphore / permits / latch handle for `name`, created on first use; NULL after
 * replying an error. */
static void *counted_for(const char *name, enum shape shape) {
    for (struct counted *c = counteds; c; c = c->next)
        if (c->shape == shape && strcmp(c->name, name) == 0) return c->handle;
    void *handle = NULL;
    ferrolock_status st = shape == SEMAPHORE ? ferrolock_semaphore_new(client, name, (ferrolock_semaphore **)&handle)
                          : shape == PERMITS ? ferrolock_permits_new(client, name, (ferrolock_permits **)&handle)
                                             : ferrolock_latch_new(client, name, (ferrolock_latch **)&handle);
    if (st != FERROLOCK_OK) {
        say_status(st);
        return NULL;
    }
    struct counted *c = calloc(1, sizeof *c);
    if (!c || !(c->name = strdup(name))) {
        say_error("err", "ERR_INTERNAL", "out of memory");
        free(c);
        if (shape == SEMAPHORE) ferrolock_semaphore_free(handle);
        else if (shape == PERMITS) ferrolock_permits_free(handle);
        else ferrolock_latch_free(handle);
        return NULL;
    }
    c->shape = shape;
    c->handle = handle;
    c->next = counteds;
    counteds = c;
    return handle;
}

/* Acquires one level; on FERROLOCK_OK `token` holds the token (`-` for kinds without one). */
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

/* What `count` runs its sections on: a lock entry, or one permit of a semaphore. */
struct section {
    struct entry *lock;
    ferrolock_semaphore *sem;
};

static ferrolock_status section_enter(struct section *s, char token[24]) {
    if (s->lock) {
        ferrolock_status st = acquire(s->lock, -1, token);
        if (st == FERROLOCK_OK && strcmp(token, "-") == 0) strcpy(token, "0");
        return st;
    }
    strcpy(token, "0");
    return ferrolock_semaphore_acquire(s->sem, 1, -1);
}

static ferrolock_status section_leave(struct section *s) {
    return s->lock ? release(s->lock) : ferrolock_semaphore_release(s->sem, 1, NULL);
}

static void count(struct section *e, const char *counter, const char *log, int64_t max, int64_t seconds, int64_t hold_us) {
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
        ferrolock_status st = section_enter(e, token);
        if (st != FERROLOCK_OK) {
            say_status(st);
            goto out;
        }
        uint64_t t1 = now_ns();
        const char *problem = bump_counter(counter);
        sleep_us(hold_us);
        uint64_t t2 = now_ns();
        if ((st = section_leave(e)) != FERROLOCK_OK) {
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

/* "ok true" / "ok false", or the error, for a call that answers a bool. */
static void say_bool(ferrolock_status st, bool b) {
    if (st == FERROLOCK_OK) say("ok %s", b ? "true" : "false");
    else say_status(st);
}

/* "ok N", or the error. */
static void say_count(ferrolock_status st, uint64_t n) {
    if (st == FERROLOCK_OK) say("ok %" PRIu64, n);
    else say_status(st);
}

/* "ok" / "timeout", or the error, for a bounded wait. */
static void say_waited(ferrolock_status st, const char *ok) {
    if (st == FERROLOCK_OK) say("%s", ok);
    else if (st == FERROLOCK_NOT_ACQUIRED) say("timeout");
    else say_status(st);
}

/* The commands of the semaphores and latches; false when `f[0]` is none of them. */
static bool run_counted(char **f, int n) {
    void *h;
    int64_t a = -1, b = -1;
    bool flag = false;
    uint64_t out = 0;
    const char *cmd = f[0];
    if (strcmp(cmd, "sem_set") == 0 && n == 3) {
        if (!number(f[2], "PERMITS", &a) || !(h = counted_for(f[1], SEMAPHORE))) return true;
        ferrolock_status st = ferrolock_semaphore_try_set_permits(h, (uint64_t)a, &flag);
        say_bool(st, flag);
    } else if (strcmp(cmd, "sem_acquire") == 0 && (n == 3 || n == 4)) {
        if (!number(f[2], "PERMITS", &a) || (n == 4 && !number(f[3], "WAIT_MS", &b))) return true;
        if (!(h = counted_for(f[1], SEMAPHORE))) return true;
        say_waited(ferrolock_semaphore_acquire(h, (uint64_t)a, b), "ok");
    } else if (strcmp(cmd, "sem_release") == 0 && n == 3) {
        if (!number(f[2], "PERMITS", &a) || !(h = counted_for(f[1], SEMAPHORE))) return true;
        ferrolock_status st = ferrolock_semaphore_release(h, (uint64_t)a, &out);
        say_count(st, out);
    } else if (strcmp(cmd, "sem_available") == 0 && n == 2) {
        if (!(h = counted_for(f[1], SEMAPHORE))) return true;
        ferrolock_status st = ferrolock_semaphore_available(h, &out);
        say_count(st, out);
    } else if (strcmp(cmd, "permit_set") == 0 && n == 3) {
        if (!number(f[2], "PERMITS", &a) || !(h = counted_for(f[1], PERMITS))) return true;
        ferrolock_status st = ferrolock_permits_try_set_permits(h, (uint64_t)a, &flag);
        say_bool(st, flag);
    } else if (strcmp(cmd, "permit_acquire") == 0 && n >= 2 && n <= 4) {
        if (n >= 3 && strcmp(f[2], "-") != 0 && !number(f[2], "WAIT_MS", &a)) return true;
        if (n == 4 && !number(f[3], "LEASE_MS", &b)) return true;
        if (!(h = counted_for(f[1], PERMITS))) return true;
        char id[FERROLOCK_PERMIT_ID_SIZE];
        ferrolock_status st = ferrolock_permits_acquire(h, a, b, id, sizeof id);
        if (st == FERROLOCK_OK) say("ok %s", id);
        else say_waited(st, "ok");
    } else if (strcmp(cmd, "permit_release") == 0 && n == 3) {
        if (!(h = counted_for(f[1], PERMITS))) return true;
        ferrolock_status st = ferrolock_permits_release(h, f[2], &flag);
        say_bool(st, flag);
    } else if (strcmp(cmd, "latch_set") == 0 && n == 3) {
        if (!number(f[2], "COUNT", &a) || !(h = counted_for(f[1], LATCH))) return true;
        ferrolock_status st = ferrolock_latch_try_set_count(h, (uint64_t)a, &flag);
        say_bool(st, flag);
    } else if (strcmp(cmd, "latch_down") == 0 && n == 2) {
        if (!(h = counted_for(f[1], LATCH))) return true;
        ferrolock_status st = ferrolock_latch_count_down(h, &out);
        say_count(st, out);
    } else if (strcmp(cmd, "latch_count") == 0 && n == 2) {
        if (!(h = counted_for(f[1], LATCH))) return true;
        ferrolock_status st = ferrolock_latch_count(h, &out);
        say_count(st, out);
    } else if (strcmp(cmd, "latch_wait") == 0 && (n == 2 || n == 3)) {
        if (n == 3 && !number(f[2], "WAIT_MS", &a)) return true;
        if (!(h = counted_for(f[1], LATCH))) return true;
        say_waited(ferrolock_latch_wait(h, a), "ok open");
    } else {
        return false;
    }
    return true;
}

/* `label NAME TEXT`: TEXT names this worker's holders of NAME in their notes. */
static void set_label(const char *name, const char *text) {
    for (struct entry *e = entries; e; e = e->next) {
        if (strcmp(e->name, name) != 0) continue;
        ferrolock_status st = ferrolock_lock_set_label(e->lock, text);
        if (st != FERROLOCK_OK) {
            say_status(st);
            return;
        }
    }
    struct label *l = labels;
    while (l && strcmp(l->name, name) != 0) l = l->next;
    char *copy = strdup(text);
    if (!copy || (!l && !(l = calloc(1, sizeof *l)))) {
        free(copy);
        say_error("err", "ERR_INTERNAL", "out of memory");
        return;
    }
    if (!l->name) {
        if (!(l->name = strdup(name))) {
            free(l);
            free(copy);
            say_error("err", "ERR_INTERNAL", "out of memory");
            return;
        }
        l->next = labels;
        labels = l;
    }
    free(l->text);
    l->text = copy;
    say("ok");
}

/* `holder NAME`: the description of who held NAME when this worker's latest acquire
 * of it with a wait timed out. */
static void say_holder(const char *name) {
    struct entry *e = entry_named(name, NULL);
    if (!e) return;
    ferrolock_holder h;
    ferrolock_status st = ferrolock_lock_holder_info(e->lock, &h);
    if (st != FERROLOCK_OK) say_status(st);
    else say("ok %s", h.owner ? h.description : "-");
}

/* `waitlog NAME`: the latest slow-wait line naming lock "NAME". */
static void say_waitlog(const char *name) {
    char needle[512];
    snprintf(needle, sizeof needle, " for lock \"%s\"", name);
    pthread_mutex_lock(&log_mutex);
    const char *found = NULL;
    for (unsigned i = logged_next; i-- > 0 && logged_next - i <= LOGGED && !found;)
        if (strstr(logged[i % LOGGED], needle)) found = logged[i % LOGGED];
    if (found) say("ok %s", found);
    else say("ok -");
    pthread_mutex_unlock(&log_mutex);
}

/* `elect`: a candidate that campaigns, writes to the outside fence with its term while
 * it leads (every 20 ms, checking ferrolock_election_is_lost() before each write), and
 * resigns after RESIGN_MS (0: leads until it is killed or loses), campaigning again
 * each time; on a thread of its own. The fence is a plain redis-server: one EVALSHA
 * per write over a socket of the candidate's own. */
struct candidate {
    ferrolock_election *election;
    int fence;
    char sha[64], who[64];
    int64_t resign_ms;
};

static void fence_write(struct candidate *c, const char *op, uint64_t term) {
    char number[24], request[512], reply[64];
    snprintf(number, sizeof number, "%" PRIu64, term);
    const char *args[] = {"EVALSHA", c->sha, "3", "fence", "fence:dead", "fence:events", op, number, c->who};
    int len = snprintf(request, sizeof request, "*9\r\n");
    for (int i = 0; i < 9; i++)
        len += snprintf(request + len, sizeof request - (size_t)len, "$%zu\r\n%s\r\n", strlen(args[i]), args[i]);
    if (write(c->fence, request, (size_t)len) != len) return;
    /* The reply is one line (":1" or ":0", or an error): read up to its end. */
    size_t got = 0;
    while (got < sizeof reply) {
        ssize_t r = read(c->fence, reply + got, 1);
        if (r <= 0 || reply[got++] == '\n') break;
    }
}

static void *candidate_run(void *p) {
    struct candidate *c = p;
    for (;;) {
        uint64_t term = 0;
        if (ferrolock_election_campaign(c->election, -1, &term) != FERROLOCK_OK) {
            sleep_us(50000);
            continue;
        }
        fence_write(c, "enter", term);
        uint64_t started = now_ns();
        for (;;) {
            sleep_us(20000);
            bool lost = false;
            ferrolock_election_is_lost(c->election, &lost);
            if (lost) {
                fence_write(c, "leave", term);
                break;
            }
            fence_write(c, "write", term);
            if (c->resign_ms > 0 && now_ns() - started >= (uint64_t)c->resign_ms * 1000000u) {
                fence_write(c, "leave", term);
                ferrolock_election_resign(c->election, NULL);
                break;
            }
        }
    }
    return NULL;
}

static void elect(char **f) {
    int64_t port, resign_ms;
    if (!number(f[2], "FENCE_PORT", &port) || !number(f[5], "RESIGN_MS", &resign_ms)) return;
    struct candidate *c = calloc(1, sizeof *c);
    if (!c) abort();
    snprintf(c->sha, sizeof c->sha, "%s", f[3]);
    snprintf(c->who, sizeof c->who, "%s", f[4]);
    c->resign_ms = resign_ms;
    ferrolock_status st = ferrolock_election_new(client, f[1], &c->election);
    if (st != FERROLOCK_OK) {
        free(c);
        say_status(st);
        return;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->fence = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fence < 0 || connect(c->fence, (struct sockaddr *)&addr, sizeof addr) != 0) {
        say_error("err", "ERR_CONNECTION", "the fence at port %" PRId64 ": %s", port, strerror(errno));
        return;
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, candidate_run, c) != 0) abort();
    pthread_detach(thread);
    say("ok");
}

/* Runs one command line (split in place) and prints its one reply. */
static void run(char *line) {
    enum { MAX_FIELDS = 10 };
    char *f[MAX_FIELDS];
    int n = 1;
    for (const char *p = line; (p = strchr(p, ' ')); p++) n++;
    if (n > MAX_FIELDS) { /* more than any command has; the line is reported whole */
        say_error("err", "ERR_INVALID_ARGUMENT", "malformed command \"%s\"; see tests/workers/README.md", line);
        return;
    }
    n = 0;
    for (char *p = line;; p++) {
        f[n++] = p;
        if (!(p = strchr(p, ' '))) break;
        *p = '\0';
    }
    struct entry *e;
    if (strcmp(f[0], "acquire") == 0 && (n == 3 || n == 4)) {
        int64_t wait_ms = -1;
        char token[24];
        int kind = parse_kind(f[2]);
        if (kind < 0) return;
        if (n == 4 && !number(f[3], "WAIT_MS", &wait_ms)) return;
        if (!(e = entry_for(f[1], (ferrolock_lock_kind)kind))) return;
        ferrolock_status st = acquire(e, wait_ms, token);
        if (st == FERROLOCK_OK) say("ok %s", token);
        else say_waited(st, "ok");
        return;
    } else if (strcmp(f[0], "release") == 0 && (n == 2 || n == 3)) {
        if (!(e = entry_named(f[1], n == 3 ? f[2] : NULL))) return;
        ferrolock_status st = release(e);
        if (st == FERROLOCK_OK) say("ok");
        else say_status(st);
        return;
    } else if (strcmp(f[0], "force_unlock") == 0 && n == 2) {
        bool was_locked = false;
        if (!(e = entry_named(f[1], NULL))) return;
        ferrolock_status st = ferrolock_lock_force_unlock(e->lock, &was_locked);
        say_bool(st, was_locked);
        return;
    } else if (strcmp(f[0], "lost") == 0 && (n == 2 || n == 3)) {
        if (!(e = entry_named(f[1], n == 3 ? f[2] : NULL))) return;
        if (e->depth == 0) {
            say_error("err", "ERR_NOT_OWNER", "lock \"%s\" (%s) is not held by this worker", f[1], kind_names[e->kind]);
            return;
        }
        bool lost = false;
        pthread_mutex_lock(&lost_mutex);
        while (ferrolock_lock_is_lost(e->lock, &lost) == FERROLOCK_OK && !lost) pthread_cond_wait(&lost_cond, &lost_mutex);
        pthread_mutex_unlock(&lost_mutex);
        say("lost");
        return;
    } else if (strcmp(f[0], "count") == 0 && (n == 7 || n == 8)) {
        int64_t max, seconds, hold_us, permits;
        if (!number(f[4], "MAX", &max) || !number(f[5], "SECONDS", &seconds) || !number(f[6], "HOLD_US", &hold_us)) return;
        struct section section = {NULL, NULL};
        if (n == 8 && strncmp(f[7], "sem:", 4) == 0) {
            if (!number(f[7] + 4, "the P of sem:P", &permits)) return;
            if (!(section.sem = counted_for(f[1], SEMAPHORE))) return;
            ferrolock_status st = ferrolock_semaphore_try_set_permits(section.sem, (uint64_t)permits, NULL);
            if (st != FERROLOCK_OK) {
                say_status(st);
                return;
            }
        } else {
            int kind = n == 8 ? parse_kind(f[7]) : FERROLOCK_LOCK_FENCED;
            if (kind < 0 || !(section.lock = entry_for(f[1], (ferrolock_lock_kind)kind))) return;
        }
        count(&section, f[2], f[3], max, seconds, hold_us);
        return;
    } else if (strcmp(f[0], "elect") == 0 && n == 6) {
        elect(f);
        return;
    } else if (strcmp(f[0], "label") == 0 && n >= 3) {
        for (int i = 3; i < n; i++) f[i][-1] = ' '; /* TEXT is the rest of the line */
        set_label(f[1], f[2]);
        return;
    } else if (strcmp(f[0], "holder") == 0 && n == 2) {
        say_holder(f[1]);
        return;
    } else if (strcmp(f[0], "waitlog") == 0 && n == 2) {
        say_waitlog(f[1]);
        return;
    } else if (run_counted(f, n)) {
        return;
    }
    for (int i = 1; i < n; i++) f[i][-1] = ' '; /* undo the split */
    say_error("err", "ERR_INVALID_ARGUMENT", "malformed command \"%s\"; see tests/workers/README.md", line);
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
    ferrolock_options options;
    ferrolock_options_init(&options);
    options.watchdog_timeout_ms = watchdog_ms;
    options.app_name = getenv("FERROLOCK_WORKER_APP");
    const char *env_ms[2] = {getenv("FERROLOCK_WORKER_NOTE_AFTER_MS"), getenv("FERROLOCK_WORKER_SLOW_WAIT_MS")};
    int64_t *field[2] = {&options.holder_note_after_ms, &options.slow_wait_log_ms};
    for (int i = 0; i < 2; i++) {
        if (!env_ms[i] || !*env_ms[i]) continue;
        size_t n = strlen(env_ms[i]);
        if (n > 15 || strspn(env_ms[i], "0123456789") != n) {
            say_error("fail", "ERR_INVALID_ARGUMENT", "%s must be a non-negative integer, not \"%s\"",
                      i ? "FERROLOCK_WORKER_SLOW_WAIT_MS" : "FERROLOCK_WORKER_NOTE_AFTER_MS", env_ms[i]);
            return 1;
        }
        *field[i] = strtoll(env_ms[i], NULL, 10);
    }
    ferrolock_status st = ferrolock_set_logger(on_log, "info", NULL);
    if (st == FERROLOCK_OK) st = ferrolock_client_connect_opts(argv[1], &options, &client);
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
    while (labels) {
        struct label *next = labels->next;
        free(labels->name);
        free(labels->text);
        free(labels);
        labels = next;
    }
    ferrolock_set_logger(NULL, NULL, NULL);
    for (unsigned i = 0; i < LOGGED; i++) free(logged[i]);
    while (counteds) {
        struct counted *next = counteds->next;
        if (counteds->shape == SEMAPHORE) ferrolock_semaphore_free(counteds->handle);
        else if (counteds->shape == PERMITS) ferrolock_permits_free(counteds->handle);
        else ferrolock_latch_free(counteds->handle);
        free(counteds->name);
        free(counteds);
        counteds = next;
    }
    say("bye");
    return 0;
}

/* 8 pthreads x 100 non-atomic increments of a shared counter under one lock name:
 * the count must be exact. Threads 0-3 share one handle of client A (each thread is
 * its own holder), threads 4-7 one handle of client B (exclusion across clients). */
#include "harness.h"

#define THREADS 8
#define ROUNDS 100

static volatile long counter;
static pthread_barrier_t start;

typedef struct worker {
    ferrolock_lock *lock;
    int failures;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        if (ferrolock_lock_acquire(w->lock, -1, -1) != FERROLOCK_OK) {
            w->failures++;
            continue;
        }
        long seen = counter; /* read, yield, write: loses updates without the lock */
        sched_yield();
        counter = seen + 1;
        if (ferrolock_lock_release(w->lock) != FERROLOCK_OK) w->failures++;
    }
    return NULL;
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *a = connect_client(url, -1);
    ferrolock_client *b = connect_client(url, -1);
    ferrolock_lock *la = new_lock(a, "counter");
    ferrolock_lock *lb = new_lock(b, "counter");

    pthread_t threads[THREADS];
    worker workers[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    int64_t t0 = now_ms();
    for (int i = 0; i < THREADS; i++) {
        workers[i].lock = i < THREADS / 2 ? la : lb;
        workers[i].failures = 0;
        CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
    }
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        failures += workers[i].failures;
    }
    int64_t elapsed = now_ms() - t0;
    pthread_barrier_destroy(&start);

    if (failures != 0) FAIL("%d acquire/release calls failed", failures);
    if (counter != THREADS * ROUNDS) FAIL("counter = %ld, expected %d", counter, THREADS * ROUNDS);
    CHECK(!is_locked(la));
    printf("counter: %d increments exact in %lld ms (%.2f ms per cycle)\n", THREADS * ROUNDS,
           (long long)elapsed, (double)elapsed / (THREADS * ROUNDS));

    ferrolock_lock_free(la);
    ferrolock_lock_free(lb);
    ferrolock_client_free(a);
    ferrolock_client_free(b);
    return 0;
}

/* Leader election: two candidates on two clients take turns with growing terms
 * (a waiting campaign is woken by the resignation), `ferrolock_election_leader()`
 * names the leader right after its campaign, a lost leadership is told (callback,
 * is_lost, term 0), an observer tells every change in order, and a campaign with a
 * wait that runs out is FERROLOCK_NOT_ACQUIRED. */
#include "harness.h"

typedef struct campaign_arg {
    ferrolock_election *e;
    uint64_t term;
    ferrolock_status status;
    event done;
} campaign_arg;

static void *campaign_thread(void *p) {
    campaign_arg *a = p;
    a->status = ferrolock_election_campaign(a->e, -1, &a->term);
    event_signal(&a->done);
    return NULL;
}

static void on_lost(const char *name, void *user) {
    (void)name;
    event_signal(user);
}

int main(void) {
    const char *url = redis_start();
    ferrolock_client *a = connect_client(url, 1500);
    ferrolock_client *b = connect_client(url, 1500);
    ferrolock_election *ea = NULL, *eb = NULL;
    OK(ferrolock_election_new(a, "el", &ea));
    OK(ferrolock_election_new(b, "el", &eb));
    OK(ferrolock_election_set_label(ea, "replica-0"));

    uint64_t term = 99;
    ferrolock_holder h;
    OK(ferrolock_election_leader(eb, &term, &h));
    CHECK(term == 0 && h.owner == NULL);

    ferrolock_observer *obs = NULL;
    OK(ferrolock_observer_new(eb, &obs));
    OK(ferrolock_observer_next(obs, -1, &term, &h));
    CHECK(term == 0 && h.owner == NULL); /* nobody leads at first */
    EXPECT(ferrolock_observer_next(obs, 50, &term, &h), FERROLOCK_NOT_ACQUIRED);

    uint64_t t1 = 0;
    OK(ferrolock_election_campaign(ea, -1, &t1));
    CHECK(t1 > 0);
    OK(ferrolock_election_term(ea, &term));
    CHECK(term == t1);
    EXPECT(ferrolock_election_campaign(ea, 0, &term), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_election_leader(eb, &term, &h));
    CHECK(term == t1 && h.owner != NULL && h.pid == (int64_t)getpid());
    if (!h.thread || strcmp(h.thread, "replica-0") != 0) FAIL("leader note's label: %s", h.thread ? h.thread : "(none)");
    EXPECT(ferrolock_election_campaign(eb, 100, &term), FERROLOCK_NOT_ACQUIRED);

    /* The other candidate waits; the resignation hands over at once. */
    campaign_arg arg = {.e = eb};
    event_init(&arg.done);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, campaign_thread, &arg) == 0);
    int64_t until = now_ms() + 10000;
    ferrolock_metrics m;
    do {
        OK(ferrolock_client_metrics(b, &m));
    } while (m.waiters_now != 1 && now_ms() < until);
    CHECK(m.waiters_now == 1);
    bool resigned = false;
    OK(ferrolock_election_resign(ea, &resigned));
    CHECK(resigned);
    if (!event_wait(&arg.done, 1, 5000)) FAIL("the waiting campaign did not lead within 5 s of the resignation");
    pthread_join(thread, NULL);
    OK(arg.status);
    CHECK(arg.term > t1);
    OK(ferrolock_election_term(ea, &term));
    CHECK(term == 0);

    /* The observer told both leaders, in order (a vacancy in between may show). */
    uint64_t seen[4];
    int n = 0;
    while (n < 4) {
        OK(ferrolock_observer_next(obs, 10000, &term, &h));
        if (term != 0) seen[n++] = term;
        if (term == arg.term) break;
    }
    CHECK(n == 2 && seen[0] == t1 && seen[1] == arg.term);

    /* A lost leadership is told. */
    event lost;
    event_init(&lost);
    OK(ferrolock_election_on_lost(eb, on_lost, &lost));
    ferrolock_lock *breaker = new_lock(a, "el");
    OK(ferrolock_lock_force_unlock(breaker, NULL));
    if (!event_wait(&lost, 1, 5000)) FAIL("on_lost not called within 5 s of the force unlock");
    bool is_lost = false;
    OK(ferrolock_election_is_lost(eb, &is_lost));
    CHECK(is_lost);
    OK(ferrolock_election_term(eb, &term));
    CHECK(term == 0);
    OK(ferrolock_election_resign(eb, &resigned));
    CHECK(!resigned);
    OK(ferrolock_election_on_lost(eb, NULL, NULL));
    event_destroy(&lost);
    event_destroy(&arg.done);

    /* Freeing a leading candidate resigns. */
    OK(ferrolock_election_campaign(ea, 5000, &term));
    OK(ferrolock_election_free(ea));
    OK(ferrolock_election_leader(eb, &term, &h));
    CHECK(h.owner == NULL);
    EXPECT(ferrolock_election_free(ea), FERROLOCK_ERR_INVALID_ARGUMENT);
    EXPECT(ferrolock_election_campaign(NULL, 0, &term), FERROLOCK_ERR_INVALID_ARGUMENT);
    OK(ferrolock_observer_free(obs));
    OK(ferrolock_election_free(eb));
    OK(ferrolock_lock_free(breaker));
    ferrolock_client_free(a);
    ferrolock_client_free(b);
    redis_stop();
    printf("election: terms %llu then %llu, handed over on resignation\n", (unsigned long long)t1, (unsigned long long)arg.term);
    return 0;
}

// ferrolock.hpp's family against a real redis-server: std::lock_guard on
// ferrolock::semaphore (one permit per scope), std::shared_lock / std::unique_lock on
// ferrolock::shared_mutex, ferrolock::permits and ferrolock::latch, exceptions carrying
// the status; ferrolock::inspection and ferrolock::scan(). Compiled with g++ -std=c++17 under ASan + UBSan.
#include "ferrolock.hpp"

#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "harness.h"

using namespace std::chrono;

int main() {
    const char *url = redis_start();
    ferrolock::client client(url);
    ferrolock::client other(url);

    // A semaphore of 2: two scopes inside, a third try refused, each scope gives back.
    ferrolock::semaphore sem(client, "cxx-sem");
    ferrolock::semaphore sem2(other, "cxx-sem");
    CHECK(sem.try_set_permits(2));
    CHECK(!sem2.try_set_permits(9));
    {
        std::lock_guard<ferrolock::semaphore> one(sem);
        std::unique_lock<ferrolock::semaphore> two(sem2, std::try_to_lock);
        CHECK(two.owns_lock());
        CHECK(sem.available() == 0);
        CHECK(!sem2.try_lock());
        CHECK(!sem2.try_lock_for(milliseconds(50)));
        CHECK(!sem.try_acquire_for(milliseconds(20), 1));
    }
    CHECK(ferrolock::last_unlock_status() == FERROLOCK_OK);
    CHECK(sem.available() == 2);
    sem.acquire(2);
    CHECK(sem2.release(2) == 2);
    CHECK(sem.drain() == 2);
    CHECK(sem.release(2) == 2);
    try {
        sem.acquire(0);
        FAIL("acquire(0) did not throw");
    } catch (const ferrolock::error &e) {
        CHECK(e.status() == FERROLOCK_ERR_INVALID_ARGUMENT);
    }
    ferrolock::semaphore moved(std::move(sem));
    CHECK(moved.available() == 2);

    // shared_mutex: readers through std::shared_lock, the writer through std::unique_lock.
    ferrolock::shared_mutex rw(client, "cxx-rw");
    ferrolock::shared_mutex rw2(other, "cxx-rw");
    {
        std::shared_lock<ferrolock::shared_mutex> r1(rw);
        std::shared_lock<ferrolock::shared_mutex> r2(rw2, std::try_to_lock);
        CHECK(r2.owns_lock());
        CHECK(!rw2.try_lock());
        CHECK(!rw2.try_lock_for(milliseconds(50)));
    }
    {
        std::unique_lock<ferrolock::shared_mutex> w(rw);
        CHECK(!rw2.try_lock_shared());
        CHECK(!rw2.try_lock_shared_for(milliseconds(20)));
        std::shared_lock<ferrolock::shared_mutex> also_read(rw);  // the writer also reads
    }
    CHECK(rw2.try_lock());
    rw2.unlock();
    CHECK(ferrolock::last_unlock_status() == FERROLOCK_OK);

    // permits and a latch.
    ferrolock::permits ps(client, "cxx-quota");
    CHECK(ps.try_set_permits(1));
    std::string id = ps.acquire(0);
    CHECK(id.size() == 32);
    CHECK(ps.acquire(0).empty());
    CHECK(ps.available() == 0);
    CHECK(ps.release(id));
    CHECK(!ps.release(id));
    ferrolock::latch latch(client, "cxx-ready");
    ferrolock::latch latch2(other, "cxx-ready");
    CHECK(latch.try_set_count(1));
    CHECK(!latch2.wait_for(milliseconds(30)));
    std::thread waiter([&] { latch2.wait(); });
    CHECK(latch.count() == 1);
    CHECK(latch.count_down() == 0);
    waiter.join();
    CHECK(latch2.wait_for(milliseconds(0)));
    try {
        latch.try_set_count(0);
        FAIL("try_set_count(0) did not throw");
    } catch (const ferrolock::error &e) {
        CHECK(e.status() == FERROLOCK_ERR_INVALID_ARGUMENT);
        CHECK(strstr(e.what(), "count = 0") != nullptr);
    }

    // Inspecting: a mutex held by the other client, then the names under a prefix.
    ferrolock::mutex held(other, "cxx-held");
    held.lock();
    ferrolock::inspection in(client, "cxx-held");
    CHECK(in.kind() == FERROLOCK_OBJECT_LOCK);
    std::vector<ferrolock::inspection::holder> holders = in.holders();
    CHECK(holders.size() == 1 && holders[0].count == 1 && !holders[0].has_note);
    CHECK(holders[0].owner.compare(0, other.id().size(), other.id()) == 0);
    CHECK(in.lease_left_ms() > 0 && in.waiters() == 0 && in.last_token() == 0);
    CHECK(holders[0].pid == -1 && holders[0].thread.empty() && holders[0].held_for_ms == -1);
    CHECK(holders[0].description.find(holders[0].owner + " (no note") == 0); // a short hold writes none
    // A wait that runs out keeps who was in the way; a try does not.
    ferrolock::mutex blocked(client, "cxx-held");
    ferrolock::holder seen;
    CHECK(!blocked.last_holder(seen));
    CHECK(!blocked.try_lock_for(milliseconds(50)));
    CHECK(blocked.last_holder(seen) && seen.owner == holders[0].owner && seen.count == 1);
    blocked.set_label("cxx-worker");
    ferrolock::inspection as_latch(client, "cxx-sem", FERROLOCK_OBJECT_COUNT_DOWN_LATCH);
    CHECK(as_latch.kind() == FERROLOCK_OBJECT_COUNT_DOWN_LATCH);
    std::vector<std::string> names = ferrolock::scan(client, "cxx-");
    CHECK((names == std::vector<std::string>{"cxx-held", "cxx-quota", "cxx-sem"}));
    CHECK(ferrolock::scan(client, "cxx-none").empty());
    held.unlock();
    try {
        ferrolock::inspection bad(client, "");
        FAIL("inspecting an empty name did not throw");
    } catch (const ferrolock::error &e) {
        CHECK(e.status() == FERROLOCK_ERR_INVALID_ARGUMENT);
    }
    std::printf("cxx_family: semaphore RAII, shared_mutex with std::shared_lock, permits, latch, inspection, scan\n");
    return 0;
}

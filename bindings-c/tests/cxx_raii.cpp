// ferrolock.hpp against a real redis-server: std::lock_guard, std::unique_lock and
// std::scoped_lock on ferrolock::mutex, try_lock_for/until bounds, exceptions
// carrying the status, unlock() that never throws, moves, a mutex outliving its
// client. Compiled with g++ -std=c++17 under ASan + UBSan.
#include "ferrolock.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "harness.h"

using namespace std::chrono;

// Runs `f`, which must throw ferrolock::error with `want`; returns its message.
template <class F>
static std::string expect_throw(F f, ferrolock_status want, const char *what) {
    try {
        f();
    } catch (const ferrolock::error &e) {
        if (e.status() != want)
            FAIL("%s threw %s, expected %s", what, ferrolock_status_str(e.status()), ferrolock_status_str(want));
        if (!strstr(e.what(), ferrolock_status_str(want))) FAIL("%s: what() lacks the status: %s", what, e.what());
        return e.what();
    }
    FAIL("%s did not throw", what);
}

int main() {
    const char *url = redis_start();
    ferrolock::client client(url);
    ferrolock::client other(url);
    CHECK(client.id().size() == 36 && client.id() != other.id());
    ferrolock::mutex a(client, "cxx");
    ferrolock::mutex rival(other, "cxx");

    // std::lock_guard: held inside the scope, free after it.
    {
        std::lock_guard<ferrolock::mutex> guard(a);
        CHECK(a.is_locked());
        CHECK(!rival.try_lock());
        {
            std::lock_guard<ferrolock::mutex> again(a); // re-entrant for this thread
        }
        CHECK(!rival.try_lock());
    }
    CHECK(!a.is_locked());
    CHECK(ferrolock::last_unlock_status() == FERROLOCK_OK);

    // std::unique_lock with a timeout while another holder (a thread of its own: the
    // holder is (mutex, thread)) has it: false after the bound; then it gets it once
    // that holder releases it.
    event held, go;
    event_init(&held);
    event_init(&go);
    std::thread holder([&] {
        rival.lock();
        event_signal(&held);
        CHECK(event_wait(&go, 1, 60000));
        rival.unlock();
        CHECK(ferrolock::last_unlock_status() == FERROLOCK_OK);
    });
    CHECK(event_wait(&held, 1, 20000));
    {
        auto t0 = steady_clock::now();
        std::unique_lock<ferrolock::mutex> ul(a, milliseconds(300));
        auto waited = steady_clock::now() - t0;
        CHECK(!ul.owns_lock());
        CHECK(waited >= milliseconds(300));
        CHECK(!ul.try_lock_until(steady_clock::now() + milliseconds(50)));
        CHECK(!ul.try_lock_for(microseconds(1))); // rounded up to 1 ms, not "forever"
    }
    event_signal(&go);
    {
        std::unique_lock<ferrolock::mutex> ul(a, std::defer_lock);
        CHECK(ul.try_lock_for(seconds(20)));
        CHECK(!rival.try_lock()); // (a, this thread) holds it now
    }
    holder.join();
    event_destroy(&held);
    event_destroy(&go);
    CHECK(ferrolock::last_unlock_status() == FERROLOCK_OK);
    CHECK(!a.is_locked());

    // std::scoped_lock over two distributed locks (std::lock's try-and-back-off).
    ferrolock::mutex b(client, "cxx-b");
    ferrolock::mutex rival_b(other, "cxx-b");
    {
        std::scoped_lock both(a, b);
        CHECK(!rival.try_lock() && !rival_b.try_lock());
    }
    CHECK(rival.try_lock() && rival_b.try_lock());
    rival.unlock();
    rival_b.unlock();

    // unlock() never throws: a failed one is kept for the thread; release() throws.
    a.unlock();
    CHECK(ferrolock::last_unlock_status() == FERROLOCK_ERR_NOT_OWNER);
    expect_throw([&] { a.release(); }, FERROLOCK_ERR_NOT_OWNER, "release() when not held");
    {
        ferrolock::mutex leased(client, "cxx-lease", FERROLOCK_LOCK_REENTRANT, 100);
        std::unique_lock<ferrolock::mutex> ul(leased);
        ferrolock::mutex waiter(other, "cxx-lease");
        CHECK(waiter.try_lock_for(seconds(10))); // the 100 ms lease ran out
        waiter.unlock();
        CHECK(leased.lost());
    } // the guard's unlock fails without throwing
    CHECK(ferrolock::last_unlock_status() == FERROLOCK_ERR_LOCK_LOST);

    // Fenced tokens increase.
    ferrolock::mutex fenced(client, "cxx-fenced", FERROLOCK_LOCK_FENCED);
    uint64_t first, second;
    {
        std::lock_guard<ferrolock::mutex> g(fenced);
        first = fenced.token();
    }
    {
        std::lock_guard<ferrolock::mutex> g(fenced);
        second = fenced.token();
    }
    CHECK(second > first);
    expect_throw([&] { fenced.token(); }, FERROLOCK_ERR_NOT_OWNER, "token() when not held");

    // Errors as exceptions with the status and the message.
    std::string msg = expect_throw([] { ferrolock::client bad("not a url"); }, FERROLOCK_ERR_INVALID_ARGUMENT, "bad url");
    CHECK(msg.find("URL") != std::string::npos);
    expect_throw([&] { ferrolock::mutex m(client, ""); }, FERROLOCK_ERR_INVALID_ARGUMENT, "empty name");

    // Moves: the moved-from object frees nothing; the handle moves with it.
    ferrolock::mutex moved(std::move(b));
    CHECK(b.native_handle() == nullptr && moved.native_handle() != nullptr);
    ferrolock::mutex assigned(client, "cxx-assigned");
    assigned = std::move(moved);
    {
        std::lock_guard<ferrolock::mutex> g(assigned);
        CHECK(rival_b.is_locked());
    }

    // A Redlock over one server's three names, through the same RAII.
    ferrolock::mutex m1(client, "cxx-r1"), m2(client, "cxx-r2"), m3(client, "cxx-r3");
    ferrolock::mutex red = ferrolock::mutex::multi({&m1, &m2, &m3}, FERROLOCK_QUORUM_MAJORITY);
    {
        std::lock_guard<ferrolock::mutex> g(red);
        CHECK(m1.is_locked() && m3.is_locked());
    }
    CHECK(!m1.is_locked());

    // Leases and metrics through the wrapper.
    {
        ferrolock::mutex leased(client, "cxx-extend", FERROLOCK_LOCK_REENTRANT, 2000);
        std::lock_guard<ferrolock::mutex> g(leased);
        CHECK(leased.extend(seconds(3)) > milliseconds(4000));
        CHECK(leased.set_lease(seconds(60)) > milliseconds(59000));
        CHECK(leased.reacquire() <= milliseconds(2000));
        expect_throw([&] { a.extend(seconds(1)); }, FERROLOCK_ERR_NOT_OWNER, "extend() when not held");
    }
    ferrolock_metrics m = client.metrics();
    CHECK(m.size == sizeof m && m.acquired > 0 && m.holds_now == 0);
    std::string text = client.metrics_text();
    CHECK(text.find("client=\"" + client.id() + "\"") != std::string::npos);
    {
        ferrolock_options o;
        ferrolock_options_init(&o);
        o.app_name = "cxx-app";
        ferrolock::client named(url, o);
        o.app_name = "bad name";
        expect_throw([&] { ferrolock::client bad(url, o); }, FERROLOCK_ERR_INVALID_ARGUMENT, "a bad app_name");
    }

    // A mutex that outlives its client: its calls throw FERROLOCK_ERR_CLIENT_CLOSED.
    std::unique_ptr<ferrolock::client> shortlived(new ferrolock::client(url));
    ferrolock::mutex orphan(*shortlived, "cxx-orphan");
    shortlived.reset();
    expect_throw([&] { orphan.lock(); }, FERROLOCK_ERR_CLIENT_CLOSED, "lock() after the client was freed");

    std::printf("c++ raii: lock_guard, unique_lock, scoped_lock, timeouts, exceptions ok\n");
    return 0;
}

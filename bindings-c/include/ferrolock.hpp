/*
 * ferrolock.hpp: a header-only C++11 RAII wrapper over ferrolock.h.
 *
 *     ferrolock::client client("redis://127.0.0.1:6379");
 *     ferrolock::mutex lock(client, "orders:42");
 *     {
 *         std::lock_guard<ferrolock::mutex> guard(lock);     // waits; released at scope end
 *         ...
 *     }
 *     std::unique_lock<ferrolock::mutex> ul(lock, std::chrono::seconds(5));  // try_lock_for
 *     if (ul) { ... }
 *
 * `ferrolock::mutex` (a lock handle) is a Lockable / TimedLockable (lock(), try_lock(), try_lock_for(),
 * try_lock_until(), unlock()), so std::lock_guard, std::unique_lock, std::scoped_lock
 * and std::lock() work with it. Like the C handle it is re-entrant per thread: the
 * holder is (mutex object, thread).
 *
 * `ferrolock::shared_mutex` (both sides of a read-write lock) is also a SharedLockable
 * (lock_shared(), try_lock_shared*(), unlock_shared()) for std::shared_lock.
 * `ferrolock::semaphore` is a Lockable for one permit (std::lock_guard<ferrolock::semaphore>
 * takes one and gives it back at scope end) and has acquire(n)/release(n) like
 * std::counting_semaphore; `ferrolock::permits` and `ferrolock::latch` wrap the
 * permit-expirable semaphore and the count-down latch.
 *
 * `ferrolock::inspection` is a snapshot of what a name is and who holds it
 * (ferrolock_inspect()); `ferrolock::scan()` lists the names under a prefix.
 *
 * Errors throw ferrolock::error (a std::runtime_error) carrying the ferrolock_status
 * and the library's message; FERROLOCK_NOT_ACQUIRED is not an error (try_lock*
 * return false). The one exception: unlock() never throws, because the standard
 * lock adapters call it from destructors; a failed unlock (the hold was lost, or
 * Redis did not answer) is kept in ferrolock::last_unlock_status() for the calling
 * thread. Use mutex::release() to get an exception instead.
 *
 * Link with -lferrolock as for C (pkg-config --cflags --libs ferrolock).
 */
#ifndef FERROLOCK_HPP
#define FERROLOCK_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ferrolock.h"

namespace ferrolock {

/** A failed ferrolock call: its status and the library's message. */
class error : public std::runtime_error {
public:
    error(ferrolock_status status, const std::string &message)
        : std::runtime_error(std::string(ferrolock_status_str(status)) + ": " + message), status_(status) {}

    /** The status the call returned, e.g. FERROLOCK_ERR_LOCK_LOST. */
    ferrolock_status status() const noexcept { return status_; }

private:
    ferrolock_status status_;
};

namespace detail {
/* Throws for anything but FERROLOCK_OK (the message is the calling thread's). */
inline void check(ferrolock_status s) {
    if (s != FERROLOCK_OK) throw error(s, ferrolock_last_error());
}

/* A timeout as the C API takes it: whole ms, rounded up (a positive wait never
 * becomes "try once"), negative as 0, and at most 7 days. */
template <class Rep, class Period>
inline int64_t wait_ms(const std::chrono::duration<Rep, Period> &d) {
    typedef std::chrono::duration<double, std::milli> ms_double;
    const double ms = std::chrono::duration_cast<ms_double>(d).count();
    const double week = 7.0 * 24 * 3600 * 1000;
    if (!(ms > 0)) return 0;
    if (ms >= week) return static_cast<int64_t>(week);
    const int64_t whole = static_cast<int64_t>(ms);
    return static_cast<double>(whole) < ms ? whole + 1 : whole;
}

inline ferrolock_status &unlock_status() {
    static thread_local ferrolock_status status = FERROLOCK_OK;
    return status;
}
}  // namespace detail

/** The status of the calling thread's last ferrolock::mutex::unlock(): FERROLOCK_OK,
 *  or why it failed (e.g. FERROLOCK_ERR_LOCK_LOST: the critical section was not
 *  protected since the hold was lost). */
inline ferrolock_status last_unlock_status() noexcept { return detail::unlock_status(); }

/** A ferrolock_client: one per process, shared by threads. Move-only. */
class client {
public:
    /** ferrolock_client_connect(): `watchdog_timeout_ms` <= 0 is the default 30 s. */
    explicit client(const std::string &url, int64_t watchdog_timeout_ms = -1) {
        detail::check(ferrolock_client_connect(url.c_str(), watchdog_timeout_ms, &c_));
    }

    /** ferrolock_client_connect_opts(): `options` filled by ferrolock_options_init(). */
    client(const std::string &url, const ferrolock_options &options) {
        detail::check(ferrolock_client_connect_opts(url.c_str(), &options, &c_));
    }

    /** Releases what the client still holds (ferrolock_client_free()). Mutex objects
     *  made from it may outlive it: their calls then throw FERROLOCK_ERR_CLIENT_CLOSED. */
    ~client() { ferrolock_client_free(c_); }

    client(client &&other) noexcept : c_(other.c_) { other.c_ = nullptr; }
    client &operator=(client &&other) noexcept {
        if (this != &other) {
            ferrolock_client_free(c_);
            c_ = other.c_;
            other.c_ = nullptr;
        }
        return *this;
    }
    client(const client &) = delete;
    client &operator=(const client &) = delete;

    /** The client's id (a UUID). */
    std::string id() const {
        const char *id = ferrolock_client_id(c_);
        if (!id[0]) detail::check(FERROLOCK_ERR_INVALID_ARGUMENT);
        return id;
    }

    /** A snapshot of the client's counters (ferrolock_client_metrics()). */
    ferrolock_metrics metrics() const {
        ferrolock_metrics m;
        detail::check(ferrolock_client_metrics(c_, &m));
        return m;
    }

    /** The metrics in the Prometheus text format (ferrolock_client_metrics_text()). */
    std::string metrics_text() const {
        char *text = nullptr;
        detail::check(ferrolock_client_metrics_text(c_, &text));
        std::unique_ptr<char, void (*)(char *)> owned(text, ferrolock_string_free);
        return std::string(owned.get());
    }

    ferrolock_client *native_handle() const noexcept { return c_; }

private:
    ferrolock_client *c_ = nullptr;
};

/** A lock's holder (ferrolock_holder): its owner field, hold count, note as stored
 *  ("" with has_note false: none) and read into fields ("" or -1 when unknown), how
 *  long it has held the lock, and the description for people. */
struct holder {
    std::string owner;
    uint64_t count;
    bool has_note;
    std::string note;
    std::string app;
    std::string host;
    int64_t pid;
    std::string thread;
    std::string command;
    int renewed; /* 1 renewed by the watchdog, 0 an explicit lease, -1 unknown */
    int64_t since_ms;
    int64_t held_for_ms;
    std::string description;
};

namespace detail {
inline std::string text(const char *s) { return s ? s : ""; }
inline holder holder_of(const ferrolock_holder &h) {
    return holder{text(h.owner), h.count,     h.info != nullptr, text(h.info), text(h.app),
                  text(h.host),  h.pid,       text(h.thread),    text(h.command), h.renewed,
                  h.since_ms,    h.held_for_ms, text(h.description)};
}
}  // namespace detail

/** A ferrolock_lock handle, used like a std::recursive_timed_mutex shared by
 *  processes. (Named mutex: a C++ class cannot have a member function lock() if it
 *  is itself called lock.) Move-only; destroying it releases what it still holds
 *  (ferrolock_lock_free()). */
class mutex {
public:
    /** A lock on `name`; `lease_ms` is the lease of the acquires made through
     *  lock()/try_lock*() (-1: the watchdog lease, renewed while held). */
    mutex(const client &c, const std::string &name, ferrolock_lock_kind kind = FERROLOCK_LOCK_REENTRANT,
         int64_t lease_ms = -1)
        : lease_ms_(lease_ms) {
        detail::check(ferrolock_lock_new_kind(c.native_handle(), name.c_str(), kind, &l_));
    }

    /** A multi-lock over `members` (ferrolock_multilock_new()): a Redlock with
     *  FERROLOCK_QUORUM_MAJORITY, a MultiLock with FERROLOCK_QUORUM_ALL. */
    static mutex multi(const std::vector<const mutex *> &members, ferrolock_quorum quorum, int64_t lease_ms = -1) {
        std::vector<ferrolock_lock *> handles;
        handles.reserve(members.size());
        for (const mutex *m : members) handles.push_back(m ? m->l_ : nullptr);
        ferrolock_lock *l = nullptr;
        detail::check(ferrolock_multilock_new(handles.data(), handles.size(), quorum, &l));
        return mutex(l, lease_ms);
    }

    ~mutex() { ferrolock_lock_free(l_); }

    mutex(mutex &&other) noexcept : l_(other.l_), lease_ms_(other.lease_ms_) { other.l_ = nullptr; }
    mutex &operator=(mutex &&other) noexcept {
        if (this != &other) {
            ferrolock_lock_free(l_);
            l_ = other.l_;
            lease_ms_ = other.lease_ms_;
            other.l_ = nullptr;
        }
        return *this;
    }
    mutex(const mutex &) = delete;
    mutex &operator=(const mutex &) = delete;

    /** Waits as long as it takes. Throws ferrolock::error on failure. */
    void lock() { detail::check(ferrolock_lock_acquire(l_, -1, lease_ms_)); }

    /** Tries once: false when someone else holds it. */
    bool try_lock() { return acquire(0); }

    /** Waits at most `timeout` (rounded up to whole ms): false when it ran out. */
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &timeout) {
        return acquire(detail::wait_ms(timeout));
    }

    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &deadline) {
        return acquire(detail::wait_ms(deadline - Clock::now()));
    }

    /** Releases one level of this thread's hold. Never throws (std::lock_guard calls
     *  it from its destructor): see ferrolock::last_unlock_status(). */
    void unlock() noexcept { detail::unlock_status() = ferrolock_lock_release(l_); }

    /** Like unlock(), but throws ferrolock::error (e.g. FERROLOCK_ERR_LOCK_LOST,
     *  FERROLOCK_ERR_NOT_OWNER). */
    void release() { detail::check(ferrolock_lock_release(l_)); }

    /** Adds `by` to the lease left on this thread's hold (taken with an explicit
     *  lease); returns the lease left now (ferrolock_lock_extend()). */
    std::chrono::milliseconds extend(std::chrono::milliseconds by) {
        int64_t left = 0;
        detail::check(ferrolock_lock_extend(l_, static_cast<int64_t>(by.count()), &left));
        return std::chrono::milliseconds(left);
    }

    /** Replaces the lease left on this thread's hold (ferrolock_lock_set_lease()). */
    std::chrono::milliseconds set_lease(std::chrono::milliseconds lease) {
        int64_t left = 0;
        detail::check(ferrolock_lock_set_lease(l_, static_cast<int64_t>(lease.count()), &left));
        return std::chrono::milliseconds(left);
    }

    /** Resets this thread's hold to the lease it was taken with (ferrolock_lock_reacquire()). */
    std::chrono::milliseconds reacquire() {
        int64_t left = 0;
        detail::check(ferrolock_lock_reacquire(l_, &left));
        return std::chrono::milliseconds(left);
    }

    /** Whether this thread's latest hold through this lock was lost. */
    bool lost() const {
        bool b = false;
        detail::check(ferrolock_lock_is_lost(l_, &b));
        return b;
    }

    /** Whether anyone holds the lock (one round-trip). */
    bool is_locked() const {
        bool b = false;
        detail::check(ferrolock_lock_is_locked(l_, &b));
        return b;
    }

    /** The fencing token of this thread's hold (fenced locks). */
    uint64_t token() const {
        uint64_t t = 0;
        detail::check(ferrolock_lock_token(l_, &t));
        return t;
    }

    /** Names this handle's holders in their notes: "(thread LABEL, tid N)"
     *  (ferrolock_lock_set_label()); "" removes it. */
    void set_label(const std::string &label) { detail::check(ferrolock_lock_set_label(l_, label.c_str())); }

    /** Who held the lock when this thread's latest try_lock_for()/try_lock_until()
     *  through this mutex ran out (ferrolock_lock_holder_info()): false when none. */
    bool last_holder(holder &out) const {
        ferrolock_holder h;
        detail::check(ferrolock_lock_holder_info(l_, &h));
        if (!h.owner) return false;
        out = detail::holder_of(h);
        return true;
    }

    int64_t lease_ms() const noexcept { return lease_ms_; }
    ferrolock_lock *native_handle() const noexcept { return l_; }

private:
    mutex(ferrolock_lock *l, int64_t lease_ms) : l_(l), lease_ms_(lease_ms) {}

    bool acquire(int64_t wait_ms) {
        ferrolock_status s = ferrolock_lock_acquire(l_, wait_ms, lease_ms_);
        if (s == FERROLOCK_NOT_ACQUIRED) return false;
        detail::check(s);
        return true;
    }

    ferrolock_lock *l_ = nullptr;
    int64_t lease_ms_;
};

/** Both sides of the read-write lock `name` (ferrolock_rwlock_new()), used like a
 *  std::shared_timed_mutex shared by processes: lock()/unlock() take the write side,
 *  lock_shared()/unlock_shared() the read side; each thread is one holder on both
 *  (a writer may also read). Move-only; destroying it releases what it still holds. */
class shared_mutex {
public:
    shared_mutex(const client &c, const std::string &name) {
        detail::check(ferrolock_rwlock_new(c.native_handle(), name.c_str(), &read_, &write_));
    }
    ~shared_mutex() {
        ferrolock_lock_free(read_);
        ferrolock_lock_free(write_);
    }
    shared_mutex(shared_mutex &&other) noexcept : read_(other.read_), write_(other.write_) {
        other.read_ = other.write_ = nullptr;
    }
    shared_mutex &operator=(shared_mutex &&other) noexcept {
        if (this != &other) {
            ferrolock_lock_free(read_);
            ferrolock_lock_free(write_);
            read_ = other.read_;
            write_ = other.write_;
            other.read_ = other.write_ = nullptr;
        }
        return *this;
    }
    shared_mutex(const shared_mutex &) = delete;
    shared_mutex &operator=(const shared_mutex &) = delete;

    void lock() { detail::check(ferrolock_lock_acquire(write_, -1, -1)); }
    bool try_lock() { return acquire(write_, 0); }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &timeout) {
        return acquire(write_, detail::wait_ms(timeout));
    }
    /** Never throws: see ferrolock::last_unlock_status(). */
    void unlock() noexcept { detail::unlock_status() = ferrolock_lock_release(write_); }

    void lock_shared() { detail::check(ferrolock_lock_acquire(read_, -1, -1)); }
    bool try_lock_shared() { return acquire(read_, 0); }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &timeout) {
        return acquire(read_, detail::wait_ms(timeout));
    }
    /** Never throws: see ferrolock::last_unlock_status(). */
    void unlock_shared() noexcept { detail::unlock_status() = ferrolock_lock_release(read_); }

    ferrolock_lock *read_handle() const noexcept { return read_; }
    ferrolock_lock *write_handle() const noexcept { return write_; }

private:
    static bool acquire(ferrolock_lock *l, int64_t wait_ms) {
        ferrolock_status s = ferrolock_lock_acquire(l, wait_ms, -1);
        if (s == FERROLOCK_NOT_ACQUIRED) return false;
        detail::check(s);
        return true;
    }

    ferrolock_lock *read_ = nullptr;
    ferrolock_lock *write_ = nullptr;
};

namespace detail {
/* A move-only owner of one C handle, freed by `Free`. */
template <class T, ferrolock_status (*Free)(T *)>
class handle {
public:
    handle() = default;
    ~handle() { Free(h_); }
    handle(handle &&other) noexcept : h_(other.h_) { other.h_ = nullptr; }
    handle &operator=(handle &&other) noexcept {
        if (this != &other) {
            Free(h_);
            h_ = other.h_;
            other.h_ = nullptr;
        }
        return *this;
    }
    handle(const handle &) = delete;
    handle &operator=(const handle &) = delete;

    T *native_handle() const noexcept { return h_; }

protected:
    T *h_ = nullptr;
};
}  // namespace detail

/** A ferrolock_semaphore (Redisson RSemaphore): permits anyone may take and give back.
 *  Lockable for one permit, so `std::lock_guard<ferrolock::semaphore> g(sem);` holds
 *  one for its scope. Move-only; destroying it gives nothing back. */
class semaphore : public detail::handle<ferrolock_semaphore, ferrolock_semaphore_free> {
public:
    semaphore(const client &c, const std::string &name) {
        detail::check(ferrolock_semaphore_new(c.native_handle(), name.c_str(), &h_));
    }

    /** Sets `permits` if the semaphore does not exist yet; false if it did. */
    bool try_set_permits(uint64_t permits) {
        bool set = false;
        detail::check(ferrolock_semaphore_try_set_permits(h_, permits, &set));
        return set;
    }

    /** Waits as long as it takes for `permits`. */
    void acquire(uint64_t permits = 1) { detail::check(ferrolock_semaphore_acquire(h_, permits, -1)); }
    /** Tries once: false when too few are free. */
    bool try_acquire(uint64_t permits = 1) { return take(permits, 0); }
    template <class Rep, class Period>
    bool try_acquire_for(const std::chrono::duration<Rep, Period> &timeout, uint64_t permits = 1) {
        return take(permits, detail::wait_ms(timeout));
    }
    /** Gives `permits` back; returns the free permits right after. */
    uint64_t release(uint64_t permits = 1) {
        uint64_t free = 0;
        detail::check(ferrolock_semaphore_release(h_, permits, &free));
        return free;
    }
    uint64_t available() const {
        uint64_t n = 0;
        detail::check(ferrolock_semaphore_available(h_, &n));
        return n;
    }
    uint64_t drain() {
        uint64_t n = 0;
        detail::check(ferrolock_semaphore_drain(h_, &n));
        return n;
    }

    /* Lockable, one permit. */
    void lock() { acquire(1); }
    bool try_lock() { return try_acquire(1); }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &timeout) {
        return try_acquire_for(timeout, 1);
    }
    /** Gives one permit back. Never throws (std::lock_guard calls it from its
     *  destructor): see ferrolock::last_unlock_status(). */
    void unlock() noexcept { detail::unlock_status() = ferrolock_semaphore_release(h_, 1, nullptr); }

private:
    bool take(uint64_t permits, int64_t wait_ms) {
        ferrolock_status s = ferrolock_semaphore_acquire(h_, permits, wait_ms);
        if (s == FERROLOCK_NOT_ACQUIRED) return false;
        detail::check(s);
        return true;
    }
};

/** A ferrolock_permits (Redisson RPermitExpirableSemaphore): permits with ids. */
class permits : public detail::handle<ferrolock_permits, ferrolock_permits_free> {
public:
    permits(const client &c, const std::string &name) {
        detail::check(ferrolock_permits_new(c.native_handle(), name.c_str(), &h_));
    }
    bool try_set_permits(uint64_t n) {
        bool set = false;
        detail::check(ferrolock_permits_try_set_permits(h_, n, &set));
        return set;
    }
    /** A permit's id, or "" when none was free within `wait_ms` (-1: as long as it
     *  takes); `lease_ms` -1: no lease. */
    std::string acquire(int64_t wait_ms = -1, int64_t lease_ms = -1) {
        char id[FERROLOCK_PERMIT_ID_SIZE];
        ferrolock_status s = ferrolock_permits_acquire(h_, wait_ms, lease_ms, id, sizeof id);
        if (s == FERROLOCK_NOT_ACQUIRED) return std::string();
        detail::check(s);
        return id;
    }
    /** true: released in time; false: it had expired or was released already. */
    bool release(const std::string &id) {
        bool released = false;
        detail::check(ferrolock_permits_release(h_, id.c_str(), &released));
        return released;
    }
    uint64_t available() const {
        uint64_t n = 0;
        detail::check(ferrolock_permits_available(h_, &n));
        return n;
    }
};

/** A ferrolock_latch (Redisson RCountDownLatch). */
class latch : public detail::handle<ferrolock_latch, ferrolock_latch_free> {
public:
    latch(const client &c, const std::string &name) {
        detail::check(ferrolock_latch_new(c.native_handle(), name.c_str(), &h_));
    }
    bool try_set_count(uint64_t count) {
        bool set = false;
        detail::check(ferrolock_latch_try_set_count(h_, count, &set));
        return set;
    }
    uint64_t count_down() {
        uint64_t left = 0;
        detail::check(ferrolock_latch_count_down(h_, &left));
        return left;
    }
    uint64_t count() const {
        uint64_t n = 0;
        detail::check(ferrolock_latch_count(h_, &n));
        return n;
    }
    /** Waits as long as it takes for the latch to open. */
    void wait() { detail::check(ferrolock_latch_wait(h_, -1)); }
    /** false when it was still counting down after `timeout`. */
    template <class Rep, class Period>
    bool wait_for(const std::chrono::duration<Rep, Period> &timeout) {
        ferrolock_status s = ferrolock_latch_wait(h_, detail::wait_ms(timeout));
        if (s == FERROLOCK_NOT_ACQUIRED) return false;
        detail::check(s);
        return true;
    }
};

/** A snapshot of what a name is and what is going on there (ferrolock_inspect();
 *  the other accessors of ferrolock.h through native_handle()). Move-only. */
class inspection : public detail::handle<ferrolock_inspection, ferrolock_inspection_free> {
public:
    /** One holder: see ferrolock::holder. */
    typedef ferrolock::holder holder;

    inspection(const client &c, const std::string &name) {
        detail::check(ferrolock_inspect(c.native_handle(), name.c_str(), &h_));
    }
    /** ferrolock_inspect_as(): reads the name as `kind`. */
    inspection(const client &c, const std::string &name, ferrolock_object_kind kind) {
        detail::check(ferrolock_inspect_as(c.native_handle(), name.c_str(), kind, &h_));
    }

    ferrolock_object_kind kind() const {
        ferrolock_object_kind k;
        detail::check(ferrolock_inspection_kind(h_, &k));
        return k;
    }
    std::vector<holder> holders() const {
        size_t n = 0;
        detail::check(ferrolock_inspection_holders_len(h_, &n));
        std::vector<holder> all;
        for (size_t i = 0; i < n; i++) {
            ferrolock_holder h;
            detail::check(ferrolock_inspection_holder_info(h_, i, &h));
            all.push_back(detail::holder_of(h));
        }
        return all;
    }
    /** Ms left on a lock's lease; -1 when free or not a lock; INT64_MAX: no expiry. */
    int64_t lease_left_ms() const {
        int64_t ms = 0;
        detail::check(ferrolock_inspection_lease_left_ms(h_, &ms));
        return ms;
    }
    uint64_t waiters() const {
        uint64_t n = 0;
        detail::check(ferrolock_inspection_waiters(h_, &n));
        return n;
    }
    /** 0 when no fencing token was handed out on the name. */
    uint64_t last_token() const {
        uint64_t t = 0;
        detail::check(ferrolock_inspection_last_token(h_, &t));
        return t;
    }
};

/** The names of every lock-family object under `prefix`, sorted (ferrolock_scan_new()). */
inline std::vector<std::string> scan(const client &c, const std::string &prefix = "") {
    ferrolock_scan *it = nullptr;
    detail::check(ferrolock_scan_new(c.native_handle(), prefix.c_str(), &it));
    std::unique_ptr<ferrolock_scan, ferrolock_status (*)(ferrolock_scan *)> owned(it, ferrolock_scan_free);
    std::vector<std::string> names;
    const char *name = nullptr;
    while (true) {
        detail::check(ferrolock_scan_next(it, &name));
        if (!name) return names;
        names.push_back(name);
    }
}

}  // namespace ferrolock

#endif /* FERROLOCK_HPP */

// The header as C++: compiles with -Wall -Wextra -Werror -pedantic and links
// (the inline ferrolock_options_init() too).
#include "ferrolock.h"

#include <cstdio>
#include <cstring>

extern "C" {
static void lost_cb(const char *name, void *user) {
    (void)name;
    (void)user;
}
}

int main() {
    ferrolock_client *client = nullptr;
    ferrolock_status s = ferrolock_client_connect("not a url", -1, &client);
    if (s != FERROLOCK_ERR_INVALID_ARGUMENT || client != nullptr || std::strlen(ferrolock_last_error()) == 0) {
        std::fprintf(stderr, "unexpected: %s\n", ferrolock_status_str(s));
        return 1;
    }
    ferrolock_lost_cb cb = lost_cb;
    if (ferrolock_lock_on_lost(nullptr, cb, nullptr) != FERROLOCK_ERR_INVALID_ARGUMENT) return 1;
    ferrolock_lock *lock = nullptr;
    if (ferrolock_lock_new_kind(nullptr, "x", FERROLOCK_LOCK_FENCED, &lock) != FERROLOCK_ERR_INVALID_ARGUMENT ||
        lock != nullptr)
        return 1;
    ferrolock_lock *members[] = {nullptr, nullptr};
    if (ferrolock_multilock_new(members, 2, FERROLOCK_QUORUM_MAJORITY, &lock) != FERROLOCK_ERR_INVALID_ARGUMENT ||
        lock != nullptr)
        return 1;
    ferrolock_options opts;
    ferrolock_options_init(&opts);
    opts.connect_timeout_ms = 500;
    opts.sentinel_password = "not-shown";
    s = ferrolock_client_connect_opts("redis+sentinel://:pw@127.0.0.1:1", &opts, &client);
    if (s != FERROLOCK_ERR_INVALID_ARGUMENT || client != nullptr || opts.size != sizeof opts ||
        std::strstr(ferrolock_last_error(), "master") == nullptr) {
        std::fprintf(stderr, "unexpected: %s: %s\n", ferrolock_status_str(s), ferrolock_last_error());
        return 1;
    }
    ferrolock_client_free(client);
    std::printf("c++: ferrolock %s, %s\n", ferrolock_version(), ferrolock_status_str(FERROLOCK_OK));
    return 0;
}

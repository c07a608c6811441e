// The header as C++: compiles with -Wall -Wextra -Werror -pedantic and links.
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
    ferrolock_client_free(client);
    std::printf("c++: ferrolock %s, %s\n", ferrolock_version(), ferrolock_status_str(FERROLOCK_OK));
    return 0;
}

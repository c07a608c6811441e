/* The header as strict C11 (-Wall -Wextra -Werror -pedantic). */
#include "ferrolock.h"

static void cb(const char *name, void *user) {
    (void)name;
    (void)user;
}

int main(void) {
    ferrolock_lost_cb f = cb;
    ferrolock_status s = FERROLOCK_OK;
    ferrolock_lock_kind k = FERROLOCK_LOCK_FENCED;
    (void)f;
    return s == FERROLOCK_OK && k != FERROLOCK_LOCK_REENTRANT && ferrolock_version() != 0 ? 0 : 1;
}

/* The header as strict C11 (-Wall -Wextra -Werror -pedantic), included twice (its
 * include guards, also the one of the inline ferrolock_options_init()). */
#include "ferrolock.h"
#include "ferrolock.h"

static void cb(const char *name, void *user) {
    (void)name;
    (void)user;
}

int main(void) {
    ferrolock_lost_cb f = cb;
    ferrolock_status s = FERROLOCK_OK;
    ferrolock_lock_kind k = FERROLOCK_LOCK_FENCED;
    ferrolock_quorum q = FERROLOCK_QUORUM_ALL;
    ferrolock_options o;
    ferrolock_options_init(&o);
    o.replica_ack = 0;
    o.sentinel_password = "pw";
    (void)f;
    return s == FERROLOCK_OK && k != FERROLOCK_LOCK_REENTRANT && o.size == sizeof o &&
                   FERROLOCK_ERR_NOT_REPLICATED != FERROLOCK_ERR_PERMISSION && ferrolock_version() != 0 &&
                   q != FERROLOCK_QUORUM_MAJORITY
               ? 0
               : 1;
}

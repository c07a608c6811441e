/* with_redis CMD [ARGS...]: starts a private redis-server, runs CMD with
 * FERROLOCK_URL set to it, stops the server, exits with CMD's status. */
#include "harness.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: with_redis CMD [ARGS...]\n");
        return 2;
    }
    const char *url = redis_start();
    pid_t pid = fork();
    if (pid < 0) FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
        setenv("FERROLOCK_URL", url, 1);
        execvp(argv[1], argv + 1);
        fprintf(stderr, "with_redis: cannot run %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    redis_stop();
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    fprintf(stderr, "with_redis: %s died of signal %d\n", argv[1], WTERMSIG(status));
    return 128 + WTERMSIG(status);
}

/* scripts/qemu_bench's floor for any two-process link: COUNT round trips of a 16-byte message
   between this process and a child over a UNIX stream socketpair, both sides blocking, as QEMU's
   multi-process link does. Prints "ns_per_round_trip=N". */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int exchange(int fd, char* buf, int first) {
    if (first && write(fd, buf, 16) != 16) return -1;
    for (ssize_t got = 0; got < 16;) {
        const ssize_t r = read(fd, buf + got, (size_t)(16 - got));
        if (r <= 0) return -1;
        got += r;
    }
    return first || write(fd, buf, 16) == 16 ? 0 : -1;
}

int main(int argc, char** argv) {
    const long count = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
    int sv[2];
    char buf[16] = {0};
    if (count <= 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        fprintf(stderr, "usage: socket_round_trip COUNT\n");
        return 2;
    }
    const pid_t child = fork();
    if (child == 0) {
        for (long i = 0; i < count; ++i)
            if (exchange(sv[1], buf, 0) != 0) _exit(1);
        _exit(0);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < count; ++i)
        if (exchange(sv[0], buf, 1) != 0) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int status = 0;
    waitpid(child, &status, 0);
    printf("ns_per_round_trip=%.0f\n",
           ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)count);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

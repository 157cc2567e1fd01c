/* idle_clients.c — clients that hold a server's connections and do nothing with them.
 *
 *   idle_clients PORT N silent|line SECONDS
 *
 * Opens N connections to 127.0.0.1:PORT (raising RLIMIT_NOFILE to fit); "line" sends one
 * request line and stops, as a slowloris client does; "silent" sends nothing. Prints
 * "opened=N" once all are open, holds them up to SECONDS (less once the server closed
 * all), then prints "closed_by_server=K seconds=S": how many the server closed, and when
 * the last of them went (or SECONDS). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: idle_clients PORT N silent|line SECONDS\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    int line = strcmp(argv[3], "line") == 0;
    double hold = atof(argv[4]);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < (rlim_t)n + 64) {
        rl.rlim_cur = (rlim_t)n + 64 < rl.rlim_max ? (rlim_t)n + 64 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    if (!p) return 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            fprintf(stderr, "idle_clients: connection %d: %s\n", i, strerror(errno));
            return 1;
        }
        static const char request_line[] = "GET /health HTTP/1.1\r\n";
        if (line && write(fd, request_line, sizeof request_line - 1) < 0) return 1;
        p[i] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    printf("opened=%d\n", n);
    fflush(stdout);
    int closed = 0;
    double start = now(), last = hold;
    for (double end = start + hold; closed < n && now() < end;) {
        if (poll(p, (nfds_t)n, 100) <= 0) continue;
        for (int i = 0; i < n; i++) {
            if (p[i].fd < 0 || !p[i].revents) continue;
            char buf[512];
            if (read(p[i].fd, buf, sizeof buf) <= 0) {    /* closed (an answer first is fine) */
                close(p[i].fd);
                p[i].fd = -1;
                closed++;
                last = now() - start;
            }
        }
    }
    printf("closed_by_server=%d seconds=%.1f\n", closed, closed == n ? last : hold);
    fflush(stdout);
    for (int i = 0; i < n; i++)
        if (p[i].fd >= 0) close(p[i].fd);
    free(p);
    return 0;
}

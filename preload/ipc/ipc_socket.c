/* ipc_socket.c — the socket of tiermem's IPC (see ipc_socket.h). SOCK_SEQPACKET keeps
 * message boundaries, so each descriptor batch arrives whole with its count. */
#include "preload/ipc/ipc_socket.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "preload/ipc/ipc_wire.h"
#include "preload/base/libc_real.h"

void tm_ipc_socket_address(pid_t pid, struct sockaddr_un *address, socklen_t *len)
{
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    /* sun_path[0] stays NUL: the abstract namespace, nothing on disk, gone with the socket */
    int n = snprintf(address->sun_path + 1, sizeof address->sun_path - 1, TM_IPC_SOCKET_FORMAT, (int)pid);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

void tm_ipc_socket_timeouts(int fd, int seconds)
{
    struct timeval tv = { .tv_sec = seconds };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool tm_ipc_peer_trusted(int fd, pid_t *pid)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
        return false;
    *pid = cred.pid;
    return cred.uid == geteuid() || cred.uid == 0;
}

bool tm_ipc_send(int fd, const void *buffer, size_t len)
{
    ssize_t n;
    do
        n = send(fd, buffer, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len;
}

bool tm_ipc_recv(int fd, void *buffer, size_t len)
{
    ssize_t n;
    do
        n = recv(fd, buffer, len, 0);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len;
}

bool tm_ipc_send_fds(int fd, const int *fds, unsigned count)
{
    if (count == 0 || count > TM_IPC_FDS_PER_MESSAGE)
        return false;
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(TM_IPC_FDS_PER_MESSAGE * sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    uint32_t payload = count;
    struct iovec iov = { .iov_base = &payload, .iov_len = sizeof payload };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = control.bytes, .msg_controllen = CMSG_SPACE(count * sizeof(int)),
    };
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(count * sizeof(int));
    memcpy(CMSG_DATA(cmsg), fds, count * sizeof(int));
    ssize_t n;
    do
        n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof payload;
}

bool tm_ipc_recv_fds(int fd, int *fds, unsigned *count)
{
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(TM_IPC_FDS_PER_MESSAGE * sizeof(int))];
    } control;
    uint32_t payload = 0;
    struct iovec iov = { .iov_base = &payload, .iov_len = sizeof payload };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes,
    };
    ssize_t n;
    do
        n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    *count = 0;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS)
            continue;
        unsigned got = (unsigned)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        if (*count + got > TM_IPC_FDS_PER_MESSAGE)
            got = TM_IPC_FDS_PER_MESSAGE - *count; /* cannot happen with MSG_CTRUNC unset */
        memcpy(fds + *count, CMSG_DATA(cmsg), got * sizeof(int));
        *count += got;
    }
    bool whole = n == (ssize_t)sizeof payload && !(msg.msg_flags & MSG_CTRUNC) && payload == *count;
    if (!whole) {
        for (unsigned i = 0; i < *count; i++)
            tm_libc_close(fds[i]);
        *count = 0;
    }
    return whole;
}

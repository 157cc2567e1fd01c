/* ipc_socket.h — the Unix socket both sides of tiermem's IPC use (ipc.h): its address,
 * who may talk on it, and descriptors passed with SCM_RIGHTS. */
#ifndef TM_PRELOAD_IPC_SOCKET_H
#define TM_PRELOAD_IPC_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* The exporter's address in the abstract namespace; *len is what bind/connect take. */
void tm_ipc_socket_address(pid_t pid, struct sockaddr_un *address, socklen_t *len);

/* Send and receive timeouts, so a stalled peer never holds the other side for long. */
void tm_ipc_socket_timeouts(int fd, int seconds);

/* Whether the peer of a connected socket runs as this user or as root; *pid receives its
 * pid. False when the kernel does not say. */
bool tm_ipc_peer_trusted(int fd, pid_t *pid);

/* Sends `count` descriptors (at most TM_IPC_FDS_PER_MESSAGE) in one message. */
bool tm_ipc_send_fds(int fd, const int *fds, unsigned count);

/* Receives one message of descriptors into fds (room for TM_IPC_FDS_PER_MESSAGE); *count
 * receives how many came. They are close-on-exec. */
bool tm_ipc_recv_fds(int fd, int *fds, unsigned *count);

/* Whole-buffer send and receive of one message, retried on EINTR. */
bool tm_ipc_send(int fd, const void *buffer, size_t len);
bool tm_ipc_recv(int fd, void *buffer, size_t len);

#endif /* TM_PRELOAD_IPC_SOCKET_H */

/* ledger_hold.c — holds a ledger's lock as a hung process would.
 *
 *   ledger_hold PATH GO_FILE   takes the lock libtiermem.so and tiermem-stat take (an open
 *                              file description lock on byte 0), prints "locked", and keeps
 *                              it until GO_FILE exists (60 s at most)
 *
 * Exit status 0, or 1 when the lock could not be taken. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ledger_hold PATH GO_FILE\n");
        return 1;
    }
    int fd = open(argv[1], O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct flock lock = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
    if (fd < 0 || fcntl(fd, F_OFD_SETLK, &lock) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("locked\n");
    fflush(stdout);
    struct stat st;
    for (int i = 0; i < 600 && stat(argv[2], &st) != 0; i++)
        usleep(100000);
    close(fd);
    return 0;
}

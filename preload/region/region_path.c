/* region_path.c — see region_path.h. Only names and checks: no file is touched here, so
 * the interposer (through its own C library entry points) and the tools share it. */
#include "preload/region/region_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tm_region_dir(uid_t uid, char *buf, size_t len)
{
    return snprintf(buf, len, "%s/tiermem-%u", TM_REGION_ROOT, (unsigned)uid);
}

int tm_region_name(pid_t pid, char *buf, size_t len)
{
    return snprintf(buf, len, "tiermem.%d", (int)pid);
}

int tm_region_path(pid_t pid, uid_t uid, char *buf, size_t len)
{
    return snprintf(buf, len, "%s/tiermem-%u/tiermem.%d", TM_REGION_ROOT, (unsigned)uid, (int)pid);
}

/* The number after `prefix` in `name`: digits only, no leading 0, at most `max`; or -1. */
static long number_after(const char *name, const char *prefix, long max)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9' || (name[n] == '0' && name[n + 1]))
        return -1;
    char *end;
    long value = strtol(name + n, &end, 10);
    return *end == '\0' && value >= 0 && value <= max ? value : -1;
}

long tm_region_dir_uid(const char *name)
{
    return number_after(name, "tiermem-", 0xffffffffl - 1);
}

pid_t tm_region_pid(const char *name)
{
    long pid = number_after(name, "tiermem.", 0x7fffffff);
    return pid > 0 ? (pid_t)pid : 0;
}

const char *tm_region_dir_refusal(const struct stat *st, uid_t uid)
{
    if (!S_ISDIR(st->st_mode))
        return "not a directory";
    if (st->st_uid != uid)
        return "owned by another user";
    if ((st->st_mode & 07777) != 0700)
        return "not of mode 0700";
    return NULL;
}

const char *tm_region_file_refusal(const struct stat *st, uid_t uid)
{
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    if (st->st_uid != uid)
        return "owned by another user";
    return NULL;
}

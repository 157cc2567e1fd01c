/* region_path.h — where a process's stats region lives, for the writer (stats.c) and every
 * reader (tiermem-stat, tiermem-heat, --gc). Needs nothing but the C library.
 *
 * Regions live in a directory per user, /dev/shm/tiermem-<uid>/, that the interposer
 * creates with mode 0700: no other user can create, squat or replace a name in it. The
 * region of process <pid> run by <uid> is /dev/shm/tiermem-<uid>/tiermem.<pid>. A
 * directory is used only when it is a directory (not a symlink), owned by that uid,
 * with mode 0700. */
#ifndef TM_REGION_PATH_H
#define TM_REGION_PATH_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define TM_REGION_ROOT "/dev/shm"

/* "/dev/shm/tiermem-<uid>". Returns snprintf's count (>= len: cut short). */
int tm_region_dir(uid_t uid, char *buf, size_t len);

/* "tiermem.<pid>": a region's name inside its directory. */
int tm_region_name(pid_t pid, char *buf, size_t len);

/* "/dev/shm/tiermem-<uid>/tiermem.<pid>". */
int tm_region_path(pid_t pid, uid_t uid, char *buf, size_t len);

/* The uid in a directory name "tiermem-<uid>", or -1. */
long tm_region_dir_uid(const char *name);

/* The pid in a region name "tiermem.<pid>", or 0. */
pid_t tm_region_pid(const char *name);

/* NULL when `st` (from lstat, or fstat of a directory opened with O_NOFOLLOW) describes a
 * region directory `uid` may use; otherwise why not, in a few words. */
const char *tm_region_dir_refusal(const struct stat *st, uid_t uid);

/* NULL when `st` describes a region file of `uid`: a regular file it owns; otherwise why
 * not. */
const char *tm_region_file_refusal(const struct stat *st, uid_t uid);

#endif /* TM_REGION_PATH_H */

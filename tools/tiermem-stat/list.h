/* list.h — every live process under libtiermem.so, one line each (tiermem-stat with no
 * argument, like nvidia-smi's process table). */
#ifndef TM_STATS_LIST_H
#define TM_STATS_LIST_H

/* Prints a header and one line per readable region of a live process in `dir`; returns how
 * many were listed. */
int tm_stats_list(const char *dir);

#endif /* TM_STATS_LIST_H */

/* available.h — how much host memory a NUMA node can give: the kernel's MemAvailable
 * (free memory plus the page cache and slabs it would reclaim), not MemFree, so that a
 * model file just read into the page cache never shrinks a tier. */
#ifndef TM_PRELOAD_TIERS_AVAILABLE_H
#define TM_PRELOAD_TIERS_AVAILABLE_H

#include <stdbool.h>
#include <stdint.h>

/* The host's MemAvailable in bytes (/proc/meminfo); 0 when it cannot be read. */
uint64_t tm_host_available(void);

/* The share of MemAvailable that node `node` holds: all of it on a host of one node, else
 * in proportion to what each node could give (its MemFree, FilePages less Shmem, and
 * SReclaimable in /sys/devices/system/node/nodeN/meminfo), never more than that. 0 when
 * none of it can be read. `known` tells which node ids exist (up to max_node). */
uint64_t tm_node_available(int node, int max_node, bool (*known)(int node));

#endif /* TM_PRELOAD_TIERS_AVAILABLE_H */

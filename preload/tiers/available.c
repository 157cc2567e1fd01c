/* available.c — the host memory a NUMA node can give (available.h). */
#include "preload/tiers/available.h"

#include <stdio.h>
#include <string.h>

/* The value in kB of the line `key` ("MemAvailable:", "MemFree:") of a meminfo file,
 * whose lines may carry a "Node N " prefix; false when the file or the line is missing.
 * Reads at most 256 lines. */
static bool meminfo_kb(const char *path, const char *key, uint64_t *kb)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char line[256];
    bool found = false;
    size_t key_len = strlen(key);
    for (int n = 0; !found && n < 256 && fgets(line, sizeof line, f); n++) {
        char *at = strstr(line, key);
        if (!at || (at != line && at[-1] != ' '))
            continue;
        unsigned long long value;
        if (sscanf(at + key_len, " %llu kB", &value) == 1) {
            *kb = value;
            found = true;
        }
    }
    fclose(f);
    return found;
}

uint64_t tm_host_available(void)
{
    uint64_t kb = 0;
    return meminfo_kb("/proc/meminfo", "MemAvailable:", &kb) ? kb * 1024 : 0;
}

/* What node `node` could give, in kB, from its own meminfo; false when it cannot be read. */
static bool node_reclaimable_kb(int node, uint64_t *kb)
{
    char path[80];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
    uint64_t free_kb, file_kb, shmem_kb = 0, slab_kb = 0;
    if (!meminfo_kb(path, "MemFree:", &free_kb) || !meminfo_kb(path, "FilePages:", &file_kb))
        return false;
    meminfo_kb(path, "Shmem:", &shmem_kb);
    meminfo_kb(path, "SReclaimable:", &slab_kb);
    *kb = free_kb + (file_kb > shmem_kb ? file_kb - shmem_kb : 0) + slab_kb;
    return true;
}

uint64_t tm_node_available(int node, int max_node, bool (*known)(int node))
{
    uint64_t host = tm_host_available();
    if (host == 0 || !known(node))
        return 0;
    uint64_t mine = 0, all = 0;
    int nodes = 0;
    for (int n = 0; n <= max_node; n++) {
        uint64_t kb;
        if (!known(n))
            continue;
        nodes++;
        if (!node_reclaimable_kb(n, &kb))
            continue;
        all += kb;
        if (n == node)
            mine = kb;
    }
    if (nodes == 1)
        return host;
    if (mine == 0 || all == 0)
        return 0;
    double share = (double)host * ((double)mine / (double)all);
    return share < (double)mine * 1024 ? (uint64_t)share : mine * 1024;
}

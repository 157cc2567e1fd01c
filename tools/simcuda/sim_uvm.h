/* sim_uvm.h — a fault-driven model of CUDA managed memory (unified virtual memory).
 *
 * Plain C with no CUDA state: simcuda feeds it every access to a managed range (the
 * device's, declared by kernels; the host's, made by copies) and it answers what that
 * access costs, the way the nvidia-uvm driver would serve it:
 *
 * - Memory is tracked in 64 KiB units grouped in 2 MiB blocks (nvidia-uvm's big page and
 *   VA block). A device access to units that are not resident faults once per 4 KiB page
 *   it touches (the GPU's fault buffer holds one entry per page), and the faults are
 *   serviced in batches of `batch_faults`, each costing `fault_batch_us` of driver work
 *   plus the transfer over the link. The touched units migrate; when the block's
 *   resident and touched units together reach `prefetch_percent` of it, the whole block
 *   comes along (the density prefetcher, uvm_perf_prefetch_threshold).
 * - Resident units are capped by `capacity` (free device memory: what cuMemAlloc and VMM
 *   device memory leave). Room is made by evicting whole blocks, least recently used
 *   first. A migration moves the only copy, so an evicted unit travels back to the host
 *   (a write-back over the link) unless the host still holds a valid duplicate.
 * - SET_READ_MOSTLY: a device read copies instead of moving, the host keeps its copy, and
 *   evicting the duplicate is free. A write from either side invalidates the other copy.
 * - SET_PREFERRED_LOCATION device: blocks whose resident units all prefer the device are
 *   evicted only when nothing else can be. Host: the device maps the pages on first
 *   touch (one fault) and from then on reads them in place over the link.
 * - SET_ACCESSED_BY: recorded; with the device as the only processor it changes nothing
 *   the model charges (mappings are kept whatever it says).
 * - Host accesses (copies from or to managed memory): pages resident on the device
 *   migrate back (device-to-host bytes) and a host write invalidates device copies.
 *
 * Costs are per operation; totals accumulate in the model as operations settle. One model is not thread safe:
 * simcuda calls it under its lock. */
#ifndef SIM_UVM_H
#define SIM_UVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_UVM_PAGE  ((size_t)4 << 10)    /* one fault-buffer entry */
#define SIM_UVM_UNIT  ((size_t)64 << 10)   /* smallest migration */
#define SIM_UVM_BLOCK ((size_t)2 << 20)    /* largest migration, and the eviction unit */

typedef struct sim_uvm_params {
    double fault_batch_us;      /* driver service time of one fault batch */
    unsigned batch_faults;      /* faults serviced per batch */
    unsigned prefetch_percent;  /* block density that migrates the whole block (0: off) */
    double link_h2d_gbps;       /* GB/s (1e9) host to device over the link */
    double link_d2h_gbps;       /* GB/s device to host */
} sim_uvm_params;

/* Defaults and their sources are in sim_uvm.c. */
void sim_uvm_default_params(sim_uvm_params *params);

/* What one access cost. */
typedef struct sim_uvm_cost {
    uint64_t bytes_resident;    /* served from device memory (HBM speed) */
    uint64_t bytes_migrated;    /* host to device over the link, on faults or prefetch */
    uint64_t bytes_written_back;/* device to host: evictions and host accesses */
    uint64_t bytes_remote;      /* read or written in place over the link */
    uint64_t faults;            /* 4 KiB pages that faulted */
    uint64_t batches;           /* fault batches serviced */
    uint64_t evictions;         /* blocks evicted */
    double service_ms;          /* stall: batches x latency plus the link transfers */
} sim_uvm_cost;

typedef enum sim_uvm_advice {
    SIM_UVM_READ_MOSTLY,
    SIM_UVM_PREFER_DEVICE,
    SIM_UVM_PREFER_HOST,
    SIM_UVM_ACCESSED_BY,
} sim_uvm_advice;

typedef struct sim_uvm sim_uvm;

sim_uvm *sim_uvm_create(const sim_uvm_params *params);
void sim_uvm_destroy(sim_uvm *uvm);

/* Device memory the resident set may use; shrinking it evicts at the next access. */
void sim_uvm_set_capacity(sim_uvm *uvm, uint64_t bytes);

/* A managed allocation: everything starts on the host, nothing resident. False when out
 * of memory or overlapping a tracked range. */
bool sim_uvm_add(sim_uvm *uvm, uintptr_t base, size_t size);
void sim_uvm_remove(sim_uvm *uvm, uintptr_t base);
/* Is the address inside a managed allocation? */
bool sim_uvm_contains(const sim_uvm *uvm, uintptr_t address);

/* Accesses; parts of the range outside managed allocations are ignored. `cost` is
 * added to (callers zero it). The device accesses of one operation (every range a kernel
 * declares) accumulate faults and bytes; sim_uvm_settle then batches the faults of the
 * whole operation, as the driver sees them arrive together, and sets its stall. Host
 * accesses and prefetches are operations of their own and come settled. */
void sim_uvm_device_access(sim_uvm *uvm, uintptr_t address, size_t bytes, bool write, sim_uvm_cost *cost);
void sim_uvm_settle(sim_uvm *uvm, sim_uvm_cost *op);
void sim_uvm_host_access(sim_uvm *uvm, uintptr_t address, size_t bytes, bool write, sim_uvm_cost *cost);
/* cuMemPrefetchAsync: to the device (migrates without faults, evicting as needed) or to
 * the host (migrates back). */
void sim_uvm_prefetch(sim_uvm *uvm, uintptr_t address, size_t bytes, bool to_device, sim_uvm_cost *cost);
/* cuMemAdvise: sets or clears one advice on the units the range touches. */
void sim_uvm_advise(sim_uvm *uvm, uintptr_t address, size_t bytes, sim_uvm_advice advice, bool set);

/* Adds one cost to another. */
void sim_uvm_cost_add(sim_uvm_cost *to, const sim_uvm_cost *from);

/* Bytes resident on the device now, and the sum of every cost so far. */
uint64_t sim_uvm_resident(const sim_uvm *uvm);
void sim_uvm_totals(const sim_uvm *uvm, sim_uvm_cost *totals);

#endif /* SIM_UVM_H */

/* sim_uvm.c — the managed-memory model (see sim_uvm.h for what it models).
 *
 * State per 2 MiB block is a handful of 32-bit masks, one bit per 64 KiB unit. Resident
 * blocks sit on one of two LRU lists (ordinary, and "every resident unit prefers the
 * device"); eviction takes the least recent block of the ordinary list first. Ranges are
 * kept in an array sorted by base address. */
#include "tools/simcuda/sim_uvm.h"

#include <stdlib.h>
#include <string.h>

#define UNITS_PER_BLOCK ((unsigned)(SIM_UVM_BLOCK / SIM_UVM_UNIT))
#define LIST_NONE      -1
#define LIST_ORDINARY   0
#define LIST_PREFERRED  1

/* ---------------------------------------------------------------- parameters */

void sim_uvm_default_params(sim_uvm_params *params)
{
    /* nvidia-uvm module parameter uvm_perf_fault_batch_count: 256 faults per batch. */
    params->batch_faults = 256;
    /* Servicing one batch (fetch and de-duplicate the fault buffer, allocate, unmap the
     * host pages, update GPU page tables, invalidate TLBs, replay) takes tens to hundreds
     * of microseconds in published breakdowns (Allen & Ge, "In-Depth Analyses of Unified
     * Virtual Memory System for GPU Accelerated Computing", SC'21, and its 2024 TOMPECS
     * extension). 50 us puts a dense sweep that thrashes at about a fifth of the link
     * rate, which is where gpu_ext measures plain UVM (7.7 vs 86.9 tok/s with placement). */
    params->fault_batch_us = 50.0;
    /* nvidia-uvm module parameter uvm_perf_prefetch_threshold: 51 % of a block. */
    params->prefetch_percent = 51;
    /* PCIe 5 x16 through the copy engines, about 50 GB/s each way in practice. */
    params->link_h2d_gbps = 50.0;
    params->link_d2h_gbps = 50.0;
}

/* ---------------------------------------------------------------- state */

typedef struct uvm_range uvm_range;

typedef struct uvm_block {
    uvm_range *range;
    size_t offset;              /* from the range's base */
    unsigned units;             /* units in this block (the last block may have fewer) */
    uint32_t populated;         /* units that hold data somewhere (else zero-filled on touch) */
    uint32_t resident;          /* units with a copy on the device */
    uint32_t host_valid;        /* units with a valid copy on the host */
    uint32_t read_mostly, prefer_device, prefer_host, accessed_by;
    uint32_t mapped_remote;     /* host-preferred units the device has mapped in place */
    int list;                   /* LIST_* */
    struct uvm_block *prev, *next;
} uvm_block;

struct uvm_range {
    uintptr_t base;
    size_t size;
    size_t block_count;
    uvm_block *blocks;          /* [block_count] */
};

typedef struct uvm_list {
    uvm_block *head, *tail;     /* head: least recently used */
} uvm_list;

struct sim_uvm {
    sim_uvm_params params;
    uint64_t capacity;
    uint64_t resident_bytes;
    uvm_range **ranges;         /* [count], sorted by base */
    size_t count, allocated;
    uvm_list lists[2];
    sim_uvm_cost totals;
};

sim_uvm *sim_uvm_create(const sim_uvm_params *params)
{
    sim_uvm *uvm = calloc(1, sizeof *uvm);
    if (!uvm)
        return NULL;
    uvm->params = *params;
    if (uvm->params.batch_faults == 0)
        uvm->params.batch_faults = 1;
    uvm->capacity = UINT64_MAX;
    return uvm;
}

void sim_uvm_destroy(sim_uvm *uvm)
{
    if (!uvm)
        return;
    for (size_t i = 0; i < uvm->count; i++) {
        free(uvm->ranges[i]->blocks);
        free(uvm->ranges[i]);
    }
    free(uvm->ranges);
    free(uvm);
}

void sim_uvm_set_capacity(sim_uvm *uvm, uint64_t bytes)
{
    uvm->capacity = bytes;
}

uint64_t sim_uvm_resident(const sim_uvm *uvm)
{
    return uvm->resident_bytes;
}

void sim_uvm_totals(const sim_uvm *uvm, sim_uvm_cost *totals)
{
    *totals = uvm->totals;
}

/* ---------------------------------------------------------------- masks and sizes */

static uint32_t all_units(const uvm_block *block)
{
    return block->units == 32 ? UINT32_MAX : ((uint32_t)1 << block->units) - 1;
}

static size_t unit_bytes(const uvm_block *block, unsigned unit)
{
    size_t start = block->offset + (size_t)unit * SIM_UVM_UNIT;
    size_t left = block->range->size - start;
    return left < SIM_UVM_UNIT ? left : SIM_UVM_UNIT;
}

static uint64_t mask_bytes(const uvm_block *block, uint32_t mask)
{
    uint64_t bytes = 0;
    for (unsigned u = 0; u < block->units; u++)
        if (mask & ((uint32_t)1 << u))
            bytes += unit_bytes(block, u);
    return bytes;
}

/* ---------------------------------------------------------------- LRU lists */

static void list_unlink(sim_uvm *uvm, uvm_block *block)
{
    if (block->list == LIST_NONE)
        return;
    uvm_list *list = &uvm->lists[block->list];
    if (block->prev)
        block->prev->next = block->next;
    else
        list->head = block->next;
    if (block->next)
        block->next->prev = block->prev;
    else
        list->tail = block->prev;
    block->prev = block->next = NULL;
    block->list = LIST_NONE;
}

/* The list a block's residency and advice call for. */
static int list_for(const uvm_block *block)
{
    if (!block->resident)
        return LIST_NONE;
    return (block->prefer_device & block->resident) == block->resident ? LIST_PREFERRED : LIST_ORDINARY;
}

/* Puts a block at the recent end of its list. */
static void list_touch(sim_uvm *uvm, uvm_block *block)
{
    list_unlink(uvm, block);
    if (!block->resident)
        return;
    block->list = list_for(block);
    uvm_list *list = &uvm->lists[block->list];
    block->prev = list->tail;
    if (list->tail)
        list->tail->next = block;
    else
        list->head = block;
    list->tail = block;
}

/* ---------------------------------------------------------------- eviction */

/* Drops every device copy of a block; only copies the host lacks travel back. */
static void evict(sim_uvm *uvm, uvm_block *block, sim_uvm_cost *cost)
{
    uint32_t only_on_device = block->resident & ~block->host_valid;
    cost->bytes_written_back += mask_bytes(block, only_on_device);
    uvm->resident_bytes -= mask_bytes(block, block->resident);
    block->host_valid |= block->resident & block->populated;
    block->resident = 0;
    cost->evictions++;
    list_unlink(uvm, block);
}

static uvm_block *victim(sim_uvm *uvm, const uvm_block *keep)
{
    for (int l = LIST_ORDINARY; l <= LIST_PREFERRED; l++)
        for (uvm_block *b = uvm->lists[l].head; b; b = b->next)
            if (b != keep)
                return b;
    return NULL;
}

/* Evicts least recently used blocks (never `keep`) until `bytes` more fit. */
static bool make_room(sim_uvm *uvm, uint64_t bytes, const uvm_block *keep, sim_uvm_cost *cost)
{
    while (uvm->resident_bytes + bytes > uvm->capacity) {
        uvm_block *b = victim(uvm, keep);
        if (!b)
            return false;
        evict(uvm, b, cost);
    }
    return true;
}

/* ---------------------------------------------------------------- ranges */

/* Index of the first range whose end lies above `address`. */
static size_t range_index(const sim_uvm *uvm, uintptr_t address)
{
    size_t lo = 0, hi = uvm->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (uvm->ranges[mid]->base + uvm->ranges[mid]->size <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool sim_uvm_contains(const sim_uvm *uvm, uintptr_t address)
{
    size_t i = range_index(uvm, address);
    return i < uvm->count && uvm->ranges[i]->base <= address;
}

bool sim_uvm_add(sim_uvm *uvm, uintptr_t base, size_t size)
{
    if (size == 0 || base + size < base)
        return false;
    size_t at = range_index(uvm, base);
    if (at < uvm->count && uvm->ranges[at]->base < base + size)
        return false;
    if (uvm->count == uvm->allocated) {
        size_t n = uvm->allocated ? uvm->allocated * 2 : 16;
        uvm_range **grown = realloc(uvm->ranges, n * sizeof *grown);
        if (!grown)
            return false;
        uvm->ranges = grown;
        uvm->allocated = n;
    }
    uvm_range *range = calloc(1, sizeof *range);
    size_t blocks = (size + SIM_UVM_BLOCK - 1) / SIM_UVM_BLOCK;
    if (range)
        range->blocks = calloc(blocks, sizeof *range->blocks);
    if (!range || !range->blocks) {
        free(range);
        return false;
    }
    range->base = base;
    range->size = size;
    range->block_count = blocks;
    for (size_t i = 0; i < blocks; i++) {
        uvm_block *b = &range->blocks[i];
        b->range = range;
        b->offset = i * SIM_UVM_BLOCK;
        size_t left = size - b->offset;
        b->units = (unsigned)((left < SIM_UVM_BLOCK ? left : SIM_UVM_BLOCK) + SIM_UVM_UNIT - 1) / SIM_UVM_UNIT;
        b->list = LIST_NONE;
    }
    memmove(&uvm->ranges[at + 1], &uvm->ranges[at], (uvm->count - at) * sizeof *uvm->ranges);
    uvm->ranges[at] = range;
    uvm->count++;
    return true;
}

void sim_uvm_remove(sim_uvm *uvm, uintptr_t base)
{
    size_t at = range_index(uvm, base);
    if (at >= uvm->count || uvm->ranges[at]->base != base)
        return;
    uvm_range *range = uvm->ranges[at];
    for (size_t i = 0; i < range->block_count; i++) {
        uvm->resident_bytes -= mask_bytes(&range->blocks[i], range->blocks[i].resident);
        list_unlink(uvm, &range->blocks[i]);
    }
    free(range->blocks);
    free(range);
    memmove(&uvm->ranges[at], &uvm->ranges[at + 1], (uvm->count - at - 1) * sizeof *uvm->ranges);
    uvm->count--;
}

/* One block's share of an access: which units it touches, and how many bytes and
 * 4 KiB pages in each. */
typedef struct block_span {
    uint32_t touched;
    uint64_t bytes[UNITS_PER_BLOCK];
    uint64_t pages[UNITS_PER_BLOCK];
} block_span;

static void span_of(const uvm_block *block, size_t from, size_t to, block_span *span)
{
    memset(span, 0, sizeof *span);
    for (unsigned u = 0; u < block->units; u++) {
        size_t lo = block->offset + (size_t)u * SIM_UVM_UNIT, hi = lo + unit_bytes(block, u);
        size_t a = from > lo ? from : lo, b = to < hi ? to : hi;
        if (a >= b)
            continue;
        span->touched |= (uint32_t)1 << u;
        span->bytes[u] = b - a;
        span->pages[u] = (b - 1) / SIM_UVM_PAGE - a / SIM_UVM_PAGE + 1;
    }
}

static uint64_t span_sum(const uint64_t *values, uint32_t mask)
{
    uint64_t sum = 0;
    for (unsigned u = 0; u < UNITS_PER_BLOCK; u++)
        if (mask & ((uint32_t)1 << u))
            sum += values[u];
    return sum;
}

typedef void block_visit(sim_uvm *uvm, uvm_block *block, const block_span *span, void *arg);

/* Calls visit for every block of every managed range that [address, address + bytes)
 * overlaps. */
static void each_block(sim_uvm *uvm, uintptr_t address, size_t bytes, block_visit *visit, void *arg)
{
    uintptr_t end = address + bytes < address ? UINTPTR_MAX : address + bytes;
    for (size_t i = range_index(uvm, address); i < uvm->count && uvm->ranges[i]->base < end; i++) {
        uvm_range *r = uvm->ranges[i];
        size_t from = address > r->base ? address - r->base : 0;
        size_t to = end - r->base < r->size ? end - r->base : r->size;
        for (size_t b = from / SIM_UVM_BLOCK; b * SIM_UVM_BLOCK < to; b++) {
            block_span span;
            span_of(&r->blocks[b], from, to, &span);
            if (span.touched)
                visit(uvm, &r->blocks[b], &span, arg);
        }
    }
}

/* ---------------------------------------------------------------- costs */

void sim_uvm_cost_add(sim_uvm_cost *to, const sim_uvm_cost *from)
{
    to->bytes_resident += from->bytes_resident;
    to->bytes_migrated += from->bytes_migrated;
    to->bytes_written_back += from->bytes_written_back;
    to->bytes_remote += from->bytes_remote;
    to->faults += from->faults;
    to->batches += from->batches;
    to->evictions += from->evictions;
    to->service_ms += from->service_ms;
}

void sim_uvm_settle(sim_uvm *uvm, sim_uvm_cost *op)
{
    const sim_uvm_params *p = &uvm->params;
    op->batches = (op->faults + p->batch_faults - 1) / p->batch_faults;
    op->service_ms = (double)op->batches * p->fault_batch_us / 1e3;
    if (p->link_h2d_gbps > 0)
        op->service_ms += (double)op->bytes_migrated / (p->link_h2d_gbps * 1e6);
    if (p->link_d2h_gbps > 0)
        op->service_ms += (double)op->bytes_written_back / (p->link_d2h_gbps * 1e6);
    sim_uvm_cost_add(&uvm->totals, op);
}

/* Settles a host access or prefetch (each one operation) into the caller's cost. */
static void finish(sim_uvm *uvm, sim_uvm_cost *op, sim_uvm_cost *cost)
{
    sim_uvm_settle(uvm, op);
    sim_uvm_cost_add(cost, op);
}

/* Brings `units` of a block onto the device: populated ones cross the link; read-mostly
 * ones leave their host copy in place. False when the device cannot hold them. */
static bool migrate_in(sim_uvm *uvm, uvm_block *block, uint32_t units, sim_uvm_cost *cost)
{
    uint64_t bytes = mask_bytes(block, units);
    if (!make_room(uvm, bytes, block, cost))
        return false;
    cost->bytes_migrated += mask_bytes(block, units & block->populated & block->host_valid);
    block->resident |= units;
    block->populated |= units;
    block->host_valid &= ~(units & ~block->read_mostly);
    uvm->resident_bytes += bytes;
    return true;
}

/* ---------------------------------------------------------------- device accesses */

typedef struct device_access {
    bool write;
    bool prefetch;              /* cuMemPrefetchAsync: no faults, no in-place mappings */
    sim_uvm_cost cost;
} device_access;

static void device_block(sim_uvm *uvm, uvm_block *block, const block_span *span, void *arg)
{
    device_access *a = arg;
    uint32_t in_place = a->prefetch ? 0 : block->prefer_host & ~block->read_mostly & ~block->resident;
    uint32_t missing = span->touched & ~block->resident & ~in_place;

    /* host-preferred: map on first touch, then read and write over the link */
    uint32_t first_map = span->touched & in_place & ~block->mapped_remote;
    if (!a->prefetch)
        a->cost.faults += span_sum(span->pages, first_map);
    block->mapped_remote |= span->touched & in_place;
    a->cost.bytes_remote += span_sum(span->bytes, span->touched & in_place);

    if (missing) {
        if (!a->prefetch)
            a->cost.faults += span_sum(span->pages, missing);
        uint32_t take = missing;
        unsigned dense = (unsigned)__builtin_popcount(block->resident | missing);
        if (!a->prefetch && uvm->params.prefetch_percent &&
            dense * 100 >= uvm->params.prefetch_percent * block->units)
            take = all_units(block) & ~block->resident & ~in_place;
        if (!migrate_in(uvm, block, take, &a->cost))
            /* larger than the device can hold at all: served in place */
            a->cost.bytes_remote += span_sum(span->bytes, missing);
    }
    uint32_t served = span->touched & block->resident;
    a->cost.bytes_resident += span_sum(span->bytes, served);
    if (a->write)
        block->host_valid &= ~served;   /* the device copy is now the only current one */
    list_touch(uvm, block);
}

void sim_uvm_device_access(sim_uvm *uvm, uintptr_t address, size_t bytes, bool write, sim_uvm_cost *cost)
{
    device_access a = { .write = write };
    make_room(uvm, 0, NULL, &a.cost);   /* the capacity may have shrunk since */
    each_block(uvm, address, bytes, device_block, &a);
    sim_uvm_cost_add(cost, &a.cost);
}

/* ---------------------------------------------------------------- host accesses */

typedef struct host_access {
    bool write;
    bool move;                  /* prefetch to the host: device copies go too */
    sim_uvm_cost cost;
} host_access;

static void host_block(sim_uvm *uvm, uvm_block *block, const block_span *span, void *arg)
{
    host_access *a = arg;
    uint32_t touched = span->touched;
    /* what only the device holds comes back */
    uint32_t back = touched & block->resident & ~block->host_valid;
    a->cost.bytes_written_back += mask_bytes(block, back);
    /* a move, unless read-mostly keeps a duplicate; a host write invalidates device copies */
    uint32_t drop = touched & block->resident;
    if (!a->move && !a->write)
        drop &= ~block->read_mostly;
    uvm->resident_bytes -= mask_bytes(block, drop);
    block->resident &= ~drop;
    block->host_valid |= touched;
    block->populated |= touched;
    list_touch(uvm, block);
}

void sim_uvm_host_access(sim_uvm *uvm, uintptr_t address, size_t bytes, bool write, sim_uvm_cost *cost)
{
    host_access a = { .write = write };
    each_block(uvm, address, bytes, host_block, &a);
    finish(uvm, &a.cost, cost);
}

void sim_uvm_prefetch(sim_uvm *uvm, uintptr_t address, size_t bytes, bool to_device, sim_uvm_cost *cost)
{
    if (to_device) {
        device_access a = { .prefetch = true };
        make_room(uvm, 0, NULL, &a.cost);
        each_block(uvm, address, bytes, device_block, &a);
        a.cost.bytes_resident = 0;   /* nothing was read: only moved */
        finish(uvm, &a.cost, cost);
    } else {
        host_access a = { .move = true };
        each_block(uvm, address, bytes, host_block, &a);
        finish(uvm, &a.cost, cost);
    }
}

/* ---------------------------------------------------------------- advice */

typedef struct advise_args {
    sim_uvm_advice advice;
    bool set;
} advise_args;

static void advise_block(sim_uvm *uvm, uvm_block *block, const block_span *span, void *arg)
{
    const advise_args *a = arg;
    uint32_t *mask = NULL;
    switch (a->advice) {
    case SIM_UVM_READ_MOSTLY: mask = &block->read_mostly; break;
    case SIM_UVM_PREFER_DEVICE: mask = &block->prefer_device; break;
    case SIM_UVM_PREFER_HOST: mask = &block->prefer_host; break;
    case SIM_UVM_ACCESSED_BY: mask = &block->accessed_by; break;
    }
    if (!mask)
        return;
    if (a->set)
        *mask |= span->touched;
    else
        *mask &= ~span->touched;
    /* one preferred location at a time */
    if (a->set && a->advice == SIM_UVM_PREFER_DEVICE)
        block->prefer_host &= ~span->touched;
    if (a->set && a->advice == SIM_UVM_PREFER_HOST)
        block->prefer_device &= ~span->touched;
    if (a->advice == SIM_UVM_PREFER_HOST && !a->set)
        block->mapped_remote &= ~span->touched;
    /* duplicates collapse onto the device copy when read-mostly is lifted */
    if (a->advice == SIM_UVM_READ_MOSTLY && !a->set)
        block->host_valid &= ~(span->touched & block->resident);
    if (list_for(block) != block->list)
        list_touch(uvm, block);
}

void sim_uvm_advise(sim_uvm *uvm, uintptr_t address, size_t bytes, sim_uvm_advice advice, bool set)
{
    advise_args a = { advice, set };
    each_block(uvm, address, bytes, advise_block, &a);
}

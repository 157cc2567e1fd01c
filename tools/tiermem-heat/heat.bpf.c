// SPDX-License-Identifier: GPL-2.0
/* heat.bpf.c — the eBPF heat source, for one target process (target_tgid):
 *
 *   usdt simcuda:touch             exact bytes read and written per 2 MiB chunk (ground truth
 *                                  on simcuda), and the first kernel that touched each chunk
 *   uprobes on the driver          launches, copies and allocations, counted; the extents of
 *                                  cuMemAlloc_v2 / cuMemAllocAsync allocations (uretprobes);
 *                                  each cuLaunchKernel's pointer parameters that are the base
 *                                  of a known allocation credit the chunks the launch can
 *                                  reach (16 bytes per thread), as the in-process source does
 *   tracepoints syscalls:sys_enter_openat/read/pread64/mmap (+ sys_exit_openat for the fd)
 *                                  which files it reads and which byte ranges
 *   tracepoint filemap:mm_filemap_add_to_page_cache
 *                                  pages it brings into the page cache
 *
 * Everything is summed in maps; the loader (collector.c) reads them. CO-RE: types from the
 * running kernel's BTF (vmlinux.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "tools/tiermem-heat/heat_bpf.h"

char LICENSE[] SEC("license") = "GPL";

int target_tgid;                        /* set by the loader before attaching */
struct tm_bpf_counts counts;

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, TM_BPF_CHUNKS_MAX);
    __type(key, __u64);                 /* address >> TM_BPF_CHUNK_SHIFT */
    __type(value, struct tm_bpf_chunk);
} chunks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, TM_BPF_FILES_MAX);
    __type(key, __s32);                 /* fd */
    __type(value, struct tm_bpf_file);
} files SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, __u32);                 /* thread id between openat's entry and exit */
    __type(value, struct tm_bpf_file);
} opening SEC(".maps");

struct alloc_call {
    __u64 dptr;                         /* where the driver writes the address */
    __u64 size;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);                 /* thread id between an allocation's entry and return */
    __type(value, struct alloc_call);
} allocating SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, TM_BPF_ALLOCS_MAX);
    __type(key, __u64);                 /* device address */
    __type(value, __u64);               /* bytes */
} allocations SEC(".maps");

static __always_inline int is_target(void)
{
    return (int)(bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

/* ---------------------------------------------------------------- simcuda:touch */

struct touched_range {
    __u64 start, end;
    int is_write;
    const char *name;
    int is_kernel;                      /* not "cuMemcpy"/"cuMemset" */
};

static long credit_chunk(__u32 i, void *arg)
{
    struct touched_range *r = arg;
    __u64 index = (r->start >> TM_BPF_CHUNK_SHIFT) + i;
    __u64 lo = index << TM_BPF_CHUNK_SHIFT, hi = lo + (1ull << TM_BPF_CHUNK_SHIFT);
    __u64 from = r->start > lo ? r->start : lo, to = r->end < hi ? r->end : hi;
    if (to <= from)
        return 1;
    struct tm_bpf_chunk *c = bpf_map_lookup_elem(&chunks, &index);
    if (!c) {
        struct tm_bpf_chunk fresh = {};
        if (bpf_map_update_elem(&chunks, &index, &fresh, BPF_NOEXIST) && bpf_map_lookup_elem(&chunks, &index) == 0) {
            __sync_fetch_and_add(&counts.dropped, 1);
            return 1;
        }
        c = bpf_map_lookup_elem(&chunks, &index);
        if (!c)
            return 1;
    }
    if (r->is_write)
        __sync_fetch_and_add(&c->writes, to - from);
    else
        __sync_fetch_and_add(&c->reads, to - from);
    if (r->is_kernel && !c->kernel[0])
        bpf_probe_read_user_str(c->kernel, sizeof c->kernel, r->name);
    return 0;
}

SEC("usdt")
int BPF_USDT(on_touch, __u64 address, __u64 bytes, int is_write, __u64 seq, const char *name)
{
    if (!is_target() || !bytes)
        return 0;
    __sync_fetch_and_add(&counts.touches, 1);
    char head[6] = {};
    bpf_probe_read_user(head, sizeof head - 1, name);
    struct touched_range r = {
        .start = address,
        .end = address + bytes,
        .is_write = is_write,
        .name = name,
        .is_kernel = !(head[0] == 'c' && head[1] == 'u' && head[2] == 'M' && head[3] == 'e' && head[4] == 'm'),
    };
    __u64 n = ((address + bytes - 1) >> TM_BPF_CHUNK_SHIFT) - (address >> TM_BPF_CHUNK_SHIFT) + 1;
    if (n > TM_BPF_RANGE_CHUNKS_MAX)
        n = TM_BPF_RANGE_CHUNKS_MAX;
    bpf_loop((__u32)n, credit_chunk, &r, 0);
    return 0;
}

/* ---------------------------------------------------------------- driver entry points */

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, TM_BPF_CHUNKS_MAX);
    __type(key, __u64);                 /* address >> TM_BPF_CHUNK_SHIFT */
    __type(value, __u64);               /* bytes launches could reach, summed */
} launch_chunks SEC(".maps");

struct reach {
    __u64 start, end;
    __u64 per_chunk;                    /* bytes credited to each chunk */
};

static long credit_reach(__u32 i, void *arg)
{
    struct reach *r = arg;
    __u64 index = (r->start >> TM_BPF_CHUNK_SHIFT) + i;
    __u64 *bytes = bpf_map_lookup_elem(&launch_chunks, &index);
    if (bytes) {
        __sync_fetch_and_add(bytes, r->per_chunk);
        return 0;
    }
    if (bpf_map_update_elem(&launch_chunks, &index, &r->per_chunk, BPF_NOEXIST) != 0) {
        bytes = bpf_map_lookup_elem(&launch_chunks, &index);
        if (!bytes) {
            __sync_fetch_and_add(&counts.dropped, 1);
            return 1;
        }
        __sync_fetch_and_add(bytes, r->per_chunk);
    }
    return 0;
}

/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, kernelParams, extra): the first
 * six in registers, the rest on the stack above the return address (x86-64). */
SEC("uprobe")
int on_launch(struct pt_regs *ctx)
{
    if (!is_target())
        return 0;
    __sync_fetch_and_add(&counts.launches, 1);
    __u64 sp = PT_REGS_SP(ctx), bz = 0, params = 0;
    if (bpf_probe_read_user(&bz, sizeof bz, (const void *)(sp + 8)) ||
        bpf_probe_read_user(&params, sizeof params, (const void *)(sp + 32)) || !params)
        return 0;
    __u64 threads = (PT_REGS_PARM2(ctx) & 0xffffffff) * (PT_REGS_PARM3(ctx) & 0xffffffff) *
                    (PT_REGS_PARM4(ctx) & 0xffffffff) * (PT_REGS_PARM5(ctx) & 0xffffffff) *
                    (ctx->r9 & 0xffffffff) /* the sixth argument */ * (bz & 0xffffffff);
    /* The argument array has no length: entries are read while they point close to the
     * first (a launch's arguments live together). Past its end lie the caller's locals, and
     * one of those may point at a structure holding an allocation's base (a model's table of
     * weights): crediting it would call a gather's table read whole. */
    __u64 first = 0;
    for (int i = 0; i < TM_BPF_LAUNCH_PARAMS; i++) {
        __u64 entry = 0, value = 0;
        if (bpf_probe_read_user(&entry, sizeof entry, (const void *)(params + 8 * i)) || !entry)
            break;
        if (i == 0)
            first = entry;
        else if (entry - first + TM_BPF_PARAM_SPAN > 2 * TM_BPF_PARAM_SPAN)
            break;
        if (bpf_probe_read_user(&value, sizeof value, (const void *)entry))
            break;
        __u64 *size = bpf_map_lookup_elem(&allocations, &value);
        if (!size || !*size)
            continue;
        __u64 reach = threads * TM_BPF_BYTES_PER_THREAD;
        if (reach > *size)
            reach = *size;
        __u64 chunks = ((value + *size - 1) >> TM_BPF_CHUNK_SHIFT) - (value >> TM_BPF_CHUNK_SHIFT) + 1;
        if (chunks > TM_BPF_RANGE_CHUNKS_MAX)
            chunks = TM_BPF_RANGE_CHUNKS_MAX;
        struct reach r = { .start = value, .end = value + *size, .per_chunk = reach / chunks };
        __sync_fetch_and_add(&counts.launch_credits, 1);
        bpf_loop((__u32)chunks, credit_reach, &r, 0);
    }
    return 0;
}

SEC("uprobe")
int on_copy(struct pt_regs *ctx)
{
    if (is_target())
        __sync_fetch_and_add(&counts.copies, 1);
    return 0;
}

/* cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) and cuMemAllocAsync(dptr, bytes, stream) */
SEC("uprobe")
int on_alloc(struct pt_regs *ctx)
{
    if (!is_target())
        return 0;
    __sync_fetch_and_add(&counts.allocs, 1);
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct alloc_call call = { .dptr = PT_REGS_PARM1(ctx), .size = PT_REGS_PARM2(ctx) };
    bpf_map_update_elem(&allocating, &tid, &call, BPF_ANY);
    return 0;
}

SEC("uretprobe")
int on_alloc_return(struct pt_regs *ctx)
{
    if (!is_target())
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct alloc_call *call = bpf_map_lookup_elem(&allocating, &tid);
    if (!call)
        return 0;
    __u64 address = 0;
    if (PT_REGS_RC(ctx) == 0 && bpf_probe_read_user(&address, sizeof address, (const void *)call->dptr) == 0 &&
        address)
        bpf_map_update_elem(&allocations, &address, &call->size, BPF_ANY);
    bpf_map_delete_elem(&allocating, &tid);
    return 0;
}

/* ---------------------------------------------------------------- file reads */

SEC("tracepoint/syscalls/sys_enter_openat")
int on_openat(struct trace_event_raw_sys_enter *ctx)
{
    if (!is_target())
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct tm_bpf_file f = { .first_offset = ~0ull };
    bpf_probe_read_user_str(f.path, sizeof f.path, (const char *)BPF_CORE_READ(ctx, args[1]));
    bpf_map_update_elem(&opening, &tid, &f, BPF_ANY);
    return 0;
}

SEC("tracepoint/syscalls/sys_exit_openat")
int on_openat_exit(struct trace_event_raw_sys_exit *ctx)
{
    if (!is_target())
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct tm_bpf_file *f = bpf_map_lookup_elem(&opening, &tid);
    if (!f)
        return 0;
    __s32 fd = (__s32)BPF_CORE_READ(ctx, ret);
    if (fd >= 0)
        bpf_map_update_elem(&files, &fd, f, BPF_ANY);
    bpf_map_delete_elem(&opening, &tid);
    return 0;
}

static __always_inline void count_read(__s32 fd, __u64 bytes, __u64 offset, int positioned)
{
    struct tm_bpf_file *f = bpf_map_lookup_elem(&files, &fd);
    if (!f)
        return;
    __sync_fetch_and_add(&f->read_calls, 1);
    __sync_fetch_and_add(&f->read_bytes, bytes);
    if (positioned) {
        if (offset < f->first_offset)
            f->first_offset = offset;
        if (offset + bytes > f->last_end)
            f->last_end = offset + bytes;
    }
}

SEC("tracepoint/syscalls/sys_enter_read")
int on_read(struct trace_event_raw_sys_enter *ctx)
{
    if (is_target())
        count_read((__s32)BPF_CORE_READ(ctx, args[0]), BPF_CORE_READ(ctx, args[2]), 0, 0);
    return 0;
}

SEC("tracepoint/syscalls/sys_enter_pread64")
int on_pread64(struct trace_event_raw_sys_enter *ctx)
{
    if (is_target())
        count_read((__s32)BPF_CORE_READ(ctx, args[0]), BPF_CORE_READ(ctx, args[2]), BPF_CORE_READ(ctx, args[3]), 1);
    return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap(struct trace_event_raw_sys_enter *ctx)
{
    if (!is_target())
        return 0;
    __s32 fd = (__s32)BPF_CORE_READ(ctx, args[4]);
    struct tm_bpf_file *f = bpf_map_lookup_elem(&files, &fd);
    if (f)
        __sync_fetch_and_add(&f->mmap_bytes, BPF_CORE_READ(ctx, args[1]));
    return 0;
}

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int on_page_cache_add(void *ctx)
{
    if (is_target())
        __sync_fetch_and_add(&counts.page_cache_adds, 1);
    return 0;
}

// cuda_emu_module.cc — the project's CUDA kernels (kernels/module.cu), compiled for the
// CPU through cuda_emu.h, packaged as a simcuda module: each exported kernel unpacks its
// kernelParams and runs the emulated grid. tests/gpu/kernel_check loads it with
// --module on simcuda and compares it with the C twins, as it does with the real fatbin
// on a GPU. See cuda_emu.h for what the emulation does and does not do.
// The kernels get internal linkage, inside a namespace (below): the exported names are
// the simcuda entry points at the end of this file.
#define TM_GLOBAL static
#include "tests/kernels/cuda_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <functional>
#include <vector>

#include "kernels/cuda_common.cuh"
#include "kernels/fp8.h"
#include "kernels/kernels.h"
#include "kernels/kv_elem.h"
#include "kernels/kv_layout.h"
#include "kernels/moe_route.h"
#include "tools/simcuda/simcuda.h"

namespace emu {
#include "kernels/module.cu"
}

// ------------------------------------------------------------------------------------
// Coroutines: a stack and a saved stack pointer each. On x86-64 the switch is a few
// instructions (callee-saved registers pushed on the old stack, popped from the new);
// elsewhere ucontext does it (slower: it saves the signal mask with a system call).
// ------------------------------------------------------------------------------------

emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

enum wait_state { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

constexpr size_t STACK_BYTES = 256 * 1024;
constexpr unsigned MAX_THREADS = 1024;

void thread_main();

#if defined(__x86_64__)
extern "C" void emu_switch(void **save_sp, void *load_sp);
__asm__(".text\n"
        ".p2align 4\n"
        "emu_switch:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n"
        "    pushq %r13\n    pushq %r14\n    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n"
        "    popq %r12\n    popq %rbx\n    popq %rbp\n"
        "    ret\n");

struct coroutine {
    void *sp;
    void start(char *stack) {
        uintptr_t *p = (uintptr_t *)(stack + STACK_BYTES); /* 16-byte aligned top */
        *--p = 0;                                           /* entry sees rsp = 8 mod 16 */
        *--p = (uintptr_t)thread_main;                      /* emu_switch's ret */
        for (int r = 0; r < 6; r++) *--p = 0;               /* the six popped registers */
        sp = p;
    }
};
void *scheduler_sp;
inline void to_thread(coroutine &c) { emu_switch(&scheduler_sp, c.sp); }
inline void to_scheduler(coroutine &c) { emu_switch(&c.sp, scheduler_sp); }
#else
struct coroutine {
    ucontext_t ctx;
    void start(char *stack);
};
ucontext_t scheduler_ctx;
void coroutine::start(char *stack) {
    getcontext(&ctx);
    ctx.uc_stack.ss_sp = stack;
    ctx.uc_stack.ss_size = STACK_BYTES;
    ctx.uc_link = &scheduler_ctx;
    makecontext(&ctx, thread_main, 0);
}
inline void to_thread(coroutine &c) { swapcontext(&scheduler_ctx, &c.ctx); }
inline void to_scheduler(coroutine &c) { swapcontext(&c.ctx, &scheduler_ctx); }
#endif

struct emu_thread {
    coroutine co;
    wait_state state;
};

std::vector<emu_thread> threads;
std::vector<uint32_t> shuffle_slots;
char *stacks; // [MAX_THREADS][STACK_BYTES], mapped once
unsigned current;
const std::function<void()> *body;

void fail(const char *what) {
    fprintf(stderr, "cuda_emu: %s (block %u,%u,%u, %u threads)\n", what, blockIdx.x, blockIdx.y,
            blockIdx.z, blockDim.x);
    abort();
}

void wait(wait_state s) {
    threads[current].state = s;
    to_scheduler(threads[current].co);
}

// Each thread runs the kernel once, then returns to the scheduler for good.
void thread_main() {
    (*body)();
    threads[current].state = DONE;
    to_scheduler(threads[current].co);
    fail("a finished thread was resumed");
}

// ------------------------------------------------------------------------------------
// Scheduler
// ------------------------------------------------------------------------------------

void run_block(unsigned n) {
    for (unsigned t = 0; t < n; t++) {
        threads[t].co.start(stacks + (size_t)t * STACK_BYTES);
        threads[t].state = RUNNABLE;
    }
    for (;;) {
        bool ran = false;
        for (unsigned t = 0; t < n; t++) {
            if (threads[t].state != RUNNABLE) continue;
            current = t;
            threadIdx = {t, 0, 0};
            to_thread(threads[t].co);
            ran = true;
        }
        if (ran) continue;
        // Nobody can run: open a barrier.
        unsigned done = 0, at_block = 0, at_warp = 0;
        for (unsigned t = 0; t < n; t++) {
            done += threads[t].state == DONE;
            at_block += threads[t].state == AT_BLOCK_BARRIER;
            at_warp += threads[t].state == AT_WARP_BARRIER;
        }
        if (done == n) return;
        if (at_warp) {
            // Open each warp whose live lanes all wait at its barrier.
            bool opened = false;
            for (unsigned w = 0; w * 32 < n; w++) {
                unsigned lo = w * 32, hi = std::min(n, lo + 32), waiting = 0, live = 0;
                for (unsigned t = lo; t < hi; t++) {
                    live += threads[t].state != DONE;
                    waiting += threads[t].state == AT_WARP_BARRIER;
                }
                if (waiting && waiting == live) {
                    for (unsigned t = lo; t < hi; t++)
                        if (threads[t].state == AT_WARP_BARRIER) threads[t].state = RUNNABLE;
                    opened = true;
                }
            }
            if (!opened) fail("deadlock: a warp shuffle that not every live lane of the warp reached");
        } else if (at_block == n - done) {
            for (unsigned t = 0; t < n; t++)
                if (threads[t].state == AT_BLOCK_BARRIER) threads[t].state = RUNNABLE;
        } else {
            fail("deadlock");
        }
    }
}

// Runs the grid: every block, every thread of a block, calling `kernel` for each.
void run_grid(const simcuda_launch *l, const std::function<void()> &kernel) {
    unsigned n = l->block.x * l->block.y * l->block.z;
    if (l->block.y != 1 || l->block.z != 1) fail("only 1-D blocks are emulated");
    if (n == 0 || n > MAX_THREADS) fail("bad block size");
    if (l->shared_mem_bytes) fail("dynamic shared memory is not emulated");
    if (!stacks) {
        void *p = mmap(NULL, MAX_THREADS * STACK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) fail("cannot map coroutine stacks");
        stacks = (char *)p;
    }
    threads.resize(n);
    shuffle_slots.assign(n, 0);
    body = &kernel;
    blockDim = {l->block.x, 1, 1};
    gridDim = {l->grid.x, l->grid.y, l->grid.z};
    for (unsigned z = 0; z < l->grid.z; z++)
        for (unsigned y = 0; y < l->grid.y; y++)
            for (unsigned x = 0; x < l->grid.x; x++) {
                blockIdx = {x, y, z};
                run_block(n);
            }
}

} // namespace

void __syncthreads() { wait(AT_BLOCK_BARRIER); }
void emu_warp_barrier() { wait(AT_WARP_BARRIER); }
uint32_t *emu_shuffle_slots() { return shuffle_slots.data(); }

// ------------------------------------------------------------------------------------
// simcuda entry points, one per kernel of the table
// ------------------------------------------------------------------------------------

// SIMCUDA_MODULE() spelled for C++, where a const object needs `extern` to be exported.
extern "C" {
extern __attribute__((visibility("default"))) const int simcuda_module_abi;
const int simcuda_module_abi = SIMCUDA_ABI_VERSION;
}

#define EMU_ENTRY(name, family, geom)                                                   \
    SIMCUDA_KERNEL(name) {                                                              \
        struct tm_args_##family args;                                                   \
        tm_unpack_##family(launch->params, &args);                                      \
        run_grid(launch, [&] { emu::name(TM_CALL_ARGS(family)); });                     \
    }
extern "C" {
TM_KERNEL_TABLE(EMU_ENTRY)
}

/* hook_resolve.c — the doors through which a program finds driver functions without the
 * dynamic linker: dlsym and dlvsym (both glibc versions of each) and cuGetProcAddress (both
 * ABIs). Each hands out the wrapper with the same ABI as the function the driver itself
 * would give.
 *
 * dlsym must stay invisible for every other symbol: glibc's dlsym finds RTLD_NEXT
 * symbols relative to its caller's return address, so on x86-64 and aarch64 alike the
 * entry points are a few instructions of assembly that jump to glibc's (found once, then
 * kept) with the caller's frame intact unless the name starts with "cu" (dlsym: or "nv",
 * NVML's; dlvsym: or "dl", so that a runtime asking for glibc's dlsym by version gets
 * ours); only RTLD_NEXT lookups
 * of those names walk the link map from the caller. Nothing here calls dlsym or dlvsym
 * through the dynamic linker. */
#include <dlfcn.h>
#include <elf.h>
#include <gnu/lib-names.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "preload/hooks/hook.h"
#include "preload/hooks/hook_nvml.h"
#include "preload/base/libc_real.h"

/* A lookup by name, and by version when there is one. */
static void *real_lookup(void *handle, const char *symbol, const char *version)
{
    return version ? tm_real_dlvsym(handle, symbol, version) : tm_real_dlsym(handle, symbol);
}

/* ---------------------------------------------------------------- RTLD_NEXT */

/* The object a function lives in. */
static struct link_map *owner_of(const void *address)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP))
        return NULL;
    return map;
}

/* The first object loaded after the caller's that defines `symbol` itself. A link map is
 * not a dlsym handle; dlopen with RTLD_NOLOAD gives one for an object already loaded. */
static void *next_definition(const void *caller, const char *symbol, const char *version)
{
    struct link_map *map = owner_of(caller);
    for (map = map ? map->l_next : NULL; map; map = map->l_next) {
        void *handle = map->l_name && map->l_name[0] ? dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (!handle)
            continue;
        void *found = real_lookup(handle, symbol, version);
        dlclose(handle);
        if (found && owner_of(found) == map)
            return found;
    }
    return NULL;
}

/* ---------------------------------------------------------------- dlsym, for cu* and nv* names */

/* Our entry points, in the assembly below. */
void *tm_dlsym_2_34(void *handle, const char *symbol);
void *tm_dlsym_base(void *handle, const char *symbol);
void *tm_dlvsym_2_34(void *handle, const char *symbol, const char *version);
void *tm_dlvsym_base(void *handle, const char *symbol, const char *version);

/* What the program gets for a symbol the lookup found. */
static void *answer_for(const char *symbol, void *found)
{
    if (!found || !symbol)
        return found;
    if (symbol[0] == 'n' && symbol[1] == 'v')
        return tm_nvml_dlsym(symbol, found);
    if (symbol[0] != 'c' || symbol[1] != 'u')
        return found;
    const tm_hook *hook = tm_hook_by_symbol(symbol);
    if (!hook || !tm_driver_ready())
        return found;
    /* our own export answers a global lookup; it stands only for what the driver has */
    if (!tm_hook_real(hook))
        return found == hook->wrapper ? NULL : found;
    return hook->wrapper;
}

__attribute__((visibility("hidden"))) void *tm_dlsym_with_caller(void *handle, const char *symbol, const void *caller)
{
    return answer_for(symbol, handle == RTLD_NEXT ? next_definition(caller, symbol, NULL)
                                                  : tm_real_dlsym(handle, symbol));
}

__attribute__((visibility("hidden"))) void *tm_dlvsym_with_caller(void *handle, const char *symbol,
                                                                  const char *version, const void *caller)
{
    void *found = handle == RTLD_NEXT ? next_definition(caller, symbol, version) : tm_real_dlvsym(handle, symbol, version);
    /* glibc's own dlsym or dlvsym, asked for by version (as runtimes do to get past
     * interposers): ours of that version stand in, so driver lookups through it are seen */
    bool newest = version && strcmp(version, "GLIBC_2.34") == 0;
    if (found && symbol && strcmp(symbol, "dlsym") == 0 &&
        (found == (void *)tm_glibc_dlsym_2_34 || found == (void *)tm_glibc_dlsym_base))
        return newest ? (void *)tm_dlsym_2_34 : (void *)tm_dlsym_base;
    if (found && symbol && strcmp(symbol, "dlvsym") == 0 &&
        (found == (void *)tm_glibc_dlvsym_2_34 || found == (void *)tm_glibc_dlvsym_base))
        return newest ? (void *)tm_dlvsym_2_34 : (void *)tm_dlvsym_base;
    return answer_for(symbol, found);
}

/* ---------------------------------------------------------------- the entry points */

/* Each entry point: if glibc's function is not known yet, find it; a name that starts
 * with "cu" (dlsym: or "nv"; dlvsym: or "dl") goes to the C function with the caller's return address as
 * the argument after the last, any other name jumps straight to glibc's, which then sees
 * the caller as its own. */
#if defined(__x86_64__)
/* FILTER_EXTRA: checks for names other than cu* (a jump to 3f takes the C path);
 * SAVE/RESTORE keep the arguments across the resolver call, the stack 16-byte aligned. */
#define ENTRY(entry, slot, target, caller_reg, FILTER_EXTRA, SAVE, RESTORE) \
    ".globl " #entry "\n"                                          \
    ".type " #entry ", @function\n"                                \
    #entry ":\n"                                                   \
    "    .cfi_startproc\n"                                         \
    "    movq " #slot "(%rip), %rax\n"                             \
    "    testq %rax, %rax\n"                                       \
    "    jz 2f\n"                                                  \
    "1:  testq %rsi, %rsi\n"                                       \
    "    jz 3f\n"                                                  \
    "    cmpb $0x63, (%rsi)\n"                                     \
    "    jne 5f\n"                                                 \
    "    cmpb $0x75, 1(%rsi)\n"                                    \
    "    je 3f\n"                                                  \
    "    jmp 4f\n"                                                 \
    "5:\n"                                                         \
    FILTER_EXTRA                                                   \
    "    jmp 4f\n"                                                 \
    "3:  movq (%rsp), " caller_reg "\n"                            \
    "    jmp " #target "\n"                                        \
    "4:  jmp *%rax\n"                                              \
    "2:\n"                                                         \
    SAVE                                                           \
    "    call tm_resolve_glibc_dlsym\n"                            \
    RESTORE                                                        \
    "    movq " #slot "(%rip), %rax\n"                             \
    "    testq %rax, %rax\n"                                       \
    "    jnz 1b\n"                                                 \
    "    xorl %eax, %eax\n"                                        \
    "    ret\n"                                                    \
    "    .cfi_endproc\n"                                           \
    ".size " #entry ", .-" #entry "\n"

#define PUSH(reg) "    pushq " reg "\n    .cfi_adjust_cfa_offset 8\n"
#define POP(reg) "    popq " reg "\n    .cfi_adjust_cfa_offset -8\n"
#define DLSYM_SAVE PUSH("%rdi") PUSH("%rsi") "    subq $8, %rsp\n    .cfi_adjust_cfa_offset 8\n"
#define DLSYM_RESTORE "    addq $8, %rsp\n    .cfi_adjust_cfa_offset -8\n" POP("%rsi") POP("%rdi")
#define DLVSYM_SAVE PUSH("%rdi") PUSH("%rsi") PUSH("%rdx")
#define DLVSYM_RESTORE POP("%rdx") POP("%rsi") POP("%rdi")
#define DL_NAMES "    cmpb $0x64, (%rsi)\n    jne 4f\n    cmpb $0x6c, 1(%rsi)\n    je 3f\n"
#define NV_NAMES "    cmpb $0x6e, (%rsi)\n    jne 4f\n    cmpb $0x76, 1(%rsi)\n    je 3f\n"

__asm__(".text\n"
        ENTRY(tm_dlsym_2_34, tm_glibc_dlsym_2_34, tm_dlsym_with_caller, "%rdx", NV_NAMES, DLSYM_SAVE, DLSYM_RESTORE)
        ENTRY(tm_dlsym_base, tm_glibc_dlsym_base, tm_dlsym_with_caller, "%rdx", NV_NAMES, DLSYM_SAVE, DLSYM_RESTORE)
        ENTRY(tm_dlvsym_2_34, tm_glibc_dlvsym_2_34, tm_dlvsym_with_caller, "%rcx", DL_NAMES, DLVSYM_SAVE,
              DLVSYM_RESTORE)
        ENTRY(tm_dlvsym_base, tm_glibc_dlvsym_base, tm_dlvsym_with_caller, "%rcx", DL_NAMES, DLVSYM_SAVE,
              DLVSYM_RESTORE));
#elif defined(__aarch64__)
/* The caller's return address is in x30, which a plain branch leaves alone; x16 and x17
 * are the scratch registers a branch through a register may use (BTI landing pads allow
 * them). x0-x2 are kept across the resolver call in the frame. */
#define ENTRY(entry, slot, target, caller_reg, FILTER_EXTRA)       \
    ".globl " #entry "\n"                                          \
    ".type " #entry ", %function\n"                                \
    #entry ":\n"                                                   \
    "    .cfi_startproc\n"                                         \
    "    adrp x16, " #slot "\n"                                    \
    "    ldr x16, [x16, :lo12:" #slot "]\n"                        \
    "    cbz x16, 2f\n"                                            \
    "1:  cbz x1, 3f\n"                                             \
    "    ldrb w17, [x1]\n"                                         \
    "    cmp w17, #0x63\n"                                         \
    "    b.ne 5f\n"                                                \
    "    ldrb w17, [x1, #1]\n"                                     \
    "    cmp w17, #0x75\n"                                         \
    "    b.eq 3f\n"                                                \
    "    b 4f\n"                                                   \
    "5:\n"                                                         \
    FILTER_EXTRA                                                   \
    "    b 4f\n"                                                   \
    "3:  mov " caller_reg ", x30\n"                                \
    "    b " #target "\n"                                          \
    "4:  br x16\n"                                                 \
    "2:  stp x29, x30, [sp, #-48]!\n"                              \
    "    .cfi_def_cfa_offset 48\n"                                 \
    "    .cfi_offset 29, -48\n"                                    \
    "    .cfi_offset 30, -40\n"                                    \
    "    mov x29, sp\n"                                            \
    "    stp x0, x1, [sp, #16]\n"                                  \
    "    str x2, [sp, #32]\n"                                      \
    "    bl tm_resolve_glibc_dlsym\n"                              \
    "    ldp x0, x1, [sp, #16]\n"                                  \
    "    ldr x2, [sp, #32]\n"                                      \
    "    ldp x29, x30, [sp], #48\n"                                \
    "    .cfi_def_cfa_offset 0\n"                                  \
    "    .cfi_restore 29\n"                                        \
    "    .cfi_restore 30\n"                                        \
    "    adrp x16, " #slot "\n"                                    \
    "    ldr x16, [x16, :lo12:" #slot "]\n"                        \
    "    cbnz x16, 1b\n"                                           \
    "    mov x0, #0\n"                                             \
    "    ret\n"                                                    \
    "    .cfi_endproc\n"                                           \
    ".size " #entry ", .-" #entry "\n"

#define DL_NAMES "    cmp w17, #0x64\n    b.ne 4f\n    ldrb w17, [x1, #1]\n    cmp w17, #0x6c\n    b.eq 3f\n"
#define NV_NAMES "    cmp w17, #0x6e\n    b.ne 4f\n    ldrb w17, [x1, #1]\n    cmp w17, #0x76\n    b.eq 3f\n"

__asm__(".text\n"
        ENTRY(tm_dlsym_2_34, tm_glibc_dlsym_2_34, tm_dlsym_with_caller, "x2", NV_NAMES)
        ENTRY(tm_dlsym_base, tm_glibc_dlsym_base, tm_dlsym_with_caller, "x2", NV_NAMES)
        ENTRY(tm_dlvsym_2_34, tm_glibc_dlvsym_2_34, tm_dlvsym_with_caller, "x3", DL_NAMES)
        ENTRY(tm_dlvsym_base, tm_glibc_dlvsym_base, tm_dlvsym_with_caller, "x3", DL_NAMES));
#else
#error "the dlsym entry points are written for x86-64 and aarch64"
#endif

__asm__(".symver tm_dlsym_2_34, dlsym@@GLIBC_2.34\n"
        ".symver tm_dlsym_base, dlsym@" TM_GLIBC_BASE "\n"
        ".symver tm_dlvsym_2_34, dlvsym@@GLIBC_2.34\n"
        ".symver tm_dlvsym_base, dlvsym@" TM_GLIBC_BASE "\n");


/* The driver chose the function for the symbol, version and flags asked; the program
 * gets our wrapper of exactly that function, or the driver's answer untouched. */
static CUresult wrap_answer(CUresult result, void **pfn)
{
    if (result == CUDA_SUCCESS && pfn && *pfn) {
        void *wrapper = tm_hook_wrapper_for(*pfn);
        if (wrapper)
            *pfn = wrapper;
    }
    return result;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus)
{
    TM_HOOK_ENTER(cuGetProcAddress_v2);
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult result = tm_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, &status);
    if (symbolStatus)
        *symbolStatus = status;
    return wrap_answer(result, pfn);
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    tm_count_call(cuGetProcAddress);
    if (!tm_driver_ready())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (tm_real.cuGetProcAddress)
        return wrap_answer(tm_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags), pfn);
    if (!tm_real.cuGetProcAddress_v2) /* a driver with only the newer resolver serves both */
        return CUDA_ERROR_NOT_SUPPORTED;
    CUdriverProcAddressQueryResult status;
    return wrap_answer(tm_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, &status), pfn);
}

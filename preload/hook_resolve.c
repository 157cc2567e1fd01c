/* hook_resolve.c — the doors through which a program finds driver functions without the
 * dynamic linker: dlsym (both glibc versions) and cuGetProcAddress (both ABIs). Each
 * hands out the wrapper with the same ABI as the function the driver itself would give.
 *
 * dlsym must stay invisible for every other symbol: glibc's dlsym finds RTLD_NEXT
 * symbols relative to its caller's return address, so on x86-64 the entry points are a
 * few instructions of assembly that jump to glibc's dlsym with the caller's frame intact
 * unless the name starts with "cu" or "nv" (NVML); RTLD_NEXT lookups of those names walk the link map from
 * the caller (elsewhere the C entry points do that for every name). Nothing here calls
 * dlsym through the dynamic linker. */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "preload/hook.h"
#include "preload/hook_nvml.h"

/* ---------------------------------------------------------------- glibc's dlsym */

typedef void *(*dlsym_fn)(void *handle, const char *symbol);

/* Read by the assembly entry points: keep these names and types. */
__attribute__((visibility("hidden"))) dlsym_fn tm_glibc_dlsym_2_34;
__attribute__((visibility("hidden"))) dlsym_fn tm_glibc_dlsym_2_2_5;

__attribute__((visibility("hidden"))) void tm_resolve_glibc_dlsym(void)
{
    dlsym_fn newer = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    dlsym_fn older = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    /* a C library with only one of the two serves both */
    __atomic_store_n(&tm_glibc_dlsym_2_2_5, older ? older : newer, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_glibc_dlsym_2_34, newer ? newer : older, __ATOMIC_RELEASE);
}

void *tm_real_dlsym(void *handle, const char *symbol)
{
    dlsym_fn real = __atomic_load_n(&tm_glibc_dlsym_2_34, __ATOMIC_ACQUIRE);
    if (!real) {
        tm_resolve_glibc_dlsym();
        real = __atomic_load_n(&tm_glibc_dlsym_2_34, __ATOMIC_ACQUIRE);
    }
    return real ? real(handle, symbol) : NULL;
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
static void *next_definition(const void *caller, const char *symbol)
{
    struct link_map *map = owner_of(caller);
    for (map = map ? map->l_next : NULL; map; map = map->l_next) {
        void *handle = map->l_name && map->l_name[0] ? dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (!handle)
            continue;
        void *found = tm_real_dlsym(handle, symbol);
        dlclose(handle);
        if (found && owner_of(found) == map)
            return found;
    }
    return NULL;
}

/* ---------------------------------------------------------------- dlsym, for cu* and nv* names */

__attribute__((visibility("hidden"))) void *tm_dlsym_with_caller(void *handle, const char *symbol, const void *caller)
{
    void *found = handle == RTLD_NEXT ? next_definition(caller, symbol) : tm_real_dlsym(handle, symbol);
    if (found && symbol && symbol[0] == 'n' && symbol[1] == 'v')
        return tm_nvml_dlsym(symbol, found);
    if (!found || !symbol || symbol[0] != 'c' || symbol[1] != 'u')
        return found;
    const tm_hook *hook = tm_hook_by_symbol(symbol);
    if (!hook || !tm_driver_ready())
        return found;
    /* our own export answers a global lookup; it stands only for what the driver has */
    if (!tm_hook_real(hook))
        return found == hook->wrapper ? NULL : found;
    return hook->wrapper;
}

#if defined(__x86_64__)
/* dlsym@GLIBC_2.34 and dlsym@GLIBC_2.2.5: if glibc's dlsym is not known yet, find it;
 * names not starting with "cu" or "nv" jump straight to it; the rest go to
 * tm_dlsym_with_caller with the caller's return address as third argument. */
#define DLSYM_ENTRY(entry, slot)                                   \
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
    "    jne 4f\n"                                                 \
    "3:  movq (%rsp), %rdx\n"                                      \
    "    jmp tm_dlsym_with_caller\n"                               \
    "5:  cmpb $0x6e, (%rsi)\n"                                     \
    "    jne 4f\n"                                                 \
    "    cmpb $0x76, 1(%rsi)\n"                                    \
    "    je 3b\n"                                                  \
    "4:  jmp *%rax\n"                                              \
    "2:  pushq %rdi\n"                                             \
    "    .cfi_adjust_cfa_offset 8\n"                               \
    "    pushq %rsi\n"                                             \
    "    .cfi_adjust_cfa_offset 8\n"                               \
    "    subq $8, %rsp\n"                                          \
    "    .cfi_adjust_cfa_offset 8\n"                               \
    "    call tm_resolve_glibc_dlsym\n"                            \
    "    addq $8, %rsp\n"                                          \
    "    .cfi_adjust_cfa_offset -8\n"                              \
    "    popq %rsi\n"                                              \
    "    .cfi_adjust_cfa_offset -8\n"                              \
    "    popq %rdi\n"                                              \
    "    .cfi_adjust_cfa_offset -8\n"                              \
    "    movq " #slot "(%rip), %rax\n"                             \
    "    testq %rax, %rax\n"                                       \
    "    jnz 1b\n"                                                 \
    "    xorl %eax, %eax\n"                                        \
    "    ret\n"                                                    \
    "    .cfi_endproc\n"                                           \
    ".size " #entry ", .-" #entry "\n"

__asm__(".text\n"
        DLSYM_ENTRY(tm_dlsym_2_34, tm_glibc_dlsym_2_34)
        DLSYM_ENTRY(tm_dlsym_2_2_5, tm_glibc_dlsym_2_2_5)
        ".symver tm_dlsym_2_34, dlsym@@GLIBC_2.34\n"
        ".symver tm_dlsym_2_2_5, dlsym@GLIBC_2.2.5\n");
#else
__attribute__((visibility("default"), noinline)) void *tm_dlsym_2_34(void *handle, const char *symbol)
{
    return tm_dlsym_with_caller(handle, symbol, __builtin_return_address(0));
}
__attribute__((visibility("default"), noinline)) void *tm_dlsym_2_2_5(void *handle, const char *symbol)
{
    return tm_dlsym_with_caller(handle, symbol, __builtin_return_address(0));
}
__asm__(".symver tm_dlsym_2_34, dlsym@@GLIBC_2.34\n"
        ".symver tm_dlsym_2_2_5, dlsym@GLIBC_2.2.5\n");
#endif

/* ---------------------------------------------------------------- cuGetProcAddress */

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

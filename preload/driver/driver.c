/* driver.c — loading the real driver and filling the forwarding table (see driver.h). */
#include "preload/driver/driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "preload/base/log.h"
#include "preload/base/libc_real.h"
#include "preload/base/settings.h"

tm_driver_table tm_real;
bool tm_driver_loaded;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static __thread bool loading_here; /* the driver's own start-up may look symbols up */

/* Whether `fn` lies in this library: a driver path that leads back to the interposer
 * would make every hook call itself. */
static bool is_ours(void *fn)
{
    Dl_info ours, theirs;
    return dladdr((void *)&is_ours, &ours) && dladdr(fn, &theirs) && ours.dli_fbase == theirs.dli_fbase;
}

/* Fills the table from `handle`. False when the library is no driver or is this one. */
static bool fill_table(void *handle)
{
#define HOOK(symbol, pfn, base, version, variant) tm_real.symbol = (pfn)tm_real_dlsym(handle, #symbol);
#include "preload/driver/hooks.def"
#define DRIVER_CALL(symbol, pfn) tm_real.symbol = (pfn)tm_real_dlsym(handle, #symbol);
#include "preload/driver/driver_calls.def"
    if (!tm_real.cuGetProcAddress_v2 && !tm_real.cuMemAlloc_v2)
        return false;
    return !(tm_real.cuMemAlloc_v2 && is_ours((void *)tm_real.cuMemAlloc_v2)) &&
           !(tm_real.cuGetProcAddress_v2 && is_ours((void *)tm_real.cuGetProcAddress_v2));
}

static void load(void)
{
    const tm_config *config = tm_settings();
    loading_here = true;
    void *handle = dlopen(config->driver, RTLD_LAZY | RTLD_LOCAL);
    bool ok = handle && fill_table(handle);
    if (!ok && strcmp(config->driver, TM_DEFAULT_DRIVER) != 0) {
        char shown[96], why[160];
        tm_printable(config->driver, shown, sizeof shown);
        tm_printable(handle ? "it lacks the driver API or is this interposer" : dlerror(), why, sizeof why);
        tm_error("TIERMEM_DRIVER='%s' is not a usable CUDA driver (%s); using %s with tiering off, every call "
                 "passes through to the driver",
                 shown, why, TM_DEFAULT_DRIVER);
        tm_tiering_off_said();
        memset(&tm_real, 0, sizeof tm_real);
        handle = dlopen(TM_DEFAULT_DRIVER, RTLD_LAZY | RTLD_LOCAL);
        ok = handle && fill_table(handle);
    }
    if (ok) {
        __atomic_store_n(&tm_driver_loaded, true, __ATOMIC_RELEASE);
    } else {
        memset(&tm_real, 0, sizeof tm_real);
        tm_error("cannot load the CUDA driver %s (%s)", TM_DEFAULT_DRIVER, handle ? "not a driver" : dlerror());
    }
    loading_here = false;
}

bool tm_driver_load(void)
{
    if (loading_here)
        return false;
    pthread_once(&load_once, load);
    return __atomic_load_n(&tm_driver_loaded, __ATOMIC_ACQUIRE);
}

bool tm_stream_capturing(CUstream stream, bool ptsz)
{
    PFN_cuStreamIsCapturing_v10000 is_capturing =
        ptsz && tm_real.cuStreamIsCapturing_ptsz ? tm_real.cuStreamIsCapturing_ptsz : tm_real.cuStreamIsCapturing;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!is_capturing || is_capturing(stream, &status) != CUDA_SUCCESS)
        return false;
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void tm_release_failed(const char *call, CUresult result)
{
    tm_log_once(TM_LOG_WARN, "%s failed twice (error %d); that memory may stay allocated", call, (int)result);
}

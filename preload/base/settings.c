/* settings.c — the configuration and the switch of tiering (see settings.h). */
#include "preload/base/settings.h"

#include <pthread.h>
#include <unistd.h>

#include "preload/base/log.h"

static tm_config config;
static bool loaded;
static bool tiering;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static void load_config(void)
{
    tm_config_load(&config, STDERR_FILENO);
    bool log_ok = tm_log_open(&config);
    __atomic_store_n(&tiering, !config.disabled && log_ok, __ATOMIC_RELEASE);
    if (config.disabled && config.invalid_count == 0)
        tm_info("TIERMEM_DISABLE=1: every call passes through to the driver");
    __atomic_store_n(&loaded, true, __ATOMIC_RELEASE);
}

const tm_config *tm_settings(void)
{
    pthread_once(&config_once, load_config);
    return &config;
}

bool tm_settings_loaded(void)
{
    return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
}

bool tm_tiering_on(void)
{
    tm_settings();
    return __atomic_load_n(&tiering, __ATOMIC_ACQUIRE);
}

void tm_tiering_off(const char *why)
{
    if (__atomic_exchange_n(&tiering, false, __ATOMIC_ACQ_REL))
        tm_warn("%s: tiering is off, every call passes through to the driver", why);
}

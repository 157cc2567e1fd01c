/* settings.c — the configuration and the switch of tiering (see settings.h). */
#include "preload/base/settings.h"

#include <pthread.h>
#include <unistd.h>

#include "preload/base/log.h"

tm_settings_state tm_settings_now;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static void load_config(void)
{
    tm_config *config = &tm_settings_now.config;
    tm_config_load(config, STDERR_FILENO);
    bool log_ok = tm_log_open(config);
    __atomic_store_n(&tm_settings_now.tiering, !config->disabled && log_ok, __ATOMIC_RELEASE);
    if (config->disabled && config->invalid_count == 0)
        tm_info("TIERMEM_DISABLE=1: every call passes through to the driver");
    __atomic_store_n(&tm_settings_now.loaded, true, __ATOMIC_RELEASE);
}

const tm_config *tm_settings_load(void)
{
    pthread_once(&config_once, load_config);
    return &tm_settings_now.config;
}

void tm_tiering_off(const char *why)
{
    tm_settings();
    if (__atomic_exchange_n(&tm_settings_now.tiering, false, __ATOMIC_ACQ_REL))
        tm_warn("%s: tiering is off, every call passes through to the driver", why);
}

void tm_tiering_off_said(void)
{
    tm_settings();
    __atomic_store_n(&tm_settings_now.tiering, false, __ATOMIC_RELEASE);
}

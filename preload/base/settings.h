/* settings.h — the configuration, read once from the environment (policy/config.h: every
 * TIERMEM_* variable is read there and nowhere else), and the switch of tiering. */
#ifndef TM_PRELOAD_BASE_SETTINGS_H
#define TM_PRELOAD_BASE_SETTINGS_H

#include <stdbool.h>

#include "policy/config.h"

/* What the inline functions below read: written once by tm_settings_load (the switch also
 * by tm_tiering_off). */
typedef struct tm_settings_state {
    tm_config config;
    bool loaded;        /* config has been read (atomic) */
    bool tiering;       /* the switch (atomic) */
} tm_settings_state;
extern tm_settings_state tm_settings_now;

/* Reads the configuration once (reporting bad values, naming the variable), opens the log
 * and sets the switch; any thread may be the one. */
const tm_config *tm_settings_load(void);

/* True once the configuration has been read; reads nothing. */
static inline bool tm_settings_loaded(void)
{
    return __atomic_load_n(&tm_settings_now.loaded, __ATOMIC_ACQUIRE);
}

/* The configuration, read at the first call. */
static inline const tm_config *tm_settings(void)
{
    return tm_settings_loaded() ? &tm_settings_now.config : tm_settings_load();
}

/* False when every call passes straight through (TIERMEM_DISABLE=1, an invalid value,
 * or an internal error that made tiering unsafe). */
static inline bool tm_tiering_on(void)
{
    tm_settings();
    return __atomic_load_n(&tm_settings_now.tiering, __ATOMIC_ACQUIRE);
}

/* Turns tiering off for the rest of the process; says why once. Allocations already
 * tracked are still released through the interposer. */
void tm_tiering_off(const char *why);

/* The same, for a caller that has already said why in its own line. */
void tm_tiering_off_said(void);

#endif /* TM_PRELOAD_BASE_SETTINGS_H */

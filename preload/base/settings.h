/* settings.h — the configuration, read once from the environment (policy/config.h: every
 * TIERMEM_* variable is read there and nowhere else), and the switch of tiering. */
#ifndef TM_PRELOAD_BASE_SETTINGS_H
#define TM_PRELOAD_BASE_SETTINGS_H

#include <stdbool.h>

#include "policy/config.h"

/* The configuration. The first call reads it (reporting bad values, naming the variable),
 * opens the log and sets the switch below; any thread may make it. */
const tm_config *tm_settings(void);

/* True once the configuration has been read; reads nothing. */
bool tm_settings_loaded(void);

/* False when every call passes straight through (TIERMEM_DISABLE=1, an invalid value,
 * or an internal error that made tiering unsafe). */
bool tm_tiering_on(void);

/* Turns tiering off for the rest of the process; says why once. Allocations already
 * tracked are still released through the interposer. */
void tm_tiering_off(const char *why);

#endif /* TM_PRELOAD_BASE_SETTINGS_H */

/* state.h — process-wide state: the configuration, whether tiering is on, and the
 * start-up, fork and exit handling that ties the modules together. */
#ifndef TM_PRELOAD_STATE_H
#define TM_PRELOAD_STATE_H

#include <stdbool.h>

#include "policy/config.h"

/* The configuration read at start-up. */
const tm_config *tm_settings(void);

/* False when every call passes straight through (TIERMEM_DISABLE=1, an invalid value,
 * or an internal error that made tiering unsafe). */
bool tm_tiering_on(void);

/* Turns tiering off for the rest of the process; says why once. Allocations already
 * tracked are still released through the interposer. */
void tm_tiering_off(const char *why);

/* Arranges the exit handler (once the driver is in use: it must run before the driver's). */
void tm_state_register_exit(void);

#endif /* TM_PRELOAD_STATE_H */

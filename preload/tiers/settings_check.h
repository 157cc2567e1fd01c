/* settings_check.h — settings that parse but do not fit this machine: a reserve larger
 * than HBM, a limit below one chunk, an order or a rule naming an absent tier. Each gets
 * one warning line that says what tiermem does instead. */
#ifndef TM_PRELOAD_SETTINGS_CHECK_H
#define TM_PRELOAD_SETTINGS_CHECK_H

#include <stdint.h>

#include "policy/config.h"
#include "policy/tier.h"

/* Warns about the settings that conflict with the tiers found; a default HBM reserve that
 * would leave HBM no chunk is dropped (tiers->hbm_reserve becomes 0). */
void tm_settings_check(const tm_config *config, tm_tiers *tiers, uint64_t chunk_size);

#endif /* TM_PRELOAD_SETTINGS_CHECK_H */

/* ledger.h — lower-tier budgets shared between processes (see ledger_layout.h).
 *
 * Placement runs under tm_ledger_lock, so checking what every process holds on a node and
 * charging this process's share are one step across processes. Without a ledger (TIERMEM_LEDGER=off,
 * or one that cannot be opened safely, said in one line) each process keeps its own
 * limits, as before. */
#ifndef TM_PRELOAD_LEDGER_H
#define TM_PRELOAD_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/config.h"
#include "policy/tier.h"

/* Opens (creating if need be) the ledger and takes an entry for this process with the
 * nodes and limits of its present lower tiers. Once per process; later calls do nothing. */
void tm_ledger_join(const tm_config *config, const tm_tiers *tiers);

/* Held around every placement decision and its charge; reclaims the entries of dead
 * processes. Nothing without a ledger. */
void tm_ledger_lock(void);
void tm_ledger_unlock(void);

/* Bytes all live processes hold on the node of `tier` (this one included); false without a
 * ledger or for a tier it does not track. */
bool tm_ledger_used(tm_tier_id tier, uint64_t *used);

/* Charges (bytes > 0) or releases this process's bytes on the node of `tier`. */
void tm_ledger_add(tm_tier_id tier, int64_t bytes);

/* Gives the entry up (at exit). */
void tm_ledger_leave(void);

/* A fork child has no entry: it joins anew when it sets up. */
void tm_ledger_forget_in_child(void);

#endif /* TM_PRELOAD_LEDGER_H */

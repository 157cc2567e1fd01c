/* managed.h — the managed-memory baseline (TIERMEM_POLICY=managed, managed-advised).
 *
 * What users fall back to when a model does not fit, like llama.cpp's
 * GGML_CUDA_ENABLE_UNIFIED_MEMORY: every allocation the size policy would chunk becomes
 * cuMemAllocManaged memory instead, and the driver's fault-driven paging decides what is
 * on the device. Small allocations still go to HBM as before.
 *
 * The advised variant applies the hints people reach for:
 * - CU_MEM_ADVISE_SET_PREFERRED_LOCATION to the device, on every such allocation at birth,
 *   so its pages are the last the driver evicts;
 * - CU_MEM_ADVISE_SET_READ_MOSTLY on an allocation the program fills from the host
 *   (cuMemcpyHtoD and friends, or cuMemcpy from memory the interposer does not track)
 *   before its first kernel launch. That is how weights and tables are loaded; memory
 *   kernels write (activations, KV cache) is allocated and then written on the device, so
 *   it never meets the rule. Should a kernel write a read-mostly allocation after all, the
 *   driver invalidates the host copy: slower, never wrong. */
#ifndef TM_POLICY_MANAGED_H
#define TM_POLICY_MANAGED_H

#include <stdbool.h>

#include "policy/place.h"

/* Do tiered allocations become managed memory under this policy? */
static inline bool tm_policy_uses_managed(const tm_policy *policy)
{
    return policy->kind == TM_POLICY_MANAGED || policy->kind == TM_POLICY_MANAGED_ADVISED;
}

/* Does a managed allocation get the device as its preferred location at birth? */
bool tm_managed_prefers_device(const tm_policy *policy);

/* The read-mostly rule: a host fill of a managed allocation, seen before or after the
 * process's first kernel launch. */
bool tm_managed_read_mostly_on_fill(const tm_policy *policy, bool kernels_launched);

#endif /* TM_POLICY_MANAGED_H */

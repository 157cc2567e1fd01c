/* managed.c — the managed-memory baseline's decisions (see managed.h). */
#include "policy/managed.h"

bool tm_managed_prefers_device(const tm_policy *policy)
{
    return policy->kind == TM_POLICY_MANAGED_ADVISED;
}

bool tm_managed_read_mostly_on_fill(const tm_policy *policy, bool kernels_launched)
{
    return policy->kind == TM_POLICY_MANAGED_ADVISED && !kernels_launched;
}

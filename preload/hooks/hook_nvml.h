/* hook_nvml.h — NVML's memory information in the configured view. A program reaches NVML
 * by linking libnvidia-ml.so.1 (then it binds to these exports) or through dlopen and
 * dlsym (then the dlsym door hands out the wrappers). */
#ifndef TM_PRELOAD_HOOK_NVML_H
#define TM_PRELOAD_HOOK_NVML_H

/* What dlsym hands out for an nv* name NVML's library resolved to `found`: the wrapper for
 * the memory calls, `found` itself for any other name. */
void *tm_nvml_dlsym(const char *symbol, void *found);

#endif /* TM_PRELOAD_HOOK_NVML_H */

/* sim_nvml.h — the two queries simcuda's libcuda.so.1 answers for its libnvidia-ml.so.1. */
#ifndef SIMCUDA_NVML_H
#define SIMCUDA_NVML_H

#include <stdint.h>

/* Devices the emulated machine has (0 when simcuda cannot start: a bad SIMCUDA_*). */
int simcuda_nvml_device_count(void);
/* The device's memory and the bytes allocated on it now; 0, or -1 for no such device. */
int simcuda_nvml_memory(unsigned int ordinal, uint64_t *total, uint64_t *used);

#endif /* SIMCUDA_NVML_H */

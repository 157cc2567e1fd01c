/* probe_util.h — helpers of the interposer's test programs: driver calls that exit on
 * failure, the test kernel, and a data round trip that checks every byte. */
#ifndef TM_TEST_PROBE_UTIL_H
#define TM_TEST_PROBE_UTIL_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Exits with status 3 and a message naming the call when it fails. */
#define CHECK(call) probe_check((call), #call, __FILE__, __LINE__)
void probe_check(CUresult result, const char *what, const char *file, int line);

const char *probe_error_name(CUresult result);

/* A byte count with an optional K/M/G suffix. */
size_t probe_parse_size(const char *text);

/* cuInit, device 0, its primary context made current. */
CUcontext probe_init(void);

/* Properties of a physical handle at device 0; returns their VMM granularity. */
size_t probe_device_prop(CUmemAllocationProp *prop);

/* The add_bytes kernel of the test module. */
CUfunction probe_kernel(void);

/* Fills [0, bytes) of `dptr` from the host, adds a delta on the device, reads it back and
 * compares every byte. `stream` 0 is the default stream. Returns 0, or 1 after printing
 * where the first wrong byte is. */
int probe_round_trip(CUdeviceptr dptr, size_t bytes, uint32_t seed);

/* Checks, without writing, that [0, bytes) holds what probe_round_trip(seed) left. */
int probe_verify(CUdeviceptr dptr, size_t bytes, uint32_t seed);

#endif /* TM_TEST_PROBE_UTIL_H */

/* sim_integrity.h — the answer to the CUDA runtime's integrity question (export table 7,
 * slot 1; see sim_export.c): an HMAC-MD2 over the process, the tables the runtime was
 * given and the devices. Plain C over nettle, so a unit test checks it against a known
 * answer without a driver. */
#ifndef SIM_INTEGRITY_H
#define SIM_INTEGRITY_H

#include <stdint.h>

#define SIM_INTEGRITY_MAX_DEVICES 8

/* One device as the runtime sees it through the driver's own attributes. */
typedef struct sim_integrity_device {
    uint8_t uuid[16];       /* cuDeviceGetUuid */
    int32_t pci_domain;     /* CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID */
    int32_t pci_bus;        /* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID */
    int32_t pci_device;     /* CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID */
} sim_integrity_device;

typedef struct sim_integrity_input {
    uint32_t driver_version;    /* what cuDriverGetVersion returns */
    uint32_t version;           /* the call's first argument: runtime version + 2 */
    uint32_t pid;               /* getpid() */
    uint32_t thread;            /* (uint32_t)pthread_self(), not gettid() */
    uint64_t runtime_table;     /* address of export table 2 */
    uint64_t integrity_table;   /* address of export table 7 */
    uint64_t function;          /* address of table 7's slot-1 function */
    uint64_t unix_seconds;      /* the call's second argument */
    int device_count;           /* 0 to SIM_INTEGRITY_MAX_DEVICES */
    sim_integrity_device devices[SIM_INTEGRITY_MAX_DEVICES];
} sim_integrity_input;

/* The 16 bytes the runtime expects for `version` = runtime version + 2. */
void sim_integrity_digest(const sim_integrity_input *input, uint8_t digest[16]);

/* The fixed answers for runtime version + 0 and + 1, as two little-endian words. */
void sim_integrity_fixed(unsigned offset, uint64_t out[2]);

#endif /* SIM_INTEGRITY_H */

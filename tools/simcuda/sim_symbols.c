/* sim_symbols.c — weak stubs for every driver symbol and the cuGetProcAddress table.
 * A strong definition elsewhere in simcuda replaces the stub of the same name at link
 * time, so the table always points at the implementation when there is one. */
#include "tools/simcuda/sim_symbols.h"

#define SIMCUDA_SYMBOL(name, base, version, variant) \
    __attribute__((weak, visibility("default"))) int name(void) { return sim_unimplemented(#name); }
#include "driver_symbols.h"
#undef SIMCUDA_SYMBOL

const sim_symbol sim_symbols[] = {
#define SIMCUDA_SYMBOL(name, base, version, variant) { #name, #base, version, SIM_##variant, (void *)name },
#include "driver_symbols.h"
#undef SIMCUDA_SYMBOL
};

const size_t sim_symbol_count = sizeof sim_symbols / sizeof sim_symbols[0];

/* fuzz_stats.c — libFuzzer target for the stats-region reader (tiermem-stat): any bytes,
 * as a region another process could leave, go through tm_stats_parse; what it accepts
 * must be bounded and every text field printable and terminated. Built by `make fuzz`. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tools/tiermem-stat/stats_read.h"

static void check_text(const char *text, size_t size)
{
    size_t len = strnlen(text, size);
    if (len == size) __builtin_trap();
    for (size_t i = 0; i < len; i++)
        if (text[i] < 0x20 || text[i] > 0x7e || text[i] == '"' || text[i] == '\\') __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tm_stats_snapshot s;
    char why[256];
    if (tm_stats_parse(data, size, &s, why, sizeof why) != 0)
        return 0;
    const tm_stats_header *h = &s.header;
    if (h->call_count > TM_STATS_MAX_CALLS || s.record_count > h->record_capacity) __builtin_trap();
    check_text(h->policy, sizeof h->policy);
    check_text(h->meminfo, sizeof h->meminfo);
    check_text(h->tier_order, sizeof h->tier_order);
    for (int t = 0; t < TM_STATS_TIERS; t++)
        check_text(h->tier[t].name, sizeof h->tier[t].name);
    for (uint32_t i = 0; i < h->call_count; i++)
        check_text(s.calls[i].symbol, sizeof s.calls[i].symbol);
    for (size_t i = 0; i < s.record_count; i++)
        if (s.records[i].in_use != 1 || (s.records[i].seq & 1)) __builtin_trap();
    (void)tm_stats_calls_of(&s, "cuMemAlloc_v2");
    tm_stats_snapshot_free(&s);
    return 0;
}

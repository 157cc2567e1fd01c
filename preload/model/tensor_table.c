/* tensor_table.c — what both header parsers share: ordering, checking, lookup. */
#include "preload/model/tensor_table.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int by_offset(const void *a, const void *b)
{
    const tm_tensor *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

tm_parse_result tm_tensor_table_finish(tm_tensor_table *table, uint64_t file_size, const char **why)
{
    qsort(table->tensor, table->count, sizeof *table->tensor, by_offset);
    for (uint64_t i = 0; i < table->count; i++) {
        tm_tensor *t = &table->tensor[i];
        uint64_t next = i + 1 < table->count ? table->tensor[i + 1].offset : file_size;
        if (t->size == 0 && next > t->offset)
            t->size = next - t->offset;     /* unknown type: up to the next tensor */
        if (t->offset > file_size || t->size > file_size - t->offset) {
            *why = "a tensor lies past the end of the file";
            return TM_PARSE_BAD;
        }
        if (t->offset + t->size > next) {
            *why = "two tensors overlap";
            return TM_PARSE_BAD;
        }
    }
    return TM_PARSE_OK;
}

tm_parse_result tm_parse_model_header(const uint8_t *data, size_t len, uint64_t file_size,
                                      tm_tensor_table *table, size_t *need, const char **why)
{
    if (len >= 4 && memcmp(data, "GGUF", 4) == 0)
        return tm_parse_gguf(data, len, file_size, table, need, why);
    return tm_parse_safetensors(data, len, file_size, table, need, why);
}

const tm_tensor *tm_tensor_table_find(const tm_tensor_table *table, uint64_t offset)
{
    uint64_t lo = 0, hi = table->count;
    while (lo < hi) {                   /* the last tensor starting at or before offset */
        uint64_t mid = lo + (hi - lo) / 2;
        if (table->tensor[mid].offset <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return NULL;
    const tm_tensor *t = &table->tensor[lo - 1];
    return offset - t->offset < t->size ? t : NULL;
}

/* The first tensor ending after `offset` (ends only grow in offset order), or count. */
static uint64_t first_ending_after(const tm_tensor_table *table, uint64_t offset)
{
    uint64_t lo = 0, hi = table->count;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const tm_tensor *t = &table->tensor[mid];
        if (t->offset + t->size <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t tm_tensor_table_ending_in(const tm_tensor_table *table, uint64_t offset, uint64_t bytes, uint64_t *first)
{
    uint64_t lo = first_ending_after(table, offset);
    *first = lo;
    uint64_t n = 0;
    while (lo + n < table->count && table->tensor[lo + n].offset + table->tensor[lo + n].size - offset <= bytes)
        n++;
    return n;
}

bool tm_tensor_table_overlaps(const tm_tensor_table *table, uint64_t offset, uint64_t bytes)
{
    uint64_t i = first_ending_after(table, offset);
    if (i == table->count) return false;
    const tm_tensor *t = &table->tensor[i];
    return t->offset < offset || t->offset - offset < bytes;
}

void tm_tensor_table_free(tm_tensor_table *table)
{
    free(table->tensor);
    table->tensor = NULL;
    table->count = 0;
}

/* file_refs.c — the model files a process knows, who holds each one's tensor table, and
 * freeing a table when nothing does (see model_files.h); what its uploads have finished.
 * Kept apart from the hooks' side (model_files.c) so that host ranges need only this. */
#include "preload/model/file_refs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TABLES_BYTES_MAX ((uint64_t)64 << 20) /* every tensor table kept at once, together */

/* files_lock guards files[], each file's refs and table, and table_bytes. Records are
 * never freed (the file tier and host ranges keep pointers to them); their tables are. */
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_model_file *files[TM_MODEL_FILES_MAX];
static int file_count;
static uint64_t table_bytes;        /* of the tables kept now */
int tm_model_files_loading_now;        /* files with some tensors uploaded and some not */
static uint64_t bytes_left;         /* of their tensors not uploaded yet */

static uint64_t table_cost(const tm_tensor_table *table)
{
    return table->count * (sizeof *table->tensor + 1);
}

/* Gives `f` the parsed table (lock held); false when the tables kept would pass their
 * bound, or it has one already (then `table` is freed). */
static bool install_table_locked(tm_model_file *f, tm_tensor_table *table, uint8_t *uploaded, bool *over)
{
    *over = false;
    if (f->table.tensor || table_bytes + table_cost(table) > TABLES_BYTES_MAX) {
        *over = !f->table.tensor;
        tm_tensor_table_free(table);
        free(uploaded);
        return false;
    }
    for (uint64_t i = 0; i < table->count; i++)
        table->tensor[i].file_index = f->index;
    f->table = *table;
    f->uploaded = uploaded;
    f->tensors = f->tensors_uploaded = f->bytes = 0;
    for (uint64_t i = 0; i < table->count; i++) {
        f->tensors += table->tensor[i].size != 0;
        f->bytes += table->tensor[i].size;
    }
    table_bytes += table_cost(table);
    return true;
}

/* The last reference went (lock held): the table goes, and with it the file's part in
 * the loading phase. */
static void drop_table_locked(tm_model_file *f)
{
    uint64_t done = __atomic_load_n(&f->tensors_uploaded, __ATOMIC_ACQUIRE);
    if (f->tensors > 1 && done >= 1 && done < f->tensors) {
        uint64_t left = 0;
        for (uint64_t i = 0; i < f->table.count; i++)
            if (!f->uploaded[i]) left += f->table.tensor[i].size;
        __atomic_sub_fetch(&bytes_left, left, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&tm_model_files_loading_now, 1, __ATOMIC_RELEASE);
    }
    table_bytes -= table_cost(&f->table);
    tm_tensor_table_free(&f->table);
    free(f->uploaded);
    f->uploaded = NULL;
    f->tensors = f->tensors_uploaded = f->bytes = 0;
}

bool tm_model_file_pin(tm_model_file *f)
{
    pthread_mutex_lock(&files_lock);
    bool kept = f->table.tensor != NULL;
    if (kept) f->refs++;
    pthread_mutex_unlock(&files_lock);
    return kept;
}

void tm_model_file_unpin(tm_model_file *f)
{
    pthread_mutex_lock(&files_lock);
    if (f->refs > 0 && --f->refs == 0 && f->table.tensor)
        drop_table_locked(f);
    pthread_mutex_unlock(&files_lock);
}

/* The file whose table holds `t`. */
static tm_model_file *file_of(const tm_tensor *t)
{
    return t->file_index < TM_MODEL_FILES_MAX ? __atomic_load_n(&files[t->file_index], __ATOMIC_ACQUIRE) : NULL;
}

void tm_model_file_hold_tensor(const tm_tensor *t)
{
    tm_model_file *f = file_of(t);
    if (!f) return;
    pthread_mutex_lock(&files_lock);
    f->refs++;
    pthread_mutex_unlock(&files_lock);
}

void tm_model_file_release_tensor(const tm_tensor *t)
{
    tm_model_file *f = file_of(t);
    if (f) tm_model_file_unpin(f);
}

/* The known file `st` names, or NULL (lock held). */
static tm_model_file *find_locked(const struct stat *st)
{
    for (int i = 0; i < file_count; i++)
        if (files[i]->dev == st->st_dev && files[i]->ino == st->st_ino)
            return files[i];
    return NULL;
}

tm_model_file *tm_model_files_find(const struct stat *st)
{
    pthread_mutex_lock(&files_lock);
    tm_model_file *f = find_locked(st);
    if (f && f->table.tensor) f->refs++;
    else f = NULL;
    pthread_mutex_unlock(&files_lock);
    return f;
}

tm_model_file *tm_model_file_install(const struct stat *st, tm_model_file **fresh, tm_tensor_table *table,
                                     uint8_t *uploaded, bool *installed, bool *over)
{
    *installed = *over = false;
    pthread_mutex_lock(&files_lock);
    tm_model_file *f = find_locked(st);
    if (!f && file_count < TM_MODEL_FILES_MAX) {
        f = *fresh;
        *fresh = NULL;
        f->index = (uint32_t)file_count;
        __atomic_store_n(&files[file_count++], f, __ATOMIC_RELEASE);
    }
    if (f)
        *installed = install_table_locked(f, table, uploaded, over);
    else {
        tm_tensor_table_free(table);
        free(uploaded);
    }
    if (f && f->table.tensor) f->refs++;        /* ours, or the one a concurrent open made */
    else f = NULL;
    pthread_mutex_unlock(&files_lock);
    return f;
}

uint64_t tm_model_files_unloaded_bytes(void)
{
    return __atomic_load_n(&bytes_left, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------- uploads */

void tm_model_file_uploaded(tm_model_file *f, uint64_t offset, uint64_t bytes)
{
    if (!f->uploaded || bytes == 0)
        return;
    uint64_t first, n = tm_tensor_table_ending_in(&f->table, offset, bytes, &first);
    for (uint64_t i = first; i < first + n; i++) {
        if (f->table.tensor[i].size == 0 || __atomic_exchange_n(&f->uploaded[i], 1, __ATOMIC_RELAXED))
            continue;
        uint64_t done = __atomic_add_fetch(&f->tensors_uploaded, 1, __ATOMIC_ACQ_REL);
        if (f->tensors > 1 && done == 1) {
            __atomic_add_fetch(&bytes_left, f->bytes, __ATOMIC_RELEASE);
            __atomic_add_fetch(&tm_model_files_loading_now, 1, __ATOMIC_RELEASE);
        }
        if (f->tensors > 1)
            __atomic_sub_fetch(&bytes_left, f->table.tensor[i].size, __ATOMIC_RELEASE);
        if (f->tensors > 1 && done == f->tensors)
            __atomic_sub_fetch(&tm_model_files_loading_now, 1, __ATOMIC_RELEASE);
    }
}

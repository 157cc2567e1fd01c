/* file_refs.h — inside preload/model: the list of model files and their tables' holders
 * (file_refs.c), as model_files.c uses them. The holds themselves are in model_files.h. */
#ifndef TM_PRELOAD_FILE_REFS_H
#define TM_PRELOAD_FILE_REFS_H

#include <stdbool.h>
#include <sys/stat.h>

#include "preload/model/model_files.h"

#define TM_MODEL_FILES_MAX 1024     /* distinct model files per process */

/* The known file `st` names, pinned, when it has a table now; else NULL. */
tm_model_file *tm_model_files_find(const struct stat *st);

/* Gives the file `st` names the parsed `table` and its `uploaded` flags (both taken),
 * unless it has one now or the tables kept would pass 64 MiB (*over). A file not known
 * yet is *fresh (its fields filled; taken, *fresh set to NULL), unless TM_MODEL_FILES_MAX
 * are known. Returns the file pinned with its table, or NULL. *installed: this table is
 * the one kept. */
tm_model_file *tm_model_file_install(const struct stat *st, tm_model_file **fresh, tm_tensor_table *table,
                                     uint8_t *uploaded, bool *installed, bool *over);

/* Bytes of the loading files' tensors not uploaded yet. */
uint64_t tm_model_files_unloaded_bytes(void);

#endif /* TM_PRELOAD_FILE_REFS_H */

/* sim_gpu_image.c — recognises GPU code and lists its kernels (see sim_gpu_image.h).
 *
 * Layouts, as nvcc writes them (little-endian):
 *   fatbin wrapper  u32 magic 0x466243B1, u32 version, pointer to the fatbin, pointer
 *   fatbin          u32 magic 0xBA55ED50, u16 version 1, u16 header size, u64 size of the
 *                   entries after the header
 *   entry           u16 kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload
 *                   size; at +16 u32 compressed size, at +28 u32 sm_ arch, at +40 u64
 *                   flags; the payload follows the header
 * Kernel names come from the symbol tables of the cubins (STT_FUNC symbols) and from the
 * `.entry` directives of PTX text. nvcc builds every entry of a fatbin from the same
 * source, so the entries that can be read name the kernels of all. A compressed payload
 * (zstd, flag 0x8000, as in the CUDA libraries: cuBLAS looks up its __device__ constants)
 * is read only when no entry is plain: the one cubin closest to sm_90 is decompressed
 * (its size at +56 of the entry header, at most 256 MiB). Older compressions (0x1000,
 * 0x2000), or an entry of another kind, are not read; only when nothing can be read does
 * the image accept every name, rather than refuse a kernel that is really there. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#include "tools/simcuda/sim_gpu_image.h"

#define EM_NVIDIA_CUDA   190
#define ENTRY_KIND_PTX   1
#define ENTRY_KIND_ELF   2
#define ENTRY_HEADER_MIN 48           /* up to and with the flags */
#define MAX_ENTRIES      65536
#define MAX_NAMES        (1u << 20)
#define MAX_NAME_BYTES   ((size_t)64 << 20)
#define MAX_NAME_LENGTH  4096
#define MAX_GLOBALS      65536
#define MAX_INIT_BYTES   ((uint64_t)256 << 20)  /* initial bytes of all variables together */
#define FLAG_ZSTD        0x8000
#define MAX_INFLATED     ((uint64_t)256 << 20)  /* a decompressed cubin */
#define PREFERRED_ARCH   90                     /* simcuda's devices are sm_90 */

/* ---------------------------------------------------------------- bounded reads */

/* [base, base + size). `checked`: memory of unknown extent, read so that an unmapped
 * page is an error instead of a fault. */
typedef struct view {
    const unsigned char *base;
    uint64_t size;
    bool checked;
} view;

/* process_vm_readv on this process copies what is mapped and stops at what is not. Where
 * a sandbox refuses the call, mincore says whether each page is mapped (protection is
 * not visible that way; the image is program data nvcc wrote, so it is readable). */
bool sim_copy_mapped(void *dst, const void *src, size_t n)
{
    struct iovec local = { dst, n }, remote = { (void *)src, n };
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got == (ssize_t)n)
        return true;
    if (got >= 0 || (errno != ENOSYS && errno != EPERM))
        return false;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)src & ~(uintptr_t)(page - 1);
    uintptr_t end = (uintptr_t)src + n;
    if (end < (uintptr_t)src)
        return false;
    unsigned char resident;
    for (uintptr_t p = start; p < end; p += (uintptr_t)page)
        if (mincore((void *)p, 1, &resident) != 0)
            return false;
    memcpy(dst, src, n);
    return true;
}

static bool view_read(const view *v, uint64_t offset, void *dst, size_t n)
{
    if (offset > v->size || n > v->size - offset)
        return false;
    if (n == 0)
        return true;
    if (v->checked)
        return sim_copy_mapped(dst, v->base + offset, n);
    memcpy(dst, v->base + offset, n);
    return true;
}

/* A copy of [offset, offset + n), or NULL (out of bounds, unmapped, or no memory). */
static unsigned char *view_copy(const view *v, uint64_t offset, uint64_t n)
{
    if (n > SIM_GPU_IMAGE_MAX)
        return NULL;
    unsigned char *copy = malloc(n ? (size_t)n : 1);
    if (copy && !view_read(v, offset, copy, (size_t)n)) {
        free(copy);
        copy = NULL;
    }
    return copy;
}

static view sub_view(const view *v, uint64_t offset, uint64_t n)
{
    return (view){ v->base + offset, n, v->checked };
}

/* ---------------------------------------------------------------- names */

typedef struct name_list {
    char *text;
    size_t used, capacity;
    size_t count;
    /* the variables, from the first cubin that has any (every cubin has the same ones) */
    sim_gpu_global *globals;
    size_t global_count, global_capacity;
    uint64_t init_bytes;
    bool globals_done;
} name_list;

static void globals_free(sim_gpu_global *globals, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(globals[i].name);
        free(globals[i].init);
    }
    free(globals);
}

/* A variable of `size` bytes; `init` (may be NULL) is copied. */
static bool global_add(name_list *list, const char *name, size_t length, uint64_t size, const unsigned char *init)
{
    if (list->global_count == MAX_GLOBALS || length == 0 || length > MAX_NAME_LENGTH || size > SIM_GPU_IMAGE_MAX)
        return false;
    if (init && size > MAX_INIT_BYTES - list->init_bytes)
        return false;
    if (list->global_count == list->global_capacity) {
        size_t capacity = list->global_capacity ? list->global_capacity * 2 : 16;
        sim_gpu_global *grown = realloc(list->globals, capacity * sizeof *grown);
        if (!grown)
            return false;
        list->globals = grown;
        list->global_capacity = capacity;
    }
    sim_gpu_global *g = &list->globals[list->global_count];
    g->name = strndup(name, length);
    g->size = size;
    g->init = NULL;
    if (init && (g->init = malloc(size ? (size_t)size : 1)))
        memcpy(g->init, init, (size_t)size);
    if (!g->name || (init && !g->init)) {
        free(g->name);
        free(g->init);
        return false;
    }
    list->init_bytes += init ? size : 0;
    list->global_count++;
    return true;
}

static int fail(char *why, size_t why_size, const char *fmt, const char *detail)
{
    if (why && why_size)
        snprintf(why, why_size, fmt, detail);
    return -1;
}

static bool name_add(name_list *list, const char *name, size_t length)
{
    if (length == 0 || length > MAX_NAME_LENGTH || list->count >= MAX_NAMES)
        return false;
    if (list->used + length + 1 > list->capacity) {
        size_t capacity = list->capacity ? list->capacity * 2 : 4096;
        while (capacity < list->used + length + 1)
            capacity *= 2;
        if (capacity > MAX_NAME_BYTES)
            return false;
        char *text = realloc(list->text, capacity);
        if (!text)
            return false;
        list->text = text;
        list->capacity = capacity;
    }
    memcpy(list->text + list->used, name, length);
    list->text[list->used + length] = '\0';
    list->used += length + 1;
    list->count++;
    return true;
}

/* ---------------------------------------------------------------- cubins */

/* The STT_FUNC names of every symbol table of the ELF file in `v`. */
static int read_cubin(const view *v, name_list *names, char *why, size_t why_size)
{
    Elf64_Ehdr header;
    if (!view_read(v, 0, &header, sizeof header) || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
        return fail(why, why_size, "%s", "a cubin shorter than its ELF header");
    if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_machine != EM_NVIDIA_CUDA)
        return fail(why, why_size, "%s", "an ELF file that is not a 64-bit cubin");
    if (header.e_shnum == 0)
        return 0;
    if (header.e_shentsize != sizeof(Elf64_Shdr))
        return fail(why, why_size, "%s", "a cubin with malformed section headers");
    Elf64_Shdr *sections = (Elf64_Shdr *)view_copy(v, header.e_shoff, (uint64_t)header.e_shnum * sizeof(Elf64_Shdr));
    if (!sections)
        return fail(why, why_size, "%s", "a cubin whose section headers lie outside it");
    int result = 0;
    bool take_globals = !names->globals_done;
    for (unsigned s = 0; s < header.e_shnum && result == 0; s++) {
        const Elf64_Shdr *symtab = &sections[s];
        if (symtab->sh_type != SHT_SYMTAB)
            continue;
        if (symtab->sh_link >= header.e_shnum || sections[symtab->sh_link].sh_type != SHT_STRTAB ||
            symtab->sh_entsize != sizeof(Elf64_Sym)) {
            result = fail(why, why_size, "%s", "a cubin symbol table without a string table");
            break;
        }
        const Elf64_Shdr *strtab = &sections[symtab->sh_link];
        uint64_t count = symtab->sh_size / sizeof(Elf64_Sym);
        Elf64_Sym *symbols = (Elf64_Sym *)view_copy(v, symtab->sh_offset, count * sizeof(Elf64_Sym));
        char *strings = (char *)view_copy(v, strtab->sh_offset, strtab->sh_size);
        if (!symbols || !strings) {
            result = fail(why, why_size, "%s", "a cubin symbol table that lies outside it");
        } else {
            for (uint64_t i = 0; i < count; i++) {
                const Elf64_Sym *sym = &symbols[i];
                int type = ELF64_ST_TYPE(sym->st_info);
                if ((type != STT_FUNC && type != STT_OBJECT) || sym->st_name >= strtab->sh_size)
                    continue;
                const char *name = strings + sym->st_name;
                const char *end = memchr(name, '\0', strtab->sh_size - sym->st_name);
                if (!end) {
                    result = fail(why, why_size, "%s", "a cubin symbol name that runs past its string table");
                    break;
                }
                if (type == STT_FUNC && !name_add(names, name, (size_t)(end - name))) {
                    result = fail(why, why_size, "%s", "a cubin with too many or too long kernel names");
                    break;
                }
                if (type != STT_OBJECT || !take_globals || sym->st_size == 0)
                    continue;
                /* Initial bytes: the symbol's place in a PROGBITS section (NOBITS: zeros). */
                unsigned char *init = NULL;
                if (sym->st_shndx > 0 && sym->st_shndx < header.e_shnum) {
                    const Elf64_Shdr *home = &sections[sym->st_shndx];
                    if (home->sh_type == SHT_PROGBITS && sym->st_value <= home->sh_size &&
                        sym->st_size <= home->sh_size - sym->st_value && home->sh_offset <= v->size &&
                        sym->st_value <= v->size - home->sh_offset)
                        init = view_copy(v, home->sh_offset + sym->st_value, sym->st_size);
                }
                bool added = global_add(names, name, (size_t)(end - name), sym->st_size, init);
                free(init);
                if (!added) {
                    result = fail(why, why_size, "%s", "a cubin with too many or too large variables");
                    break;
                }
            }
        }
        free(symbols);
        free(strings);
    }
    free(sections);
    if (names->global_count)
        names->globals_done = true;
    return result;
}

/* ---------------------------------------------------------------- PTX */

static bool ptx_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

static bool ptx_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The names after every `.entry` directive of PTX text[0, length). */
static int read_ptx(const char *text, size_t length, name_list *names, char *why, size_t why_size)
{
    static const char directive[] = ".entry";
    const size_t dlen = sizeof directive - 1;
    for (size_t at = 0; at + dlen < length; at++) {
        if (memcmp(text + at, directive, dlen) != 0 || !ptx_space(text[at + dlen]) ||
            (at > 0 && !ptx_space(text[at - 1])))
            continue;
        size_t start = at + dlen;
        while (start < length && ptx_space(text[start]))
            start++;
        size_t end = start;
        while (end < length && ptx_name_char(text[end]))
            end++;
        if (end > start && !name_add(names, text + start, end - start))
            return fail(why, why_size, "%s", "PTX with too many or too long kernel names");
        at = end > at ? end - 1 : at;
    }
    return 0;
}

/* PTX text of unknown length in memory: up to its terminating NUL, read in pieces. */
static char *read_text_unbounded(const unsigned char *image, size_t *length)
{
    size_t capacity = 0, used = 0;
    char *text = NULL;
    for (;;) {
        const size_t piece = 65536;
        if (used + piece > SIM_GPU_IMAGE_MAX)
            break;
        if (used + piece + 1 > capacity) {
            capacity = capacity ? capacity * 2 : piece * 2;
            char *grown = realloc(text, capacity + 1);
            if (!grown)
                break;
            text = grown;
        }
        /* Byte by byte across a page end we cannot cross: shrink the piece until it reads. */
        size_t n = piece;
        while (n > 0 && !sim_copy_mapped(text + used, image + used, n))
            n /= 2;
        if (n == 0)
            break;
        char *nul = memchr(text + used, '\0', n);
        if (nul) {
            *length = (size_t)(nul - text);
            return text;
        }
        used += n;
    }
    free(text);
    return NULL;
}

/* ---------------------------------------------------------------- fatbins */

/* The zstd-compressed cubin of `size` bytes at `payload` of `v`, decompressed into a
 * buffer of `inflated` bytes and read like a plain one; 1 when it is not usable (the
 * caller goes on without it), -1 when the cubin inside is malformed. */
static int read_zstd_cubin(const view *v, uint64_t payload, uint64_t size, uint64_t inflated, name_list *names,
                           char *why, size_t why_size)
{
    if (inflated == 0 || inflated > MAX_INFLATED || size == 0)
        return 1;
    unsigned char *packed = view_copy(v, payload, size), *plain = malloc((size_t)inflated);
    size_t got = packed && plain ? ZSTD_decompress(plain, (size_t)inflated, packed, (size_t)size) : 0;
    free(packed);
    if (!plain || ZSTD_isError(got) || got != inflated || got < SELFMAG || memcmp(plain, ELFMAG, SELFMAG) != 0) {
        free(plain);
        return 1;
    }
    view cubin = { plain, inflated, false };
    int result = read_cubin(&cubin, names, why, why_size);
    free(plain);
    return result;
}

static int read_fatbin(const view *whole, sim_gpu_image *out, name_list *names, char *why, size_t why_size)
{
    int read = 0, unread = 0;
    /* the compressed cubin to read when no entry is plain: the arch closest to sm_90 */
    uint64_t zstd_at = 0, zstd_size = 0, zstd_inflated = 0;
    int zstd_arch = -1;
    struct { uint32_t magic; uint16_t version, header_size; uint64_t size; } header;
    if (!view_read(whole, 0, &header, sizeof header))
        return fail(why, why_size, "%s", "a fatbin shorter than its header");
    if (header.magic != SIM_FATBIN_MAGIC || header.version != 1 || header.header_size < sizeof header)
        return fail(why, why_size, "%s", "a fatbin header of an unknown version");
    uint64_t total = (uint64_t)header.header_size + header.size;
    if (header.size > SIM_GPU_IMAGE_MAX || total > whole->size)
        return fail(why, why_size, "%s", "a fatbin whose size runs past the image");
    view v = sub_view(whole, 0, total);
    uint64_t at = header.header_size;
    for (int n = 0; at < total; n++) {
        struct {
            uint16_t kind, version;
            uint32_t header_size;
            uint64_t payload_size;
            uint32_t compressed_size, unknown0, version_ptx, arch;
            uint32_t name_offset, name_length;
            uint64_t flags;
        } entry;
        if (n == MAX_ENTRIES || !view_read(&v, at, &entry, sizeof entry))
            return fail(why, why_size, "%s", "a fatbin entry header that runs past the fatbin");
        if (entry.header_size < ENTRY_HEADER_MIN || entry.header_size > total - at ||
            entry.payload_size > total - at - entry.header_size)
            return fail(why, why_size, "%s", "a fatbin entry whose sizes run past the fatbin");
        uint64_t payload = at + entry.header_size;
        bool compressed = entry.compressed_size != 0 || (entry.flags & 0xb000) != 0;
        unsigned char magic[4] = { 0 };
        view_read(&v, payload, magic, entry.payload_size < 4 ? (size_t)entry.payload_size : 4);
        if (entry.kind == ENTRY_KIND_ELF && !compressed && memcmp(magic, ELFMAG, SELFMAG) == 0) {
            view cubin = sub_view(&v, payload, entry.payload_size);
            if (read_cubin(&cubin, names, why, why_size) != 0)
                return -1;
            if ((int)entry.arch > out->arch && entry.arch < 10000)
                out->arch = (int)entry.arch;
            read++;
        } else if (entry.kind == ENTRY_KIND_PTX && !compressed) {
            char *text = (char *)view_copy(&v, payload, entry.payload_size);
            if (!text)
                return fail(why, why_size, "%s", "a PTX entry that cannot be read");
            size_t length = strnlen(text, (size_t)entry.payload_size);
            int result = read_ptx(text, length, names, why, why_size);
            free(text);
            if (result != 0)
                return -1;
            read++;
        } else {
            uint64_t inflated = 0;
            const int arch = (int)entry.arch;
            const bool closer = zstd_arch < 0 || (arch <= PREFERRED_ARCH && (zstd_arch > PREFERRED_ARCH || arch > zstd_arch)) ||
                                (arch > PREFERRED_ARCH && zstd_arch > PREFERRED_ARCH && arch < zstd_arch);
            if (entry.kind == ENTRY_KIND_ELF && (entry.flags & FLAG_ZSTD) && entry.header_size >= 64 &&
                view_read(&v, at + 56, &inflated, sizeof inflated) && closer) {
                zstd_at = payload;
                /* the payload is padded: the frame is compressed_size bytes when given */
                zstd_size = entry.compressed_size && entry.compressed_size <= entry.payload_size ? entry.compressed_size
                                                                                                : entry.payload_size;
                zstd_inflated = inflated;
                zstd_arch = arch;
            }
            unread++;
        }
        at = payload + entry.payload_size;
    }
    if (read == 0 && zstd_arch >= 0) {
        int result = read_zstd_cubin(&v, zstd_at, zstd_size, zstd_inflated, names, why, why_size);
        if (result < 0)
            return -1;
        if (result == 0) {
            read++;
            if (zstd_arch > out->arch && zstd_arch < 10000)
                out->arch = zstd_arch;
        }
    }
    out->any_name = unread > 0 && read == 0;
    return 0;
}

/* ---------------------------------------------------------------- entry points */

sim_gpu_format sim_gpu_image_kind(const void *image, size_t size)
{
    const unsigned char *bytes = image;
    if (!image || size < 4)
        return SIM_GPU_NOT_GPU_CODE;
    uint32_t magic;
    memcpy(&magic, bytes, 4);
    if (magic == SIM_FATBIN_WRAPPER_MAGIC)
        return SIM_GPU_FATBIN_WRAPPER;
    if (magic == SIM_FATBIN_MAGIC)
        return SIM_GPU_FATBIN;
    if (size >= 20 && memcmp(bytes, ELFMAG, SELFMAG) == 0) {
        uint16_t machine;
        memcpy(&machine, bytes + 18, 2);
        return machine == EM_NVIDIA_CUDA ? SIM_GPU_CUBIN : SIM_GPU_NOT_GPU_CODE;
    }
    if ((size >= 2 && memcmp(bytes, "//", 2) == 0) || (size >= 8 && memcmp(bytes, ".version", 8) == 0))
        return SIM_GPU_PTX;
    return SIM_GPU_NOT_GPU_CODE;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sim_gpu_image_read(const void *image, size_t size, sim_gpu_image *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    if (!image)
        return fail(why, why_size, "%s", "no image");
    view v = { image, size ? size : SIM_GPU_IMAGE_MAX, size == 0 };
    if (size > SIM_GPU_IMAGE_MAX)
        return fail(why, why_size, "%s", "an image over 1 GiB");
    unsigned char head[20] = { 0 };
    size_t head_size = sizeof head;
    while (head_size > 0 && !view_read(&v, 0, head, head_size))
        head_size /= 2;
    out->format = sim_gpu_image_kind(head, head_size);
    name_list names = { 0 };
    int result = 0;
    switch (out->format) {
    case SIM_GPU_FATBIN_WRAPPER: {
        struct { uint32_t magic, version; uint64_t data, extra; } wrapper;
        if (!view_read(&v, 0, &wrapper, sizeof wrapper))
            result = fail(why, why_size, "%s", "a fatbin wrapper shorter than 24 bytes");
        else if (wrapper.version != 1 && wrapper.version != 2)
            result = fail(why, why_size, "%s", "a fatbin wrapper of an unknown version");
        else if (wrapper.data == 0)
            result = fail(why, why_size, "%s", "a fatbin wrapper without a fatbin");
        else {
            /* The fatbin is wherever the wrapper points: its extent is its own header's. */
            view fatbin = { (const unsigned char *)(uintptr_t)wrapper.data, SIM_GPU_IMAGE_MAX, true };
            result = read_fatbin(&fatbin, out, &names, why, why_size);
        }
        break;
    }
    case SIM_GPU_FATBIN:
        result = read_fatbin(&v, out, &names, why, why_size);
        break;
    case SIM_GPU_CUBIN:
        result = read_cubin(&v, &names, why, why_size);
        break;
    case SIM_GPU_PTX: {
        size_t length = 0;
        char *text = NULL;
        if (size) {
            text = (char *)view_copy(&v, 0, size);
            length = text ? strnlen(text, size) : 0;
        } else {
            text = read_text_unbounded(image, &length);
        }
        result = text ? read_ptx(text, length, &names, why, why_size)
                      : fail(why, why_size, "%s", "PTX text without an end");
        free(text);
        break;
    }
    case SIM_GPU_NOT_GPU_CODE:
        result = fail(why, why_size, "%s", "not GPU code (no fatbin, cubin or PTX)");
        break;
    }
    if (result != 0) {
        sim_gpu_format format = out->format;
        globals_free(names.globals, names.global_count);
        free(names.text);
        memset(out, 0, sizeof *out);
        out->format = format; /* what it looked like, for the caller's message */
        return -1;
    }
    out->text = names.text;
    out->globals = names.globals;
    out->global_count = names.global_count;
    if (names.count) {
        out->names = malloc(names.count * sizeof *out->names);
        if (!out->names) {
            free(names.text);
            globals_free(names.globals, names.global_count);
            memset(out, 0, sizeof *out);
            return fail(why, why_size, "%s", "no memory for the kernel names");
        }
        char *at = names.text;
        for (size_t i = 0; i < names.count; i++) {
            out->names[i] = at;
            at += strlen(at) + 1;
        }
        qsort(out->names, names.count, sizeof *out->names, compare_names);
        size_t unique = 0;
        for (size_t i = 0; i < names.count; i++)
            if (unique == 0 || strcmp(out->names[unique - 1], out->names[i]) != 0)
                out->names[unique++] = out->names[i];
        out->count = unique;
    }
    return 0;
}

bool sim_gpu_image_has(const sim_gpu_image *image, const char *name)
{
    if (image->any_name)
        return true;
    return image->count && bsearch(&name, image->names, image->count, sizeof *image->names, compare_names);
}

const sim_gpu_global *sim_gpu_image_global(const sim_gpu_image *image, const char *name)
{
    for (size_t i = 0; i < image->global_count; i++)
        if (strcmp(image->globals[i].name, name) == 0)
            return &image->globals[i];
    return NULL;
}

void sim_gpu_image_free(sim_gpu_image *image)
{
    globals_free(image->globals, image->global_count);
    free(image->names);
    free(image->text);
    memset(image, 0, sizeof *image);
}

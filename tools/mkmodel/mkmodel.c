/* tiermem-mkmodel — writes a llama-family GGUF (llama, qwen2, qwen3) with random weights.
 *
 * For tests and benchmarks at sizes no real test model has. Weights are seeded and
 * deterministic (one stream per tensor, from --seed and the tensor name), uniform with
 * variance 1/fan_in so activations stay sane through the layers; norms are 1. The file
 * carries a working tokenizer (synthetic SentencePiece or byte-level BPE vocabulary).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/quantize.h"
#include "tools/mkmodel/gguf_writer.h"
#include "tools/mkmodel/vocab.h"

enum { T_F32 = 0, T_F16 = 1, T_Q8_0 = 8, T_BF16 = 30 };

/* --type names: one weight type, or a llama.cpp-style mix (`_m`: output, attn_v and
 * ffn_down in the finer type, as Q4_K_M files keep them). */
static const struct {
    const char *name;
    int wtype, wtype_fine;
} TYPES[] = {
    {"f32", T_F32, T_F32}, {"f16", T_F16, T_F16}, {"bf16", T_BF16, T_BF16},
    {"q8_0", T_Q8_0, T_Q8_0}, {"q4_0", TM_WTYPE_Q4_0, TM_WTYPE_Q4_0},
    {"q4_1", TM_WTYPE_Q4_1, TM_WTYPE_Q4_1}, {"q5_0", TM_WTYPE_Q5_0, TM_WTYPE_Q5_0},
    {"q5_1", TM_WTYPE_Q5_1, TM_WTYPE_Q5_1}, {"q2_k", TM_WTYPE_Q2_K, TM_WTYPE_Q2_K},
    {"q3_k", TM_WTYPE_Q3_K, TM_WTYPE_Q3_K}, {"q4_k", TM_WTYPE_Q4_K, TM_WTYPE_Q4_K},
    {"q5_k", TM_WTYPE_Q5_K, TM_WTYPE_Q5_K}, {"q6_k", TM_WTYPE_Q6_K, TM_WTYPE_Q6_K},
    {"q4_k_m", TM_WTYPE_Q4_K, TM_WTYPE_Q6_K}, {"q5_k_m", TM_WTYPE_Q5_K, TM_WTYPE_Q6_K},
};
#define TYPE_NAMES "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, q4_k_m or q5_k_m"

typedef enum arch { ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_QWEN3MOE, N_ARCHS } arch;
static const char *const ARCH_NAMES[] = {"llama", "qwen2", "qwen3", "qwen3moe"};

typedef struct shape {
    arch arch;
    int64_t layers, dim, heads, kv_heads, ffn, vocab, ctx;
    int64_t head_dim;       /* 0: dim / heads; else written as attention.key_length */
    bool rope_freqs;        /* write rope_freqs.weight with Llama 3.1's factors */
    int64_t experts, experts_used, expert_ffn; /* mixture of experts: 0 experts for dense */
    float expert_skew;      /* router rows scaled by exp(-skew * rank / experts): a few win */
    float rope_base;
    int wtype, wtype_fine;  /* most matrices; output, attn_v and ffn_down */
    int type_index;         /* in TYPES */
    vocab_kind vocab_kind;
    bool tied;              /* no output.weight: the engine falls back to token_embd */
} shape;

/* ----------------------------------------------------------------------------
 * Random numbers: splitmix64, one stream per tensor */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t name_seed(uint64_t seed, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ seed; /* FNV-1a over the name */
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* ----------------------------------------------------------------------------
 * Number formats */

static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xFF, man = x & 0x7FFFFF;
    if (exp == 0xFF) return (uint16_t)(sign | 0x7C00 | (man ? 0x200 : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00);
    if (e <= 0) { /* subnormal or zero */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | (uint32_t)e << 10 | man >> 13, rem = man & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exp: correct */
    return (uint16_t)half;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7FFF + ((x >> 16) & 1); /* round to nearest even (finite inputs) */
    return (uint16_t)(x >> 16);
}

static int64_t row_bytes(int wtype, int64_t n)
{
    return tm_wtype_row_bytes(wtype, n);
}

/* ----------------------------------------------------------------------------
 * Writing one tensor: uniform in [-amp, amp], in chunks */

#define CHUNK_VALUES (1 << 20)

/* col0: added to the first value of every row of `row` values (0: none). */
static int write_random(gguf_writer *w, const char *name, int wtype, int64_t n, float amp,
                        uint64_t seed, int64_t row, float col0)
{
    static float vals[CHUNK_VALUES];
    static uint8_t bytes[CHUNK_VALUES * 4];
    uint64_t s = name_seed(seed, name);
    float unit = amp / 2147483648.0f;
    for (int64_t done = 0; done < n;) {
        int64_t k = n - done < CHUNK_VALUES ? n - done : CHUNK_VALUES;
        for (int64_t i = 0; i < k; i += 2) {
            uint64_t r = splitmix64(&s);
            vals[i] = (float)(int32_t)(uint32_t)r * unit;
            if (i + 1 < k) vals[i + 1] = (float)(int32_t)(uint32_t)(r >> 32) * unit;
        }
        for (int64_t i = col0 != 0.0f ? (row - done % row) % row : k; i < k; i += row) vals[i] += col0;
        size_t nb = 0;
        if (wtype == T_F32) {
            memcpy(bytes, vals, (size_t)k * 4);
            nb = (size_t)k * 4;
        } else if (wtype == T_F16 || wtype == T_BF16) {
            for (int64_t i = 0; i < k; i++) {
                uint16_t h = wtype == T_F16 ? f32_to_f16(vals[i]) : f32_to_bf16(vals[i]);
                memcpy(bytes + 2 * i, &h, 2);
            }
            nb = (size_t)k * 2;
        } else if (wtype != T_Q8_0) { /* the block types of kernels/quants.h */
            tm_quantize_row(wtype, bytes, vals, k);
            nb = (size_t)row_bytes(wtype, k);
        } else { /* Q8_0: per block of 32, d = absmax / 127, q = round(x / d) */
            for (int64_t b = 0; b < k; b += 32) {
                float amax = 0;
                for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(vals[b + i]));
                float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
                uint16_t dh = f32_to_f16(d);
                memcpy(bytes + nb, &dh, 2);
                for (int i = 0; i < 32; i++) bytes[nb + 2 + i] = (uint8_t)(int8_t)lrintf(vals[b + i] * inv);
                nb += 34;
            }
        }
        if (gw_write_data(w, bytes, nb)) return -1;
        done += k;
    }
    return gw_end_tensor(w);
}

static int write_ones(gguf_writer *w, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float one = 1.0f;
        if (gw_write_data(w, &one, 4)) return -1;
    }
    return gw_end_tensor(w);
}

/* A router [experts][dim], f32, uniform in [-amp, amp], whose first column is
 * amp * 16 * (exp(-skew * r / experts) - 1/2), r the expert's rank in a shuffle of its own
 * per layer: with skew > 0 (and token embeddings sharing a positive first feature) a few
 * experts win the top-k for most tokens, as in trained MoE models, and which ones differs
 * from layer to layer, their ids in no order; skew 0 leaves the choice to the random rows. */
static int write_router(gguf_writer *w, const char *name, int64_t experts, int64_t dim, float amp, float skew,
                        uint64_t seed)
{
    uint64_t s = name_seed(seed, name), shuffle = name_seed(seed ^ 0x5eedu, name);
    int64_t *rank = malloc((size_t)experts * sizeof *rank);
    if (!rank) return -1;
    for (int64_t e = 0; e < experts; e++) rank[e] = e;
    for (int64_t e = experts - 1; e > 0; e--) { /* Fisher-Yates */
        int64_t j = (int64_t)(splitmix64(&shuffle) % (uint64_t)(e + 1)), t = rank[e];
        rank[e] = rank[j];
        rank[j] = t;
    }
    float unit = amp / 2147483648.0f;
    int rc = 0;
    for (int64_t e = 0; e < experts && !rc; e++)
        for (int64_t i = 0; i < dim && !rc; i++) {
            float v = (float)(int32_t)(uint32_t)splitmix64(&s) * unit;
            if (i == 0 && skew > 0) v = amp * 16 * (expf(-skew * (float)rank[e] / (float)experts) - 0.5f);
            rc = gw_write_data(w, &v, 4);
        }
    free(rank);
    return rc ? -1 : gw_end_tensor(w);
}

/* Llama 3.1's frequency factors (what llama.cpp's converter writes as rope_freqs.weight):
 * 1 for wavelengths below 8192 / 4, 8 above 8192 / 1, smoothly between. */
static int write_llama3_freqs(gguf_writer *w, int64_t n_pairs, int64_t rot_dim, float base)
{
    const double factor = 8, low = 1, high = 4, old_ctx = 8192;
    for (int64_t i = 0; i < n_pairs; i++) {
        double freq = pow(base, -2.0 * (double)i / (double)rot_dim), wavelen = 2 * M_PI / freq, f;
        if (wavelen < old_ctx / high) f = 1;
        else if (wavelen > old_ctx / low) f = factor;
        else {
            double smooth = (old_ctx / wavelen - low) / (high - low);
            f = 1 / ((1 - smooth) / factor + smooth);
        }
        float v = (float)f;
        if (gw_write_data(w, &v, 4)) return -1;
    }
    return gw_end_tensor(w);
}

/* ----------------------------------------------------------------------------
 * Shape */

typedef enum contents { RANDOM, ONES, LLAMA3_FREQS, ROUTER } contents;

typedef struct tensor_plan {
    char name[64];
    int64_t n_in, n_out;    /* a vector when n_out == 0 */
    int64_t n_expert;       /* a stack of n_expert matrices when > 0 */
    int wtype;
    float amp;
    float col0;             /* added to each row's first value (the skewed router's signal) */
    contents what;          /* vectors: norms are ONES, biases RANDOM */
} tensor_plan;

#define MAX_PLAN(sh) (4 + 18 * (size_t)(sh)->layers)

static int64_t plan_tensors(const shape *sh, tensor_plan *plan)
{
    int64_t head_dim = sh->head_dim ? sh->head_dim : sh->dim / sh->heads, kv_dim = head_dim * sh->kv_heads;
    int64_t q_dim = head_dim * sh->heads, n = 0;
    float sqrt3 = sqrtf(3.0f); /* uniform [-a, a] has variance a^2 / 3 */
#define ADD(nm, in, out, wt, amp_) do { \
        snprintf(plan[n].name, sizeof plan[n].name, "%s", nm); \
        plan[n].n_in = in; plan[n].n_out = out; plan[n].wtype = wt; plan[n].amp = amp_; \
        plan[n].what = (out) || (amp_) != 1 ? RANDOM : ONES; n++; } while (0)
    ADD("token_embd.weight", sh->dim, sh->vocab, sh->wtype, sqrt3);
    /* With a skewed router, every token carries the same positive first feature, which the
     * router's first column turns into a consistent preference for the low expert ids. */
    if (sh->experts && sh->expert_skew > 0) plan[n - 1].col0 = 2 * sqrt3;
    ADD("output_norm.weight", sh->dim, 0, T_F32, 1);
    if (!sh->tied) ADD("output.weight", sh->dim, sh->vocab, sh->wtype_fine, 4 * sqrt3 / sqrtf((float)sh->dim));
    if (sh->rope_freqs) {
        ADD("rope_freqs.weight", head_dim / 2, 0, T_F32, 1);
        plan[n - 1].what = LLAMA3_FREQS;
    }
    for (int64_t l = 0; l < sh->layers; l++) {
        char nm[64];
        float a_dim = sqrt3 / sqrtf((float)sh->dim), a_ffn = sqrt3 / sqrtf((float)sh->ffn);
#define BLK_T(suffix, in, out, wt, amp_) do { snprintf(nm, sizeof nm, "blk.%" PRId64 ".%s", l, suffix); \
        ADD(nm, in, out, (out) ? (wt) : T_F32, amp_); } while (0)
#define BLK(suffix, in, out, amp_) BLK_T(suffix, in, out, sh->wtype, amp_)
        BLK("attn_norm.weight", sh->dim, 0, 1);
        BLK("attn_q.weight", sh->dim, q_dim, a_dim);
        BLK("attn_k.weight", sh->dim, kv_dim, a_dim);
        BLK_T("attn_v.weight", sh->dim, kv_dim, sh->wtype_fine, a_dim);
        BLK("attn_output.weight", q_dim, sh->dim, sqrt3 / sqrtf((float)q_dim));
        BLK("ffn_norm.weight", sh->dim, 0, 1);
        if (sh->experts) { /* Mixtral's layout: a router and stacks of expert matrices */
            int64_t ef = sh->expert_ffn ? sh->expert_ffn : sh->ffn;
            BLK_T("ffn_gate_inp.weight", sh->dim, sh->experts, T_F32, a_dim);
            plan[n - 1].what = ROUTER;
            BLK("ffn_gate_exps.weight", sh->dim, ef, a_dim);
            plan[n - 1].n_expert = sh->experts;
            BLK("ffn_up_exps.weight", sh->dim, ef, a_dim);
            plan[n - 1].n_expert = sh->experts;
            BLK_T("ffn_down_exps.weight", ef, sh->dim, sh->wtype_fine, sqrt3 / sqrtf((float)ef));
            plan[n - 1].n_expert = sh->experts;
        } else {
            BLK("ffn_gate.weight", sh->dim, sh->ffn, a_dim);
            BLK("ffn_up.weight", sh->dim, sh->ffn, a_dim);
            BLK_T("ffn_down.weight", sh->ffn, sh->dim, sh->wtype_fine, a_ffn);
        }
        if (sh->arch == ARCH_QWEN2) { /* biases: small random vectors */
            BLK("attn_q.bias", q_dim, 0, 0.5f);
            BLK("attn_k.bias", kv_dim, 0, 0.5f);
            BLK("attn_v.bias", kv_dim, 0, 0.5f);
        }
        if (sh->arch == ARCH_QWEN3 || sh->arch == ARCH_QWEN3MOE) { /* per-head norms */
            BLK("attn_q_norm.weight", head_dim, 0, 1);
            BLK("attn_k_norm.weight", head_dim, 0, 1);
        }
#undef BLK
#undef BLK_T
    }
#undef ADD
    return n;
}

static int64_t tensor_bytes(const tensor_plan *t)
{
    return t->n_out ? row_bytes(t->wtype, t->n_in) * t->n_out * (t->n_expert ? t->n_expert : 1) : 4 * t->n_in;
}

static int64_t model_bytes(const shape *sh)
{
    tensor_plan *plan = calloc(MAX_PLAN(sh), sizeof *plan);
    int64_t n = plan_tensors(sh, plan), total = 0;
    for (int64_t i = 0; i < n; i++) total += (tensor_bytes(&plan[i]) + 31) / 32 * 32;
    free(plan);
    return total;
}

/* The largest block of the weight types in use: rows must hold whole blocks. */
static int64_t row_block(const shape *sh)
{
    int32_t a = tm_wtype_block(sh->wtype), b = tm_wtype_block(sh->wtype_fine);
    return a > b ? a : b;
}

/* The default feed-forward width: 8/3 of dim, in whole blocks of 32 values or more. */
static int64_t ffn_for(const shape *sh)
{
    int64_t q = row_block(sh) > 32 ? row_block(sh) : 32;
    return (sh->dim * 8 / 3 + q - 1) / q * q;
}

/* Fills dim, heads, kv_heads, ffn and layers for a total near `target` bytes: the
 * smallest width (head size 64, 4 query heads per KV head) that needs at most 32
 * layers. */
static void pick_shape(shape *sh, int64_t target)
{
    static const int64_t dims[] = {256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        sh->dim = dims[i];
        sh->heads = sh->dim / 64;
        sh->kv_heads = sh->heads >= 4 ? sh->heads / 4 : 1;
        sh->ffn = ffn_for(sh);
        sh->layers = 1;
        int64_t one = model_bytes(sh);
        sh->layers = 2;
        int64_t per_layer = model_bytes(sh) - one, base = one - per_layer;
        int64_t layers = (target - base + per_layer / 2) / per_layer;
        sh->layers = layers < 1 ? 1 : layers;
        if (sh->layers <= 32) return;
    }
}

/* ----------------------------------------------------------------------------
 * Command line */

static int64_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    }
    if (*end == 'i' || *end == 'B') end++;
    if (*end == 'B') end++;
    return *end ? -1 : (int64_t)v;
}

static int64_t parse_int(const char *opt, const char *s, int64_t lo, int64_t hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "tiermem-mkmodel: %s expects an integer from %lld to %lld, got '%s'\n", opt,
                (long long)lo, (long long)hi, s);
        exit(2);
    }
    return v;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tiermem-mkmodel -o OUT.gguf [options]\n"
        "  --target-size SIZE  pick a shape whose weights total about SIZE (e.g. 500M, 1.5G)\n"
        "  --layers N --dim N --heads N --kv-heads N --ffn N   explicit shape\n"
        "  --vocab N           vocabulary size (default 1024)\n"
        "  --vocab-type T      spm (SentencePiece, default) or gpt2 (byte-level BPE)\n"
        "  --type T            weight type: f32 (default), f16, bf16, q8_0, q4_0, q4_1, q5_0,\n"
        "                      q5_1, q2_k, q3_k, q4_k, q5_k, q6_k; q4_k_m, q5_k_m: Q4_K/Q5_K\n"
        "                      with output, attn_v and ffn_down in Q6_K\n"
        "  --ctx N             context length (default 2048)\n"
        "  --rope-base F       RoPE base (default 10000)\n"
        "  --tied              omit output.weight (the embedding is reused)\n"
        "  --arch A            llama (default; also Mistral's), qwen2 (q/k/v biases) or qwen3\n"
        "                      (q/k norms); keys are written under A.*\n"
        "  --head-dim N        head size other than dim / heads (attention.key_length)\n"
        "  --rope-freqs        write rope_freqs.weight with Llama 3.1's frequency factors\n"
        "  --experts N --experts-used K   mixture of experts (Mixtral layout; --arch qwen3moe too)\n"
        "  --expert-ffn N      expert width (expert_feed_forward_length; default --ffn)\n"
        "  --expert-skew S     router skew: 0 spreads tokens evenly, 4 sends most to a few experts\n"
        "  --seed N            random seed (default 1)\n"
        "  --version           the version, and stop\n");
}

/* The output, created or replaced; never through a symlink, and never something other than
 * a regular file (a device or a FIFO named by mistake is left alone). */
static FILE *open_output(const char *path)
{
    /* O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader. */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        /* ENXIO: a FIFO nobody reads, refused by O_NONBLOCK */
        if (errno == ENXIO)
            fprintf(stderr, "tiermem-mkmodel: cannot write '%s': not a regular file\n", path);
        else
            fprintf(stderr, "tiermem-mkmodel: cannot create '%s': %s\n", path,
                    errno == ELOOP ? "it is a symlink" : strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || ftruncate(fd, 0) != 0 || fcntl(fd, F_SETFL, 0) != 0) {
        fprintf(stderr, "tiermem-mkmodel: cannot write '%s': %s\n", path,
                S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
        close(fd);
        return NULL;
    }
    FILE *out = fdopen(fd, "wb");
    if (!out)
        close(fd);
    return out;
}

int main(int argc, char **argv)
{
    shape sh = {.layers = 4, .dim = 256, .heads = 4, .kv_heads = 2, .ffn = 0, .vocab = 1024,
                .ctx = 2048, .rope_base = 10000.0f, .wtype = T_F32, .wtype_fine = T_F32,
                .vocab_kind = VOCAB_SPM};
    const char *out_path = NULL;
    int64_t target = 0;
    uint64_t seed = 1;
    bool explicit_shape = false;
    enum { O_LAYERS = 256, O_DIM, O_HEADS, O_KV_HEADS, O_FFN, O_VOCAB, O_TYPE, O_SEED, O_TARGET,
           O_CTX, O_ROPE, O_VOCAB_TYPE, O_TIED, O_ARCH, O_HEAD_DIM, O_ROPE_FREQS,
           O_EXPERTS, O_EXPERTS_USED, O_EXPERT_FFN, O_EXPERT_SKEW };
    static const struct option opts[] = {
        {"layers", 1, 0, O_LAYERS}, {"dim", 1, 0, O_DIM}, {"heads", 1, 0, O_HEADS},
        {"kv-heads", 1, 0, O_KV_HEADS}, {"ffn", 1, 0, O_FFN}, {"vocab", 1, 0, O_VOCAB},
        {"type", 1, 0, O_TYPE}, {"seed", 1, 0, O_SEED}, {"target-size", 1, 0, O_TARGET},
        {"ctx", 1, 0, O_CTX}, {"rope-base", 1, 0, O_ROPE}, {"vocab-type", 1, 0, O_VOCAB_TYPE},
        {"tied", 0, 0, O_TIED}, {"arch", 1, 0, O_ARCH}, {"head-dim", 1, 0, O_HEAD_DIM},
        {"rope-freqs", 0, 0, O_ROPE_FREQS}, {"experts", 1, 0, O_EXPERTS}, {"experts-used", 1, 0, O_EXPERTS_USED},
        {"expert-ffn", 1, 0, O_EXPERT_FFN}, {"expert-skew", 1, 0, O_EXPERT_SKEW}, {"output", 1, 0, 'o'},
        {"version", 0, 0, 'V'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'V': printf("tiermem-mkmodel %s\n", TM_VERSION); return 0;
        case 'o': out_path = optarg; break;
        case O_LAYERS: sh.layers = parse_int("--layers", optarg, 1, 1024); explicit_shape = true; break;
        case O_DIM: sh.dim = parse_int("--dim", optarg, 32, 65536); explicit_shape = true; break;
        case O_HEADS: sh.heads = parse_int("--heads", optarg, 1, 1024); explicit_shape = true; break;
        case O_KV_HEADS: sh.kv_heads = parse_int("--kv-heads", optarg, 1, 1024); explicit_shape = true; break;
        case O_FFN: sh.ffn = parse_int("--ffn", optarg, 32, 1 << 20); explicit_shape = true; break;
        case O_VOCAB: sh.vocab = parse_int("--vocab", optarg, 257, 1 << 20); break;
        case O_CTX: sh.ctx = parse_int("--ctx", optarg, 1, 1 << 24); break;
        case O_SEED: seed = (uint64_t)parse_int("--seed", optarg, 0, INT64_MAX); break;
        case O_ROPE: sh.rope_base = strtof(optarg, NULL); break;
        case O_TIED: sh.tied = true; break;
        case O_ROPE_FREQS: sh.rope_freqs = true; break;
        case O_EXPERTS: sh.experts = parse_int("--experts", optarg, 1, 256); break;
        case O_EXPERTS_USED: sh.experts_used = parse_int("--experts-used", optarg, 1, 16); break;
        case O_EXPERT_FFN: sh.expert_ffn = parse_int("--expert-ffn", optarg, 32, 1 << 20); break;
        case O_EXPERT_SKEW: sh.expert_skew = (float)parse_int("--expert-skew", optarg, 0, 64); break;
        case O_HEAD_DIM: sh.head_dim = parse_int("--head-dim", optarg, 2, 256); explicit_shape = true; break;
        case O_ARCH: {
            int a = 0;
            while (a < N_ARCHS && strcmp(optarg, ARCH_NAMES[a])) a++;
            if (a == N_ARCHS) {
                fprintf(stderr, "tiermem-mkmodel: --arch must be llama, qwen2, qwen3 or qwen3moe, got '%s'\n", optarg);
                return 2;
            }
            sh.arch = (arch)a;
            break;
        }
        case O_TARGET:
            target = parse_size(optarg);
            if (target <= 0) { fprintf(stderr, "tiermem-mkmodel: --target-size: bad size '%s'\n", optarg); return 2; }
            break;
        case O_TYPE:
        {
            size_t t = 0;
            while (t < sizeof TYPES / sizeof TYPES[0] && strcasecmp(optarg, TYPES[t].name)) t++;
            if (t == sizeof TYPES / sizeof TYPES[0]) {
                fprintf(stderr, "tiermem-mkmodel: --type must be " TYPE_NAMES ", got '%s'\n", optarg);
                return 2;
            }
            sh.wtype = TYPES[t].wtype, sh.wtype_fine = TYPES[t].wtype_fine, sh.type_index = (int)t;
            break;
        }
        case O_VOCAB_TYPE:
            if (!strcmp(optarg, "spm")) sh.vocab_kind = VOCAB_SPM;
            else if (!strcmp(optarg, "gpt2")) sh.vocab_kind = VOCAB_GPT2;
            else { fprintf(stderr, "tiermem-mkmodel: --vocab-type must be spm or gpt2, got '%s'\n", optarg); return 2; }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!out_path || optind != argc) { usage(stderr); return 2; }
    if (target && explicit_shape) {
        fprintf(stderr, "tiermem-mkmodel: --target-size picks the shape; do not combine it with --layers/--dim/--heads/--kv-heads/--ffn\n");
        return 2;
    }
    if (target) pick_shape(&sh, target);
    if (!sh.ffn) sh.ffn = ffn_for(&sh);
    if ((!sh.head_dim && sh.dim % sh.heads) || sh.heads % sh.kv_heads ||
        (sh.head_dim ? sh.head_dim : sh.dim / sh.heads) % 2) {
        fprintf(stderr, "tiermem-mkmodel: --dim (%" PRId64 ") must be a multiple of --heads (%" PRId64
                ") with an even head size, and --heads a multiple of --kv-heads (%" PRId64 ")\n",
                sh.dim, sh.heads, sh.kv_heads);
        return 2;
    }
    if (sh.dim % row_block(&sh) || sh.ffn % row_block(&sh)) {
        fprintf(stderr, "tiermem-mkmodel: %s needs --dim and --ffn multiples of %" PRId64 "\n",
                TYPES[sh.type_index].name, row_block(&sh));
        return 2;
    }
    if (sh.arch == ARCH_QWEN3MOE && !sh.experts) sh.experts = 8;
    if (sh.experts && !sh.experts_used) sh.experts_used = sh.experts < 2 ? sh.experts : 2;
    if (sh.experts_used > sh.experts || (sh.expert_ffn && sh.expert_ffn % row_block(&sh))) {
        fprintf(stderr, "tiermem-mkmodel: --experts-used must be at most --experts, and --expert-ffn a multiple "
                "of %" PRId64 "\n", row_block(&sh));
        return 2;
    }
    if (sh.vocab < vocab_min_size(sh.vocab_kind)) {
        fprintf(stderr, "tiermem-mkmodel: --vocab must be at least %d for --vocab-type %s\n",
                vocab_min_size(sh.vocab_kind), sh.vocab_kind == VOCAB_SPM ? "spm" : "gpt2");
        return 2;
    }

    gguf_writer w = {0};
    const char *an = ARCH_NAMES[sh.arch];
    int64_t head_dim = sh.head_dim ? sh.head_dim : sh.dim / sh.heads;
    char key[96], name[64];
#define KEY(k) (snprintf(key, sizeof key, "%s.%s", an, k), key)
    snprintf(name, sizeof name, "tiermem-mkmodel random %s", an);
    gw_str(&w, "general.architecture", an);
    gw_str(&w, "general.name", name);
    gw_u32(&w, "general.alignment", GW_ALIGNMENT);
    gw_u32(&w, KEY("context_length"), (uint32_t)sh.ctx);
    gw_u32(&w, KEY("embedding_length"), (uint32_t)sh.dim);
    gw_u32(&w, KEY("feed_forward_length"), (uint32_t)sh.ffn);
    gw_u32(&w, KEY("block_count"), (uint32_t)sh.layers);
    gw_u32(&w, KEY("attention.head_count"), (uint32_t)sh.heads);
    gw_u32(&w, KEY("attention.head_count_kv"), (uint32_t)sh.kv_heads);
    if (sh.head_dim) {
        gw_u32(&w, KEY("attention.key_length"), (uint32_t)sh.head_dim);
        gw_u32(&w, KEY("attention.value_length"), (uint32_t)sh.head_dim);
    }
    gw_u32(&w, KEY("rope.dimension_count"), (uint32_t)head_dim);
    gw_f32(&w, KEY("rope.freq_base"), sh.rope_base);
    gw_f32(&w, KEY("attention.layer_norm_rms_epsilon"), 1e-5f);
    gw_u32(&w, KEY("vocab_size"), (uint32_t)sh.vocab);
    if (sh.experts) {
        gw_u32(&w, KEY("expert_count"), (uint32_t)sh.experts);
        gw_u32(&w, KEY("expert_used_count"), (uint32_t)sh.experts_used);
        if (sh.expert_ffn) gw_u32(&w, KEY("expert_feed_forward_length"), (uint32_t)sh.expert_ffn);
    }
#undef KEY
    vocab_write(&w, sh.vocab_kind, (int32_t)sh.vocab);

    tensor_plan *plan = calloc(MAX_PLAN(&sh), sizeof *plan);
    int64_t n = plan_tensors(&sh, plan), total = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t dims[3] = {(uint64_t)plan[i].n_in, (uint64_t)plan[i].n_out, (uint64_t)plan[i].n_expert};
        gw_add_tensor(&w, plan[i].name, (uint32_t)plan[i].wtype, plan[i].n_expert ? 3 : plan[i].n_out ? 2 : 1, dims,
                      (uint64_t)tensor_bytes(&plan[i]));
        total += tensor_bytes(&plan[i]);
    }
    FILE *out = open_output(out_path);
    if (!out)
        return 1;
    static char iobuf[1 << 22];
    setvbuf(out, iobuf, _IOFBF, sizeof iobuf);
    int rc = gw_begin(&w, out);
    for (int64_t i = 0; i < n && rc == 0; i++) {
        int64_t count = plan[i].n_out ? plan[i].n_in * plan[i].n_out * (plan[i].n_expert ? plan[i].n_expert : 1)
                                      : plan[i].n_in;
        rc = plan[i].what == RANDOM ? write_random(&w, plan[i].name, plan[i].wtype, count, plan[i].amp, seed,
                                                   plan[i].n_in, plan[i].col0)
             : plan[i].what == ONES ? write_ones(&w, count)
             : plan[i].what == ROUTER ? write_router(&w, plan[i].name, plan[i].n_out, plan[i].n_in, 4 * plan[i].amp,
                                                     sh.expert_skew, seed)
                                    : write_llama3_freqs(&w, count, head_dim, sh.rope_base);
    }
    if (fclose(out) != 0) rc = -1;
    if (rc) {
        fprintf(stderr, "tiermem-mkmodel: writing '%s' failed: %s\n", out_path, strerror(errno));
        remove(out_path);
        return 1;
    }
    printf("wrote %s: %.1f MiB of %s weights, %" PRId64 " layers, dim %" PRId64 ", %" PRId64 " heads (%" PRId64
           " kv), ffn %" PRId64 ", vocab %" PRId64 " (%s)\n",
           out_path, total / 1048576.0, TYPES[sh.type_index].name, sh.layers, sh.dim, sh.heads, sh.kv_heads, sh.ffn,
           sh.vocab, sh.vocab_kind == VOCAB_SPM ? "spm" : "gpt2");
    free(plan);
    gw_free(&w);
    return 0;
}

/* cli.c — tiermem-llm: the command line, and the order things happen in a run. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/error.h"
#include "engine/driver.h"
#include "engine/generate.h"
#include "engine/gguf.h"
#include "engine/load.h"
#include "engine/model.h"
#include "engine/model_config.h"
#include "engine/serve.h"
#include "engine/chat_cmd.h"
#include "engine/tokenize_cmd.h"
#include "engine/tokenizer.h"

#define PREFILL_CHUNK 128       /* prompt tokens per prefill pass */
#define CALIBRATION_TOKENS 16   /* one matvec-sized pass */
#define ABSURD_CONTEXT (1 << 24) /* a context_length beyond this is warned about */
#define SERVE_FALLBACK_CONTEXT 4096 /* the server's and a chat's context when the file's is absurd */
#define TM_STR_(x) #x
#define TM_XSTR(x) TM_STR_(x)

/* Single-dash long options llama.cpp's tools take, spelled here as getopt_long reads them. */
static const char *const llama_spellings[][2] = {
    {"-ngl", "--n-gpu-layers"},
};

typedef struct cli_options {
    const char *model_path, *prompt, *prompts_file, *dump_logits, *driver;
    int32_t n_predict, top_k, block_size, ctx, threads;
    float temperature, top_p;
    double gpu_util;
    bool gpu_util_given;            /* --gpu-memory-utilization: the pool takes that share, uncapped */
    int64_t kv_blocks;
    uint64_t seed;
    int32_t kv_dtype;
    bool verbose;
    bool serve;                 /* tiermem-llm serve */
    serve_options so;
    bool tokenize, no_bos;  /* --tokenize: print the prompt's ids and stop */
    bool chat;              /* --chat: a conversation in the model's chat template */
    const char *force_ids;  /* --force-ids: teacher forcing */
    const char *n_list;     /* -n N,N,...: one count per prompt (n_predict is the largest) */
    bool until_end;         /* -n -1: each prompt generates until its end of sequence or the context */
    tm_load_method load;    /* --load: how the weights are read */
    int32_t warmup;         /* --warmup: decode steps left out of the decode figures */
    char host_numeric[INET6_ADDRSTRLEN]; /* --host as the address it names */
} cli_options;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tiermem-llm -m MODEL.gguf (-p PROMPT | --prompts-file F) [options]\n"
        "       tiermem-llm serve -m MODEL.gguf [--host ADDR] [--port N] [options]\n"
        "       tiermem-llm --tokenize -m MODEL.gguf -p TEXT [--no-bos]   (token ids, one line)\n"
        "       tiermem-llm --chat -m MODEL.gguf [-p MESSAGE] [options]   (turns from stdin, or one)\n"
        "  -n N                      tokens to generate per prompt (default 64); -1: until the end of\n"
        "                            sequence or of the context; N,N,... gives each prompt of\n"
        "                            --prompts-file its own count\n"
        "  --temp T                  temperature; 0 is greedy (default 0)\n"
        "  --top-k K                 sample among the K most likely (default 40; 0: all)\n"
        "  --top-p P                 nucleus sampling mass (default 0.95)\n"
        "  -s, --seed S              sampling seed (default 1)\n"
        "  --kv-dtype D              f32, f16, fp8_e4m3 (default) or fp8_e5m2\n"
        "  --block-size B            tokens per KV block (default 16)\n"
        "  --kv-blocks N             KV pool of exactly N blocks (default: sized from free memory,\n"
        "                            at most what the prompts and -n need)\n"
        "  --gpu-memory-utilization F  fraction of free device memory for the KV pool, uncapped\n"
        "                            (default 0.9, capped at what the run needs)\n"
        "  -c, --ctx-size, --ctx N   context length per sequence (default: the prompt and -n)\n"
        "  --prompts-file F          one prompt per line, run as concurrent sequences\n"
        "  -t, --threads N           CPU threads of the host kernels (simcuda)\n"
        "  -ngl, --n-gpu-layers N    accepted for llama.cpp's command lines: every layer runs on the\n"
        "                            device (tiermem places what does not fit in the lower tiers)\n"
        "  --dump-logits FILE        write every step's logits: \"step seq logit0 logit1 ...\"\n"
        "  --force-ids \"I J ...\"     teacher forcing: take these tokens instead of the sampled ones\n"
        "  --warmup N                leave the first N decode steps out of the decode figures\n"
        "                            (steady state: placement that settles while it runs)\n"
        "  --driver PATH             CUDA driver library (default libcuda.so.1)\n"
        "  --load M                  read the weights with uring, pread or mmap (default auto: uring,\n"
        "                            else pread)\n"
        "  -v                        more detail on stderr (device, ids)\n"
        "  --version                 the version, and stop\n"
        "serve (an OpenAI-compatible server; the model and KV options above apply):\n"
        "  --host ADDR               address or host name to listen on (default 127.0.0.1: this\n"
        "                            machine only)\n"
        "  --port N                  TCP port (default 8080; 0: any free port, printed)\n"
        "  --api-key KEY             require \"Authorization: Bearer KEY\" on /v1/ endpoints\n"
        "  --alias, --served-model-name NAME  the model's id in /v1/models and in answers (default:\n"
        "                            the file's name)\n"
        "  --max-batch N             sequences decoded together (default 64)\n"
        "  --max-queue N             requests waiting for the batch; more get 429 (default 256)\n"
        "  --prefill-chunk N         prompt tokens prefilled per step (default 128)\n"
        "  --grace S                 seconds in-flight requests get after SIGTERM (default 30)\n"
        "  --idle-timeout S          a connection that sends or takes nothing for S seconds is\n"
        "                            closed (default 10)\n"
        "  --max-connections N       connections open at once; more are refused (default 4096)\n");
}

/* --host: a numeric address, or a name resolved to the first address it has; `out` gets it
 * in numeric form. */
static int resolve_host(const char *host, char *out, size_t len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *found = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &found);
    if (rc == 0 && found)
        rc = getnameinfo(found->ai_addr, found->ai_addrlen, out, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
    if (found)
        freeaddrinfo(found);
    if (rc != 0) {
        fprintf(stderr, "error: --host '%s' is no address and no host name this machine knows (%s)\n", host,
                gai_strerror(rc));
        return -1;
    }
    return 0;
}

static int parse_long(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "error: %s expects an integer from %lld to %lld, got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* -n N,N,...: the counts (into out, when not NULL, up to `room`) and the largest; how many
 * there are, or -1 after a one-line error. */
static int64_t parse_n_list(const char *list, int32_t *out, int64_t room, int32_t *largest)
{
    *largest = 0;
    for (int64_t n = 0;; n++) {
        char item[32];
        size_t len = strcspn(list, ",");
        if (len == 0 || len >= sizeof item) {
            fprintf(stderr, "error: -n expects N or N,N,... (a count per prompt), got an empty or long item\n");
            return -1;
        }
        memcpy(item, list, len);
        item[len] = '\0';
        long long v;
        if (parse_long("-n", item, 0, 1 << 24, &v)) return -1;
        if (out && n < room) out[n] = (int32_t)v;
        if (v > *largest) *largest = (int32_t)v;
        list += len;
        if (!*list) return n + 1;
        list++;
    }
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "error: %s expects a number from %g to %g, got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, cli_options *o)
{
    *o = (cli_options){.n_predict = 64, .top_k = 40, .block_size = 16, .temperature = 0.0f, .top_p = 0.95f,
                       .gpu_util = 0.9, .seed = 1, .kv_dtype = TM_KV_FP8_E4M3,
                       .so = {.host = "127.0.0.1", .port = 8080, .max_batch = 64, .max_queue = 256,
                              .prefill_chunk = 128, .grace_seconds = 30, .idle_timeout = 10,
                              .max_connections = 4096}};
    if (argc > 1 && !strcmp(argv[1], "serve")) {
        o->serve = true;
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    enum { O_TEMP = 256, O_TOPK, O_TOPP, O_SEED, O_KVD, O_BS, O_CTX, O_PF, O_THR, O_DUMP, O_DRV, O_KVB, O_UTIL,
           O_HOST, O_PORT, O_KEY, O_BATCH, O_QUEUE, O_CHUNK, O_GRACE, O_IDLE, O_MAXCONN, O_ALIAS, O_TOK, O_NOBOS, O_CHAT, O_FORCE, O_LOAD,
           O_WARM, O_NGL, O_VERSION };
    static const struct option opts[] = {
        {"model", 1, 0, 'm'}, {"prompt", 1, 0, 'p'}, {"temp", 1, 0, O_TEMP}, {"top-k", 1, 0, O_TOPK},
        {"top-p", 1, 0, O_TOPP}, {"seed", 1, 0, O_SEED}, {"kv-dtype", 1, 0, O_KVD}, {"block-size", 1, 0, O_BS},
        {"ctx", 1, 0, O_CTX}, {"ctx-size", 1, 0, O_CTX}, {"prompts-file", 1, 0, O_PF}, {"threads", 1, 0, O_THR},
        {"dump-logits", 1, 0, O_DUMP}, {"driver", 1, 0, O_DRV}, {"kv-blocks", 1, 0, O_KVB},
        {"gpu-memory-utilization", 1, 0, O_UTIL}, {"host", 1, 0, O_HOST}, {"port", 1, 0, O_PORT},
        {"api-key", 1, 0, O_KEY}, {"max-batch", 1, 0, O_BATCH}, {"max-queue", 1, 0, O_QUEUE},
        {"prefill-chunk", 1, 0, O_CHUNK}, {"grace", 1, 0, O_GRACE}, {"idle-timeout", 1, 0, O_IDLE},
        {"max-connections", 1, 0, O_MAXCONN}, {"alias", 1, 0, O_ALIAS},
        {"served-model-name", 1, 0, O_ALIAS}, {"tokenize", 0, 0, O_TOK}, {"no-bos", 0, 0, O_NOBOS},
        {"chat", 0, 0, O_CHAT}, {"force-ids", 1, 0, O_FORCE}, {"load", 1, 0, O_LOAD},
        {"warmup", 1, 0, O_WARM}, {"n-gpu-layers", 1, 0, O_NGL}, {"gpu-layers", 1, 0, O_NGL},
        {"version", 0, 0, O_VERSION}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    for (int i = 1; i < argc; i++)
        for (size_t k = 0; k < sizeof llama_spellings / sizeof *llama_spellings; k++)
            if (!strcmp(argv[i], llama_spellings[k][0]))
                argv[i] = (char *)llama_spellings[k][1];
    int c;
    long long v;
    double d;
    const char *serve_only = NULL; /* a serve option given to a one-shot run */
    while ((c = getopt_long(argc, argv, "m:p:n:c:t:s:vh", opts, NULL)) != -1) {
        for (const struct option *op = opts; c >= O_HOST && c <= O_ALIAS && !o->serve && op->name; op++)
            if (op->val == c) serve_only = op->name;
        switch (c) {
        case 'm': o->model_path = optarg; break;
        case 'p': o->prompt = optarg; break;
        case 'n':
            o->n_list = strchr(optarg, ',') ? optarg : NULL;
            if (o->n_list) {
                if (parse_n_list(optarg, NULL, 0, &o->n_predict) < 0) return -1;
            } else {
                if (parse_long("-n", optarg, -1, 1 << 24, &v)) return -1;
                o->until_end = v == -1;
                o->n_predict = o->until_end ? 0 : (int32_t)v; /* set from the context once it is known */
            }
            break;
        case 'v': o->verbose = true; break;
        case O_TEMP: if (parse_double("--temp", optarg, 0, 100, &d)) return -1; o->temperature = (float)d; break;
        case O_TOPK: if (parse_long("--top-k", optarg, 0, INT32_MAX, &v)) return -1; o->top_k = (int32_t)v; break;
        case O_TOPP: if (parse_double("--top-p", optarg, 0, 1, &d)) return -1; o->top_p = (float)d; break;
        case 's':
        case O_SEED: if (parse_long("--seed", optarg, 0, INT64_MAX, &v)) return -1; o->seed = (uint64_t)v; break;
        case O_KVD:
            if (kv_dtype_parse(optarg, &o->kv_dtype)) {
                fprintf(stderr, "error: --kv-dtype must be f32, f16, fp8_e4m3 or fp8_e5m2, got '%s'\n", optarg);
                return -1;
            }
            break;
        case O_BS: if (parse_long("--block-size", optarg, 1, 4096, &v)) return -1; o->block_size = (int32_t)v; break;
        case 'c':
        case O_CTX: if (parse_long("--ctx", optarg, 1, 1 << 24, &v)) return -1; o->ctx = (int32_t)v; break;
        case O_PF: o->prompts_file = optarg; break;
        case 't':
        case O_THR: if (parse_long("--threads", optarg, 1, 4096, &v)) return -1; o->threads = (int32_t)v; break;
        case O_DUMP: o->dump_logits = optarg; break;
        case O_DRV: o->driver = optarg; break;
        case O_KVB: if (parse_long("--kv-blocks", optarg, 1, INT32_MAX, &v)) return -1; o->kv_blocks = v; break;
        case O_WARM: if (parse_long("--warmup", optarg, 0, 1 << 24, &v)) return -1; o->warmup = (int32_t)v; break;
        case O_UTIL:
            if (parse_double("--gpu-memory-utilization", optarg, 0.001, 1, &o->gpu_util)) return -1;
            o->gpu_util_given = true;
            break;
        case O_HOST: o->so.host = optarg; break;
        case O_PORT: if (parse_long("--port", optarg, 0, 65535, &v)) return -1; o->so.port = (int32_t)v; break;
        case O_KEY: o->so.api_key = optarg; break;
        case O_ALIAS:
            if (!*optarg) {
                fprintf(stderr, "error: --alias (--served-model-name) must not be empty\n");
                return -1;
            }
            o->so.model_name = optarg;
            break;
        case O_NGL:
            if (parse_long("--n-gpu-layers", optarg, -1, INT32_MAX, &v)) return -1;
            fprintf(stderr, "note: -ngl/--n-gpu-layers %lld is accepted and has no effect: every layer runs on the "
                    "device, and what does not fit in its memory is placed in lower tiers by libtiermem.so\n", v);
            break;
        case O_VERSION: printf("tiermem-llm %s\n", TM_VERSION); exit(0);
        case O_BATCH: if (parse_long("--max-batch", optarg, 1, 4096, &v)) return -1; o->so.max_batch = (int32_t)v; break;
        case O_QUEUE: if (parse_long("--max-queue", optarg, 1, 1 << 20, &v)) return -1; o->so.max_queue = (int32_t)v; break;
        case O_CHUNK:
            if (parse_long("--prefill-chunk", optarg, 1, 1 << 16, &v)) return -1;
            o->so.prefill_chunk = (int32_t)v;
            break;
        case O_GRACE: if (parse_double("--grace", optarg, 0, 86400, &o->so.grace_seconds)) return -1; break;
        case O_IDLE: if (parse_long("--idle-timeout", optarg, 2, 86400, &v)) return -1; o->so.idle_timeout = (int32_t)v; break;
        case O_MAXCONN:
            if (parse_long("--max-connections", optarg, 16, 1 << 20, &v)) return -1;
            o->so.max_connections = (int32_t)v;
            break;
        case O_TOK: o->tokenize = true; break;
        case O_NOBOS: o->no_bos = true; break;
        case O_CHAT: o->chat = true; break;
        case O_FORCE: o->force_ids = optarg; break;
        case O_LOAD:
            if (tm_load_method_parse(optarg, &o->load)) {
                fprintf(stderr, "error: --load must be auto, uring, pread or mmap, got '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "error: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (serve_only) {
        fprintf(stderr, "error: --%s is an option of 'tiermem-llm serve'\n", serve_only);
        return -1;
    }
    if (o->until_end && (o->serve || o->n_list)) {
        fprintf(stderr, "error: -n -1 (until the end of sequence) is for one-shot runs and chats\n");
        return -1;
    }
    if (o->warmup && !o->until_end && o->warmup >= o->n_predict) {
        fprintf(stderr, "error: --warmup %d leaves no decode step of -n %d to measure\n", o->warmup, o->n_predict);
        return -1;
    }
    if (o->n_list && (o->serve || o->chat || !o->prompts_file)) {
        fprintf(stderr, "error: -n N,N,... gives each prompt of --prompts-file its own count; give one N here\n");
        return -1;
    }
    if (o->serve) {
        if (!o->model_path || o->prompt || o->prompts_file) {
            fprintf(stderr, "error: serve takes -m MODEL and no -p or --prompts-file (prompts come over HTTP)\n");
            return -1;
        }
        if (resolve_host(o->so.host, o->host_numeric, sizeof o->host_numeric)) return -1;
        o->so.host = o->host_numeric;
        if (o->so.api_key && !*o->so.api_key) {
            fprintf(stderr, "error: --api-key must not be empty\n");
            return -1;
        }
        const char *slash = strrchr(o->model_path, '/');
        if (!o->so.model_name)
            o->so.model_name = slash ? slash + 1 : o->model_path;
        o->so.verbose = o->verbose;
        return 0;
    }
    if (o->tokenize && (!o->model_path || !o->prompt)) {
        fprintf(stderr, "error: --tokenize needs -m MODEL and -p TEXT\n");
        return -1;
    }
    if (o->chat && (!o->model_path || o->prompts_file)) {
        fprintf(stderr, "error: --chat needs -m MODEL, and takes -p MESSAGE but not --prompts-file\n");
        return -1;
    }
    if (!o->model_path || (!o->chat && !o->prompt == !o->prompts_file)) {
        fprintf(stderr, "error: give -m MODEL and exactly one of -p PROMPT or --prompts-file FILE\n");
        usage(stderr);
        return -1;
    }
    return 0;
}

/* One prompt per non-empty line. */
static int read_prompts(const char *path, char ***prompts, int32_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "error: cannot open prompts file '%s': %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    *prompts = NULL;
    *n = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        char **grown = realloc(*prompts, (size_t)(*n + 1) * sizeof **prompts);
        if (!grown || !(grown[*n] = strdup(line))) {
            free(grown ? grown : *prompts);
            free(line);
            fclose(f);
            fprintf(stderr, "error: out of host memory\n");
            return -1;
        }
        *prompts = grown;
        (*n)++;
    }
    free(line);
    fclose(f);
    if (*n == 0) {
        fprintf(stderr, "error: prompts file '%s' has no prompts\n", path);
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------------------------
 * A run */

int main(int argc, char **argv)
{
    cli_options o;
    if (parse_args(argc, argv, &o)) return 2;
    if (o.tokenize) return tokenize_cmd(o.model_path, o.prompt, !o.no_bos);

    char **prompts = NULL;
    int32_t n_prompts = 1, **ids = NULL, *n_ids = NULL, *n_each = NULL;
    char err[TM_ERR_MAX];
    gguf_file f = {0};
    tokenizer tok = {0};
    llama_config cfg;
    tm_driver drv = {0};
    tm_model m = {0};
    FILE *dump = NULL;
    int rc = 1;
    bool model_loaded = false, driver_open = false;

    if (o.serve) {
        n_prompts = 0;
    } else if (o.prompts_file) {
        if (read_prompts(o.prompts_file, &prompts, &n_prompts)) return 1;
    } else {
        prompts = malloc(sizeof *prompts);
        if (!prompts || !(prompts[0] = strdup(o.prompt ? o.prompt : ""))) return 1;
    }

    /* the file: everything about it is checked before the device is touched */
    if (gguf_open(o.model_path, &f, err)) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    if (llama_config_load(&cfg, &f, err) || weights_check(&f, &cfg, err, sizeof err) ||
        tokenizer_load(&tok, &f, err)) {
        fprintf(stderr, "error: %s: %s\n", o.model_path, err);
        goto out;
    }
    if (!o.serve && generate_tokenize(&tok, prompts, n_prompts, &ids, &n_ids, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    if (cfg.ctx_train > ABSURD_CONTEXT)
        fprintf(stderr, "warning: %s: llama.context_length %d is beyond any trained model's; the context is sized "
                "%s\n", o.model_path, cfg.ctx_train,
                o.serve || o.chat ? "at " TM_XSTR(SERVE_FALLBACK_CONTEXT) " positions (or --ctx)"
                                  : "from the prompt and -n");
    if (o.n_list) {
        int32_t largest;
        if (!(n_each = malloc((size_t)n_prompts * sizeof *n_each))) {
            fprintf(stderr, "error: out of host memory\n");
            goto out;
        }
        int64_t counts = parse_n_list(o.n_list, n_each, n_prompts, &largest);
        if (counts >= 0 && counts != n_prompts) {
            fprintf(stderr, "error: -n gives %" PRId64 " counts for %d prompts (give one, or one per prompt)\n", counts,
                    n_prompts);
            goto out;
        }
        if (counts < 0) goto out;
    }
    /* what depends on the context is sized for this run: the longest prompt and -n (or --ctx) */
    int32_t limit = o.ctx ? o.ctx : cfg.ctx_train, longest = 0, ctx = o.ctx;
    if (o.until_end && !o.chat) { /* -n -1: each prompt may fill the context (an absurd one: a fallback) */
        int32_t end = !o.ctx && limit > ABSURD_CONTEXT ? SERVE_FALLBACK_CONTEXT : limit;
        if (!(n_each = malloc((size_t)n_prompts * sizeof *n_each))) {
            fprintf(stderr, "error: out of host memory\n");
            goto out;
        }
        for (int32_t i = 0; i < n_prompts; i++) {
            n_each[i] = end > n_ids[i] ? end - n_ids[i] : 0;
            if (n_each[i] > o.n_predict) o.n_predict = n_each[i];
        }
    }
    for (int32_t i = 0; i < n_prompts; i++) {
        int32_t n_predict = n_each ? n_each[i] : o.n_predict;
        int64_t need = (int64_t)n_ids[i] + n_predict;
        if (need > limit) {
            fprintf(stderr, "error: prompt %d has %d tokens; with -n %d that is %" PRId64 " positions, past the "
                    "context of %d (%s)\n", i + 1, n_ids[i], n_predict, need, limit,
                    o.ctx ? "--ctx" : "the model's context_length");
            goto out;
        }
        if (n_ids[i] > longest) longest = n_ids[i];
        if (!o.ctx && need > ctx) ctx = (int32_t)need;
    }
    /* the server and a chat take turns of any length the model allows (an absurd one: a fallback) */
    if ((o.serve || o.chat) && !o.ctx) ctx = cfg.ctx_train > ABSURD_CONTEXT ? SERVE_FALLBACK_CONTEXT : cfg.ctx_train;
    /* the fp8 calibration text runs as one sequence of its own */
    if (!o.ctx && ctx < CALIBRATION_TOKENS) ctx = limit < CALIBRATION_TOKENS ? limit : CALIBRATION_TOKENS;
    if (o.dump_logits && !(dump = fopen(o.dump_logits, "w"))) {
        fprintf(stderr, "error: cannot create '%s': %s\n", o.dump_logits, strerror(errno));
        goto out;
    }

    /* the device */
    if (o.threads) {
        char n[16];
        snprintf(n, sizeof n, "%d", o.threads);
        setenv("OMP_NUM_THREADS", n, 1); /* read by the host kernels when their module loads */
    }
    tm_driver_options dopt = {o.driver, o.verbose};
    if (tm_driver_open(&drv, &dopt, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    driver_open = true;
    if (tm_driver_load_kernels(&drv, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    if (o.verbose) {
        fprintf(stderr, "tiermem-llm: kernels from %s\n", drv.module_path);
        fprintf(stderr, "tiermem-llm: model: arch=%s layers=%d dim=%d heads=%d kv_heads=%d head_dim=%d ffn=%d "
                "vocab=%d rope=%s rope_base=%g rope_freqs=%s\n", cfg.arch_name, cfg.n_layers, cfg.dim, cfg.n_heads,
                cfg.n_kv_heads, cfg.head_dim, cfg.ffn_dim, cfg.vocab, cfg.rope_neox ? "neox" : "normal",
                cfg.rope_base, gguf_find_tensor(&f, "rope_freqs.weight") ? "yes" : "no");
    }

    int32_t max_tokens = longest < PREFILL_CHUNK ? longest : PREFILL_CHUNK;
    if (max_tokens < n_prompts) max_tokens = n_prompts;
    if (o.serve) max_tokens = o.so.prefill_chunk > o.so.max_batch ? o.so.prefill_chunk : o.so.max_batch;
    if (max_tokens < CALIBRATION_TOKENS) max_tokens = CALIBRATION_TOKENS;
    /* llama.cpp sizes to n_ctx: a pool from free memory holds what the sequences can use, unless a
     * share of free memory was asked for; the server sizes from free memory, as vLLM does */
    int64_t run_blocks = o.gpu_util_given || o.serve ? 0 : (int64_t)n_prompts * tm_kv_blocks_for(ctx, o.block_size);
    model_options mopt = {max_tokens, ctx, {o.kv_dtype, o.block_size, o.kv_blocks, o.gpu_util, 0, run_blocks},
                          {o.load, o.model_path, true}};
    m.cfg = cfg;
    if (model_load(&m, &drv, &f, &mopt)) {
        fprintf(stderr, "error: %s\n", m.err);
        goto out;
    }
    model_loaded = true;
    if (o.verbose) {
        const tm_load_result *lr = &m.w.load;
        fprintf(stderr, "tiermem-llm: load: method=%s direct=%s file_bytes=%" PRId64 " seconds=%.3f mib_s=%.1f\n",
                tm_load_method_name(lr->used), lr->direct ? "yes" : "no", lr->file_bytes, lr->seconds,
                lr->seconds > 0 ? TM_MIB(lr->file_bytes) / lr->seconds : 0.0);
    }
    if (o.verbose && cfg.n_expert &&
        !(m.expert_use = calloc((size_t)cfg.n_layers * cfg.n_expert, sizeof *m.expert_use))) {
        fprintf(stderr, "error: out of host memory\n");
        goto out;
    }
    const struct tm_kv_layout *L = &m.kv.layout;
    fprintf(stderr, "tiermem-llm: kv pool: kv_blocks=%" PRId64 " kv_block_size=%d kv_tokens=%" PRId64
            " kv_bytes=%" PRId64 " kv_dtype=%s (", L->n_blocks, L->block_size, L->n_blocks * L->block_size,
            m.kv.bytes, kv_dtype_name(L->dtype));
    if (m.kv.capped)
        fprintf(stderr, "what %d sequence%s of %d positions need; %.2f of %.1f MiB free after weights would allow more)\n",
                n_prompts, n_prompts == 1 ? "" : "s", ctx, m.kv.utilization, TM_MIB(m.kv.free_before));
    else if (m.kv.utilization > 0)
        fprintf(stderr, "%.2f of %.1f MiB free after weights)\n", m.kv.utilization, TM_MIB(m.kv.free_before));
    else
        fprintf(stderr, "--kv-blocks)\n");

    if (o.kv_dtype == TM_KV_FP8_E4M3) {
        int32_t cal[CALIBRATION_TOKENS];
        int64_t n_cal = tokenizer_encode(&tok, generate_calibration_text, tok.add_bos, cal, CALIBRATION_TOKENS);
        if (n_cal > CALIBRATION_TOKENS) n_cal = CALIBRATION_TOKENS;
        if (n_cal <= 0 || model_calibrate_kv(&m, cal, (int32_t)n_cal)) {
            fprintf(stderr, "error: calibrating the fp8 KV scales: %s\n", n_cal <= 0 ? "no tokens" : m.err);
            goto out;
        }
        if (o.verbose)
            for (int32_t l = 0; l < cfg.n_layers; l++)
                fprintf(stderr, "tiermem-llm: layer %d kv scales: k %.6g v %.6g\n", l, m.kv.scales[l].k,
                        m.kv.scales[l].v);
    }

    if (o.serve) {
        rc = serve_run(&m, &tok, &f, &o.so);
        goto out;
    }
    generate_options gopt = {prompts, n_prompts, o.until_end && o.chat ? -1 : o.n_predict, o.temperature, o.top_k, o.top_p, o.seed,
                             n_prompts == 1, o.verbose, dump, NULL, NULL, 0, o.warmup,
                             n_each};
    int32_t *forced = NULL;
    if (o.force_ids) {
        char *end;
        const char *p = o.force_ids;
        forced = malloc(sizeof *forced * (size_t)(o.n_predict ? o.n_predict : 1));
        if (!forced) {
            fprintf(stderr, "error: out of host memory\n");
            goto out;
        }
        while (gopt.n_forced < o.n_predict) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            if (v < 0 || v >= cfg.vocab) {
                fprintf(stderr, "error: --force-ids: token %ld is outside the vocabulary (%d)\n", v, cfg.vocab);
                free(forced);
                goto out;
            }
            forced[gopt.n_forced++] = (int32_t)v;
            p = end;
        }
        gopt.forced = forced;
    }
    if (o.chat) {
        chat_template tpl = chat_template_of(&f);
        if (o.verbose) fprintf(stderr, "tiermem-llm: chat template: %s\n", chat_template_name(tpl));
        int crc = chat_cmd(&m, &tok, tpl, o.prompt, stdin, &gopt, ctx);
        free(forced);
        if (crc) {
            fflush(stdout);
            fprintf(stderr, "\nerror: %s\n", m.err);
            goto out;
        }
        rc = 0;
        goto out;
    }
    generate_stats st;
    int grc = generate_run(&m, &tok, &gopt, ids, n_ids, &st);
    free(forced);
    if (grc) {
        fflush(stdout);
        fprintf(stderr, "\nerror: %s\n", m.err);
        goto out;
    }
    fprintf(stderr, "tiermem-llm: summary: sequences=%d prompt_tokens=%" PRId64 " generated_tokens=%" PRId64
            " prefill_tok_s=%.1f decode_tok_s=%.1f weight_bytes=%" PRId64 " kv_bytes=%" PRId64 " kv_blocks=%" PRId64
            " kv_dtype=%s device_allocs=%" PRId64 " device_bytes=%" PRId64, n_prompts, st.prompt_tokens,
            st.generated_tokens, st.prefill_seconds > 0 ? st.prompt_tokens / st.prefill_seconds : 0.0,
            st.decode_seconds > 0 ? st.decode_tokens / st.decode_seconds : 0.0, m.w.bytes, m.kv.bytes,
            L->n_blocks, kv_dtype_name(L->dtype), m.w.n_allocs + m.s.n_allocs + m.kv.n_allocs,
            m.w.bytes + m.s.bytes + m.kv.bytes);
    if (st.device_times) /* device time from CUDA events: simulated on simcuda */
        fprintf(stderr, " sim_prefill_tok_s=%.1f sim_decode_tok_s=%.1f sim_decode_step_ms=%.4f",
                st.prefill_device_ms > 0 ? st.prompt_tokens / (st.prefill_device_ms / 1e3) : 0.0,
                st.decode_device_ms > 0 ? st.decode_tokens / (st.decode_device_ms / 1e3) : 0.0,
                st.decode_steps > 0 ? st.decode_device_ms / st.decode_steps : 0.0);
    fputc('\n', stderr);
    for (int32_t l = 0; m.expert_use && l < cfg.n_layers; l++) { /* -v on a MoE model */
        fprintf(stderr, "tiermem-llm: expert use: layer %d:", l);
        for (int32_t e = 0; e < cfg.n_expert; e++)
            fprintf(stderr, " %" PRId64, m.expert_use[(int64_t)l * cfg.n_expert + e]);
        fputc('\n', stderr);
    }
    rc = 0;
out:
    if (dump && fclose(dump) != 0 && rc == 0) {
        fprintf(stderr, "error: writing '%s' failed\n", o.dump_logits);
        rc = 1;
    }
    if (model_loaded || m.h_staging) model_free(&m);
    if (driver_open) tm_driver_close(&drv);
    for (int32_t i = 0; ids && i < n_prompts; i++) free(ids[i]);
    free(ids);
    free(n_ids);
    free(n_each);
    tokenizer_free(&tok);
    gguf_close(&f);
    for (int32_t i = 0; prompts && i < n_prompts; i++) free(prompts[i]);
    free(prompts);
    return rc;
}

/* serve.h — tiermem-llm serve: an OpenAI-compatible HTTP server over a loaded model.
 *
 * Endpoints: POST /v1/completions and /v1/chat/completions (SSE with "stream": true),
 * GET /v1/models, /health and /metrics (Prometheus text). Requests join and leave the
 * decode batch between steps (engine/step.h), prompts are prefilled in chunks, and full
 * KV blocks are shared across requests through the prefix cache (engine/kv_prefix.h).
 */
#ifndef TM_ENGINE_SERVE_H
#define TM_ENGINE_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/tokenizer.h"

typedef struct serve_options {
    const char *host;           /* --host: address to listen on (default 127.0.0.1) */
    int32_t port;               /* --port (0: any free port; the log line says which) */
    const char *api_key;        /* --api-key: required as "Authorization: Bearer KEY", or NULL */
    const char *model_name;     /* the id /v1/models lists */
    int32_t max_batch;          /* sequences in the decode batch */
    int32_t max_queue;          /* requests waiting for a place in the batch; more get 429 */
    int32_t prefill_chunk;      /* prompt tokens per step */
    double grace_seconds;       /* after SIGTERM, in-flight requests get this long to finish */
    int32_t idle_timeout;       /* seconds a connection may send and take nothing before it is closed */
    int32_t max_connections;    /* open at once (limited further by RLIMIT_NOFILE); more are refused */
    bool verbose;
} serve_options;

/* Serves until SIGTERM or SIGINT (then drains). 0 on a clean stop, else 1 with a message
 * on stderr. */
int serve_run(tm_model *m, const tokenizer *tok, const gguf_file *f, const serve_options *opt);

#endif /* TM_ENGINE_SERVE_H */

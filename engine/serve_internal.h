/* serve_internal.h — what the server's files share: a request, the server, and the
 * entry points of each file. Not for use outside engine/serve*.c. */
#ifndef TM_ENGINE_SERVE_INTERNAL_H
#define TM_ENGINE_SERVE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/device_timer.h"
#include "engine/sampler.h"
#include "engine/serve.h"
#include "engine/serve_metrics.h"
#include "engine/step.h"
#include "engine/text.h"

#define SERVE_MAX_STOP 4            /* stop strings per request, as OpenAI allows */
#define SERVE_MAX_BODY (1 << 20)    /* request bodies above this get 413 */

typedef struct serve_request {
    step_seq seq;                   /* engine thread only; first, so a step_seq * is the request */
    /* parameters: set before the request is queued, read-only afterwards */
    bool chat, stream, include_usage;
    int32_t *ids;                   /* [n_prompt + max_tokens] the prompt, then the generated ids */
    int32_t n_prompt;
    int32_t max_tokens;
    float temperature, top_p;
    int32_t top_k;
    uint64_t seed;
    char *stop[SERVE_MAX_STOP];
    int32_t n_stop;
    size_t longest_stop;
    char id[48];
    int64_t created;                /* unix seconds */
    /* engine thread only */
    sampler smp;
    double t_queued, t_last_token;  /* wall clock, seconds */
    double dev_queued_ms;           /* the server's device clock at arrival */
    double ttft_ms, dev_ttft_ms;    /* time to first token, wall and device */
    bool admitted;
    /* shared, under server.lock */
    tm_text text;                   /* generated text (stop strings cut off) */
    size_t ready;                   /* bytes of text final enough to send */
    int32_t n_out;                  /* generated ids */
    int32_t n_cached;               /* prompt tokens found in the prefix cache */
    const char *finish;             /* "stop", "length" or "abort"; NULL while running */
    bool done, cancelled;
    int refs;                       /* the HTTP side and the engine each hold one */
    pthread_cond_t cond;            /* signalled when text, ready or done change */
    struct serve_request *next;     /* in the queue */
} serve_request;

typedef struct server {
    tm_model *m;
    const tokenizer *tok;
    const serve_options *opt;
    const char *chat_template;      /* tokenizer.chat_template, or NULL */
    pthread_mutex_t lock;
    pthread_cond_t wake;            /* the engine loop: a request arrived or was cancelled */
    serve_request *queue_head, *queue_tail;
    int32_t n_queued;
    serve_request **running;        /* [max_batch] */
    int32_t n_running;
    bool draining;                  /* SIGTERM: no new requests */
    int32_t n_live;                 /* requests not yet freed (responses still being sent) */
    int64_t next_id;
    device_timer timer;             /* CUDA events around each step */
    double device_ms;               /* device time of every step so far (simulated on simcuda) */
    serve_metrics metrics;
    struct MHD_Daemon *daemon;
} server;

/* serve_api.c: JSON in and out. serve_parse_request fills r from a request body and
 * returns 0, or an HTTP status with a one-line message (and the offending field). */
int serve_parse_request(server *srv, const char *body, size_t len, bool chat, serve_request *r, char *msg,
                        size_t msglen, const char **param);
char *serve_error_json(const char *message, const char *type, const char *param);
char *serve_result_json(const server *srv, const serve_request *r);
/* One SSE chunk object: text delta [len] (role first for chat), or the finish, or usage. */
char *serve_chunk_json(const server *srv, const serve_request *r, const char *text, size_t len, bool role,
                       const char *finish, bool usage);
char *serve_models_json(const server *srv);
/* GET /v1/models/{id}: the one model. */
char *serve_model_json(const server *srv);
/* The longest prefix of s[n] that does not end inside a UTF-8 sequence. */
size_t serve_utf8_complete(const char *s, size_t n);

/* serve_loop.c: the queue and the engine loop. */
void serve_request_put(server *srv, serve_request *r);  /* drops one reference (lock held) */
/* Queues r: 0, or 429 (queue full) or 503 (draining). Takes the engine's reference. */
int serve_enqueue(server *srv, serve_request *r);

/* serve_http.c: the HTTP side (libmicrohttpd). */
int serve_http_start(server *srv, char *err, size_t errlen);
void serve_http_stop(server *srv);

#endif /* TM_ENGINE_SERVE_INTERNAL_H */

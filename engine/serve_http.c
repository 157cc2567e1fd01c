/* serve_http.c — the HTTP side, on libmicrohttpd with a thread per connection: routing,
 * the API key, request bodies, and responses (whole JSON, or SSE events from a callback
 * that waits for the engine loop to add text).
 *
 * Clients cannot hold the server: every thread waits with poll() (no FD_SETSIZE limit), a
 * connection that sends or takes nothing for --idle-timeout seconds is closed (one that
 * sent half a request and stopped, too), connections are limited (--max-connections,
 * within RLIMIT_NOFILE, which is raised to fit), and libmicrohttpd's messages about them
 * are rate-limited. A request waiting in the queue or for its answer is not cut by the
 * idle timeout (tests/serve/test_serve_idle.sh checks both, whole and streamed). */
#include "engine/serve_internal.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* A stream with nothing new for this long sends an SSE comment, which also finds out
 * whether the client is still there (a request can wait in the queue). */
#define KEEPALIVE_SECONDS 1.0
#define LOG_WINDOW_SECONDS 10       /* libmicrohttpd's messages: LOG_BURST per window, then a count */
#define LOG_BURST 5
#define SPARE_FDS 64                /* descriptors kept for the model, logs and the listener */

typedef struct body {
    char *data;
    size_t len;
    bool too_large;
} body;

typedef struct stream {
    server *srv;
    serve_request *r;
    size_t sent;                /* bytes of r->text already in events */
    bool role_sent;
    bool end;                   /* [DONE] is in `out` */
    char *out;                  /* [out_len] events not yet handed to libmicrohttpd */
    size_t out_len, out_off;
} stream;

static void wait_a_while(pthread_cond_t *c, pthread_mutex_t *lock, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (int64_t)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    pthread_cond_timedwait(c, lock, &ts);
}

/* ----------------------------------------------------------------------------
 * Responses */

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type, char *text)
{
    if (!text) {
        text = strdup("{\"error\":{\"message\":\"out of host memory\",\"type\":\"server_error\",\"param\":null,"
                      "\"code\":null}}");
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        if (!text) return MHD_NO;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ok = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result respond_error(server *srv, struct MHD_Connection *c, unsigned status, const char *msg,
                                     const char *param)
{
    const char *type = status == MHD_HTTP_TOO_MANY_REQUESTS ? "rate_limit_error"
                       : status == MHD_HTTP_UNAUTHORIZED  ? "authentication_error"
                       : status >= 500                    ? "server_error"
                                                          : "invalid_request_error";
    pthread_mutex_lock(&srv->lock);
    if (status == MHD_HTTP_TOO_MANY_REQUESTS || status == MHD_HTTP_SERVICE_UNAVAILABLE)
        srv->metrics.requests_rejected++;
    else
        srv->metrics.requests_bad++;
    pthread_mutex_unlock(&srv->lock);
    return respond(c, status, "application/json", serve_error_json(msg, type, param));
}

/* ----------------------------------------------------------------------------
 * Streams */

static int add_event(stream *st, char *json)
{
    if (!json) return -1;
    size_t n = strlen(json);
    char *grown = realloc(st->out, st->out_len + n + 9);
    if (!grown) {
        free(json);
        return -1;
    }
    st->out = grown;
    st->out_len += (size_t)sprintf(st->out + st->out_len, "data: %s\n\n", json);
    free(json);
    return 0;
}

/* Fills st->out with the next events, waiting for the engine (lock held). */
static int next_events(stream *st)
{
    server *srv = st->srv;
    serve_request *r = st->r;
    st->out_len = st->out_off = 0;
    double waited = 0;
    while (!r->done && r->ready <= st->sent && (!r->chat || st->role_sent) && waited < KEEPALIVE_SECONDS) {
        wait_a_while(&r->cond, &srv->lock, 0.1);
        waited += 0.1;
    }
    if (!r->done && r->ready <= st->sent && (!r->chat || st->role_sent)) {
        static const char comment[] = ": keep-alive\n\n";
        char *grown = realloc(st->out, sizeof comment);
        if (!grown) return -1;
        st->out = grown;
        memcpy(st->out, comment, sizeof comment - 1);
        st->out_len = sizeof comment - 1;
        return 0;
    }
    size_t ready = r->done ? r->text.len : r->ready;
    if ((r->chat && !st->role_sent) || ready > st->sent) {
        if (add_event(st, serve_chunk_json(srv, r, r->text.data ? r->text.data + st->sent : "", ready - st->sent, !st->role_sent && r->chat,
                                           NULL, false)))
            return -1;
        st->role_sent = true;
        st->sent = ready;
    }
    if (r->done) {
        if (add_event(st, serve_chunk_json(srv, r, "", 0, false, r->finish, false))) return -1;
        if (r->include_usage && add_event(st, serve_chunk_json(srv, r, "", 0, false, NULL, true))) return -1;
        char *grown = realloc(st->out, st->out_len + 15);
        if (!grown) return -1;
        st->out = grown;
        memcpy(st->out + st->out_len, "data: [DONE]\n\n", 14);
        st->out_len += 14;
        st->end = true;
    }
    return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *st = cls;
    if (st->out_off == st->out_len) {
        if (st->end) return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&st->srv->lock);
        int rc = next_events(st);
        pthread_mutex_unlock(&st->srv->lock);
        if (rc) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = st->out_len - st->out_off < max ? st->out_len - st->out_off : max;
    memcpy(buf, st->out + st->out_off, n);
    st->out_off += n;
    return (ssize_t)n;
}

/* The response is gone: finished, or the client went away. A request still running is
 * cancelled; the engine frees its sequence at the next step. */
static void stream_free(void *cls)
{
    stream *st = cls;
    server *srv = st->srv;
    pthread_mutex_lock(&srv->lock);
    if (!st->r->done) {
        st->r->cancelled = true;
        pthread_cond_signal(&srv->wake);
    }
    serve_request_put(srv, st->r);
    pthread_mutex_unlock(&srv->lock);
    free(st->out);
    free(st);
}

/* ----------------------------------------------------------------------------
 * Completions */

static bool client_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static enum MHD_Result completion(server *srv, struct MHD_Connection *c, const body *b, bool chat)
{
    serve_request *r = calloc(1, sizeof *r);
    if (!r) return respond(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "application/json", NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cond, &ca);
    pthread_condattr_destroy(&ca);
    r->refs = 1;
    pthread_mutex_lock(&srv->lock);
    srv->n_live++;
    pthread_mutex_unlock(&srv->lock);
    char msg[512];
    const char *param;
    int status = serve_parse_request(srv, b->data ? b->data : "", b->len, chat, r, msg, sizeof msg, &param);
    if (status) {
        enum MHD_Result ok = respond_error(srv, c, (unsigned)status, msg, param);
        pthread_mutex_lock(&srv->lock);
        serve_request_put(srv, r);
        pthread_mutex_unlock(&srv->lock);
        return ok;
    }
    pthread_mutex_lock(&srv->lock);
    snprintf(r->id, sizeof r->id, "%s-%" PRId64, chat ? "chatcmpl" : "cmpl", ++srv->next_id);
    r->created = (int64_t)time(NULL);
    status = serve_enqueue(srv, r);
    if (status) {
        serve_request_put(srv, r);
        pthread_mutex_unlock(&srv->lock);
        return respond_error(srv, c, (unsigned)status,
                             status == 429 ? "the request queue is full; retry later"
                                           : "the server is shutting down", NULL);
    }
    if (r->stream) {
        pthread_mutex_unlock(&srv->lock);
        stream *st = calloc(1, sizeof *st);
        struct MHD_Response *resp =
            st ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free) : NULL;
        if (!resp) {
            pthread_mutex_lock(&srv->lock);
            r->cancelled = true;
            serve_request_put(srv, r);
            pthread_mutex_unlock(&srv->lock);
            free(st);
            return MHD_NO;
        }
        *st = (stream){.srv = srv, .r = r};
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ok;
    }
    while (!r->done) {
        wait_a_while(&r->cond, &srv->lock, 0.1);
        if (!r->cancelled && client_gone(c)) {
            r->cancelled = true;
            pthread_cond_signal(&srv->wake);
        }
    }
    char *json = serve_result_json(srv, r);
    pthread_mutex_unlock(&srv->lock);
    enum MHD_Result ok = respond(c, MHD_HTTP_OK, "application/json", json);
    pthread_mutex_lock(&srv->lock);
    serve_request_put(srv, r); /* after the response is queued: a drain waits for it */
    pthread_mutex_unlock(&srv->lock);
    return ok;
}

/* ----------------------------------------------------------------------------
 * Routing */

/* Compares in time that depends only on the key's length. */
static bool key_matches(const char *given, const char *key)
{
    size_t gl = given ? strlen(given) : 0, kl = strlen(key);
    unsigned char diff = gl != kl;
    for (size_t i = 0; i < kl; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < gl ? given[i] : 0);
    return diff == 0;
}

static bool authorised(server *srv, struct MHD_Connection *c)
{
    if (!srv->opt->api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7) != 0) return false;
    return key_matches(h + 7, srv->opt->api_key);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    server *srv = cls;
    body *b = *con_cls;
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!b->too_large && b->len + *upload_size <= SERVE_MAX_BODY) {
            char *grown = realloc(b->data, b->len + *upload_size + 1);
            if (!grown) return MHD_NO;
            b->data = grown;
            memcpy(b->data + b->len, upload, *upload_size);
            b->len += *upload_size;
            b->data[b->len] = 0;
        } else {
            b->too_large = true;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    bool chat = !strcmp(url, "/v1/chat/completions");
    if (!strcmp(url, "/health")) {
        if (!get) return respond_error(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET for /health", NULL);
        pthread_mutex_lock(&srv->lock);
        bool draining = srv->draining;
        pthread_mutex_unlock(&srv->lock);
        return respond(c, draining ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, "application/json",
                       strdup(draining ? "{\"status\":\"draining\"}" : "{\"status\":\"ok\"}"));
    }
    if (!strcmp(url, "/metrics")) {
        if (!get) return respond_error(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET for /metrics", NULL);
        pthread_mutex_lock(&srv->lock);
        char *text = serve_metrics_text(&srv->metrics);
        pthread_mutex_unlock(&srv->lock);
        return respond(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text);
    }
    bool models = !strcmp(url, "/v1/models");
    const char *model_id = !strncmp(url, "/v1/models/", 11) ? url + 11 : NULL;
    if (model_id) {
        if (!authorised(srv, c))
            return respond_error(srv, c, MHD_HTTP_UNAUTHORIZED,
                                 "missing or wrong API key (Authorization: Bearer KEY)", NULL);
        if (!get)
            return respond_error(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET for /v1/models/{id}", NULL);
        if (strcmp(model_id, srv->opt->model_name))
            return respond_error(srv, c, MHD_HTTP_NOT_FOUND, "no such model (GET /v1/models lists the one served)",
                                 "model");
        return respond(c, MHD_HTTP_OK, "application/json", serve_model_json(srv));
    }
    if (!models && !chat && strcmp(url, "/v1/completions"))
        return respond_error(srv, c, MHD_HTTP_NOT_FOUND, "no such endpoint", NULL);
    if (!authorised(srv, c))
        return respond_error(srv, c, MHD_HTTP_UNAUTHORIZED, "missing or wrong API key (Authorization: Bearer KEY)",
                             NULL);
    if (models)
        return get ? respond(c, MHD_HTTP_OK, "application/json", serve_models_json(srv))
                   : respond_error(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET for /v1/models", NULL);
    if (!post) return respond_error(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST for completions", NULL);
    if (b->too_large) return respond_error(srv, c, MHD_HTTP_CONTENT_TOO_LARGE, "the request body is over 1 MiB", NULL);
    return completion(srv, c, b, chat);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    body *b = *con_cls;
    if (b) free(b->data);
    free(b);
    *con_cls = NULL;
}

/* ----------------------------------------------------------------------------
 * The daemon */

/* libmicrohttpd's messages (a refused connection, a client gone mid-request) come from
 * clients, so LOG_BURST per window go out and the rest are counted. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static time_t log_window;
static int log_shown, log_hidden;

static void http_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&log_lock);
    if (now.tv_sec - log_window >= LOG_WINDOW_SECONDS) {
        if (log_hidden)
            fprintf(stderr, "tiermem-llm: http: %d more messages in %d s not shown\n", log_hidden, LOG_WINDOW_SECONDS);
        log_window = now.tv_sec;
        log_shown = log_hidden = 0;
    }
    if (log_shown < LOG_BURST) {
        char line[512];
        vsnprintf(line, sizeof line, fmt, ap);
        line[strcspn(line, "\n")] = '\0';
        fprintf(stderr, "tiermem-llm: http: %s\n", line);
        log_shown++;
    } else {
        log_hidden++;
    }
    pthread_mutex_unlock(&log_lock);
}

/* The connections the descriptor limit allows, raising the soft limit toward the hard one. */
static unsigned connection_limit(const serve_options *o)
{
    rlim_t want = (rlim_t)o->max_connections + SPARE_FDS;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return (unsigned)o->max_connections;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur >= want)
        return (unsigned)o->max_connections;
    unsigned fit = rl.rlim_cur > 2 * SPARE_FDS ? (unsigned)(rl.rlim_cur - SPARE_FDS) : SPARE_FDS;
    fprintf(stderr, "tiermem-llm: serve: the descriptor limit (%llu) allows %u of --max-connections %d\n",
            (unsigned long long)rl.rlim_cur, fit, o->max_connections);
    return fit;
}

int serve_http_start(server *srv, char *err, size_t errlen)
{
    const serve_options *o = srv->opt;
    struct sockaddr_in in4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)o->port)};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    const struct sockaddr *sa = (const struct sockaddr *)&in4;
    if (inet_pton(AF_INET6, o->host, &in6.sin6_addr) == 1) {
        flags |= MHD_USE_IPv6;
        sa = (const struct sockaddr *)&in6;
    } else if (inet_pton(AF_INET, o->host, &in4.sin_addr) != 1) {
        snprintf(err, errlen, "--host expects a numeric IPv4 or IPv6 address, got '%s'", o->host);
        return -1;
    }
    unsigned limit = connection_limit(o);
    srv->daemon = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, sa,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_CONNECTION_LIMIT,
                                   limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout,
                                   MHD_OPTION_EXTERNAL_LOGGER, http_log, NULL, MHD_OPTION_END);
    if (!srv->daemon) {
        snprintf(err, errlen, "cannot listen on %s port %d (in use, or not permitted)", o->host, o->port);
        return -1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    bool v6 = flags & MHD_USE_IPv6;
    fprintf(stderr, "tiermem-llm: serving on http://%s%s%s:%u\n", v6 ? "[" : "", o->host, v6 ? "]" : "",
            di ? di->port : (unsigned)o->port);
    return 0;
}

void serve_http_stop(server *srv)
{
    MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
}

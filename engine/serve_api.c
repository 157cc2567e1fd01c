/* serve_api.c — the OpenAI wire format: request bodies to serve_request, results and
 * stream chunks to JSON (jansson), and error objects. */
#include "engine/chat.h"
#include "engine/kv_cache.h"
#include "engine/serve_internal.h"
#include "engine/tokenizer.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ----------------------------------------------------------------------------
 * Text */

size_t serve_utf8_complete(const char *s, size_t n)
{
    /* a sequence is at most 4 bytes: look back for its lead byte */
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte */
        return utf8_len(c) > back ? n - back : n;
    }
    return n;
}

/* A JSON string of s[n]; bytes that are not valid UTF-8 become U+FFFD. */
static json_t *json_text(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    if (j) return j;
    char *clean = malloc(n * 3 + 1);
    if (!clean) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len((unsigned char)s[i]);
        json_t *one = i + k <= n && k > 1 ? json_stringn(s + i, k) : NULL;
        if (one || (k == 1 && (unsigned char)s[i] < 0x80)) {
            memcpy(clean + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(clean + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
        json_decref(one);
    }
    j = json_stringn(clean, o);
    free(clean);
    return j;
}

static char *dump(json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

char *serve_error_json(const char *message, const char *type, const char *param)
{
    return dump(json_pack("{s:{s:s, s:s, s:s?, s:n}}", "error", "message", message, "type", type, "param", param,
                          "code"));
}

static json_t *model_json(const server *srv)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:i}", "id", srv->opt->model_name, "object", "model", "created",
                     (json_int_t)0, "owned_by", "tiermem", "max_model_len", srv->m->max_positions);
}

char *serve_models_json(const server *srv)
{
    return dump(json_pack("{s:s, s:[o]}", "object", "list", "data", model_json(srv)));
}

char *serve_model_json(const server *srv)
{
    return dump(model_json(srv));
}

static json_t *usage_json(const serve_request *r)
{
    return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", r->n_prompt, "completion_tokens", r->n_out,
                     "total_tokens", r->n_prompt + r->n_out, "prompt_tokens_details", "cached_tokens", r->n_cached);
}

static json_t *envelope(const server *srv, const serve_request *r, const char *object)
{
    return json_pack("{s:s, s:s, s:I, s:s}", "id", r->id, "object", object, "created", (json_int_t)r->created,
                     "model", srv->opt->model_name);
}

char *serve_result_json(const server *srv, const serve_request *r)
{
    json_t *j = envelope(srv, r, r->chat ? "chat.completion" : "text_completion");
    json_t *text = json_text(r->text.data ? r->text.data : "", r->text.len);
    json_t *choice = r->chat ? json_pack("{s:i, s:{s:s, s:o}, s:n, s:s}", "index", 0, "message", "role", "assistant",
                                         "content", text, "logprobs", "finish_reason", r->finish)
                             : json_pack("{s:i, s:o, s:n, s:s}", "index", 0, "text", text, "logprobs",
                                         "finish_reason", r->finish);
    if (!j || !choice) {
        json_decref(j);
        json_decref(choice);
        return NULL;
    }
    json_object_set_new(j, "choices", json_pack("[o]", choice));
    json_object_set_new(j, "usage", usage_json(r));
    return dump(j);
}

char *serve_chunk_json(const server *srv, const serve_request *r, const char *text, size_t len, bool role,
                       const char *finish, bool usage)
{
    json_t *j = envelope(srv, r, r->chat ? "chat.completion.chunk" : "text_completion");
    if (!j) return NULL;
    if (usage) {
        json_object_set_new(j, "choices", json_array());
        json_object_set_new(j, "usage", usage_json(r));
        return dump(j);
    }
    json_t *choice = json_pack("{s:i, s:n}", "index", 0, "logprobs");
    json_object_set_new(choice, "finish_reason", finish ? json_string(finish) : json_null());
    if (r->chat) {
        json_t *delta = json_object();
        if (role) json_object_set_new(delta, "role", json_string("assistant"));
        if (len || !role) json_object_set_new(delta, "content", json_text(text, len));
        if (finish) json_object_del(delta, "content");
        json_object_set_new(choice, "delta", delta);
    } else {
        json_object_set_new(choice, "text", json_text(text, len));
    }
    json_object_set_new(j, "choices", json_pack("[o]", choice));
    if (r->include_usage) json_object_set_new(j, "usage", json_null());
    return dump(j);
}

/* ----------------------------------------------------------------------------
 * Requests */

typedef struct parse {
    char *msg;
    size_t msglen;
    const char **param;
} parse;

__attribute__((format(printf, 3, 4))) static int bad(parse *p, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, p->msglen, fmt, ap);
    va_end(ap);
    *p->param = param;
    return 400;
}

/* Optional fields: absent and null leave *out as it is. 0, or 400. */
static int get_number(parse *p, json_t *o, const char *key, double lo, double hi, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return bad(p, key, "'%s' must be a number", key);
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) return bad(p, key, "'%s' must be from %g to %g, got %g", key, lo, hi, d);
    *out = d;
    return 0;
}

static int get_int(parse *p, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return bad(p, key, "'%s' must be an integer", key);
    int64_t i = json_integer_value(v);
    if (i < lo || i > hi) return bad(p, key, "'%s' must be from %" PRId64 " to %" PRId64 ", got %" PRId64, key, lo,
                                     hi, i);
    *out = i;
    return 0;
}

static int get_bool(parse *p, json_t *o, const char *key, bool *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return bad(p, key, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int get_stop(parse *p, json_t *o, serve_request *r)
{
    json_t *v = json_object_get(o, "stop");
    if (!v || json_is_null(v)) return 0;
    json_t *one = json_is_string(v) ? v : NULL;
    size_t n = one ? 1 : json_is_array(v) ? json_array_size(v) : SIZE_MAX;
    if (n == SIZE_MAX) return bad(p, "stop", "'stop' must be a string or an array of strings");
    if (n > SERVE_MAX_STOP) return bad(p, "stop", "'stop' takes at most %d strings", SERVE_MAX_STOP);
    for (size_t i = 0; i < n; i++) {
        json_t *s = one ? one : json_array_get(v, i);
        if (!json_is_string(s)) return bad(p, "stop", "'stop' must be a string or an array of strings");
        if (json_string_length(s) == 0) return bad(p, "stop", "'stop' strings must not be empty");
        r->stop[r->n_stop] = strndup(json_string_value(s), json_string_length(s));
        if (!r->stop[r->n_stop]) return bad(p, "stop", "out of host memory");
        if (json_string_length(s) > r->longest_stop) r->longest_stop = json_string_length(s);
        r->n_stop++;
    }
    return 0;
}

/* A message's content: a string, or an array of {"type": "text", "text": ...} parts. */
static char *message_content(parse *p, json_t *c)
{
    if (json_is_string(c)) return strndup(json_string_value(c), json_string_length(c));
    if (!json_is_array(c)) {
        bad(p, "messages", "a message's 'content' must be a string or an array of text parts");
        return NULL;
    }
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        json_t *t = json_object_get(part, "text");
        if (!json_is_string(t)) {
            fclose(f);
            free(out);
            bad(p, "messages", "content part %zu has no 'text' string (only text parts are supported)", i);
            return NULL;
        }
        fwrite(json_string_value(t), 1, json_string_length(t), f);
    }
    fclose(f);
    return out;
}

/* The prompt text of a chat request, through the model's template style. */
/* A chat prompt's template markers are control tokens, and Llama 3's template starts with
 * its own BOS; a completion prompt is plain text. */
static int64_t encode_prompt(const server *srv, const char *text, bool chat, int32_t *ids, int64_t max_ids)
{
    if (!chat) return tokenizer_encode(srv->tok, text, srv->tok->add_bos, ids, max_ids);
    chat_template t = chat_template_from(srv->chat_template, CHAT_PLAIN);
    return tokenizer_encode_special(srv->tok, text, srv->tok->add_bos && t != CHAT_LLAMA3, ids, max_ids);
}

static char *chat_prompt(parse *p, server *srv, json_t *msgs)
{
    size_t n = json_is_array(msgs) ? json_array_size(msgs) : 0;
    if (n == 0) {
        bad(p, "messages", "'messages' must be a non-empty array of {\"role\", \"content\"} objects");
        return NULL;
    }
    chat_message *m = calloc(n, sizeof *m);
    char **contents = calloc(n, sizeof *contents);
    char *prompt = NULL;
    if (!m || !contents) goto out;
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(msgs, i), *role = json_object_get(msg, "role");
        if (!json_is_string(role)) {
            bad(p, "messages", "message %zu has no 'role' string", i);
            goto out;
        }
        json_t *c = json_object_get(msg, "content");
        if (!(contents[i] = c && !json_is_null(c) ? message_content(p, c) : strdup(""))) goto out;
        m[i] = (chat_message){json_string_value(role), contents[i]};
    }
    prompt = chat_render(chat_template_from(srv->chat_template, CHAT_PLAIN), m, n, 1);
out:
    for (size_t i = 0; contents && i < n; i++) free(contents[i]);
    free(contents);
    free(m);
    return prompt;
}

static int completion_prompt(parse *p, json_t *v, char **out)
{
    if (json_is_array(v) && json_array_size(v) == 1) v = json_array_get(v, 0);
    if (!json_is_string(v)) return bad(p, "prompt", "'prompt' must be a string (or an array of one string)");
    *out = strndup(json_string_value(v), json_string_length(v));
    return *out ? 0 : bad(p, "prompt", "out of host memory");
}

static int parse_fields(parse *p, server *srv, json_t *o, bool chat, serve_request *r)
{
    const tm_model *m = srv->m;
    double temp = 1.0, top_p = 1.0;
    int64_t top_k = 0, n = 1, seed = -1, max_tokens = 0;
    bool stream = false, include_usage = false;
    json_t *model = json_object_get(o, "model"), *so = json_object_get(o, "stream_options");
    if (model && !json_is_null(model) && !json_is_string(model)) return bad(p, "model", "'model' must be a string");
    if (so && !json_is_null(so) && !json_is_object(so))
        return bad(p, "stream_options", "'stream_options' must be an object");
    int rc = get_number(p, o, "temperature", 0, 2, &temp) ?: get_number(p, o, "top_p", 0, 1, &top_p) ?:
             get_int(p, o, "top_k", 0, INT32_MAX, &top_k) ?: get_int(p, o, "n", INT64_MIN, INT64_MAX, &n) ?:
             get_int(p, o, "seed", INT64_MIN, INT64_MAX, &seed) ?: get_bool(p, o, "stream", &stream) ?:
             get_bool(p, so, "include_usage", &include_usage) ?: get_stop(p, o, r);
    if (rc) return rc;
    if (chat && (rc = get_int(p, o, "max_completion_tokens", INT64_MIN, INT64_MAX, &max_tokens))) return rc;
    if ((rc = get_int(p, o, "max_tokens", INT64_MIN, INT64_MAX, &max_tokens))) return rc;
    if (n != 1) return bad(p, "n", "only n=1 is supported, got %" PRId64, n);
    bool explicit_max = json_object_get(o, "max_tokens") || json_object_get(o, "max_completion_tokens");
    if (explicit_max && max_tokens <= 0)
        return bad(p, "max_tokens", "'max_tokens' must be at least 1, got %" PRId64, max_tokens);

    /* the prompt, tokenised here so the engine loop only runs the model */
    char *text = NULL;
    if (chat) {
        if (!(text = chat_prompt(p, srv, json_object_get(o, "messages")))) return 400;
    } else {
        json_t *pr = json_object_get(o, "prompt");
        if (!pr) return bad(p, "prompt", "'prompt' is required");
        if ((rc = completion_prompt(p, pr, &text))) return rc;
    }
    int64_t n_ids = encode_prompt(srv, text, chat, NULL, 0);
    int32_t ctx = m->max_positions;
    if (n_ids < 0) {
        free(text);
        return bad(p, chat ? "messages" : "prompt", "the prompt cannot be tokenised");
    }
    if (n_ids == 0) {
        free(text);
        return bad(p, chat ? "messages" : "prompt", "the prompt is empty (no tokens)");
    }
    if (n_ids >= ctx) {
        free(text);
        return bad(p, chat ? "messages" : "prompt", "the prompt has %" PRId64 " tokens; the context is %d",
                   n_ids, ctx);
    }
    if (!explicit_max) max_tokens = chat ? ctx - n_ids : 16;
    if (max_tokens > ctx - n_ids) {
        if (explicit_max) {
            free(text);
            return bad(p, "max_tokens", "the prompt has %" PRId64 " tokens; with max_tokens %" PRId64 " that is %"
                       PRId64 ", past the context of %d", n_ids, max_tokens, n_ids + max_tokens, ctx);
        }
        max_tokens = ctx - n_ids;
    }
    /* a request is admitted once the pool can hold it whole: it must fit the pool alone */
    int64_t pool_tokens = m->kv.layout.n_blocks * m->kv.layout.block_size;
    if (n_ids + max_tokens > pool_tokens) {
        if (explicit_max || n_ids >= pool_tokens) {
            free(text);
            return bad(p, explicit_max ? "max_tokens" : (chat ? "messages" : "prompt"),
                       "the prompt has %" PRId64 " tokens; with max_tokens %" PRId64 " that is more than the %" PRId64
                       " tokens the KV pool holds", n_ids, max_tokens, pool_tokens);
        }
        max_tokens = pool_tokens - n_ids;
    }
    r->ids = malloc((size_t)(n_ids + max_tokens) * sizeof *r->ids);
    if (!r->ids) {
        free(text);
        return bad(p, NULL, "out of host memory");
    }
    r->n_prompt = (int32_t)encode_prompt(srv, text, chat, r->ids, n_ids);
    free(text);
    r->chat = chat;
    r->stream = stream;
    r->include_usage = stream && include_usage;
    r->max_tokens = (int32_t)max_tokens;
    r->temperature = (float)temp;
    r->top_p = (float)top_p;
    r->top_k = (int32_t)top_k;
    if (seed < 0) { /* no seed: a different one per request */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (int64_t)(((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) >> 1);
    }
    r->seed = (uint64_t)seed;
    return 0;
}

int serve_parse_request(server *srv, const char *body, size_t len, bool chat, serve_request *r, char *msg,
                        size_t msglen, const char **param)
{
    parse p = {msg, msglen, param};
    *param = NULL;
    json_error_t jerr;
    json_t *o = json_loadb(body, len, 0, &jerr);
    if (!o) return bad(&p, NULL, "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
    int rc = json_is_object(o) ? parse_fields(&p, srv, o, chat, r) : bad(&p, NULL, "the body must be a JSON object");
    json_decref(o);
    return rc;
}

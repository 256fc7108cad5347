/*
 * station.h: the C SDK for Station modules (guest ABI version 1, docs/abi.md).
 *
 * A module is a table of commands and their functions:
 *
 *     #include "station.h"
 *
 *     static int greet(station_call *c) {
 *         size_t n;
 *         const char *name = station_json_get_string(c->input, "name", &n);
 *         if (name == NULL || n == 0)
 *             return station_fail(c, "name is required");
 *         station_begin_object(&c->result);
 *         station_key(&c->result, "greeting");
 *         station_string_n(&c->result, name, n);
 *         station_end_object(&c->result);
 *         return STATION_OK;
 *     }
 *
 *     const station_command station_commands[] = {
 *         {"greet", greet, "name"},
 *         {0},
 *     };
 *
 * built as a WASI reactor together with station.c (`station module build`
 * does this, or by hand):
 *
 *     clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -Oz \
 *         -o module.wasm greet.c station.c
 *
 * station.c exports what the station calls (station_abi_1, station_call):
 * for each call it reads the command name and the input, checks that the
 * input is a JSON object, runs the command's function and hands back its
 * result or its failure message.
 *
 * Memory. Everything the SDK hands a command (the input, decoded strings,
 * HTTP responses, error documents, station_alloc) belongs to the call and
 * is freed when the call returns: a command frees nothing of the SDK's and
 * keeps no SDK pointer past its call. Memory the command gets from malloc
 * is its own, as usual.
 *
 * The SDK is single-threaded, like the station's calls (one at a time per
 * instance), and needs nothing but wasi-libc.
 */
#ifndef STATION_H
#define STATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Results and statuses
 */

/* What a command function returns (the values of station_call, the
 * export). Any other nonzero value is treated as STATION_FAILED. */
#define STATION_OK 0              /* the result is c->result */
#define STATION_FAILED 1          /* the message is the one station_fail set */
#define STATION_UNKNOWN_COMMAND 2 /* the SDK's answer for a command not in the table */

/* The status of a host call (docs/abi.md, "Statuses"). The name of each is
 * the `code` of the station's Error document; station_status_name returns
 * it ("denied", ...; "unknown" for a code this SDK does not know, which a
 * module should treat as failed). */
typedef enum station_status {
    STATION_STATUS_OK = 0,
    STATION_STATUS_DENIED = 1,      /* a gate refused: a sandbox violation, audited */
    STATION_STATUS_FAULT = 2,       /* a pointer or length outside memory */
    STATION_STATUS_INVALID = 3,     /* an argument is malformed */
    STATION_STATUS_TOO_LARGE = 4,   /* an argument or a result exceeds its limit */
    STATION_STATUS_FAILED = 5,      /* allowed, but it failed */
    STATION_STATUS_TIMEOUT = 6,     /* the call's deadline passed */
    STATION_STATUS_UNAVAILABLE = 7  /* no call is active */
} station_status;

const char *station_status_name(station_status s);

/* ------------------------------------------------------------------------
 * Reading JSON
 *
 * A station_json is a span of text holding one well-formed JSON value:
 * the call's input, a value station_json_get found, a document that
 * station_json_parse checked. The accessors below trust that the span is
 * well-formed; give them only spans that came from the SDK.
 *
 * Strings are decoded completely: every escape, \uXXXX included, with
 * surrogate pairs joined into one character and a lone surrogate replaced
 * by U+FFFD (as Go's encoding/json does). A decoded string is
 * NUL-terminated and belongs to the call. It may contain NUL bytes
 * ("\u0000"): pass a len pointer to get all of it; with len NULL a string
 * that contains a NUL is refused (NULL), never cut short.
 */

typedef struct station_json {
    const char *text; /* the value's first byte */
    size_t len;       /* the value's length, without surrounding whitespace */
} station_json;

typedef enum station_json_kind {
    STATION_JSON_INVALID = 0, /* an empty span */
    STATION_JSON_NULL,
    STATION_JSON_BOOL,
    STATION_JSON_NUMBER,
    STATION_JSON_STRING,
    STATION_JSON_ARRAY,
    STATION_JSON_OBJECT
} station_json_kind;

/* The deepest nesting of arrays and objects station_json_parse accepts
 * (Go's encoding/json has the same limit). */
#define STATION_JSON_MAX_DEPTH 10000

/* station_json_parse checks that text[0..len) is one JSON document (RFC
 * 8259: UTF-8, no trailing commas, no comments, nothing after the value but
 * whitespace) and sets *doc to its value. On failure it returns false and,
 * if err is not NULL, sets *err to a message (owned by the call) such as
 * "invalid character 'x' at byte 3". It does not refuse duplicate keys (the
 * input of a command is checked for them, see station_command). */
bool station_json_parse(const char *text, size_t len, station_json *doc, const char **err);

station_json_kind station_json_type(station_json v);

/* station_json_get finds key in the object obj (keys are compared after
 * decoding their escapes: "na\u006de" is "name"; the first match wins).
 * False if obj is not an object or has no such key. */
bool station_json_get(station_json obj, const char *key, station_json *value);

/* The value as a C type. False (NULL) if it is of another type, or does not
 * fit: station_json_int wants an integer without fraction or exponent in
 * int64_t's range; station_json_number a number that fits a double. */
const char *station_json_string(station_json v, size_t *len);
bool station_json_number(station_json v, double *out);
bool station_json_int(station_json v, int64_t *out);
bool station_json_bool(station_json v, bool *out);

/* station_json_get followed by the conversion: NULL (false) when the key is
 * missing or holds another type. */
const char *station_json_get_string(station_json obj, const char *key, size_t *len);
bool station_json_get_number(station_json obj, const char *key, double *out);
bool station_json_get_int(station_json obj, const char *key, int64_t *out);
bool station_json_get_bool(station_json obj, const char *key, bool *out);

/* Iterating over an array or an object:
 *
 *     station_json_iter it;
 *     station_json key, value;
 *     if (station_json_iter_init(&it, v))
 *         while (station_json_next(&it, &key, &value)) { ... }
 *
 * For an object key is the member's name (decode it with
 * station_json_string); for an array it is left alone (key may be NULL). */
typedef struct station_json_iter {
    const char *p, *end;
    bool object;
} station_json_iter;

bool station_json_iter_init(station_json_iter *it, station_json v);
bool station_json_next(station_json_iter *it, station_json *key, station_json *value);

/* ------------------------------------------------------------------------
 * Writing JSON
 *
 * A station_writer builds one JSON document, compactly, putting commas and
 * colons where they belong. Strings are escaped as Go's encoding/json
 * escapes them (\" \\ \b \f \n \r \t, other control characters and U+2028,
 * U+2029 as \u00XX; nothing else), and each byte that is not part of valid
 * UTF-8 becomes U+FFFD, so the document is always valid.
 *
 * Errors are sticky: the first one (out of memory, a NaN, a value where a
 * key belongs, ...) is kept in error and every later write does nothing.
 * The call's result writer is checked by the SDK when the command returns:
 * a result with an error fails the call with that error.
 */

#define STATION_WRITER_MAX_DEPTH 256

typedef struct station_writer {
    char *data;        /* the document so far (not NUL-terminated) */
    size_t len, cap;
    const char *error; /* the first error, or NULL */
    /* private */
    unsigned depth;
    bool after_key;
    unsigned char stack[STATION_WRITER_MAX_DEPTH];
} station_writer;

void station_begin_object(station_writer *w);
void station_end_object(station_writer *w);
void station_begin_array(station_writer *w);
void station_end_array(station_writer *w);
void station_key(station_writer *w, const char *key);           /* in an object, before each value */
void station_key_n(station_writer *w, const char *key, size_t n);
void station_string(station_writer *w, const char *s);          /* NUL-terminated; NULL writes null */
void station_string_n(station_writer *w, const char *s, size_t n);
void station_int(station_writer *w, int64_t v);
void station_number(station_writer *w, double v);               /* NaN and infinities are errors */
void station_bool(station_writer *w, bool v);
void station_null(station_writer *w);
void station_raw_json(station_writer *w, const char *json, size_t n); /* a value already encoded; checked */

/* Frees the writer's memory (not needed for the call's result writer). */
void station_writer_free(station_writer *w);

/* ------------------------------------------------------------------------
 * Commands
 */

typedef struct station_call {
    const char *command; /* the command's name */
    /* The input: a JSON object (an empty input and `null` read as {}). For
     * a STATION_RAW command: the bytes as the station passed them, which
     * may be anything (input.text[input.len] is a NUL); check them with
     * station_json_parse before giving them to the other accessors. */
    station_json input;
    station_writer result; /* the JSON result; nothing written means null */
    /* private */
    const char *message;
} station_call;

typedef int (*station_handler)(station_call *c);

/* flags of a station_command */
#define STATION_RAW 1 /* pass the input as it is: no check, no fields */

typedef struct station_command {
    const char *name;
    station_handler run;
    /* The input fields the command accepts, separated by spaces or commas
     * ("url headers"): an input with any other fails before run, with
     * `invalid input: unknown field "x"`, as the Go SDK's strict decoding
     * does. NULL accepts any. */
    const char *fields;
    int flags;
} station_command;

/* The module defines its commands in this table, ended by an entry whose
 * name is NULL ({0}). Names must be unique and nonempty; a table that
 * breaks this fails every call, with a message that says why. A command the
 * table does not have is answered with STATION_UNKNOWN_COMMAND and
 * `unknown command "x" (commands: a, b)`. */
extern const station_command station_commands[];

/* station_fail sets the call's failure message (printf-style; one line for
 * the operator) and returns STATION_FAILED:
 *
 *     return station_fail(c, "no invoice %s", id);
 */
int station_fail(station_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* station_alloc returns n bytes (zeroed, aligned for any type) that live
 * until the current call returns, or NULL if memory is exhausted. */
void *station_alloc(size_t n);

/* ------------------------------------------------------------------------
 * Logging
 */

#define STATION_DEBUG 0
#define STATION_INFO 1
#define STATION_WARN 2
#define STATION_ERROR 3

/* station_log writes one line (printf-style) to the station's module log,
 * which stamps the time, the module and the command. A line longer than the
 * station's limit (STATION_MAX_LOG_LINE) is cut at a character boundary and
 * ends with "...". The station escapes control characters: a newline in the
 * text cannot forge a line. */
#define STATION_MAX_LOG_LINE (64 * 1024)
void station_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------------------
 * Secrets
 *
 * STATION_SECRET("STRIPE_KEY") is the placeholder of a secret the manifest
 * declares under requires.secrets, a string literal: write it where the
 * value goes in a request (a header, or the URL or body where the
 * manifest's "in" allows it). The station's network gate puts the value in
 * only in requests to the hosts the secret is bound to; the module never
 * sees it. NAME must be a string literal: an upper-case letter, then
 * upper-case letters, digits and _.
 *
 *     "Authorization: Bearer " STATION_SECRET("STRIPE_KEY")
 */
#define STATION_SECRET(NAME) "~station-secret~" NAME "~"

/* ------------------------------------------------------------------------
 * Base64 (standard alphabet, with padding: how the ABI carries bodies)
 */

/* The length of the encoding of n bytes, without a terminating NUL. */
size_t station_base64_encoded_len(size_t n);

/* Encodes src[0..n) into dst, which needs station_base64_encoded_len(n) + 1
 * bytes; writes a NUL after it and returns its length. */
size_t station_base64_encode(const void *src, size_t n, char *dst);

/* Decodes src[0..n) into dst, which needs n / 4 * 3 bytes, and sets *out_len.
 * False for anything but canonical padded base64 (a character outside the
 * alphabet, whitespace, a length not a multiple of 4, misplaced padding). */
bool station_base64_decode(const char *src, size_t n, void *dst, size_t *out_len);

/* ------------------------------------------------------------------------
 * HTTP, through the station's network gate
 *
 *     station_http_response r;
 *     station_error e;
 *     if (station_http_get("https://api.example.test/hello", &r, &e) != STATION_STATUS_OK)
 *         return station_fail(c, "%s", e.message);
 *     // r.status (any HTTP status, 404 and 500 included), r.body, r.body_len
 *
 * The station performs the whole exchange before the function returns,
 * following redirects itself (r.url is the final URL). A request the
 * manifest's allowlist does not allow fails with STATION_STATUS_DENIED
 * (station_denied) and an error whose capability is "network", target what
 * was refused, reason why, and message one line that says all of it.
 */

typedef struct station_error {
    station_status status;  /* never STATION_STATUS_OK in a failure */
    const char *code;       /* the status's name, as the station sent it */
    const char *capability; /* denials and limits: "network", ...; else "" */
    const char *target;     /* denials and limits: what was refused; else "" */
    const char *reason;     /* denials and limits: why; else "" */
    const char *message;    /* one line for humans; never NULL or empty */
} station_error;

/* True if a gate refused the operation: a sandbox violation, not a failure
 * of an allowed operation. */
bool station_denied(const station_error *e);

typedef struct station_header {
    const char *name, *value;
} station_header;

typedef struct station_http_request {
    const char *method; /* NULL means "GET" */
    const char *url;    /* absolute https:// (or http:// if granted) */
    const station_header *headers; /* header_count of them; one name may repeat */
    size_t header_count;
    const void *body; /* body_len bytes, or NULL */
    size_t body_len;
} station_http_request;

typedef struct station_http_response {
    int status;         /* the HTTP status of the final response */
    const char *body;   /* body_len bytes, NUL-terminated; "" when empty */
    size_t body_len;
    const char *url;    /* the final URL, after redirects; "" if not sent */
    station_json headers; /* {"Name": ["value", ...], ...}; {} when absent */
} station_http_response;

/* station_http performs req. STATION_STATUS_OK: *resp holds the response.
 * Otherwise *err (if err is not NULL) holds the station's Error document,
 * or one the SDK made when the station sent none or an unreadable one. */
station_status station_http(const station_http_request *req, station_http_response *resp, station_error *err);

/* station_http_get is station_http of a GET of url, without headers. */
station_status station_http_get(const char *url, station_http_response *resp, station_error *err);

/* The first value of header name in resp (compared without regard to
 * case), or NULL. */
const char *station_http_header(const station_http_response *resp, const char *name);

/* ------------------------------------------------------------------------
 * The raw ABI (docs/abi.md, "Imports"), for what the helpers above do not
 * cover. Only the functions a module calls become imports:
 * station_host_process_run and station_host_llm_complete are offered only
 * to modules whose manifest grants subprocess or llm.
 */

#if defined(__wasm__)
#define STATION_IMPORT(name) __attribute__((import_module("station"), import_name(name)))
#else
#define STATION_IMPORT(name)
#endif

STATION_IMPORT("buf_len") int32_t station_host_buf_len(int32_t h);
STATION_IMPORT("buf_read") int32_t station_host_buf_read(int32_t h, void *ptr, int32_t len);
STATION_IMPORT("buf_free") void station_host_buf_free(int32_t h);
STATION_IMPORT("output_set") int32_t station_host_output_set(const void *ptr, int32_t len);
STATION_IMPORT("log") int32_t station_host_log(int32_t level, const void *ptr, int32_t len);
STATION_IMPORT("http_request") int64_t station_host_http_request(const void *ptr, int32_t len);
STATION_IMPORT("process_run") int64_t station_host_process_run(const void *ptr, int32_t len);
STATION_IMPORT("llm_complete") int64_t station_host_llm_complete(const void *ptr, int32_t len);

/* station_read_buffer reads host buffer h (and frees it) into memory owned
 * by the call, NUL-terminated; handle 0 is the empty buffer. On failure
 * (the status buf_read returned, or STATION_STATUS_FAILED when memory ran
 * out) *data is NULL and the buffer is freed. */
station_status station_read_buffer(int32_t h, const char **data, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* STATION_H */

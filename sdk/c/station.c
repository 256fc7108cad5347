/*
 * station.c: the C SDK for Station modules. See station.h for the API and
 * docs/abi.md for the contract it implements.
 *
 * Contents: call memory · host buffers · JSON reading · JSON writing ·
 * base64 · logging · HTTP · the exports and dispatch.
 */
#include "station.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__wasm__)
#define STATION_EXPORT(name) __attribute__((export_name(name)))
#else
#define STATION_EXPORT(name)
#endif

/* An internal status for a buffer the SDK could not allocate room for. */
#define NOMEM ((station_status)-1)

static const char *const status_names[] = {
    "ok", "denied", "fault", "invalid", "too_large", "failed", "timeout", "unavailable",
};

const char *station_status_name(station_status s) {
    if (s == NOMEM)
        return "out of memory";
    if ((unsigned)s < sizeof status_names / sizeof status_names[0])
        return status_names[s];
    return "unknown";
}

/* ========================================================================
 * Call memory: every allocation the SDK makes for a call is a block on one
 * list, freed when the call returns.
 */

typedef union block {
    union block *next;
    long double align_f; /* the data after the header is aligned for anything */
    long long align_i;
    void *align_p;
} block;

static block *call_blocks;

/* call_alloc is station_alloc, zeroed only when zero is set: the SDK's own
 * buffers are written before they are read, and zeroing them is a loop the
 * engine checks on every iteration. */
static void *call_alloc(size_t n, bool zero) {
    if (n > SIZE_MAX - sizeof(block))
        return NULL;
    block *b = zero ? calloc(1, sizeof(block) + n) : malloc(sizeof(block) + n);
    if (b == NULL)
        return NULL;
    b->next = call_blocks;
    call_blocks = b;
    return b + 1;
}

void *station_alloc(size_t n) { return call_alloc(n, true); }

static void free_call_memory(void) {
    while (call_blocks != NULL) {
        block *next = call_blocks->next;
        free(call_blocks);
        call_blocks = next;
    }
}

/* alloc_printf formats into call memory (NULL when out of memory). */
static char *alloc_vprintf(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *s = station_alloc((size_t)n + 1);
    if (s != NULL)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

static char *alloc_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *alloc_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = alloc_vprintf(fmt, ap);
    va_end(ap);
    return s;
}

/* ========================================================================
 * Host buffers
 */

/* The room offered to buf_read at first: most buffers fit, and are read
 * with one host call instead of two (buf_len, then buf_read). */
#define FIRST_READ 4096

/* read_buffer is station_read_buffer, with NOMEM when memory ran out. */
static station_status read_buffer(int32_t h, const char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    if (h == 0) {
        *data = "";
        return STATION_STATUS_OK;
    }
    char *p = call_alloc(FIRST_READ + 1, false);
    if (p == NULL) {
        station_host_buf_free(h);
        return NOMEM;
    }
    int32_t r = station_host_buf_read(h, p, FIRST_READ);
    if (r == -STATION_STATUS_TOO_LARGE) {
        /* The buffer is still live: ask its length and offer that. */
        int32_t n = station_host_buf_len(h);
        if (n < 0) {
            station_host_buf_free(h); /* not live: a no-op, kept for symmetry */
            return STATION_STATUS_INVALID;
        }
        p = call_alloc((size_t)n + 1, false);
        if (p == NULL) {
            station_host_buf_free(h);
            return NOMEM;
        }
        r = station_host_buf_read(h, p, n);
    }
    if (r < 0) {
        station_host_buf_free(h);
        return (station_status)-r;
    }
    p[r] = '\0';
    *data = p;
    *len = (size_t)r;
    return STATION_STATUS_OK;
}

station_status station_read_buffer(int32_t h, const char **data, size_t *len) {
    station_status s = read_buffer(h, data, len);
    return s == NOMEM ? STATION_STATUS_FAILED : s;
}

/* ========================================================================
 * JSON reading
 *
 * station_json_parse validates a document in one pass, without recursion
 * (a deep document cannot exhaust the stack). Everything else walks text it
 * validated, so it only needs to find where things end.
 */

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && is_ws(*p))
        p++;
    return p;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* utf8_decode returns the length of the UTF-8 sequence at p (and its code
 * point in *cp), or 0 if it is not valid UTF-8: overlong forms, surrogates,
 * code points past U+10FFFF and truncated sequences are invalid, as in Go's
 * unicode/utf8. */
static int utf8_decode(const unsigned char *p, const unsigned char *end, uint32_t *cp) {
    size_t room = (size_t)(end - p);
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int n;
    unsigned lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        return 0;
    }
    if (room < (size_t)n || p[1] < lo || p[1] > hi)
        return 0;
    uint32_t v = c & (0xFF >> (n + 1));
    for (int i = 1; i < n; i++) {
        if (i > 1 && (p[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    *cp = v;
    return n;
}

static int utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A parse error: what went wrong and where. */
typedef struct parse_error {
    const char *what;
    const char *at; /* NULL: at the end of the input */
} parse_error;

static const char *error_text(const char *text, parse_error e) {
    if (e.at == NULL)
        return "unexpected end of JSON input";
    size_t off = (size_t)(e.at - text);
    unsigned char c = (unsigned char)*e.at;
    if (e.what != NULL)
        return alloc_printf("%s at byte %zu", e.what, off);
    if (c >= 0x20 && c < 0x7F)
        return alloc_printf("invalid character '%c' at byte %zu", c, off);
    return alloc_printf("invalid byte 0x%02x at byte %zu", c, off);
}

/* scan_string checks the string whose opening quote is at p and returns the
 * byte after its closing quote, or NULL with *e set. */
static const char *scan_string(const char *p, const char *end, parse_error *e) {
    p++; /* the quote */
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20) {
            *e = (parse_error){"control character in string", p};
            return NULL;
        }
        if (c == '\\') {
            if (p + 1 >= end)
                break;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            case 'u':
                for (int i = 2; i < 6; i++) {
                    if (p + i >= end)
                        goto eof;
                    if (hex_digit(p[i]) < 0) {
                        *e = (parse_error){"invalid \\u escape", p};
                        return NULL;
                    }
                }
                p += 6;
                continue;
            default:
                *e = (parse_error){"invalid escape", p};
                return NULL;
            }
        }
        if (c >= 0x80) {
            uint32_t cp;
            int n = utf8_decode((const unsigned char *)p, (const unsigned char *)end, &cp);
            if (n == 0) {
                *e = (parse_error){"invalid UTF-8", p};
                return NULL;
            }
            p += n;
            continue;
        }
        p++;
    }
eof:
    *e = (parse_error){NULL, NULL};
    return NULL;
}

/* scan_number checks the number at p (-?int frac? exp?). */
static const char *scan_number(const char *p, const char *end, parse_error *e) {
#define DIGIT(q) ((q) < end && *(q) >= '0' && *(q) <= '9')
    const char *start = p;
    if (p < end && *p == '-')
        p++;
    if (!DIGIT(p))
        goto bad;
    if (*p == '0')
        p++;
    else
        while (DIGIT(p))
            p++;
    if (p < end && *p == '.') {
        p++;
        if (!DIGIT(p))
            goto bad;
        while (DIGIT(p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!DIGIT(p))
            goto bad;
        while (DIGIT(p))
            p++;
    }
    return p;
bad:
    *e = (parse_error){p < end ? "invalid number" : NULL, p < end ? start : NULL};
    return NULL;
#undef DIGIT
}

/* The container stack of validate: 'o' or 'a' per level. */
static char parse_stack[STATION_JSON_MAX_DEPTH];

/* validate checks [p, end) is one JSON value with optional whitespace
 * around it, and sets *v to the value. */
static bool validate(const char *p, const char *end, station_json *v, parse_error *e) {
    enum { VALUE, FIRST_VALUE, FIRST_KEY, KEY, AFTER_VALUE } state = VALUE;
    unsigned depth = 0;
    const char *start = NULL;
    for (;;) {
        p = skip_ws(p, end);
        if (p == end) {
            if (state == AFTER_VALUE && depth == 0)
                break;
            *e = (parse_error){NULL, NULL};
            return false;
        }
        char c = *p;
        if (start == NULL)
            start = p;
        switch (state) {
        case FIRST_VALUE: /* just after '[' */
            if (c == ']') {
                depth--;
                p++;
                state = AFTER_VALUE;
                break;
            }
            /* fall through */
        case VALUE:
            if (c == '{' || c == '[') {
                if (depth == STATION_JSON_MAX_DEPTH) {
                    *e = (parse_error){"exceeded max depth", p};
                    return false;
                }
                parse_stack[depth++] = c == '{' ? 'o' : 'a';
                p++;
                state = c == '{' ? FIRST_KEY : FIRST_VALUE;
                break;
            }
            if (c == '"') {
                p = scan_string(p, end, e);
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                p = scan_number(p, end, e);
            } else {
                const char *lit = c == 't' ? "true" : c == 'f' ? "false" : c == 'n' ? "null" : NULL;
                size_t n = lit ? strlen(lit) : 0;
                if (lit == NULL || (size_t)(end - p) < n || memcmp(p, lit, n) != 0) {
                    /* Point at the first byte that differs. */
                    const char *q = p;
                    if (lit != NULL)
                        for (size_t i = 0; q < end && i < n && *q == lit[i]; i++)
                            q++;
                    *e = (parse_error){NULL, q < end ? q : NULL};
                    return false;
                }
                p += n;
            }
            if (p == NULL)
                return false;
            state = AFTER_VALUE;
            break;
        case FIRST_KEY: /* just after '{' */
            if (c == '}') {
                depth--;
                p++;
                state = AFTER_VALUE;
                break;
            }
            /* fall through */
        case KEY:
            if (c != '"') {
                *e = (parse_error){c == '}' ? "trailing comma" : "expected a key", p};
                return false;
            }
            if ((p = scan_string(p, end, e)) == NULL)
                return false;
            p = skip_ws(p, end);
            if (p == end) {
                *e = (parse_error){NULL, NULL};
                return false;
            }
            if (*p != ':') {
                *e = (parse_error){"expected ':'", p};
                return false;
            }
            p++;
            state = VALUE;
            break;
        case AFTER_VALUE:
            if (depth == 0) {
                *e = (parse_error){"data after the JSON document", p};
                return false;
            }
            if (c == ',') {
                p++;
                state = parse_stack[depth - 1] == 'o' ? KEY : VALUE;
                if (state == VALUE) {
                    /* A trailing comma in an array: "[1,]" */
                    const char *q = skip_ws(p, end);
                    if (q < end && *q == ']') {
                        *e = (parse_error){"trailing comma", q};
                        return false;
                    }
                }
            } else if (c == (parse_stack[depth - 1] == 'o' ? '}' : ']')) {
                depth--;
                p++;
            } else {
                *e = (parse_error){NULL, p};
                return false;
            }
            break;
        }
        if (state == AFTER_VALUE && depth == 0 && v != NULL) {
            v->text = start;
            v->len = (size_t)(p - start);
        }
    }
    return true;
}

bool station_json_parse(const char *text, size_t len, station_json *doc, const char **err) {
    parse_error e = {NULL, NULL};
    station_json v = {NULL, 0};
    if (text == NULL)
        text = "";
    if (!validate(text, text + len, &v, &e)) {
        if (err != NULL)
            *err = error_text(text, e);
        return false;
    }
    if (doc != NULL)
        *doc = v;
    return true;
}

station_json_kind station_json_type(station_json v) {
    if (v.text == NULL || v.len == 0)
        return STATION_JSON_INVALID;
    switch (v.text[0]) {
    case '{': return STATION_JSON_OBJECT;
    case '[': return STATION_JSON_ARRAY;
    case '"': return STATION_JSON_STRING;
    case 't': case 'f': return STATION_JSON_BOOL;
    case 'n': return STATION_JSON_NULL;
    default: return STATION_JSON_NUMBER;
    }
}

/* skip_value returns the end of the (validated) value at p. */
static const char *skip_value(const char *p, const char *end) {
    unsigned depth = 0;
    do {
        char c = *p;
        if (c == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
            p++;
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (c == '}' || c == ']') {
            depth--;
            p++;
        } else if (depth > 0) {
            p++; /* ',', ':', whitespace, or a scalar inside the container */
        } else {
            while (p < end && *p != ',' && *p != '}' && *p != ']' && !is_ws(*p))
                p++;
        }
    } while (depth > 0 && p < end);
    return p;
}

/* string_char decodes one character of the (validated) string at *pp, which
 * is not at its closing quote, into out and returns its length in bytes. */
static int string_char(const char **pp, char out[4]) {
    const char *p = *pp;
    if (*p != '\\') {
        out[0] = *p;
        *pp = p + 1;
        return 1;
    }
    char c = p[1];
    *pp = p + 2;
    switch (c) {
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'u': break;
    default: out[0] = c; return 1; /* " \ / */
    }
    uint32_t cp = 0;
    for (int i = 2; i < 6; i++)
        cp = cp << 4 | (uint32_t)hex_digit(p[i]);
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF && p[0] == '\\' && p[1] == 'u') {
        uint32_t lo = 0;
        for (int i = 2; i < 6; i++)
            lo = lo << 4 | (uint32_t)hex_digit(p[i]);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        cp = 0xFFFD; /* a lone surrogate */
    *pp = p;
    return utf8_encode(cp, out);
}

/* decode_string decodes the string token s into call memory. */
static char *decode_string(station_json s, size_t *len) {
    /* Decoding never makes a string longer than its token. */
    char *out = station_alloc(s.len);
    if (out == NULL)
        return NULL;
    const char *p = s.text + 1, *end = s.text + s.len - 1;
    size_t n = 0;
    while (p < end) {
        const char *q = p;
        while (q < end && *q != '\\')
            q++;
        memcpy(out + n, p, (size_t)(q - p));
        n += (size_t)(q - p);
        p = q;
        if (p < end)
            n += (size_t)string_char(&p, out + n);
    }
    out[n] = '\0';
    *len = n;
    return out;
}

/* key_equals compares the decoded string token s with key[0..n). */
static bool key_equals(station_json s, const char *key, size_t n) {
    const char *p = s.text + 1, *end = s.text + s.len - 1;
    if (memchr(p, '\\', (size_t)(end - p)) == NULL)
        return (size_t)(end - p) == n && memcmp(p, key, n) == 0;
    size_t i = 0;
    while (p < end) {
        char buf[4];
        int m = string_char(&p, buf);
        if (n - i < (size_t)m || memcmp(key + i, buf, (size_t)m) != 0)
            return false;
        i += (size_t)m;
    }
    return i == n;
}

bool station_json_iter_init(station_json_iter *it, station_json v) {
    station_json_kind k = station_json_type(v);
    if (k != STATION_JSON_OBJECT && k != STATION_JSON_ARRAY)
        return false;
    it->p = v.text + 1;
    it->end = v.text + v.len - 1; /* the closing bracket */
    it->object = k == STATION_JSON_OBJECT;
    return true;
}

bool station_json_next(station_json_iter *it, station_json *key, station_json *value) {
    const char *p = skip_ws(it->p, it->end);
    if (p < it->end && *p == ',')
        p = skip_ws(p + 1, it->end);
    if (p >= it->end) {
        it->p = it->end;
        return false;
    }
    if (it->object) {
        const char *k = skip_value(p, it->end);
        if (key != NULL)
            *key = (station_json){p, (size_t)(k - p)};
        p = skip_ws(k, it->end) + 1; /* the ':' */
        p = skip_ws(p, it->end);
    }
    const char *q = skip_value(p, it->end);
    if (value != NULL)
        *value = (station_json){p, (size_t)(q - p)};
    it->p = q;
    return true;
}

bool station_json_get(station_json obj, const char *key, station_json *value) {
    station_json_iter it;
    station_json k, v;
    if (key == NULL || !station_json_iter_init(&it, obj) || !it.object)
        return false;
    size_t n = strlen(key);
    while (station_json_next(&it, &k, &v)) {
        if (key_equals(k, key, n)) {
            if (value != NULL)
                *value = v;
            return true;
        }
    }
    return false;
}

const char *station_json_string(station_json v, size_t *len) {
    if (station_json_type(v) != STATION_JSON_STRING)
        return NULL;
    size_t n;
    char *s = decode_string(v, &n);
    if (s == NULL)
        return NULL;
    if (len != NULL)
        *len = n;
    else if (memchr(s, '\0', n) != NULL)
        return NULL; /* would be cut short as a C string */
    return s;
}

bool station_json_number(station_json v, double *out) {
    if (station_json_type(v) != STATION_JSON_NUMBER)
        return false;
    /* strtod wants a NUL after the number; the span has none. */
    char small[64];
    char *buf = v.len < sizeof small ? small : station_alloc(v.len + 1);
    if (buf == NULL)
        return false;
    memcpy(buf, v.text, v.len);
    buf[v.len] = '\0';
    double d = strtod(buf, NULL);
    if (isinf(d))
        return false; /* 1e400 fits no double */
    *out = d;
    return true;
}

bool station_json_int(station_json v, int64_t *out) {
    if (station_json_type(v) != STATION_JSON_NUMBER)
        return false;
    const char *p = v.text, *end = v.text + v.len;
    bool neg = *p == '-';
    if (neg)
        p++;
    uint64_t u = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false; /* a fraction or an exponent */
        unsigned d = (unsigned)(*p - '0');
        if (u > (limit - d) / 10)
            return false;
        u = u * 10 + d;
    }
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

bool station_json_bool(station_json v, bool *out) {
    if (station_json_type(v) != STATION_JSON_BOOL)
        return false;
    *out = v.text[0] == 't';
    return true;
}

const char *station_json_get_string(station_json obj, const char *key, size_t *len) {
    station_json v;
    return station_json_get(obj, key, &v) ? station_json_string(v, len) : NULL;
}

bool station_json_get_number(station_json obj, const char *key, double *out) {
    station_json v;
    return station_json_get(obj, key, &v) && station_json_number(v, out);
}

bool station_json_get_int(station_json obj, const char *key, int64_t *out) {
    station_json v;
    return station_json_get(obj, key, &v) && station_json_int(v, out);
}

bool station_json_get_bool(station_json obj, const char *key, bool *out) {
    station_json v;
    return station_json_get(obj, key, &v) && station_json_bool(v, out);
}

/* ========================================================================
 * JSON writing
 *
 * stack holds one byte per open container: 'o' or 'a', with 0x80 set once
 * it has a member (so the next one needs a comma).
 */

#define NONEMPTY 0x80

static void w_error(station_writer *w, const char *msg) {
    if (w->error == NULL)
        w->error = msg;
}

static bool w_reserve(station_writer *w, size_t n) {
    if (w->error != NULL)
        return false;
    if (n <= w->cap - w->len)
        return true;
    if (n > SIZE_MAX / 2 - w->len) {
        w_error(w, "out of memory");
        return false;
    }
    size_t cap = w->cap < 256 ? 256 : w->cap;
    while (cap - w->len < n)
        cap *= 2;
    char *d = realloc(w->data, cap);
    if (d == NULL) {
        w_error(w, "out of memory");
        return false;
    }
    w->data = d;
    w->cap = cap;
    return true;
}

static void w_bytes(station_writer *w, const void *p, size_t n) {
    if (n > 0 && w_reserve(w, n)) {
        memcpy(w->data + w->len, p, n);
        w->len += n;
    }
}

static void w_byte(station_writer *w, char c) { w_bytes(w, &c, 1); }

/* w_value says whether a value may be written here, and writes the comma
 * that goes before it. */
static bool w_value(station_writer *w) {
    if (w->error != NULL)
        return false;
    if (w->depth == 0) {
        if (w->len > 0) {
            w_error(w, "a second value after the JSON document");
            return false;
        }
        return true;
    }
    unsigned char *top = &w->stack[w->depth - 1];
    if ((*top & ~NONEMPTY) == 'o') {
        if (!w->after_key) {
            w_error(w, "a value in an object without a key");
            return false;
        }
        w->after_key = false;
        return true;
    }
    if (*top & NONEMPTY)
        w_byte(w, ',');
    *top |= NONEMPTY;
    return true;
}

static void w_open(station_writer *w, char kind) {
    if (!w_value(w))
        return;
    if (w->depth == STATION_WRITER_MAX_DEPTH) {
        w_error(w, "nested too deeply");
        return;
    }
    w->stack[w->depth++] = (unsigned char)kind;
    w_byte(w, kind == 'o' ? '{' : '[');
}

static void w_close(station_writer *w, char kind) {
    if (w->error != NULL)
        return;
    if (w->depth == 0 || (w->stack[w->depth - 1] & ~NONEMPTY) != kind || w->after_key) {
        w_error(w, kind == 'o' ? "an end of object that does not match" : "an end of array that does not match");
        return;
    }
    w->depth--;
    w_byte(w, kind == 'o' ? '}' : ']');
}

void station_begin_object(station_writer *w) { w_open(w, 'o'); }
void station_end_object(station_writer *w) { w_close(w, 'o'); }
void station_begin_array(station_writer *w) { w_open(w, 'a'); }
void station_end_array(station_writer *w) { w_close(w, 'a'); }

/* w_quoted writes s[0..n) as a JSON string, escaped as Go's encoding/json
 * escapes it (with SetEscapeHTML(false)). */
static void w_quoted(station_writer *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s, *end = p + n, *run = p;
    w_byte(w, '"');
    while (p < end) {
        unsigned c = *p;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            p++;
            continue;
        }
        uint32_t cp = 0;
        int len = c < 0x80 ? 1 : utf8_decode(p, end, &cp);
        if (len > 1 && cp != 0x2028 && cp != 0x2029) {
            p += len;
            continue;
        }
        w_bytes(w, run, (size_t)(p - run)); /* the plain bytes before this one */
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t m = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            if (len == 0) { /* not UTF-8: one U+FFFD per byte */
                memcpy(esc, "\\ufffd", 6);
                len = 1;
            } else if (len == 3) {
                memcpy(esc, cp == 0x2028 ? "\\u2028" : "\\u2029", 6);
            } else {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 0xF];
            }
            m = 6;
        }
        w_bytes(w, esc, m);
        p += len;
        run = p;
    }
    w_bytes(w, run, (size_t)(p - run));
    w_byte(w, '"');
}

void station_key_n(station_writer *w, const char *key, size_t n) {
    if (w->error != NULL)
        return;
    if (w->depth == 0 || (w->stack[w->depth - 1] & ~NONEMPTY) != 'o' || w->after_key) {
        w_error(w, "a key outside an object, or two keys in a row");
        return;
    }
    unsigned char *top = &w->stack[w->depth - 1];
    if (*top & NONEMPTY)
        w_byte(w, ',');
    *top |= NONEMPTY;
    w_quoted(w, key, n);
    w_byte(w, ':');
    w->after_key = true;
}

void station_key(station_writer *w, const char *key) { station_key_n(w, key, key ? strlen(key) : 0); }

void station_string_n(station_writer *w, const char *s, size_t n) {
    if (w_value(w))
        w_quoted(w, s, n);
}

void station_string(station_writer *w, const char *s) {
    if (s == NULL)
        station_null(w);
    else
        station_string_n(w, s, strlen(s));
}

void station_int(station_writer *w, int64_t v) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    if (w_value(w))
        w_bytes(w, buf, (size_t)n);
}

/* format_double writes v as Go's encoding/json does: the shortest digits
 * that read back as v, in plain notation from 1e-6 up to 1e21 and with an
 * exponent outside (1e+21, 1e-7). */
static int format_double(double v, char out[40]) {
    char e[32];
    int p = 1;
    /* The shortest precision that round-trips: "d.ddde+XX". */
    for (; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    char digits[20];
    int nd = 0, exp;
    const char *q = e;
    char *o = out;
    if (*q == '-')
        *o++ = *q++;
    for (; *q != 'e'; q++)
        if (*q != '.')
            digits[nd++] = *q;
    exp = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    double a = fabs(v);
    if (a != 0 && (a < 1e-6 || a >= 1e21)) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        o += sprintf(o, "e%+d", exp); /* e+21, e-7 */
    } else if (exp < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = -1; i > exp; i--)
            *o++ = '0';
        memcpy(o, digits, (size_t)nd);
        o += nd;
    } else {
        for (int i = 0; i <= exp || i < nd; i++) {
            if (i == exp + 1)
                *o++ = '.';
            *o++ = i < nd ? digits[i] : '0';
        }
    }
    *o = '\0';
    return (int)(o - out);
}

void station_number(station_writer *w, double v) {
    if (isnan(v) || isinf(v)) {
        w_error(w, isnan(v) ? "unsupported value: NaN" : "unsupported value: an infinity");
        return;
    }
    char buf[40];
    int n = format_double(v, buf);
    if (w_value(w))
        w_bytes(w, buf, (size_t)n);
}

void station_bool(station_writer *w, bool v) {
    if (w_value(w))
        w_bytes(w, v ? "true" : "false", v ? 4 : 5);
}

void station_null(station_writer *w) {
    if (w_value(w))
        w_bytes(w, "null", 4);
}

void station_raw_json(station_writer *w, const char *json, size_t n) {
    station_json v;
    const char *err;
    if (w->error != NULL)
        return;
    if (!station_json_parse(json, n, &v, &err)) {
        w_error(w, err != NULL ? alloc_printf("raw JSON: %s", err) : "raw JSON: invalid");
        return;
    }
    if (w_value(w))
        w_bytes(w, v.text, v.len);
}

void station_writer_free(station_writer *w) {
    free(w->data);
    memset(w, 0, sizeof *w);
}

/* quote returns s[0..n) as a JSON string for a message, at most 64 bytes of
 * it (cut at a character boundary, followed by "..."). */
static const char *quote(const char *s, size_t n) {
    size_t cut = n;
    if (cut > 64) {
        cut = 64;
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
            cut--;
    }
    station_writer w = {0};
    w_quoted(&w, s, cut);
    if (cut < n && w.error == NULL) {
        w.len--; /* the closing quote */
        w_bytes(&w, "...\"", 4);
    }
    char *out = w.error ? NULL : station_alloc(w.len + 1);
    if (out != NULL)
        memcpy(out, w.data, w.len);
    station_writer_free(&w);
    return out != NULL ? out : "\"?\"";
}

/* ========================================================================
 * Base64
 */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t station_base64_encoded_len(size_t n) {
    if (n > (SIZE_MAX - 2) / 4 * 3)
        return SIZE_MAX; /* no memory holds it: the reservation fails */
    return (n + 2) / 3 * 4;
}

size_t station_base64_encode(const void *src, size_t n, char *dst) {
    const unsigned char *s = src;
    char *d = dst;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *d++ = b64[v >> 18];
        *d++ = b64[v >> 12 & 63];
        *d++ = b64[v >> 6 & 63];
        *d++ = b64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        *d++ = b64[v >> 18];
        *d++ = b64[v >> 12 & 63];
        *d++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
        *d++ = '=';
    }
    *d = '\0';
    return (size_t)(d - dst);
}

static int b64_value(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

bool station_base64_decode(const char *src, size_t n, void *dst, size_t *out_len) {
    unsigned char *d = dst;
    size_t o = 0;
    if (n % 4 != 0)
        return false;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = src[i + j];
            if (c == '=' && i + 4 == n && j >= 2) {
                v[j] = 0;
                pad++;
            } else if (pad > 0 || (v[j] = b64_value(c)) < 0) {
                return false; /* a character after padding, or not base64 */
            }
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        d[o++] = (unsigned char)(x >> 16);
        if (pad < 2)
            d[o++] = (unsigned char)(x >> 8);
        if (pad < 1)
            d[o++] = (unsigned char)x;
    }
    *out_len = o;
    return true;
}

/* ========================================================================
 * Logging
 */

void station_log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *line = malloc((size_t)n + 1);
    if (line == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(line, (size_t)n + 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n;
    if (len > STATION_MAX_LOG_LINE) {
        /* Cut at a character boundary and say so, as the Go SDK does. */
        len = STATION_MAX_LOG_LINE - 3;
        while (len > 0 && ((unsigned char)line[len] & 0xC0) == 0x80)
            len--;
        memcpy(line + len, "...", 3);
        len += 3;
    }
    station_host_log(level, line, (int32_t)len);
    free(line);
}

/* ========================================================================
 * HTTP
 */

bool station_denied(const station_error *e) { return e != NULL && e->status == STATION_STATUS_DENIED; }

/* get_text returns the string field key of obj, or "" (also for one with a
 * NUL, which no station message has). */
static const char *get_text(station_json obj, const char *key) {
    const char *s = station_json_get_string(obj, key, NULL);
    return s != NULL ? s : "";
}

/* host_error fills *err from the Error document doc that came with status s;
 * a missing or unreadable document (or one without a message) yields one
 * made from s, as the Go SDK does. */
static void host_error(station_error *err, station_status s, const char *doc, size_t len) {
    station_json v;
    if (err == NULL)
        return;
    *err = (station_error){s, station_status_name(s), "", "", "", ""};
    if (len > 0 && station_json_parse(doc, len, &v, NULL) && station_json_type(v) == STATION_JSON_OBJECT &&
        *get_text(v, "message") != '\0') {
        err->code = get_text(v, "code");
        if (*err->code == '\0')
            err->code = station_status_name(s);
        err->capability = get_text(v, "capability");
        err->target = get_text(v, "target");
        err->reason = get_text(v, "reason");
        err->message = get_text(v, "message");
        return;
    }
    const char *msg = alloc_printf("station: host call failed: %s", station_status_name(s));
    err->message = msg != NULL ? msg : "station: host call failed";
}

/* sdk_error fails a request on the SDK's side (the station was not asked, or
 * its answer could not be read). */
static station_status sdk_error(station_error *err, station_status s, const char *msg) {
    if (s == NOMEM)
        s = STATION_STATUS_FAILED;
    if (err != NULL)
        *err = (station_error){s, station_status_name(s), "", "", "", msg != NULL ? msg : "out of memory"};
    return s;
}

static bool same_name(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = *a, y = *b;
        if (x >= 'A' && x <= 'Z')
            x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (char)(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return *a == *b;
}

/* http_document writes the HTTPRequest document of req into w. */
static void http_document(station_writer *w, const station_http_request *req) {
    station_begin_object(w);
    station_key(w, "method");
    station_string(w, req->method != NULL ? req->method : "GET");
    station_key(w, "url");
    station_string(w, req->url != NULL ? req->url : "");
    if (req->header_count > 0) {
        /* One member per name, with all its values: the station refuses a
         * document with a name twice. */
        station_key(w, "headers");
        station_begin_object(w);
        for (size_t i = 0; i < req->header_count; i++) {
            const station_header *h = &req->headers[i];
            size_t j = 0;
            while (j < i && !same_name(req->headers[j].name, h->name))
                j++;
            if (j < i)
                continue; /* written with the first of its name */
            station_key(w, h->name);
            station_begin_array(w);
            for (j = i; j < req->header_count; j++)
                if (same_name(req->headers[j].name, h->name))
                    station_string(w, req->headers[j].value != NULL ? req->headers[j].value : "");
            station_end_array(w);
        }
        station_end_object(w);
    }
    if (req->body_len > 0) {
        station_key(w, "body");
        if (w_value(w) && w_reserve(w, station_base64_encoded_len(req->body_len) + 3)) {
            w->data[w->len++] = '"';
            w->len += station_base64_encode(req->body, req->body_len, w->data + w->len);
            w->data[w->len++] = '"';
        }
    }
    station_end_object(w);
}

station_status station_http(const station_http_request *req, station_http_response *resp, station_error *err) {
    *resp = (station_http_response){0, "", 0, "", {"{}", 2}};
    for (size_t i = 0; i < req->header_count; i++)
        if (req->headers[i].name == NULL)
            return sdk_error(err, STATION_STATUS_INVALID, "station: a request header has no name");

    station_writer w = {0};
    http_document(&w, req);
    if (w.error != NULL) {
        station_writer_free(&w);
        return sdk_error(err, NOMEM, "station: build the HTTP request: out of memory");
    }
    uint64_t r = (uint64_t)station_host_http_request(w.data, (int32_t)w.len);
    station_writer_free(&w);

    station_status s = (station_status)(int32_t)(r >> 32);
    const char *doc;
    size_t len;
    station_status rs = read_buffer((int32_t)(uint32_t)r, &doc, &len);
    if (rs != STATION_STATUS_OK) {
        if (s == STATION_STATUS_OK)
            s = rs;
        doc = "";
        len = 0;
    }
    if (s != STATION_STATUS_OK) {
        if (s == NOMEM)
            return sdk_error(err, NOMEM, "station: read the HTTP response: out of memory");
        host_error(err, s, doc, len);
        return s;
    }

    /* The HTTPResponse document. */
    station_json v, body, headers;
    const char *perr = NULL;
    int64_t status;
    if (!station_json_parse(doc, len, &v, &perr) || station_json_type(v) != STATION_JSON_OBJECT)
        return sdk_error(err, STATION_STATUS_FAILED,
                         perr ? alloc_printf("station: decode the station's response: %s", perr)
                              : "station: decode the station's response: not an object");
    if (!station_json_get_int(v, "status", &status) || status < 100 || status > 999)
        return sdk_error(err, STATION_STATUS_FAILED, "station: the station's response has no valid status");
    resp->status = (int)status;
    if (station_json_get(v, "body", &body) && station_json_type(body) != STATION_JSON_NULL) {
        size_t n;
        const char *b64text = station_json_string(body, &n);
        char *raw = b64text ? station_alloc(n / 4 * 3 + 1) : NULL;
        if (raw == NULL || !station_base64_decode(b64text, n, raw, &resp->body_len))
            return sdk_error(err, STATION_STATUS_FAILED, "station: decode the station's response: the body is not base64");
        raw[resp->body_len] = '\0';
        resp->body = raw;
    }
    const char *url = station_json_get_string(v, "url", NULL);
    if (url != NULL)
        resp->url = url;
    if (station_json_get(v, "headers", &headers) && station_json_type(headers) == STATION_JSON_OBJECT)
        resp->headers = headers;
    return STATION_STATUS_OK;
}

station_status station_http_get(const char *url, station_http_response *resp, station_error *err) {
    station_http_request req = {.method = "GET", .url = url};
    return station_http(&req, resp, err);
}

const char *station_http_header(const station_http_response *resp, const char *name) {
    station_json_iter it, values;
    station_json k, v, first;
    if (!station_json_iter_init(&it, resp->headers))
        return NULL;
    while (station_json_next(&it, &k, &v)) {
        const char *key = station_json_string(k, NULL);
        if (key != NULL && same_name(key, name) && station_json_iter_init(&values, v) &&
            station_json_next(&values, NULL, &first))
            return station_json_string(first, NULL);
    }
    return NULL;
}

/* ========================================================================
 * The exports and dispatch
 */

STATION_EXPORT("station_abi_1") void station_abi_1(void) {}

int station_fail(station_call *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *msg = alloc_vprintf(fmt, ap);
    va_end(ap);
    c->message = msg != NULL ? msg : "out of memory";
    return STATION_FAILED;
}

static size_t command_count;

/* check_table checks station_commands once: a table with a nameless,
 * function-less or repeated command fails every call. */
static const char *check_table(void) {
    static bool checked;
    static char problem[160];
    if (!checked) {
        checked = true;
        size_t n = 0;
        for (; station_commands[n].name != NULL; n++) {
            const station_command *cmd = &station_commands[n];
            if (cmd->name[0] == '\0' || cmd->run == NULL) {
                snprintf(problem, sizeof problem, "sdk: station_commands[%zu] has %s", n,
                         cmd->name[0] == '\0' ? "an empty name" : "no function");
                break;
            }
            for (size_t j = 0; j < n; j++)
                if (strcmp(station_commands[j].name, cmd->name) == 0)
                    snprintf(problem, sizeof problem, "sdk: command \"%.64s\" is in station_commands twice", cmd->name);
            if (problem[0] != '\0')
                break;
        }
        command_count = n;
    }
    return problem[0] != '\0' ? problem : NULL;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* unknown_command is the message for a command the table does not have:
 * the Go SDK's, with the commands sorted. */
static const char *unknown_command(const char *name, size_t len) {
    if (command_count == 0)
        return alloc_printf("unknown command %s: this module registers no commands", quote(name, len));
    const char **names = station_alloc(command_count * sizeof *names);
    if (names == NULL)
        return "unknown command";
    size_t total = 0;
    for (size_t i = 0; i < command_count; i++) {
        names[i] = station_commands[i].name;
        total += strlen(names[i]) + 2;
    }
    qsort(names, command_count, sizeof *names, compare_names);
    char *list = station_alloc(total + 1), *p = list;
    if (list == NULL)
        return "unknown command";
    for (size_t i = 0; i < command_count; i++) {
        if (i > 0)
            p += sprintf(p, ", ");
        p += sprintf(p, "%s", names[i]);
    }
    return alloc_printf("unknown command %s (commands: %s)", quote(name, len), list);
}

/* A key of the input, decoded, for the duplicate check. */
typedef struct input_key {
    const char *s;
    size_t n;
} input_key;

static int compare_keys(const void *a, const void *b) {
    const input_key *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

/* field_listed returns where key[0..n) is in fields (names separated by
 * spaces or commas), or NULL. */
static const char *field_listed(const char *fields, const char *key, size_t n) {
    const char *p = fields;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *q = p;
        while (*q && *q != ' ' && *q != ',')
            q++;
        if ((size_t)(q - p) == n && n > 0 && memcmp(p, key, n) == 0)
            return p;
        p = q;
    }
    return NULL;
}

/* key_text returns the decoded text of the key token k: the token's own
 * bytes when it has no escapes, else a decoded copy. */
static const char *key_text(station_json k, size_t *n) {
    if (memchr(k.text, '\\', k.len) == NULL) {
        *n = k.len - 2;
        return k.text + 1;
    }
    return station_json_string(k, n);
}

static const char *const kind_names[] = {
    "empty", "null", "a boolean", "a number", "a string", "an array", "an object",
};

/* check_input turns the call's input into a JSON object for cmd, or returns
 * why it cannot ("invalid input: ..."). */
static const char *check_input(station_call *c, const station_command *cmd, const char *text, size_t len) {
    static const char empty[] = "{}";
    const char *err;
    station_json v;
    c->input = (station_json){text, len};
    if (cmd->flags & STATION_RAW)
        return NULL;
    if (skip_ws(text, text + len) == text + len) {
        c->input = (station_json){empty, 2}; /* an empty input: no fields */
        return NULL;
    }
    if (!station_json_parse(text, len, &v, &err))
        return alloc_printf("invalid input: %s", err ? err : "out of memory");
    station_json_kind kind = station_json_type(v);
    if (kind == STATION_JSON_NULL) {
        c->input = (station_json){empty, 2}; /* as Go decodes null into a struct */
        return NULL;
    }
    if (kind != STATION_JSON_OBJECT)
        return alloc_printf("invalid input: the input is %s, not a JSON object", kind_names[kind]);
    c->input = v;

    /* Each key once, and only the listed ones. */
    station_json_iter it;
    station_json key;
    const char *k;
    size_t kn, n = 0;
    if (cmd->fields != NULL) {
        /* seen marks the listed names met so far, by their offset in fields. */
        unsigned char *seen = station_alloc(strlen(cmd->fields) + 1);
        if (seen == NULL)
            return "out of memory";
        station_json_iter_init(&it, v);
        while (station_json_next(&it, &key, NULL)) {
            if ((k = key_text(key, &kn)) == NULL)
                return "out of memory";
            const char *f = field_listed(cmd->fields, k, kn);
            if (f == NULL)
                return alloc_printf("invalid input: unknown field %s", quote(k, kn));
            if (seen[f - cmd->fields]++)
                return alloc_printf("invalid input: duplicate key %s", quote(k, kn));
        }
        return NULL;
    }
    station_json_iter_init(&it, v);
    while (station_json_next(&it, NULL, NULL))
        n++;
    input_key *keys = station_alloc((n + 1) * sizeof *keys);
    if (keys == NULL)
        return "out of memory";
    station_json_iter_init(&it, v);
    for (size_t i = 0; station_json_next(&it, &key, NULL); i++)
        if ((keys[i].s = key_text(key, &keys[i].n)) == NULL)
            return "out of memory";
    qsort(keys, n, sizeof *keys, compare_keys);
    for (size_t i = 1; i < n; i++)
        if (compare_keys(&keys[i - 1], &keys[i]) == 0)
            return alloc_printf("invalid input: duplicate key %s", quote(keys[i].s, keys[i].n));
    return NULL;
}

/* set_output sets msg (or the result) as the call's output. */
static void set_output(const char *p, size_t n) { station_host_output_set(p, (int32_t)n); }

/* dispatch runs one call and returns its result code; the call's output is
 * set. */
static int dispatch(station_call *c, int32_t command, int32_t input) {
    const char *name, *text, *msg;
    size_t name_len, len;
    station_status s = read_buffer(command, &name, &name_len);
    if (s != STATION_STATUS_OK) {
        station_host_buf_free(input);
        msg = alloc_printf("sdk: read the command name: %s", station_status_name(s));
        goto fail;
    }
    c->command = name;
    if ((msg = check_table()) != NULL) {
        station_host_buf_free(input);
        goto fail;
    }
    const station_command *cmd = NULL;
    for (size_t i = 0; i < command_count && cmd == NULL; i++)
        if (strlen(station_commands[i].name) == name_len && memcmp(station_commands[i].name, name, name_len) == 0)
            cmd = &station_commands[i];
    if (cmd == NULL) {
        station_host_buf_free(input);
        msg = unknown_command(name, name_len);
        set_output(msg, strlen(msg));
        return STATION_UNKNOWN_COMMAND;
    }
    if ((s = read_buffer(input, &text, &len)) != STATION_STATUS_OK) {
        msg = alloc_printf("sdk: read the input of command \"%s\": %s", cmd->name, station_status_name(s));
        goto fail;
    }
    if ((msg = check_input(c, cmd, text, len)) != NULL)
        goto fail;

    int rc = cmd->run(c);

    if (rc == STATION_UNKNOWN_COMMAND || (rc != STATION_OK && rc != STATION_FAILED)) {
        /* A C function's -1 is a failure too, not a crash. */
        if (rc != STATION_UNKNOWN_COMMAND)
            rc = STATION_FAILED;
        msg = c->message != NULL ? c->message : alloc_printf("command \"%s\" failed", cmd->name);
        if (msg == NULL)
            msg = "failed";
        set_output(msg, strlen(msg));
        return rc;
    }
    if (rc == STATION_FAILED) {
        msg = c->message != NULL ? c->message : alloc_printf("command \"%s\" failed", cmd->name);
        goto fail;
    }
    station_writer *w = &c->result;
    if (w->error == NULL && (w->depth > 0 || w->after_key))
        w->error = "the result is not complete (an object or array is still open)";
    if (w->error != NULL) {
        msg = alloc_printf("sdk: command \"%s\": encode the result: %s", cmd->name, w->error);
        goto fail;
    }
    if (w->len == 0)
        return STATION_OK; /* no output: the result is null */
    int32_t r = station_host_output_set(w->data, (int32_t)w->len);
    if (r < 0) {
        msg = alloc_printf("sdk: command \"%s\": set a result of %zu bytes: %s", cmd->name, w->len,
                           station_status_name((station_status)-r));
        goto fail;
    }
    return STATION_OK;

fail:
    if (msg == NULL)
        msg = "out of memory";
    set_output(msg, strlen(msg));
    return STATION_FAILED;
}

STATION_EXPORT("station_call") int32_t station__call(int32_t command, int32_t input) {
    station_call c;
    memset(&c, 0, sizeof c);
    int rc = dispatch(&c, command, input);
    station_writer_free(&c.result);
    free_call_memory();
    return rc;
}

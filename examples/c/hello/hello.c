/*
 * hello: the C SDK's example module (sdk/c). Two commands:
 *
 *   greet  {"name": "Ada"}                          -> {"greeting": "Hello, Ada!"}
 *   fetch  {"url": "https://api.example.test/hello"} -> {"status": 200, "body": "..."}
 *
 * Build it with `station module build examples/c/hello`, or by hand:
 *
 *   clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -Oz \
 *       -I sdk/c -o module.wasm examples/c/hello/hello.c sdk/c/station.c
 *
 * Input the SDK refuses before a command runs, with "invalid input: ...":
 * anything but a JSON object (an empty input and null read as {}), a
 * malformed document, a key twice, and a field the command does not list.
 */
#include <string.h>

#include "station.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* greet greets the name, trimmed of ASCII whitespace. The name is bytes
 * with a length, not a C string: a name with a NUL in it ("A\u0000da") is
 * greeted whole, the NUL escaped in the result as "\u0000". */
static int greet(station_call *c) {
    size_t n;
    const char *name = station_json_get_string(c->input, "name", &n);
    if (name == NULL) /* missing, or not a string */
        return station_fail(c, "name is required");
    while (n > 0 && is_space(name[0]))
        name++, n--;
    while (n > 0 && is_space(name[n - 1]))
        n--;
    if (n == 0)
        return station_fail(c, "name is required");

    size_t len = strlen("Hello, ") + n + strlen("!");
    char *greeting = station_alloc(len); /* freed when the call returns */
    if (greeting == NULL)
        return station_fail(c, "out of memory");
    memcpy(greeting, "Hello, ", 7);
    memcpy(greeting + 7, name, n);
    greeting[7 + n] = '!';

    station_writer *w = &c->result;
    station_begin_object(w);
    station_key(w, "greeting");
    station_string_n(w, greeting, len);
    station_end_object(w);
    return STATION_OK;
}

/* fetch GETs the URL through the station's network gate and returns the
 * response's status and body. A refused or failed request fails the call
 * with the station's message, which names the module, the capability, the
 * target and the reason. */
static int fetch(station_call *c) {
    size_t n;
    const char *url = station_json_get_string(c->input, "url", &n);
    if (url == NULL || n == 0)
        return station_fail(c, "url is required");
    if (strlen(url) != n)
        return station_fail(c, "url contains a NUL byte");

    station_http_response resp;
    station_error err;
    if (station_http_get(url, &resp, &err) != STATION_STATUS_OK) {
        if (station_denied(&err))
            station_log(STATION_WARN, "fetch %s: denied: %s", err.target, err.reason);
        return station_fail(c, "%s", err.message);
    }

    station_writer *w = &c->result;
    station_begin_object(w);
    station_key(w, "status");
    station_int(w, resp.status);
    station_key(w, "body");
    station_string_n(w, resp.body, resp.body_len); /* invalid UTF-8 becomes U+FFFD */
    station_end_object(w);
    return STATION_OK;
}

const station_command station_commands[] = {
    {"greet", greet, "name"},
    {"fetch", fetch, "url"},
    {0},
};

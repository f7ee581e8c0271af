/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP parsers on arbitrary bytes: the response head (as a GET's and a HEAD's), the body by its framing
 * (the chunked decoder fed whole and one byte at a time must agree), the server's request line, the URL
 * and the no_proxy list (the first line as the list, the second as the host). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/http-wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Sum {
        uint64_t len;
        uint32_t hash;
} Sum;

static int add(const char *d, size_t n, void *userdata) {
        Sum *s = userdata;
        for (size_t i = 0; i < n; i++)
                s->hash = s->hash * 31 + (uint8_t)d[i];
        s->len += n;
        return 0;
}

static void chunked_both_ways(const char *body, size_t n) {
        HttpChunked whole = {}, bytes = {};
        Sum a = {}, b = {};
        const char *what;
        int64_t k = http_chunked_feed(&whole, body, n, add, &a, &what);
        int64_t used = 0, r = 0;
        for (size_t i = 0; i < n && r >= 0 && !http_chunked_done(&bytes); i++) {
                r = http_chunked_feed(&bytes, body + i, 1, add, &b, &what);
                used += r > 0 ? r : 0;
        }
        if ((k < 0) != (r < 0) || (k >= 0 && (k != used || a.len != b.len || a.hash != b.hash ||
                                              http_chunked_done(&whole) != http_chunked_done(&bytes))))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *text = (const char *)data;
        size_t end = http_head_end(text, size);
        HttpResponseHead h;
        const char *what;

        if (end > 0 && http_parse_response_head(text, end, "GET", &h, &what) == 0) {
                if (h.head_len != end)
                        abort();
                if (h.framing == HTTP_FRAMING_CHUNKED)
                        chunked_both_ways(text + end, size - end);
                (void)http_parse_response_head(text, end, "HEAD", &h, &what);
        } else
                chunked_both_ways(text, size);

        char method[16], path[256];
        if (http_parse_request_line(text, size, method, sizeof(method), path, sizeof(path)) == 0 &&
            (path[0] != '/' || strlen(method) == 0))
                abort();

        char *s = strndup(text, size);
        if (!s)
                return 0;
        HttpUrl u;
        if (http_url_parse(s, &u) == 0) {
                char auth[HTTP_HOST_MAX + 16];
                http_url_authority(&u, true, auth, sizeof(auth));
        }
        char *nl = strchr(s, '\n');
        if (nl) {
                *nl = 0;
                (void)http_no_proxy_matches(s, nl + 1);
        }
        free(s);
        return 0;
}

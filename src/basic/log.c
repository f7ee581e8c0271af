/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "errors.h"
#include "string-util.h"

static LogLevel log_max_level = LOG_LEVEL_INFO;
static LogFormat log_format = LOG_FORMAT_TEXT;

static const char *const log_level_table[_LOG_LEVEL_MAX] = {
        [LOG_LEVEL_ERROR] = "error",
        [LOG_LEVEL_WARNING] = "warning",
        [LOG_LEVEL_INFO] = "info",
        [LOG_LEVEL_DEBUG] = "debug",
};

void log_set_level(LogLevel level) {
        log_max_level = level;
}

LogLevel log_get_level(void) {
        return log_max_level;
}

void log_set_format(LogFormat format) {
        log_format = format;
}

LogLevel log_level_from_string(const char *s) {
        for (int i = 0; i < _LOG_LEVEL_MAX; i++)
                if (s && streq(s, log_level_table[i]))
                        return i;
        if (s && streq(s, "warn"))
                return LOG_LEVEL_WARNING;
        return _LOG_LEVEL_INVALID;
}

const char *log_level_to_string(LogLevel l) {
        return l >= 0 && l < _LOG_LEVEL_MAX ? log_level_table[l] : NULL;
}

LogFormat log_format_from_string(const char *s) {
        if (s && streq(s, "text"))
                return LOG_FORMAT_TEXT;
        if (s && streq(s, "json"))
                return LOG_FORMAT_JSON;
        return _LOG_FORMAT_INVALID;
}

/* Expand %m ourselves, since glibc's %m knows nothing of our PK_E* codes. */
static void format_message(char *buf, size_t size, int error, const char *format, va_list ap) {
        char fmt[1024];
        size_t j = 0;
        const char *err = pk_strerror(error);

        for (size_t i = 0; format[i] && j + 1 < sizeof(fmt); i++) {
                if (format[i] == '%' && format[i + 1] == '%') {
                        if (j + 2 >= sizeof(fmt))
                                break;
                        fmt[j++] = '%';
                        fmt[j++] = '%';
                        i++;
                } else if (format[i] == '%' && format[i + 1] == 'm') {
                        for (const char *e = err; *e && j + 2 < sizeof(fmt); e++) {
                                if (*e == '%')
                                        fmt[j++] = '%';
                                fmt[j++] = *e;
                        }
                        i++;
                } else
                        fmt[j++] = format[i];
        }
        fmt[j] = 0;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(buf, size, fmt, ap);
#pragma GCC diagnostic pop
}

/* One JSON log line, whole: a message (at most 4 KiB formatted) escapes to at most 6 times that, but the
 * ones we write are short; a longer one is cut, and says so, with the line still valid JSON. */
#define LOG_LINE_MAX  8192
#define LOG_LINE_TAIL 512 /* what the message leaves room for: the marker, the error's text, the closing */

/* Appends s as it is when it fits whole. */
static bool append_raw(char *line, size_t size, size_t *n, const char *s) {
        size_t k = strlen(s);
        if (*n + k >= size)
                return false;
        memcpy(line + *n, s, k + 1);
        *n += k;
        return true;
}

static size_t format_json_line(char *line, size_t size, LogLevel level, int error, const char *msg) {
        struct timespec ts;
        struct tm tm;
        char when[64];

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        int k = snprintf(line, size, "{\"time\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":\"", when,
                         ts.tv_nsec / 1000000, log_level_table[level]);
        size_t n = (size_t)k;
        if (!json_escape_append(line, size - LOG_LINE_TAIL, &n, msg))
                append_raw(line, size, &n, " [truncated]");
        append_raw(line, size, &n, "\"");
        if (error != 0) {
                size_t before = n; /* the error's text is ours and short; still, the line stays whole */
                if (!append_raw(line, size - 4, &n, ",\"error\":\"") ||
                    !json_escape_append(line, size - 4, &n, pk_strerror(error)) ||
                    !append_raw(line, size - 3, &n, "\""))
                        n = before;
        }
        append_raw(line, size, &n, "}\n");
        return n;
}

int log_internal(LogLevel level, int error, const char *file, int line, const char *format, ...) {
        char msg[4096];
        va_list ap;
        int saved = errno;

        if (error > 0)
                error = -error;
        if (level > log_max_level) {
                errno = saved;
                return error;
        }
        va_start(ap, format);
        format_message(msg, sizeof(msg), error, format, ap);
        va_end(ap);

        /* The pass logs from its own thread while the loop's thread logs too: one line stays whole. */
        char json[LOG_LINE_MAX];
        flockfile(stderr);
        if (log_format == LOG_FORMAT_JSON)
                /* stderr is unbuffered: one write for the whole line, not one per character */
                fwrite(json, 1, format_json_line(json, sizeof(json), level, error, msg), stderr);
        else if (log_max_level >= LOG_LEVEL_DEBUG)
                fprintf(stderr, "%s: %s (%s:%d)\n", log_level_table[level], msg, file, line);
        else
                fprintf(stderr, "%s: %s\n", log_level_table[level], msg);
        fflush(stderr);
        funlockfile(stderr);
        errno = saved;
        return error;
}

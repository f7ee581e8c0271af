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

static void write_json_line(FILE *f, LogLevel level, int error, const char *msg) {
        struct timespec ts;
        struct tm tm;
        char when[64];

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        fprintf(f, "{\"time\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":\"", when, ts.tv_nsec / 1000000,
                log_level_table[level]);
        json_escape_to(f, msg);
        fputc('"', f);
        if (error != 0) {
                fputs(",\"error\":\"", f);
                json_escape_to(f, pk_strerror(error));
                fputc('"', f);
        }
        fputs("}\n", f);
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
        flockfile(stderr);
        if (log_format == LOG_FORMAT_JSON)
                write_json_line(stderr, level, error, msg);
        else if (log_max_level >= LOG_LEVEL_DEBUG)
                fprintf(stderr, "%s: %s (%s:%d)\n", log_level_table[level], msg, file, line);
        else
                fprintf(stderr, "%s: %s\n", log_level_table[level], msg);
        fflush(stderr);
        funlockfile(stderr);
        errno = saved;
        return error;
}

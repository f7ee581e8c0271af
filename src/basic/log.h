/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A tiny log API (after OpenBSD ntpd's log.c and systemd's log.h). Only the program logs:
 * library code below daemon/ and cli/ returns errors instead. Never pass a secret. */

#include <stdbool.h>

#include "macro.h"

typedef enum LogLevel {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
        _LOG_LEVEL_MAX,
        _LOG_LEVEL_INVALID = -EINVAL,
} LogLevel;

typedef enum LogFormat {
        LOG_FORMAT_TEXT,
        LOG_FORMAT_JSON,
        _LOG_FORMAT_MAX,
        _LOG_FORMAT_INVALID = -EINVAL,
} LogFormat;

void log_set_level(LogLevel level);
LogLevel log_get_level(void);
void log_set_format(LogFormat format);
LogLevel log_level_from_string(const char *s);
const char *log_level_to_string(LogLevel l);
LogFormat log_format_from_string(const char *s);

/* Logs at level; error is 0 or a negative errno/PK_E* code; "%m" in format expands to its text.
 * Returns error (or 0), so "return log_error_errno(r, ...)" works. */
int log_internal(LogLevel level, int error, const char *file, int line, const char *format, ...)
    _printf_(5, 6);

#define log_full_errno(level, error, ...) log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...)                    log_full_errno(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_info(...)                     log_full_errno(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_warning(...)                  log_full_errno(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_error(...)                    log_full_errno(LOG_LEVEL_ERROR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...)           log_full_errno(LOG_LEVEL_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...)            log_full_errno(LOG_LEVEL_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...)         log_full_errno(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...)           log_full_errno(LOG_LEVEL_ERROR, (e), __VA_ARGS__)
#define log_oom()                         log_error_errno(-ENOMEM, "Out of memory.")

/* SPDX-License-Identifier: Apache-2.0 */
/* protokube store get|put|put-if-absent|list|delete URL [KEY] [--file F] [--private]: the state store by
 * hand (and the integration tests' way to drive both providers through the real binary). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "store/store.h"

static const char *arg_file = NULL;
static bool arg_private = false;

static int parse_file(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_file = value;
        return 0;
}

static int parse_private(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_private = true;
        return 0;
}

const CliOption verb_store_get_options[] = {
        { .name = "file",
          .arg_name = "FILE",
          .help = "write the object to FILE (mode 0600, atomically) instead of stdout",
          .parse = parse_file },
        {},
};

const CliOption verb_store_put_options[] = {
        { .name = "file",
          .arg_name = "FILE",
          .help = "the object's bytes (default: stdin)",
          .parse = parse_file },
        { .name = "private",
          .help = "the object holds a secret: mode 0600 / S3 server-side encryption",
          .parse = parse_private },
        {},
};

static int open_store(const char *url, Store **ret) {
        _cleanup_free_ char *error = NULL;
        int r = store_open(url, ret, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: pk_strerror(r));
        return 0;
}

/* The object's bytes from --file or stdin; the same cap as the store's. */
static int read_input(char **ret, size_t *ret_len) {
        int r;
        /* A private object is a key: no copy of it is left behind in freed memory. */
        if (arg_private)
                r = arg_file ? read_full_file_secret(arg_file, STORE_OBJECT_MAX, ret, ret_len)
                             : read_full_fd_secret(STDIN_FILENO, STORE_OBJECT_MAX, ret, ret_len);
        else
                r = arg_file ? read_full_file(arg_file, STORE_OBJECT_MAX, ret, ret_len)
                             : read_full_fd(STDIN_FILENO, STORE_OBJECT_MAX, ret, ret_len);
        if (r < 0)
                return log_error_errno(r, "Failed to read '%s': %m", arg_file ?: "stdin");
        return 0;
}

int verb_store_get(CliContext *ctx, char **args) {
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *error = NULL;
        char *data = NULL;
        size_t len = 0;
        int r;

        if (open_store(args[0], &s) < 0)
                return EXIT_ERROR;
        r = store_get(s, args[1], &data, &len, &error);
        if (r < 0) {
                log_error_errno(r, "%s", error ?: pk_strerror(r));
                return EXIT_ERROR;
        }
        /* The object may be a private key: the file gets 0600 whatever it is. */
        r = arg_file ? write_file_atomic(arg_file, data, len, 0600, false)
                     : loop_write(STDOUT_FILENO, data, len);
        erase_and_free(data, len + 1);
        if (r < 0) {
                log_error_errno(r, "Failed to write '%s': %m", arg_file ?: "stdout");
                return EXIT_ERROR;
        }
        return EXIT_SUCCESS;
}

static int store_put_verb(char **args, bool if_absent) {
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *error = NULL;
        char *data = NULL;
        size_t len = 0;
        int r;

        if (open_store(args[0], &s) < 0 || read_input(&data, &len) < 0)
                return EXIT_ERROR;
        StoreFlags flags = arg_private ? STORE_PRIVATE : 0;
        r = if_absent ? store_put_if_absent(s, args[1], data, len, flags, &error)
                      : store_put(s, args[1], data, len, flags, &error);
        erase_and_free(data, len + 1);
        if (if_absent && r == -EEXIST) {
                /* Not a failure: what create-if-absent is for. The caller reads the winner's object. A
                 * message says the store answered "created" but kept another writer's object. */
                if (error)
                        log_warning("%s", error);
                printf("exists %s\n", args[1]);
                return EXIT_SUCCESS;
        }
        if (r < 0) {
                log_error_errno(r, "%s", error ?: pk_strerror(r));
                return EXIT_ERROR;
        }
        printf("%s %s\n", if_absent ? "created" : "stored", args[1]);
        return EXIT_SUCCESS;
}

int verb_store_put(CliContext *ctx, char **args) {
        return store_put_verb(args, false);
}

int verb_store_put_if_absent(CliContext *ctx, char **args) {
        return store_put_verb(args, true);
}

int verb_store_list(CliContext *ctx, char **args) {
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_strv_free_ char **keys = NULL;
        int r;

        if (open_store(args[0], &s) < 0)
                return EXIT_ERROR;
        r = store_list(s, args[1] ?: "", &keys, &error);
        if (r < 0) {
                log_error_errno(r, "%s", error ?: pk_strerror(r));
                return EXIT_ERROR;
        }
        STRV_FOREACH (k, keys)
                printf("%s\n", *k);
        return EXIT_SUCCESS;
}

int verb_store_delete(CliContext *ctx, char **args) {
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        if (open_store(args[0], &s) < 0)
                return EXIT_ERROR;
        r = store_delete(s, args[1], &error);
        if (r < 0) {
                log_error_errno(r, "%s", error ?: pk_strerror(r));
                return EXIT_ERROR;
        }
        return EXIT_SUCCESS;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* cmocka needs these before it; the blank line keeps clang-format from reordering them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

/* got (taken, freed) is want, or NULL when want is NULL: a value a test reads back out of a double. */
static inline void assert_string_or_null_free(char *got, const char *want) {
        if (!want)
                assert_null(got);
        else {
                assert_non_null(got);
                assert_string_equal(got, want);
        }
        free(got);
}

/* A TCP socket listening on 127.0.0.1, on a port the kernel chose (in *ret_port): a test server's. */
static inline int loopback_listen(int backlog, unsigned *ret_port) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t l = sizeof(a);
        assert_true(s >= 0);
        assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(s, backlog), 0);
        assert_int_equal(getsockname(s, (struct sockaddr *)&a, &l), 0);
        *ret_port = ntohs(a.sin_port);
        return s;
}

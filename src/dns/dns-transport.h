/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One DNS exchange with a server: UDP, falling back to TCP when the answer is truncated (RFC 1035 §4.2.1,
 * RFC 7766 §5) or the message is too big for UDP. Every wait has a deadline. No logging. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "basic/time-util.h"

typedef struct DnsServer {
        struct sockaddr_storage addr;
        socklen_t addr_len;
        char text[64]; /* "127.0.0.1:15353", "[::1]:53", for messages */
} DnsServer;

/* "192.0.2.1:53", "192.0.2.1" (port 53), "[2001:db8::1]:53", "2001:db8::1". Only address literals: a name
 * would need a resolver lookup, which has no deadline. -EINVAL otherwise. */
int dns_server_parse(const char *s, DnsServer *ret);

/* Sends query and waits until timeout for the response with the same ID (other datagrams are ignored).
 * PK_ETIMEOUT when none arrives; PK_ETOOBIG past 64 KiB. Caller frees *ret. ret_tcp tells which transport
 * answered. */
int dns_exchange(const DnsServer *server, const uint8_t *query, size_t len, usec_t timeout, uint8_t **ret,
                 size_t *ret_len, bool *ret_tcp);

/* A response of several messages on one TCP connection (a zone transfer, RFC 5936 §2.2): sends query once,
 * then hands every message with the query's ID to on_message in order, until on_message returns non-zero
 * (returned as is: > 0 for "complete", < 0 for an error). Each message must arrive within idle_timeout of
 * the one before and the whole exchange within total_timeout: PK_ETIMEOUT otherwise; -ECONNRESET when the
 * server closes the connection first. */
typedef int (*DnsStreamFunc)(const uint8_t *msg, size_t len, void *userdata);
int dns_exchange_stream(const DnsServer *server, const uint8_t *query, size_t len, usec_t idle_timeout,
                        usec_t total_timeout, DnsStreamFunc on_message, void *userdata);

/* A random 16-bit message ID (RFC 5452 §4.3: IDs must not be guessable). */
uint16_t dns_random_id(void);

/* Many queries over one TCP connection, pipelined (RFC 7766 §6.2.1.1): all are written while answers are
 * read, in one poll loop (writing everything first could fill both sides' buffers and stall), and answers
 * are matched to queries by ID, which must be unique among them. ret_answers[i] / ret_lens[i] hold the
 * answer to queries[i], or NULL when none came before the deadline or the server closed the connection; the
 * caller falls back to dns_exchange() for those. Returns how many were answered, or < 0 when the connection
 * could not be used at all. Caller frees each answer and both arrays. */
int dns_exchange_pipelined(const DnsServer *server, uint8_t *const *queries, const size_t *lens, size_t n,
                           usec_t timeout, uint8_t ***ret_answers, size_t **ret_lens);

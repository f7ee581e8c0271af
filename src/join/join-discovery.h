/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a worker needs before its kubelet can ask for a certificate (docs/workers.md, "A worker's
 * bootstrap"): its bootstrap token, read from a file only root reads, and the cluster's CA, found the way
 * kubeadm's token discovery finds it: the API serves the CA to anyone in the ConfigMap
 * kube-public/cluster-info; the worker fetches it without authenticating the server (it sends nothing
 * secret), trusts it only when its public key has the pin it was given, and then fetches it again
 * authenticating the server by that CA and the API's name: the server it talks to holds a certificate of
 * the pinned CA. Library code: returns errors with a message, never logs. */

#include "basic/time-util.h"
#include "join/join-token.h"

#define JOIN_TOKEN_FILE_MAX 4096U

/* The token in path: "<id>.<secret>" and an optional newline. The file must be a regular file that
 * neither its group nor others may read (it is a credential); -EPERM with a message naming the file and
 * its mode otherwise. No message quotes the file's contents. */
int join_token_file_read(const char *path, JoinToken *ret, char **ret_error);

/* The cluster's CA (PEM) from server ("https://api.internal.<cluster>[:port]"), connecting through
 * connect_to ("HOST:PORT:ADDR:PORT", NULL: where the URL says), each request bounded by timeout. Errors,
 * with a message naming the server and what failed: -EKEYREJECTED (the CA has another pin, or the
 * server holds no certificate of it), -ENOENT (no cluster-info yet), -EACCES (not readable
 * anonymously), PK_EMALFORMED (not a cluster-info), and the transport's. */
int join_discover_ca(const char *server, const char *connect_to, const char *pin, usec_t timeout,
                     char **ret_pem, char **ret_error);

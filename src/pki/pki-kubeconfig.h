/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A kubeconfig for a component (kube-controller-manager, kube-scheduler) or the operator: one cluster, one
 * user with its client certificate and key, embedded (base64 of the PEM) or named by path, one context.
 * Library code. */

#include <stddef.h>

typedef struct PkiKubeconfig {
        const char *cluster;  /* the cluster's name: [A-Za-z0-9.:_-]+ */
        const char *server;   /* https://host[:port], no spaces or quotes */
        const char *user;     /* "kube-scheduler", "admin": [A-Za-z0-9.:_-]+ */
        const char *ca_pem;   /* the cluster CA's certificate */
        const char *cert_pem; /* the user's client certificate */
        const char *key_pem;  /* its private key (a secret) */
        /* Instead of the three PEMs: the files holding them, absolute paths (a component mounts their
         * directory; the text then holds no secret and stays the same when the pair is renewed). */
        const char *ca_file, *cert_file, *key_file;
        /* Instead of a client certificate: a bearer token (a secret; a bootstrap token "<id>.<secret>"),
         * with the CA by ca_file or ca_pem. */
        const char *token;
} PkiKubeconfig;

/* The YAML text. -EINVAL with *ret_error (naming the field and value; caller frees) for bad input. The
 * text holds the private key: the caller erases it (erase_and_free(*ret, *ret_len)). */
int pki_kubeconfig_render(const PkiKubeconfig *kc, char **ret, size_t *ret_len, char **ret_error);

/* Renders and writes path atomically, mode 0600 (it holds a key: readable by root only). */
int pki_kubeconfig_write(const char *path, const PkiKubeconfig *kc, char **ret_error);

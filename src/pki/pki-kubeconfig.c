/* SPDX-License-Identifier: Apache-2.0 */
#include <stdbool.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "pki/pki-kubeconfig.h"
#include "shared/crypto.h"

#define KUBECONFIG_MAX (256U * 1024U)

static int field_error(char **ret_error, const char *field, const char *value, const char *why) {
        if (ret_error)
                *ret_error = strprintf("invalid kubeconfig %s '%s': %s", field, strnull(value), why);
        return -EINVAL;
}

/* Names go into the YAML unquoted: only characters that YAML cannot take for syntax. */
static int check_name(const char *field, const char *s, char **ret_error) {
        if (isempty(s) || strlen(s) > 253)
                return field_error(ret_error, field, s, "must be 1 to 253 characters");
        if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:_-") != strlen(s) ||
            strchr("-:", s[0]))
                return field_error(ret_error, field, s, "only letters, digits and . : _ - (not first: - :)");
        return 0;
}

/* A bearer token's user: the CA one way, no client certificate either way. The token is a secret: a
 * message names its field only. */
static int check_token(const PkiKubeconfig *kc, char **ret_error) {
        size_t n = strlen(kc->token);
        if (n == 0 || n > 1024 ||
            strspn(kc->token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != n) {
                if (ret_error)
                        *ret_error =
                            strdup("invalid kubeconfig token: must be 1 to 1024 letters, digits and . - _");
                return -EINVAL;
        }
        if (kc->cert_file || kc->key_file || kc->cert_pem || kc->key_pem)
                return field_error(ret_error, "credentials", kc->user,
                                   "either a token or a certificate, not both");
        if (!kc->ca_file == !kc->ca_pem)
                return field_error(ret_error, "certificate-authority", kc->user,
                                   "the CA is required, as a file or a PEM");
        if (kc->ca_file && (kc->ca_file[0] != '/' || strlen(kc->ca_file) > 4096 ||
                            strpbrk(kc->ca_file, " \"'#\\:") || string_has_cc(kc->ca_file)))
                return field_error(ret_error, "file", kc->ca_file,
                                   "must be an absolute path without spaces or quotes");
        return 0;
}

static int check(const PkiKubeconfig *kc, char **ret_error) {
        int r;
        if ((r = check_name("cluster", kc->cluster, ret_error)) < 0 ||
            (r = check_name("user", kc->user, ret_error)) < 0)
                return r;
        const char *host = startswith(strempty(kc->server), "https://");
        if (isempty(host) || strlen(kc->server) > 2048 || strpbrk(kc->server, " \"'#\\") ||
            string_has_cc(kc->server))
                return field_error(ret_error, "server", kc->server,
                                   "must be an https:// URL without spaces");
        if (kc->token)
                return check_token(kc, ret_error);
        bool files = kc->ca_file || kc->cert_file || kc->key_file;
        if (files && (kc->ca_pem || kc->cert_pem || kc->key_pem))
                return field_error(ret_error, "credentials", kc->user, "either files or PEMs, not both");
        if (files) {
                const char *paths[] = { kc->ca_file, kc->cert_file, kc->key_file };
                for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                        if (!paths[i] || paths[i][0] != '/' || strlen(paths[i]) > 4096 ||
                            strpbrk(paths[i], " \"'#\\:") || string_has_cc(paths[i]))
                                return field_error(ret_error, "file", paths[i],
                                                   "must be an absolute path without spaces or quotes");
                return 0;
        }
        if (isempty(kc->ca_pem) || isempty(kc->cert_pem) || isempty(kc->key_pem))
                return field_error(ret_error, "credentials", kc->user,
                                   "the CA, certificate and key are required");
        return 0;
}

/* "field: base64(pem)"; the key's base64 is a secret too and is erased after it is copied. */
static int add_b64(Buf *b, const char *indent_field, const char *pem) {
        _cleanup_erase_free_ char *b64 = NULL;
        int r = crypto_base64_encode(pem, strlen(pem), &b64);
        if (r < 0)
                return r;
        return buf_printf(b, "%s: %s\n", indent_field, b64);
}

int pki_kubeconfig_render(const PkiKubeconfig *kc, char **ret, size_t *ret_len, char **ret_error) {
        _cleanup_buf_ Buf b = {};
        int r = check(kc, ret_error);
        if (r < 0)
                return r;
        buf_init_secret(&b, KUBECONFIG_MAX);
        r = buf_printf(&b, "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n");
        if (r >= 0)
                r = kc->ca_file ? buf_printf(&b, "    certificate-authority: %s\n", kc->ca_file)
                                : add_b64(&b, "    certificate-authority-data", kc->ca_pem);
        if (r >= 0)
                r = buf_printf(
                    &b,
                    "    server: %s\n  name: %s\ncontexts:\n- context:\n    cluster: %s\n    user: %s\n"
                    "  name: %s@%s\ncurrent-context: %s@%s\npreferences: {}\nusers:\n- name: %s\n"
                    "  user:\n",
                    kc->server, kc->cluster, kc->cluster, kc->user, kc->user, kc->cluster, kc->user,
                    kc->cluster, kc->user);
        if (r >= 0 && kc->token)
                r = buf_printf(&b, "    token: %s\n", kc->token);
        else if (r >= 0 && kc->cert_file)
                r = buf_printf(&b, "    client-certificate: %s\n    client-key: %s\n", kc->cert_file,
                               kc->key_file);
        else if (r >= 0) {
                r = add_b64(&b, "    client-certificate-data", kc->cert_pem);
                if (r >= 0)
                        r = add_b64(&b, "    client-key-data", kc->key_pem);
        }
        if (r < 0)
                return r;
        size_t len = b.len;
        char *s = buf_steal_str(&b);
        if (!s)
                return -ENOMEM;
        *ret = s;
        if (ret_len)
                *ret_len = len;
        return 0;
}

int pki_kubeconfig_write(const char *path, const PkiKubeconfig *kc, char **ret_error) {
        char *text = NULL;
        size_t len = 0;
        int r = pki_kubeconfig_render(kc, &text, &len, ret_error);
        if (r < 0)
                return r;
        r = write_file_atomic(path, text, len, 0600, true);
        erase_and_free(text, len);
        return r < 0 ? r : 0;
}

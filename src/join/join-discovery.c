/* SPDX-License-Identifier: Apache-2.0 */
#include "join/join-discovery.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "join/join-clusterinfo.h"
#include "join/join-pin.h"
#include "pki/pki-cert.h"
#include "shared/http.h"
#include "shared/openssl-util.h"

#define CLUSTER_INFO_PATH \
        "/api/v1/namespaces/" JOIN_CLUSTER_INFO_NAMESPACE "/configmaps/" JOIN_CLUSTER_INFO_NAME

int join_token_file_read(const char *path, JoinToken *ret, char **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = -errno;
                *ret_error = strprintf("cannot read the bootstrap token file %s: %s", path, pk_strerror(r));
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                *ret_error = strprintf("bootstrap token file %s: not a regular file", path);
                return -EINVAL;
        }
        if (st.st_mode & 077) {
                *ret_error =
                    strprintf("bootstrap token file %s: mode %04o lets others read a credential (chmod "
                              "600 it)",
                              path, (unsigned)(st.st_mode & 07777));
                return -EPERM;
        }
        _cleanup_free_ char *fdpath = strprintf("/proc/self/fd/%d", fd);
        char *text = NULL;
        size_t len = 0;
        int r = fdpath ? read_full_file_secret(fdpath, JOIN_TOKEN_FILE_MAX, &text, &len) : -ENOMEM;
        if (r < 0) {
                *ret_error = strprintf("cannot read the bootstrap token file %s: %s", path, pk_strerror(r));
                return r;
        }
        if (len > 0 && text[len - 1] == '\n')
                text[len - 1] = 0;
        _cleanup_free_ char *why = NULL;
        r = join_token_parse(text, ret, &why);
        erase_and_free(text, len);
        if (r < 0)
                *ret_error = strprintf("bootstrap token file %s: %s", path, strna(why));
        return r;
}

/* GET of the cluster-info ConfigMap (the server unauthenticated when ca_file is NULL); the body in *ret. */
static int fetch_cluster_info(const char *url, const char *connect_to, const char *ca_file, usec_t timeout,
                              HttpResponse *ret, char **ret_error) {
        static const char *const accept[] = { "Accept: application/json" };
        HttpRequest req = { .method = "GET",
                            .url = url,
                            .headers = accept,
                            .n_headers = 1,
                            .timeout = timeout,
                            .max_response = JOIN_CLUSTER_INFO_MAX,
                            .connect_to = connect_to,
                            .ca_file = ca_file,
                            .unverified_server = !ca_file };
        _cleanup_free_ char *err = NULL;
        int r = http_request(&req, ret, &err);
        if (r < 0) {
                *ret_error = strprintf("%s: %s", url, err ?: pk_strerror(r));
                return r;
        }
        if (ret->status == 200)
                return 0;
        if (ret->status == 404) {
                *ret_error = strprintf(
                    "%s: no cluster-info yet (404): the masters publish it once the API is up", url);
                r = -ENOENT;
        } else if (ret->status == 401 || ret->status == 403) {
                *ret_error = strprintf("%s: HTTP %ld: cluster-info must be readable anonymously "
                                       "(kube-apiserver's anonymous requests, the masters' Role for it)",
                                       url, ret->status);
                r = -EACCES;
        } else {
                *ret_error = strprintf("%s: HTTP %ld", url, ret->status);
                r = -EIO;
        }
        http_response_done(ret);
        return r;
}

/* The CA of a cluster-info response, and its PEM. */
static int cluster_info_ca(const char *url, const HttpResponse *resp, X509 **ret, char **ret_pem,
                           char **ret_error) {
        _cleanup_free_ char *why = NULL;
        int r = join_cluster_info_ca(resp->body, resp->body_len, ret, NULL, &why);
        if (r < 0) {
                *ret_error = strprintf("%s: %s", url, strna(why));
                return r;
        }
        size_t len;
        return pki_cert_to_pem(*ret, ret_pem, &len);
}

/* The PEM in a file of no name (a memfd), named by its /proc path for OpenSSL to read: nothing is written
 * to disk before the server proved it holds a certificate of this CA. */
static int memfd_with(const char *pem, int *ret_fd, char **ret_path) {
        _cleanup_close_ int fd = memfd_create("cluster-ca", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = loop_write(fd, pem, strlen(pem));
        if (r < 0)
                return r;
        char *path = strprintf("/proc/self/fd/%d", fd);
        if (!path)
                return -ENOMEM;
        *ret_path = path;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int join_discover_ca(const char *server, const char *connect_to, const char *pin, usec_t timeout,
                     char **ret_pem, char **ret_error) {
        _cleanup_free_ char *url = strjoin(server, CLUSTER_INFO_PATH), *pem = NULL, *again_pem = NULL,
                            *ca_path = NULL;
        _cleanup_(http_response_done) HttpResponse first = {}, again = {};
        _cleanup_(X509_freep) X509 *ca = NULL, *again_ca = NULL;
        _cleanup_close_ int ca_fd = -1;
        if (!url)
                return -ENOMEM;
        int r = fetch_cluster_info(url, connect_to, NULL, timeout, &first, ret_error);
        if (r >= 0)
                r = cluster_info_ca(url, &first, &ca, &pem, ret_error);
        if (r < 0)
                return r;
        _cleanup_free_ char *why = NULL;
        r = join_ca_pin_check(ca, pin, &why);
        if (r < 0) {
                *ret_error = strprintf("%s: the CA it serves is not the pinned one: %s", url, strna(why));
                return r;
        }
        r = memfd_with(pem, &ca_fd, &ca_path);
        if (r < 0)
                return r;
        r = fetch_cluster_info(url, connect_to, ca_path, timeout, &again, ret_error);
        if (r == -EIO && *ret_error && strstr(*ret_error, "certificate")) {
                char *e = strprintf("%s (the server holds no certificate of the pinned CA for its name)",
                                    *ret_error);
                free(*ret_error);
                *ret_error = e;
                return -EKEYREJECTED;
        }
        if (r >= 0)
                r = cluster_info_ca(url, &again, &again_ca, &again_pem, ret_error);
        if (r < 0)
                return r;
        if (!streq(pem, again_pem)) {
                *ret_error = strprintf("%s: served another CA when asked again", url);
                return -EKEYREJECTED;
        }
        *ret_pem = TAKE_PTR(pem);
        return 0;
}

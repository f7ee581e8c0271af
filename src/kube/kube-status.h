/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The API's answer to a failed request: a `Status` object (kind Status, code, reason, message,
 * details.causes) turned into one line for a person and a code for the program (docs/kube-client.md). */

#include <stdbool.h>
#include <stddef.h>

/* The object a request was about, for the message: "ConfigMap kube-system/x", "Node a", or what (a path)
 * when kind is NULL. */
typedef struct KubeObjectRef {
        const char *kind;
        const char *ns;
        const char *name;
        const char *what;
} KubeObjectRef;

/* The code for an HTTP status (and the Status' reason where the status alone is ambiguous):
 * 404 -ENOENT, 409 AlreadyExists -EEXIST, 409 otherwise PK_ECONFLICT, 400/422 -EINVAL, 401 -EKEYREJECTED
 * (the credentials refused), 403 -EACCES (not allowed), 410 -ESTALE, 429 -EBUSY, 5xx -EIO, any other non-2xx
 * -EPROTO. 0 for 2xx. */
int kube_status_to_errno(long http_status, const char *reason);

/* The failure of a response: returns the code (kube_status_to_errno) and, when ret_error is not NULL,
 * "<Kind> <ns>/<name>: <code> <reason>: <message> (causes: <field>: <message>; ...)" (caller frees). The
 * body is read only when it is a Status (at most KUBE_STATUS_MAX bytes); anything else is summarised by
 * its length, never quoted, as it might be an object's content. The server's strings are cut to a bounded
 * length and their control characters replaced, so a message is one line. When secret (the object is a
 * Secret), the message and causes' messages are withheld (they can quote an invalid value): only code,
 * reason and the causes' field names remain. */
#define KUBE_STATUS_MAX (64U * 1024U)
int kube_status_error(long http_status, const char *body, size_t len, const KubeObjectRef *ref, bool secret,
                      char **ret_error);

/* "ConfigMap ns/name" as used above; caller frees; NULL on OOM. */
char *kube_object_ref_to_string(const KubeObjectRef *ref);

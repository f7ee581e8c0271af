/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "join/join-csr.h"
#include "join/join-progress.h"
#include "join/join-token.h"
#include "shared/json-util.h"

#define SHOWN_MAX 200U /* characters of the API's words shown */

static const char *const csr_state_names[_JOIN_CSR_STATE_MAX] = {
        [JOIN_CSR_STATE_NONE] = "none",         [JOIN_CSR_STATE_PENDING] = "pending",
        [JOIN_CSR_STATE_APPROVED] = "approved", [JOIN_CSR_STATE_ISSUED] = "issued",
        [JOIN_CSR_STATE_DENIED] = "denied",     [JOIN_CSR_STATE_FAILED] = "failed",
};

const char *join_csr_state_to_string(JoinCsrState s) {
        return s >= 0 && s < _JOIN_CSR_STATE_MAX ? csr_state_names[s] : NULL;
}

void join_csr_progress_done(JoinCsrProgress *p) {
        free(p->name);
        free(p->words);
        *p = (JoinCsrProgress){};
}

/* "reason: message" of a condition, as one bounded line. */
static char *condition_words(const json_t *c) {
        _cleanup_free_ char *joined =
            strprintf("%s: %s", strna(json_get_string(c, "reason")), strna(json_get_string(c, "message")));
        return joined ? string_one_line(joined, SHOWN_MAX) : NULL;
}

/* This node's client CSR: the signer, the subject and the requester. */
static bool ours(const JoinCsr *c, const char *node, const char *token_id) {
        if (c->kind != JOIN_CSR_CLIENT || !c->request || !streq_ptr(join_node_of_cn(c->request->cn), node))
                return false;
        if (join_csr_by_node(c, node))
                return true;
        const char *id = c->username ? startswith(c->username, JOIN_BOOTSTRAP_USER_PREFIX) : NULL;
        return token_id && id && streq(id, token_id) && join_csr_by_bootstrap_token(c);
}

static JoinCsrState state_of(const JoinCsr *c) {
        if (c->denied)
                return JOIN_CSR_STATE_DENIED;
        if (c->failed)
                return JOIN_CSR_STATE_FAILED;
        if (c->approved)
                return c->has_certificate ? JOIN_CSR_STATE_ISSUED : JOIN_CSR_STATE_APPROVED;
        return JOIN_CSR_STATE_PENDING;
}

int join_csr_progress(const json_t *list, const char *node, const char *token_id, JoinCsrProgress *ret,
                      char **ret_error) {
        const json_t *items = json_object_get(list, "items"), *obj, *newest = NULL;
        _cleanup_(join_csr_freep) JoinCsr *newest_csr = NULL; /* newest, as read */
        JoinCsrState state = JOIN_CSR_STATE_NONE;
        size_t i;
        if (!json_is_array(items))
                return error_setf(ret_error, -EINVAL, "the CSR list has no items");
        json_array_foreach(items, i, obj) {
                _cleanup_(join_csr_freep) JoinCsr *c = NULL;
                int r = join_csr_from_json(obj, &c, NULL);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || !ours(c, node, token_id) || (newest_csr && c->created < newest_csr->created))
                        continue;
                newest = obj;
                state = state_of(c);
                join_csr_free(newest_csr);
                newest_csr = TAKE_PTR(c);
        }
        _cleanup_(join_csr_progress_done) JoinCsrProgress p = { .state = state };
        if (newest) {
                const json_t *why = state == JOIN_CSR_STATE_DENIED ? join_condition(newest, "Denied", "True")
                                    : state == JOIN_CSR_STATE_FAILED
                                        ? join_condition(newest, "Failed", "True")
                                        : NULL;
                const char *refusal = state == JOIN_CSR_STATE_PENDING ? newest_csr->refusal : NULL;
                if (!(p.name = string_one_line(newest_csr->name, SHOWN_MAX)) ||
                    (why && !(p.words = condition_words(why))) ||
                    (refusal && !(p.words = string_one_line(refusal, SHOWN_MAX))))
                        return -ENOMEM;
        }
        *ret = p;
        p = (JoinCsrProgress){};
        return 0;
}

int join_node_ready(const json_t *node, char **ret_words) {
        const json_t *ready = join_condition(node, "Ready", NULL);
        *ret_words = NULL;
        if (ready && streq_ptr(json_get_string(ready, "status"), "True"))
                return 1;
        *ret_words = ready ? condition_words(ready) : strdup("no Ready condition yet");
        return *ret_words ? 0 : -ENOMEM;
}

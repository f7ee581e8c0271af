/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/kube-rollout.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "shared/json-util.h"

#define REVISION_HASH_LABEL "controller-revision-hash"

void kube_rollout_done(KubeRollout *r) {
        if (!r)
                return;
        json_decref(r->previous_template);
        free(r->why);
        *r = (KubeRollout){};
}

/* A revision's template: data.spec.template without the strategic merge patch's "$patch": "replace"
 * (the DaemonSet controller stores each template so). New reference; NULL when it has none. */
static json_t *revision_template(const json_t *rev) {
        const json_t *t = json_get(rev, "data", "spec", "template");
        if (!json_is_object(t))
                return NULL;
        json_t *copy = json_deep_copy(t);
        if (copy)
                json_object_del(copy, "$patch");
        return copy;
}

static long revision_number(const json_t *rev) {
        const json_t *n = json_object_get(rev, "revision");
        return json_is_integer(n) ? (long)json_integer_value(n) : 0;
}

static bool owned_by(const json_t *rev, const char *uid) {
        size_t i;
        const json_t *o;
        json_array_foreach(json_get(rev, "metadata", "ownerReferences"), i,
                           o) if (streq_ptr(json_string_value(json_object_get(o, "uid")), uid)) return true;
        return false;
}

/* The revision whose template is the DaemonSet's, else the newest. */
static const json_t *current_revision(const json_t *ds, const json_t *items, const char *uid) {
        const json_t *tmpl = json_get(ds, "spec", "template"), *rev, *newest = NULL;
        size_t i;
        json_array_foreach(items, i, rev) {
                if (!owned_by(rev, uid))
                        continue;
                _cleanup_(json_decrefp) json_t *t = revision_template(rev);
                if (t && json_equal(t, (json_t *)tmpl))
                        return rev;
                if (!newest || revision_number(rev) > revision_number(newest))
                        newest = rev;
        }
        return newest;
}

/* The newest revision older than current that is not the one rolled back from. */
static const json_t *previous_revision(const json_t *items, const json_t *current, const char *uid,
                                       const char *rolled_back_from) {
        const json_t *rev, *best = NULL;
        size_t i;
        long cur = revision_number(current);
        json_array_foreach(items, i, rev) {
                const char *hash = json_get_string(rev, "metadata", "labels", REVISION_HASH_LABEL);
                if (rev == current || !owned_by(rev, uid) || revision_number(rev) >= cur ||
                    streq_ptr(hash, rolled_back_from))
                        continue;
                if (!best || revision_number(rev) > revision_number(best))
                        best = rev;
        }
        return best;
}

static long status_int(const json_t *ds, const char *key) {
        const json_t *v = json_get(ds, "status", key);
        return json_is_integer(v) ? (long)json_integer_value(v) : 0;
}

/* Every scheduled node runs the current template and is available, for the DaemonSet's current spec. */
static bool rollout_complete(const json_t *ds, char **ret_why) {
        long desired = status_int(ds, "desiredNumberScheduled"),
             updated = status_int(ds, "updatedNumberScheduled"),
             available = status_int(ds, "numberAvailable"), observed = status_int(ds, "observedGeneration");
        const json_t *gen = json_get(ds, "metadata", "generation");
        bool seen = !json_is_integer(gen) || observed >= (long)json_integer_value(gen);
        *ret_why =
            strprintf("%ld of %ld node(s) run the current template, %ld available%s", updated, desired,
                      available, seen ? "" : " (the controller has not seen the change yet)");
        return seen && updated == desired && available == desired;
}

static void copy_hash(char *dst, size_t size, const json_t *rev) {
        snprintf(dst, size, "%s", strempty(json_get_string(rev, "metadata", "labels", REVISION_HASH_LABEL)));
}

/* The last time a pod of revision hash became Ready (0: none is). */
static usec_t last_ready(const json_t *pod_items, const char *hash) {
        const json_t *pod, *cond;
        usec_t last = 0;
        size_t i, j;
        json_array_foreach(pod_items, i, pod) {
                if (!streq_ptr(json_get_string(pod, "metadata", "labels", REVISION_HASH_LABEL), hash))
                        continue;
                json_array_foreach(json_get(pod, "status", "conditions"), j, cond) {
                        usec_t t = 0;
                        if (streq_ptr(json_get_string(cond, "type"), "Ready") &&
                            streq_ptr(json_get_string(cond, "status"), "True") &&
                            parse_rfc3339(strempty(json_get_string(cond, "lastTransitionTime")), &t) >= 0)
                                last = MAX(last, t);
                }
        }
        return last;
}

int kube_daemonset_rollout(const json_t *ds, const json_t *revisions, const json_t *pods, usec_t now,
                           usec_t deadline, KubeRollout *ret) {
        KubeRollout r = {};
        const char *uid = json_get_string(ds, "metadata", "uid");
        const json_t *items = json_object_get(revisions, "items"),
                     *pod_items = json_object_get(pods, "items");
        if (!uid || !json_is_object(json_get(ds, "spec", "template")) ||
            (revisions && !json_is_array(items)) || (pods && !json_is_array(pod_items)))
                return PK_EMALFORMED;
        r.complete = rollout_complete(ds, &r.why);
        if (!r.why)
                return -ENOMEM;
        if (!revisions) { /* where it stands only */
                *ret = r;
                return 0;
        }
        const json_t *cur = current_revision(ds, items, uid);
        if (cur) {
                usec_t created = 0, rolled = 0;
                const char *at =
                    json_get_string(ds, "metadata", "annotations", KUBE_ROLLED_BACK_AT_ANNOTATION);
                (void)parse_rfc3339(strempty(json_get_string(cur, "metadata", "creationTimestamp")),
                                    &created);
                if (at)
                        (void)parse_rfc3339(at, &rolled);
                r.current = revision_number(cur);
                copy_hash(r.hash, sizeof(r.hash), cur);
                r.since = MAX(MAX(created, rolled), r.hash[0] ? last_ready(pod_items, r.hash) : 0);
                const char *from =
                    json_get_string(ds, "metadata", "annotations", KUBE_ROLLED_BACK_FROM_ANNOTATION);
                const json_t *prev = previous_revision(items, cur, uid, from);
                if (prev) {
                        r.previous = revision_number(prev);
                        copy_hash(r.previous_hash, sizeof(r.previous_hash), prev);
                        r.previous_template = revision_template(prev);
                }
        }
        r.stuck = !r.complete && r.since > 0 && now > r.since && now - r.since > deadline;
        *ret = r;
        return 0;
}

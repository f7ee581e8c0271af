/* SPDX-License-Identifier: Apache-2.0 */
#include "volumes/volumes-plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/volume-tags.h"

static const char *const action_names[_ACTION_TYPE_MAX] = {
        [ACTION_CLAIM] = "claim",
        [ACTION_ATTACH] = "attach",
        [ACTION_WAIT_DEVICE] = "wait-device",
        [ACTION_FSCK] = "fsck",
        [ACTION_MOUNT] = "mount",
        [ACTION_WRITE_MANIFEST] = "write-manifest",
        [ACTION_LINK_MANIFEST] = "link-manifest",
        [ACTION_RELEASE] = "release",
};

const char *action_type_to_string(ActionType t) {
        return t >= 0 && t < _ACTION_TYPE_MAX ? action_names[t] : NULL;
}

void volumes_plan_done(VolumesPlan *p) {
        for (size_t i = 0; i < p->n_volumes; i++)
                volume_eligibility_done(&p->eligibility[i]);
        for (size_t i = 0; i < p->n_selections; i++)
                free(p->selections[i].note);
        free(p->eligibility);
        free(p->selections);
        free(p->actions);
        *p = (VolumesPlan){};
}

bool volumes_plan_converged(const VolumesPlan *p) {
        for (size_t i = 0; i < p->n_selections; i++)
                if (p->selections[i].state != SELECTION_READY)
                        return false;
        return true;
}

static bool held_by(const Volume *v, const NodeIdentity *node) {
        return node_identity_holds(node, &v->attachment);
}

/* Of two free volumes naming one member, the one more likely to hold its data goes first. */
static int content_rank(VolumeContent c) {
        return c == VOLUME_CONTENT_DATA ? 0 : c == VOLUME_CONTENT_UNKNOWN ? 1 : 2;
}

/* Orders candidates of one etcd cluster: (member, content, id). */
static bool candidate_before(const VolumesPlan *plan, const VolumesInput *in, size_t a, size_t b) {
        int c = strcmp(plan->eligibility[a].etcd.member, plan->eligibility[b].etcd.member);
        if (c != 0)
                return c < 0;
        c = content_rank(in->volumes[a].content) - content_rank(in->volumes[b].content);
        if (c != 0)
                return c < 0;
        return strcmp(in->volumes[a].id, in->volumes[b].id) < 0;
}

static bool of_cluster(const VolumesPlan *plan, size_t i, const char *etcd_cluster) {
        return plan->eligibility[i].eligible && streq(plan->eligibility[i].etcd.cluster, etcd_cluster);
}

/* A volume of etcd_cluster held under this node's name by another machine: two machines share the name.
 * SIZE_MAX if none. Claiming anything then would make the two indistinguishable in DNS and in the
 * pool, so the selection stops with an error naming both machines. */
static size_t find_name_clash(const VolumesPlan *plan, const VolumesInput *in, const char *etcd_cluster) {
        for (size_t i = 0; i < in->n_volumes; i++)
                if (of_cluster(plan, i, etcd_cluster) &&
                    node_identity_name_clash(in->node, &in->volumes[i].attachment))
                        return i;
        return SIZE_MAX;
}

/* A damaged record that reads as this node's, of etcd_cluster or of an unreadable etcd cluster: this
 * node may hold that member already, so it claims no other (it would hold two) until the record is
 * mended or released. SIZE_MAX if none. */
static size_t find_damaged_own(const VolumesInput *in, const char *etcd_cluster) {
        _cleanup_free_ char *key = strjoin(VOLUME_TAG_ETCD_PREFIX, etcd_cluster);
        for (size_t i = 0; key && i < in->n_volumes; i++) {
                const Volume *v = &in->volumes[i];
                bool any_etcd = false;
                if (!v->damaged || !held_by(v, in->node))
                        continue;
                for (char **t = v->tags; t && t[0] && t[1]; t += 2)
                        any_etcd = any_etcd || startswith(t[0], VOLUME_TAG_ETCD_PREFIX);
                if (!any_etcd || volume_tag(v, key))
                        return i;
        }
        return SIZE_MAX;
}

static int plan_damaged_own(VolumesPlan *plan, const VolumesInput *in, size_t sel, size_t i) {
        PlanSelection *s = &plan->selections[sel];
        s->volume = i;
        s->state = SELECTION_ERROR;
        s->note =
            strprintf("this node's volume '%s' has a damaged record (%s): claiming no other until it is "
                      "mended or released ('protokube pool detach %s')",
                      in->volumes[i].id, in->volumes[i].damaged, in->volumes[i].id);
        return s->note ? 0 : -ENOMEM;
}

static int plan_name_clash(VolumesPlan *plan, const VolumesInput *in, size_t sel, size_t i) {
        PlanSelection *s = &plan->selections[sel];
        const VolumeAttachment *a = &in->volumes[i].attachment;
        s->volume = i;
        s->state = SELECTION_ERROR;
        s->note = strprintf("volume '%s' is held by node '%s' on machine %s; this machine (%s) has the same "
                            "node name and is not its holder: give each machine its own --node-name",
                            in->volumes[i].id, a->node, a->machine_id ?: "(unknown)",
                            in->node->machine_id ?: "(no machine id)");
        return s->note ? 0 : -ENOMEM;
}

static int push_action(VolumesPlan *plan, ActionType t, size_t volume, size_t selection) {
        PlanAction *a = realloc(plan->actions, sizeof(PlanAction) * (plan->n_actions + 1));
        if (!a)
                return -ENOMEM;
        plan->actions = a;
        a[plan->n_actions++] = (PlanAction){ .type = t, .volume = volume, .selection = selection };
        return 0;
}

/* The volume this node uses for etcd_cluster: one it holds (lowest (member, id) if it somehow holds
 * several), else the first free candidate. Sets *ret_held. SIZE_MAX if none. */
static size_t choose(const VolumesPlan *plan, const VolumesInput *in, const char *etcd_cluster,
                     bool *ret_held, size_t *ret_n_held) {
        size_t best_held = SIZE_MAX, best_free = SIZE_MAX, n_held = 0;

        for (size_t i = 0; i < in->n_volumes; i++) {
                if (!of_cluster(plan, i, etcd_cluster))
                        continue;
                const Volume *v = &in->volumes[i];
                if (held_by(v, in->node)) {
                        n_held++;
                        if (best_held == SIZE_MAX || candidate_before(plan, in, i, best_held))
                                best_held = i;
                } else if (!v->attachment.node) {
                        if (best_free == SIZE_MAX || candidate_before(plan, in, i, best_free))
                                best_free = i;
                }
                /* attached to another node: never touched */
        }
        *ret_n_held = n_held;
        *ret_held = best_held != SIZE_MAX;
        return best_held != SIZE_MAX ? best_held : best_free;
}

static int plan_volume(VolumesPlan *plan, const VolumesInput *in, size_t sel, size_t i, bool held) {
        const VolumeObserved none = {};
        const VolumeObserved *o = held && in->observed ? &in->observed[i] : &none;
        PlanSelection *s = &plan->selections[sel];
        size_t before = plan->n_actions;
        int r = 0;

        if (o->mount == MOUNT_STATE_OTHER) {
                s->state = SELECTION_ERROR;
                s->note = strprintf("another device is mounted on the mount point of volume '%s'",
                                    in->volumes[i].id);
                return s->note ? 0 : -ENOMEM;
        }
        if (!held)
                r = push_action(plan, ACTION_CLAIM, i, sel);
        else if (!o->device_present && o->mount != MOUNT_STATE_OURS)
                r = push_action(plan, ACTION_ATTACH, i, sel);
        if (r >= 0 && o->mount != MOUNT_STATE_OURS) {
                r = push_action(plan, ACTION_WAIT_DEVICE, i, sel);
                if (r >= 0)
                        r = push_action(plan, ACTION_FSCK, i, sel);
                if (r >= 0)
                        r = push_action(plan, ACTION_MOUNT, i, sel);
        }
        if (r >= 0 && in->manifests && (o->mount != MOUNT_STATE_OURS || !o->manifest_current))
                r = push_action(plan, ACTION_WRITE_MANIFEST, i, sel);
        if (r >= 0 && in->manifests && (o->mount != MOUNT_STATE_OURS || !o->link_current))
                r = push_action(plan, ACTION_LINK_MANIFEST, i, sel);
        if (r < 0)
                return r;
        s->state = plan->n_actions > before ? SELECTION_ACTIONS : SELECTION_READY;
        return 0;
}

/* Spec order, but "main" first: the API server needs main, events can follow (kops does the same). */
static int order_clusters(char *const *etcd_clusters, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        if (strv_contains(etcd_clusters, "main") && strv_extend(&l, "main") < 0)
                return -ENOMEM;
        STRV_FOREACH (c, (char **)etcd_clusters)
                if (!strv_contains(l, *c) && strv_extend(&l, *c) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

/* A duplicate this node holds mounted (plan_releases() leaves it): it may be serving an etcd of the
 * member another node holds, so claiming another volume of the etcd cluster would make it worse. */
static size_t held_mounted_duplicate(const VolumesPlan *plan, const VolumesInput *in,
                                     const char *etcd_cluster) {
        for (size_t i = 0; in->observed && i < in->n_volumes; i++) {
                const VolumeEligibility *e = &plan->eligibility[i];
                if (e->held_through && e->etcd.cluster && streq(e->etcd.cluster, etcd_cluster) &&
                    held_by(&in->volumes[i], in->node) && in->observed[i].mount != MOUNT_STATE_NONE)
                        return i;
        }
        return SIZE_MAX;
}

static int plan_selection(VolumesPlan *plan, const VolumesInput *in, size_t sel) {
        PlanSelection *s = &plan->selections[sel];
        bool held;
        size_t n_held, clash;

        size_t dup = held_mounted_duplicate(plan, in, s->etcd_cluster);
        if (dup != SIZE_MAX) {
                s->state = SELECTION_ERROR;
                s->note =
                    strprintf("this node holds volume '%s' mounted, but %s: stop its etcd, unmount and "
                              "detach it",
                              in->volumes[dup].id, plan->eligibility[dup].reason);
                return s->note ? 0 : -ENOMEM;
        }

        clash = find_name_clash(plan, in, s->etcd_cluster);
        if (clash != SIZE_MAX)
                return plan_name_clash(plan, in, sel, clash);
        clash = find_damaged_own(in, s->etcd_cluster);
        if (clash != SIZE_MAX)
                return plan_damaged_own(plan, in, sel, clash);
        s->volume = choose(plan, in, s->etcd_cluster, &held, &n_held);
        if (s->volume == SIZE_MAX) {
                s->state = SELECTION_WAITING;
                s->note = strprintf("no free volume of etcd cluster '%s' in zone '%s'", s->etcd_cluster,
                                    strna(in->node->zone));
                return s->note ? 0 : -ENOMEM;
        }
        s->format_blocked_by = plan->eligibility[s->volume].sibling_with_data;
        int r = plan_volume(plan, in, sel, s->volume, held);
        if (r < 0 || n_held <= 1 || s->note)
                return r;
        s->note = strprintf("this node holds %zu volumes of etcd cluster '%s'; only '%s' is used", n_held,
                            s->etcd_cluster, in->volumes[s->volume].id);
        return s->note ? 0 : -ENOMEM;
}

/* A volume this node holds whose member is held through another volume (two claims raced, or the
 * volume was claimed before this rule): give it back while nothing uses it. A mounted one may be serving
 * an etcd: that is left to the operator, never unmounted from under it. */
static int plan_releases(VolumesPlan *plan, const VolumesInput *in) {
        for (size_t i = 0; i < in->n_volumes; i++) {
                const VolumeObserved *o = in->observed ? &in->observed[i] : NULL;
                if (!plan->eligibility[i].held_through || !held_by(&in->volumes[i], in->node))
                        continue;
                if (o && o->mount != MOUNT_STATE_NONE)
                        continue;
                int r = push_action(plan, ACTION_RELEASE, i, SIZE_MAX);
                if (r < 0)
                        return r;
        }
        return 0;
}

int volumes_plan(const VolumesInput *in, VolumesPlan *ret) {
        _cleanup_strv_free_ char **order = NULL;
        VolumesPlan plan = {};
        int r;

        r = order_clusters(in->etcd_clusters, &order);
        if (r < 0)
                return r;
        plan.eligibility = new0(VolumeEligibility, in->n_volumes);
        plan.selections = new0(PlanSelection, strv_length(order));
        if (!plan.eligibility || !plan.selections) {
                volumes_plan_done(&plan);
                return -ENOMEM;
        }
        plan.n_volumes = in->n_volumes;
        for (size_t i = 0; i < in->n_volumes; i++) {
                r = volume_classify(&in->volumes[i], in->cluster, in->node->zone, in->etcd_clusters,
                                    &plan.eligibility[i]);
                if (r < 0)
                        goto fail;
        }
        r = volume_resolve_members(in->volumes, in->n_volumes, in->cluster, in->etcd_clusters,
                                   plan.eligibility);
        if (r < 0)
                goto fail;
        r = plan_releases(&plan, in);
        if (r < 0)
                goto fail;
        for (size_t k = 0; order[k]; k++) {
                /* point into the caller's strings, which outlive the plan */
                const char *name = NULL;
                STRV_FOREACH (c, (char **)in->etcd_clusters)
                        if (streq(*c, order[k]))
                                name = *c;
                plan.selections[k] = (PlanSelection){ .etcd_cluster = name, .volume = SIZE_MAX };
                plan.n_selections++;
                r = plan_selection(&plan, in, k);
                if (r < 0)
                        goto fail;
        }
        *ret = plan;
        return 0;
fail:
        volumes_plan_done(&plan);
        return r;
}

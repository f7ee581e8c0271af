/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One pass of protokube, in one direction (docs/ARCHITECTURE.md): observe (every read, once), plan (a pure
 * function of spec, node settings and observation: every action as data), apply (each action in the
 * order of the node's role's table, a failing part reported while the pass goes on with the others),
 * report. The steps and their order are the role's table (pass-roles.c); this header is what the CLI
 * sees of it. `protokube plan` prints the plan of the same observation and applies nothing. */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "daemon/node-settings.h"
#include "daemon/report.h"
#include "spec/spec.h"

typedef struct Pass Pass;

/* Loads the spec and opens its volume provider. Spec errors are logged one per line (FILE:LINE:COL). */
int pass_new(const char *spec_path, const NodeSettings *node, Pass **ret);
Pass *pass_free(Pass *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pass *, pass_free)

/* SIGHUP: loads the spec again; on any error keeps the old one (and says so). */
int pass_reload(Pass *p);

/* Runs one pass (observe, plan, apply) and fills the report. */
void pass_run(Pass *p, PassReport *rep);

/* `pki renew`: the next pass reissues every certificate of the node. */
void pass_renew_all(Pass *p);

/* For the one-shot commands (`once`): waits, at most timeout, until the DNS changes the pass submitted are
 * served by all the provider's name servers (Route 53: INSYNC). 0 when none is left; PK_ETIMEOUT, or the
 * provider's error; logged. */
int pass_dns_wait(Pass *p, usec_t timeout);
/* The DNS changes still propagating, and the oldest one's id (NULL when none). */
size_t pass_dns_pending(const Pass *p, const char **ret_oldest_id);

const ClusterSpec *pass_spec(const Pass *p);
/* The node's certificates' directory; NULL when the spec names no state store (none are managed). */
const char *pass_pki_dir(const Pass *p);
/* What wakes a `run` before its timer: the provider's paths (its pool's metadata, an attached volume's
 * device link) and /dev. Caller frees. */
int pass_watch_paths(const Pass *p, char ***ret);

/* For `plan`: observe, plan, print every step's part of the plan (the pivot's next step included). Logs
 * what failed; a provider that cannot be observed is an error here. */
int pass_print_plan(Pass *p, FILE *out);
/* For `join plan` (a worker): observe and plan, then each stage of the join in order (dns, token, pin, csr,
 * node) and the first that blocks. 0: the Node is Ready; PK_EWAITING: a stage waits; < 0: one is refused
 * or failed (logged), or the role does not join (-EOPNOTSUPP, logged). */
int pass_print_join(Pass *p, FILE *out);
/* For `volumes`: observe and plan, then show(mount root, the volumes observed, their plan). Logs what
 * failed (a provider that cannot be observed is an error here). */
typedef struct VolumesObservation VolumesObservation;
typedef struct VolumesPlan VolumesPlan;
int pass_show_volumes(Pass *p, void (*show)(const char *mount_root, const VolumesObservation *o,
                                            const VolumesPlan *plan));
/* For `pki show`: the keystore (each entry's fingerprint and expiry, or "absent") and every pair of the
 * node's layout (subject, SANs, issuer, expiry, and what the next pass would do with it). -EINVAL (logged)
 * when the spec names no state store; < 0 (logged) when the keystore could not be read: the pairs print
 * anyway. */
int pass_print_certificates(Pass *p, FILE *out);
/* For `pki show` and `pki renew` (verb: "pki show"): 0 when the node's role keeps certificates, else
 * -EOPNOTSUPP, logged naming the verb and the role. */
int pass_check_certificates(const Pass *p, const char *verb);

/* The pass's volume provider, from the spec's cloud and the node's settings; logs what failed. */
typedef struct VolumeProvider VolumeProvider;
int pass_open_volume_provider(const ClusterSpec *spec, const NodeSettings *node, VolumeProvider **ret);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Generations of a directory's contents behind one symlink, replaced as a whole (a certificate pair and
 * its key, a checkpoint):
 *
 *     LINK -> PREFIX<16 hex of CLOCK_REALTIME ns>.<8 hex>     the current generation
 *     PREFIX<...>/                                            generations (names sort by time)
 *     FRESH<8 hex>/                                           one being named by its writer
 *
 * A writer creates its generation (generation_create: held by a flock until the writer closes it, and
 * named only once held), fills it, points LINK at it (symlink_replace_at, basic/fileio.h), then sweeps
 * what it replaced (generation_sweep). Two writers of one LINK never remove one another's generation: a
 * sweep removes only generations named no later than the one it replaced, held by no writer, and not
 * current; a generation becomes current only through its writer, which holds it until then. Readers
 * resolve LINK once and read within that generation. */

#include <stdbool.h>
#include <sys/types.h>

#define GENERATION_NAME_MAX 128

/* Whether name is one of PREFIX's generations: PREFIX, 16 lower-case hex digits, optionally "." and 8 more
 * (a name without them was made by a version that named generations at random). */
bool generation_name_is_valid(const char *name, const char *prefix);

/* A new generation directory (mode) in dfd, created as fresh<8 hex>, locked, then renamed to a generation
 * name of prefix (into ret_name). Returns the directory's fd, which holds the lock: the caller keeps it
 * until LINK names the generation (or it is removed), then closes it. */
int generation_create(int dfd, const char *prefix, const char *fresh, mode_t mode,
                      char ret_name[static GENERATION_NAME_MAX]);

/* After LINK stopped naming replaced (a generation name; NULL or "": nothing is known to be older, only
 * abandoned fresh ones go): removes every generation of prefix named no later than replaced, and every
 * fresh one, that no writer holds, that LINK does not name now, and that is not own. A removal is
 * bounded (rm_rf_at). Errors of a removal or of reading dfd are returned; the current generation is never
 * touched. */
int generation_sweep(int dfd, const char *link, const char *prefix, const char *fresh, const char *own,
                     const char *replaced);

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A certificate and its key on the node, as a pair that is replaced as one. In a directory DIR (0700), the
 * pair NAME is:
 *
 *     DIR/NAME.crt -> .NAME.current/NAME.crt      (0644 behind the link)
 *     DIR/NAME.key -> .NAME.current/NAME.key      (0600 behind the link)
 *     DIR/.NAME.current -> .NAME.<16 hex>         (one generation: a directory 0700 holding both files)
 *
 * A new pair is written into a new generation directory and made current by renaming one symlink over
 * .NAME.current (see pki-files.c for why). Components are given DIR/NAME.crt and DIR/NAME.key; a container
 * must mount DIR (a bind mount of a single file pins the old inode). One writer per pair at a time (the
 * pass); readers may run at any time. Library code: never logs. */

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "pki/pki-plan.h"

#define PKI_PAIR_NAME_MAX 64

/* [a-z0-9][a-z0-9-]*, at most 64: a file name component with no dots, so generations never collide. */
bool pki_pair_name_is_valid(const char *name);

/* Writes the pair (PEM texts) and makes it current; creates DIR (0700) if needed and tightens an existing
 * DIR to 0700. The previous generation is removed. -EINVAL for a bad name. */
int pki_pair_write(const char *dir, const char *name, const char *cert_pem, size_t cert_len,
                   const char *key_pem, size_t key_len);

/* Reads the current pair: both files of one generation, never a mix. -ENOENT if there is none. The key
 * buffer holds a secret: the caller erases it (erase_and_free). Either ret may be NULL. */
int pki_pair_read(const char *dir, const char *name, char **ret_cert_pem, size_t *ret_cert_len,
                  char **ret_key_pem, size_t *ret_key_len);

/* The same with OpenSSL objects: encodes/decodes and erases the key's PEM. Load: PK_EMALFORMED if a file
 * does not parse, -EKEYREJECTED if the key is not the certificate's. Caller frees. */
int pki_pair_save(const char *dir, const char *name, X509 *cert, EVP_PKEY *key);
int pki_pair_load(const char *dir, const char *name, X509 **ret_cert, EVP_PKEY **ret_key);

/* Removes the pair (links first, so a reader sees it missing rather than half there). 0 if it was absent. */
int pki_pair_remove(const char *dir, const char *name);

/* Observes the pair for pki_plan_leaf(): missing, unreadable, or present with its validity, SANs and
 * whether it is signed by ca. Errors only for a bad name and allocation failures. pki_leaf_state_done(). */
int pki_leaf_observe(const char *dir, const char *name, X509 *ca, PkiLeafState *ret);

/* What pki_leaf_observe_cached() decoded, kept across calls (a daemon's passes): decoding the PEM of every
 * pair is most of an idle pass's CPU. An entry is used while the pair's identity is the one it was
 * decoded from (the current generation's name and, for both files, device, inode, size, mtime and ctime in
 * nanoseconds), if those files were older than 2 s then (file times are coarse: a same-size edit within
 * one tick keeps them all). Otherwise the pair is read, and the entry is used if the SHA-256 of its bytes is
 * the one decoded: a pair written moments ago (a new master's first passes) is decoded once, not every pass.
 * A renewal, an edit in place: decoded anew. It holds certificates, the result of the key check and the
 * digest, never a key. */
typedef struct PkiPairCache PkiPairCache;
int pki_pair_cache_new(PkiPairCache **ret);
PkiPairCache *pki_pair_cache_free(PkiPairCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(PkiPairCache *, pki_pair_cache_free)
/* Calls served from the cache and calls that decoded the files (for tests and diagnostics). */
void pki_pair_cache_stats(const PkiPairCache *c, unsigned *ret_hits, unsigned *ret_misses);

/* pki_leaf_observe() through c (NULL: no cache). */
int pki_leaf_observe_cached(PkiPairCache *c, const char *dir, const char *name, X509 *ca, PkiLeafState *ret);

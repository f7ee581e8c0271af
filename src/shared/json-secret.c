/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/json-secret.h"

#include <malloc.h>
#include <pthread.h>
#include <string.h>

static pthread_mutex_t erasing_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned erasing_users;
static json_malloc_t saved_malloc;
static json_free_t saved_free;

static void free_erasing(void *p) {
        if (!p)
                return;
        explicit_bzero(p, malloc_usable_size(p));
        (saved_free ?: free)(p);
}

static void erasing_begin(void) {
        pthread_mutex_lock(&erasing_lock);
        if (erasing_users++ == 0) {
                json_get_alloc_funcs(&saved_malloc, &saved_free);
                json_set_alloc_funcs(saved_malloc, free_erasing);
        }
        pthread_mutex_unlock(&erasing_lock);
}

static void erasing_end(void) {
        pthread_mutex_lock(&erasing_lock);
        if (--erasing_users == 0)
                json_set_alloc_funcs(saved_malloc, saved_free);
        pthread_mutex_unlock(&erasing_lock);
}

json_t *json_loadb_secret(const char *buffer, size_t len, size_t flags, json_error_t *error) {
        erasing_begin();
        json_t *j = json_loadb(buffer, len, flags, error);
        erasing_end();
        return j;
}

void json_erase_values(json_t *j) {
        const char *key;
        json_t *v;
        size_t i;
        if (json_is_string(j))
                explicit_bzero((char *)json_string_value(j), json_string_length(j));
        else if (json_is_object(j)) {
                json_object_foreach(j, key, v) {
                        json_erase_values(v);
                }
        } else if (json_is_array(j)) {
                json_array_foreach(j, i, v) {
                        json_erase_values(v);
                }
        }
}

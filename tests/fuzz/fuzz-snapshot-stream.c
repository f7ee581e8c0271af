/* SPDX-License-Identifier: Apache-2.0 */
/* etcd's snapshot stream decoder: whatever the gateway (or something posing as it) sends, fed in two
 * pieces split at the first byte's value, ends in success or an error, never a crash, and writes no more
 * bytes than base64 can carry. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backup/backup-snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int fd = memfd_create("fuzz-snapshot", MFD_CLOEXEC);
        BackupStream *s = NULL;
        char *err = NULL;
        uint64_t written = 0;
        if (fd < 0 || backup_stream_new(fd, &s) < 0)
                abort();
        size_t cut = size > 0 ? data[0] % (size + 1) : 0;
        int r = backup_stream_feed(s, data, cut, &err);
        if (r >= 0)
                r = backup_stream_feed(s, data + cut, size - cut, &err);
        if (r >= 0)
                r = backup_stream_finish(s, &written, &err);
        if (r >= 0 && written > size)
                abort();
        if (r < 0 && !err)
                abort(); /* every failure says why */
        free(err);
        backup_stream_free(s);
        close(fd);
        return 0;
}

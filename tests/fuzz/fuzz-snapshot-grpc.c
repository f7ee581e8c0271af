/* SPDX-License-Identifier: Apache-2.0 */
/* etcd's gRPC snapshot stream decoder: whatever a server (or something posing as one) sends, fed in three
 * pieces split where its first two bytes say, ends in success or an error, never a crash; it writes no
 * more bytes than it was given, and every failure says why. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backup/snapshot-grpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int fd = memfd_create("fuzz-snapshot", MFD_CLOEXEC);
        SnapshotGrpc d;
        char *err = NULL;
        uint64_t written = 0;
        if (fd < 0)
                abort();
        snapshot_grpc_init(&d, fd);
        size_t a = size > 0 ? data[0] % (size + 1) : 0, b = size > 1 ? data[1] % (size + 1) : 0;
        size_t cut1 = a < b ? a : b, cut2 = a < b ? b : a;
        int r = snapshot_grpc_feed(&d, data, cut1, &err);
        if (r >= 0)
                r = snapshot_grpc_feed(&d, data + cut1, cut2 - cut1, &err);
        if (r >= 0)
                r = snapshot_grpc_feed(&d, data + cut2, size - cut2, &err);
        if (r >= 0)
                r = snapshot_grpc_finish(&d, &written, &err);
        if (r >= 0 && (written > size || (uint64_t)lseek(fd, 0, SEEK_CUR) != written))
                abort();
        if (r < 0 && !err)
                abort();
        free(err);
        close(fd);
        return 0;
}

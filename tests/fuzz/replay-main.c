/* SPDX-License-Identifier: Apache-2.0 */
/* Replays every file of a corpus directory through LLVMFuzzerTestOneInput, for the plain build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
        unsigned n = 0;
        if (argc != 2) {
                fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
                return 2;
        }
        DIR *d = opendir(argv[1]);
        if (!d) {
                fprintf(stderr, "cannot open corpus '%s'\n", argv[1]);
                return 1;
        }
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *path = strjoin(argv[1], "/", de->d_name), *data = NULL;
                size_t len;
                if (!path || read_full_file(path, 1 << 20, &data, &len) < 0) {
                        fprintf(stderr, "cannot read '%s'\n", de->d_name);
                        closedir(d);
                        return 1;
                }
                LLVMFuzzerTestOneInput((const uint8_t *)data, len);
                n++;
        }
        closedir(d);
        if (n == 0) {
                fprintf(stderr, "corpus '%s' is empty\n", argv[1]);
                return 1;
        }
        printf("replayed %u inputs\n", n);
        return 0;
}

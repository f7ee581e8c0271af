/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/machine-id.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"

bool machine_id_valid(const char *s) {
        bool nonzero = false;
        if (!s || strlen(s) != MACHINE_ID_LEN)
                return false;
        for (size_t i = 0; i < MACHINE_ID_LEN; i++) {
                char c = s[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return false;
                nonzero = nonzero || c != '0';
        }
        /* all zeros is sd_id128 "null": not an identity */
        return nonzero;
}

int machine_id_read(const char *path, char **ret) {
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t len;
        int r;

        /* O_NONBLOCK: a FIFO planted at the path must not hang the daemon; fstat then refuses it */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return PK_EMALFORMED;
        r = read_full_fd(fd, 64, &text, &len);
        if (r == -EFBIG)
                return PK_EMALFORMED;
        if (r < 0)
                return r;
        if (len > 0 && text[len - 1] == '\n')
                text[--len] = 0;
        if (strlen(text) != len || !machine_id_valid(text))
                return PK_EMALFORMED;
        *ret = TAKE_PTR(text);
        return 0;
}

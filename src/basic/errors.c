/* SPDX-License-Identifier: Apache-2.0 */
#include "errors.h"

#include <string.h>

#include "macro.h"

const char *pk_strerror(int r) {
        static const char *const table[] = {
                [-PK_EMALFORMED - 1000] = "malformed input",
                [-PK_ETSIG - 1000] = "TSIG verification failed",
                [-PK_EDNS_RCODE - 1000] = "DNS server returned an error",
                [-PK_ECLOUD - 1000] = "cloud API returned an error",
                [-PK_ETIMEOUT - 1000] = "timed out",
                [-PK_ETOOBIG - 1000] = "input exceeds its size limit",
                [-PK_ESPEC - 1000] = "invalid cluster spec",
                [-PK_ENOTBLANK - 1000] = "device is not blank",
                [-PK_ECHILD - 1000] = "child process failed",
                [-PK_ECONFLICT - 1000] = "concurrent modification",
                [-PK_EWAITING - 1000] = "waiting",
                [-PK_EETCD - 1000] = "etcd returned an error",
                [-PK_EGRPC - 1000] = "gRPC call failed",
        };
        if (r > 0)
                r = -r;
        if (r <= -1000 && r >= PK_ERROR_MIN && table[-r - 1000])
                return table[-r - 1000];
        return strerror(-r);
}

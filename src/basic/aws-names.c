/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/aws-names.h"

#include <string.h>

bool aws_bucket_name_valid(const char *b, size_t len) {
        if (!b || len < 3 || len > 63 || b[0] == '.' || b[0] == '-' || b[len - 1] == '.' ||
            b[len - 1] == '-')
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
                      b[i] == '-'))
                        return false;
        return true;
}

bool aws_region_name_valid(const char *region) {
        size_t l = region ? strlen(region) : 0;
        if (l == 0 || l > 64 || region[0] == '-' || region[l - 1] == '-')
                return false;
        return strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") == l;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "aws/credentials.h"

#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"

#define CREDENTIALS_FILE_MAX (256U * 1024)
#define CREDENTIAL_MAX       4096 /* session tokens run to ~1-2 KiB */

AwsCredentials *aws_credentials_free(AwsCredentials *c) {
        if (!c)
                return NULL;
        free(c->access_key_id);
        string_free_erase(c->secret_access_key);
        string_free_erase(c->session_token);
        explicit_bzero(c, sizeof(*c));
        free(c);
        return NULL;
}

static bool credential_ok(const char *s) {
        return !isempty(s) && strlen(s) <= CREDENTIAL_MAX && !string_has_cc(s);
}

int aws_credentials_new(const char *access_key_id, const char *secret_access_key, const char *session_token,
                        AwsCredentials **ret) {
        if (!credential_ok(access_key_id) || !credential_ok(secret_access_key) ||
            (session_token && *session_token && !credential_ok(session_token)))
                return -EINVAL;
        _cleanup_(aws_credentials_freep) AwsCredentials *c = new0(AwsCredentials, 1);
        if (!c)
                return -ENOMEM;
        c->expiration = USEC_INFINITY;
        c->access_key_id = strdup(access_key_id);
        c->secret_access_key = strdup(secret_access_key);
        if (!isempty(session_token))
                c->session_token = strdup(session_token);
        if (!c->access_key_id || !c->secret_access_key || (!isempty(session_token) && !c->session_token))
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int aws_credentials_from_env(AwsCredentials **ret) {
        const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
        AwsCredentials *c;
        if (isempty(id) || isempty(secret))
                return -ENOENT;
        int r = aws_credentials_new(id, secret, getenv("AWS_SESSION_TOKEN"), &c);
        if (r < 0)
                return r;
        c->source = "environment";
        *ret = c;
        return 0;
}

static char *strip(char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                s[--n] = 0;
        return s;
}

/* The shared credentials file is INI: "[profile]" sections of "key = value" lines, '#' and ';' comments. */
static int parse_credentials_ini(char *text, const char *profile, AwsCredentials **ret) {
        const char *id = NULL, *secret = NULL, *token = NULL;
        bool in_profile = false, found = false;
        for (char *line = text, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char *l = strip(line);
                if (*l == 0 || *l == '#' || *l == ';')
                        continue;
                if (*l == '[') {
                        char *e = strchr(l, ']');
                        if (!e)
                                return PK_EMALFORMED;
                        *e = 0;
                        in_profile = streq(strip(l + 1), profile);
                        found = found || in_profile;
                        continue;
                }
                if (!in_profile)
                        continue;
                char *eq = strchr(l, '=');
                if (!eq)
                        return PK_EMALFORMED;
                *eq = 0;
                const char *k = strip(l), *v = strip(eq + 1);
                if (streq(k, "aws_access_key_id"))
                        id = v;
                else if (streq(k, "aws_secret_access_key"))
                        secret = v;
                else if (streq(k, "aws_session_token"))
                        token = v;
        }
        if (!found)
                return -ENOENT;
        if (isempty(id) || isempty(secret))
                return PK_EMALFORMED;
        AwsCredentials *c;
        int r = aws_credentials_new(id, secret, token, &c);
        if (r < 0)
                return r == -EINVAL ? PK_EMALFORMED : r;
        c->source = "shared-credentials-file";
        *ret = c;
        return 0;
}

int aws_credentials_from_file(const char *path, const char *profile, AwsCredentials **ret) {
        _cleanup_free_ char *def = NULL;
        char *text = NULL;
        size_t len = 0;
        int r;

        if (!path)
                path = getenv("AWS_SHARED_CREDENTIALS_FILE");
        if (isempty(path)) {
                const char *home = getenv("HOME");
                if (isempty(home))
                        return -ENOENT;
                def = strjoin(home, "/.aws/credentials");
                if (!def)
                        return -ENOMEM;
                path = def;
        }
        if (!profile)
                profile = getenv("AWS_PROFILE");
        if (isempty(profile))
                profile = "default";

        r = read_full_file_secret(path, CREDENTIALS_FILE_MAX, &text, &len);
        if (r < 0)
                return r == -EFBIG ? PK_ETOOBIG : r;
        r = parse_credentials_ini(text, profile, ret);
        erase_and_free(text, len);
        return r;
}

bool aws_credentials_expiring(const AwsCredentials *c, usec_t margin) {
        if (!c)
                return true;
        if (c->expiration == USEC_INFINITY)
                return false;
        usec_t t = now(CLOCK_REALTIME);
        return t >= c->expiration || c->expiration - t <= margin;
}

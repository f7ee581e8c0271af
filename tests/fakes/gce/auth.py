# SPDX-License-Identifier: Apache-2.0
"""Google's OAuth 2.0 for service accounts, as the double serves it: service-account keys (RSA-2048, PKCS#8,
in the JSON file the IAM console gives), the token endpoint's JWT-bearer grant verified as Google verifies it
(RS256 over the account's current key, iss, aud, iat/exp, scope), and the bearer check every API call goes
through (an unexpired token the double minted, with a scope that covers the API)."""
import base64
import binascii
import json
import secrets
import time
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from common import STATE, GoogleError

AUTH = "https://www.googleapis.com/auth/"
# API -> (scopes that cover every call, scopes that cover its reads only)
API_SCOPES = {
    "compute": (("cloud-platform", "compute"), ("compute.readonly", "cloud-platform.read-only")),
    "dns": (("cloud-platform", "ndev.clouddns.readwrite"), ("ndev.clouddns.readonly", "cloud-platform.read-only")),
    "storage": (("cloud-platform", "devstorage.read_write", "devstorage.full_control"),
                ("devstorage.read_only", "cloud-platform.read-only")),
}
KNOWN_SCOPES = sorted({AUTH + s for rw, ro in API_SCOPES.values() for s in rw + ro} | {AUTH + "userinfo.email"})
JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SKEW = 300  # seconds of clock difference the token endpoint allows in iat
TIMEFRAME = ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check "
             "your iat and exp values in the JWT claim.")
INVALID_CREDS = ("Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                 "other valid authentication credential. See "
                 "https://developers.google.com/identity/sign-in/web/devconsole-project.")


class OAuthError(Exception):
    """The token endpoint's errors: RFC 6749's {"error", "error_description"}, not Google's API shape."""

    def __init__(self, status, error, description):
        super().__init__(description)
        self.status, self.error, self.description = status, error, description


def add_account(email, cfg):
    with STATE.lock:
        acct = STATE.accounts.setdefault(email, {"key": None, "key_id": None, "pem": None,
                                                 "client_id": str(10 ** 20 + int(secrets.token_hex(8), 16))})
        acct["scopes"] = list(cfg.get("scopes", KNOWN_SCOPES))


def key_json(email, base_url, rotate):
    """The JSON key file of email, made on first use; rotate: a new key, and the old one stops working."""
    with STATE.lock:
        acct = STATE.accounts.get(email)
        if acct is None:
            raise GoogleError(404, f"Service account {email} does not exist.")
        if acct["key"] is None or rotate:
            acct["key"] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            acct["key_id"] = secrets.token_hex(20)
            acct["pem"] = acct["key"].private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()).decode()
        return {"type": "service_account", "project_id": STATE.project, "private_key_id": acct["key_id"],
                "private_key": acct["pem"], "client_email": email, "client_id": acct["client_id"],
                "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": base_url + "/token",
                "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
                "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/"
                                        + urllib.parse.quote(email, safe=""),
                "universe_domain": "googleapis.com"}


def mint(email, scopes, ttl, prefix):
    """A new access token of email with scopes, valid ttl seconds. Caller holds the lock."""
    tok = prefix + secrets.token_urlsafe(64)
    now = time.time()
    STATE.tokens[tok] = {"email": email, "scopes": list(scopes), "expires": now + ttl}
    for t in [t for t, r in STATE.tokens.items() if r["expires"] < now - 3600]:
        del STATE.tokens[t]  # long expired: keep the table small
    return tok


def b64url(seg):
    """A JWT segment: base64url without padding; anything else is malformed."""
    if not seg or "=" in seg or len(seg) % 4 == 1 or seg.strip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                                "0123456789-_"):
        raise ValueError("bad segment")
    return base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))


def grant(req):
    """POST /token. Returns the token response dict; raises OAuthError as Google's endpoint answers."""
    ctype = req.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if req.method != "POST" or ctype != "application/x-www-form-urlencoded":
        raise OAuthError(400, "invalid_request", "The token endpoint takes a POST of "
                                                 "application/x-www-form-urlencoded.")
    try:
        form = dict(urllib.parse.parse_qsl(req.body.decode("utf-8"), keep_blank_values=True, errors="strict"))
    except (UnicodeDecodeError, ValueError):
        raise OAuthError(400, "invalid_request", "The request body is not a form.")
    if form.get("grant_type") != JWT_GRANT:
        raise OAuthError(400, "unsupported_grant_type", "Invalid grant_type: " + form.get("grant_type", ""))
    assertion = form.get("assertion")
    if not assertion:
        raise OAuthError(400, "invalid_request", "Missing required parameter: assertion")
    parts = assertion.split(".")
    try:
        if len(parts) != 3:
            raise ValueError("segments")
        header, claims, sig = json.loads(b64url(parts[0])), json.loads(b64url(parts[1])), b64url(parts[2])
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise ValueError("not objects")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise OAuthError(400, "invalid_grant", "Invalid JWT: the assertion is not three base64url segments "
                                               "without padding.")
    if header.get("alg") != "RS256" or header.get("typ", "JWT") != "JWT":
        raise OAuthError(400, "invalid_grant", "Invalid JWT Signature.")
    now = time.time()
    with STATE.lock:
        acct = STATE.accounts.get(claims.get("iss")) if isinstance(claims.get("iss"), str) else None
        if acct is None or acct["key"] is None or header.get("kid") != acct["key_id"]:
            raise OAuthError(401, "invalid_client", "The OAuth client was not found.")
        public, allowed = acct["key"].public_key(), list(acct["scopes"])
        aud = req.base_url + "/token"
        ttl = STATE.settings["token_ttl"]
    try:
        public.verify(sig, (parts[0] + "." + parts[1]).encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise OAuthError(400, "invalid_grant", "Invalid JWT Signature.")
    if claims.get("aud") != aud:
        raise OAuthError(400, "invalid_grant", f"Invalid JWT: Failed audience check. The right audience is {aud}")
    iat, exp = claims.get("iat"), claims.get("exp")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (iat, exp)) or abs(iat - now) > SKEW \
            or exp <= now or exp <= iat or exp - iat > 3600:
        raise OAuthError(400, "invalid_grant", TIMEFRAME)
    scopes = claims.get("scope", "").split(" ") if isinstance(claims.get("scope"), str) else [""]
    if not scopes or any(s not in allowed for s in scopes):
        raise OAuthError(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
    with STATE.lock:
        tok = mint(claims["iss"], scopes, ttl, "ya29.")
        STATE.counters["token_grants"] += 1
    return {"access_token": tok, "expires_in": ttl, "token_type": "Bearer"}


def bearer(req, api):
    """The token record of the request's bearer token; 401 without an unexpired token of ours, 403 when none
    of its scopes covers the API (for the method)."""
    authz = req.headers.get("Authorization", "")
    scheme, _, tok = authz.partition(" ")
    challenge = {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"'}
    with STATE.lock:
        rec = STATE.tokens.get(tok.strip()) if scheme.lower() == "bearer" else None
        if rec is None or rec["expires"] <= time.time():
            STATE.counters["auth_failures"] += 1
            raise GoogleError(401, INVALID_CREDS, "authError", challenge)
        rw, ro = API_SCOPES[api]
        covering = {AUTH + s for s in rw + (ro if req.method == "GET" else ())}
        if not covering & set(rec["scopes"]):
            wanted = " ".join(AUTH + s for s in rw)
            raise GoogleError(403, "Request had insufficient authentication scopes.", "insufficientPermissions",
                              {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/", '
                                                   f'error="insufficient_scope", scope="{wanted}"'})
        return dict(rec)

/* jwt.h - extracts the revocation key (iss, jti) from a JWT without verifying it */
#ifndef REVCHECK_JWT_H
#define REVCHECK_JWT_H

#include <stddef.h>

#include "revkey.h"

#define JWT_MAX_LEN 16384

/*
 * Decodes the payload of a compact JWS (header.payload.signature,
 * base64url without padding) and sets k to (iss or "default", jti). The
 * signature is not checked: this is a revocation lookup, not
 * authentication. Returns 0, or -1 with err (malformed token, bad base64,
 * payload not a JSON object, no string "jti", jti empty or too long, iss
 * not a valid scope).
 */
int jwt_revkey(struct revkey *k, const char *token, size_t len, char *err,
    size_t errlen);

#endif

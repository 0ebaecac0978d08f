/* jwt.c - extracts the revocation key (iss, jti) from a JWT without verifying it */
#include "jwt.h"
#include "util.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Value of a base64url character, or -1 for anything else (padding too). */
static int
b64url_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/*
 * Decodes unpadded base64url text into out (at least len * 3 / 4 bytes).
 * Rejects any character outside the alphabet, a length that leaves one
 * dangling character, and non-zero unused bits (so each byte string has
 * exactly one encoding). Returns the decoded length, or -1 with *bad set
 * to the offending position.
 */
static long
b64url_decode(unsigned char *out, const char *in, size_t len, size_t *bad)
{
	uint32_t acc = 0;
	size_t i, o = 0;
	int v, bits = 0;

	if (len % 4 == 1) {
		*bad = len - 1;
		return -1;
	}
	for (i = 0; i < len; i++) {
		if ((v = b64url_val((unsigned char)in[i])) < 0) {
			*bad = i;
			return -1;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) {
		*bad = len - 1;
		return -1;
	}
	return (long)o;
}

int
jwt_revkey(struct revkey *k, const char *token, size_t len, char *err,
    size_t errlen)
{
	const char *d1, *d2, *pay, *scope = REVKEY_DEFAULT_SCOPE, *why;
	const cJSON *it, *jti = NULL, *iss = NULL;
	unsigned char *buf = NULL, hdr[JWT_MAX_LEN];
	cJSON *root = NULL;
	size_t plen, hlen, slen, jlen, bad;
	long n;
	int rc = -1;

	assert(k != NULL && (token != NULL || len == 0));
	if (len == 0) {
		snprintf(err, errlen, "empty token");
		return -1;
	}
	if (len > JWT_MAX_LEN) {
		snprintf(err, errlen, "token is %zu bytes, over the limit of %d",
		    len, JWT_MAX_LEN);
		return -1;
	}
	if ((d1 = memchr(token, '.', len)) == NULL ||
	    (d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token))) == NULL) {
		snprintf(err, errlen, "malformed token: not header.payload."
		    "signature");
		return -1;
	}
	if (memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)) != NULL) {
		snprintf(err, errlen, "malformed token: more than three parts "
		    "(encrypted JWE tokens are not supported)");
		return -1;
	}
	hlen = (size_t)(d1 - token);
	pay = d1 + 1;
	plen = (size_t)(d2 - pay);
	slen = len - (size_t)(d2 + 1 - token);
	if (hlen == 0 || plen == 0) {
		snprintf(err, errlen, "malformed token: empty %s",
		    hlen == 0 ? "header" : "payload");
		return -1;
	}
	/* The header and signature are not used, but must be base64url. */
	if (b64url_decode(hdr, token, hlen, &bad) < 0) {
		snprintf(err, errlen, "bad base64url in header at offset %zu",
		    bad);
		return -1;
	}
	if (b64url_decode(hdr, d2 + 1, slen, &bad) < 0) {
		snprintf(err, errlen, "bad base64url in signature at offset %zu",
		    (size_t)(d2 + 1 - token) + bad);
		return -1;
	}
	if ((buf = malloc(plen / 4 * 3 + 4)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((n = b64url_decode(buf, pay, plen, &bad)) < 0) {
		snprintf(err, errlen, "bad base64url in payload at offset %zu",
		    (size_t)(pay - token) + bad);
		goto out;
	}
	buf[n] = '\0';
	if (memchr(buf, '\0', (size_t)n) != NULL) {
		snprintf(err, errlen, "payload is not JSON (NUL byte)");
		goto out;
	}
	if ((why = util_json_refused((const char *)buf, (size_t)n)) != NULL) {
		snprintf(err, errlen, "payload refused: %s", why);
		goto out;
	}
	root = cJSON_ParseWithLengthOpts((const char *)buf, (size_t)n + 1, NULL,
	    1);
	if (root == NULL || !cJSON_IsObject(root)) {
		snprintf(err, errlen, "payload is not a JSON object");
		goto out;
	}
	/* A repeated claim is refused: parsers disagree on which one wins. */
	for (it = root->child; it != NULL; it = it->next) {
		if (it->string == NULL)
			continue;
		if (strcmp(it->string, "jti") == 0) {
			if (jti != NULL) {
				snprintf(err, errlen, "duplicate \"jti\" claim");
				goto out;
			}
			jti = it;
		} else if (strcmp(it->string, "iss") == 0) {
			if (iss != NULL) {
				snprintf(err, errlen, "duplicate \"iss\" claim");
				goto out;
			}
			iss = it;
		}
	}
	if (jti == NULL || !cJSON_IsString(jti)) {
		snprintf(err, errlen, jti == NULL ? "no \"jti\" claim" :
		    "\"jti\" is not a string");
		goto out;
	}
	jlen = strlen(jti->valuestring);
	if (jlen == 0 || jlen > REVKEY_ID_MAX) {
		snprintf(err, errlen, "\"jti\" must be 1 to %d bytes",
		    REVKEY_ID_MAX);
		goto out;
	}
	if (iss != NULL) {
		if (!cJSON_IsString(iss)) {
			snprintf(err, errlen, "\"iss\" is not a string");
			goto out;
		}
		scope = iss->valuestring;
		/* Token scopes never enter the X.509 issuer namespace. */
		if (!revkey_scope_valid(scope, strlen(scope)) ||
		    revkey_scope_is_x509(scope)) {
			snprintf(err, errlen, "\"iss\" is not a valid scope "
			    "(1-%d printable ASCII characters without spaces, "
			    "not starting with \"%s\")", REVKEY_SCOPE_MAX,
			    REVKEY_X509_PREFIX);
			goto out;
		}
	}
	if (revkey_set(k, scope, jti->valuestring, jlen) != 0) {
		snprintf(err, errlen, "cannot form the key");
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	free(buf);
	return rc;
}

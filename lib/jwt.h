/* jwt.h - compact JWS tokens: parsing, signature and claim verification, the revocation key */
#ifndef REVCHECK_JWT_H
#define REVCHECK_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "jwks.h"
#include "revkey.h"

#define JWT_MAX_LEN	16384
#define JWT_MAX_AUD	16	/* audiences one issuer may accept */
#define JWT_HS_MIN	32	/* bytes of an HS secret, at least */
/*
 * The longest leeway (seconds) revcheckd allows an issuer: a token is
 * accepted up to exp + leeway, so its revocation must outlive its exp by
 * more (filterbuild's --expiry-grace, 10 minutes by default).
 */
#define JWT_LEEWAY_MAX	300

/*
 * Why a token is not valid. Each has a stable name (jwt_verdict_str)
 * that revcheckd returns in X-Revcheck-Status and docs/API.md lists.
 */
enum jwt_verdict {
	JWT_VALID = 0,
	JWT_MALFORMED,		/* malformed_token */
	JWT_UNTRUSTED_ISSUER,	/* untrusted_issuer */
	JWT_ALG_REFUSED,	/* algorithm_refused: none, unknown, not allowed */
	JWT_CRIT_REFUSED,	/* unknown_critical_header */
	JWT_UNKNOWN_KEY,	/* unknown_key: no key for kid / alg */
	JWT_BAD_SIGNATURE,	/* bad_signature */
	JWT_MISSING_CLAIM,	/* missing_claim: no exp, or a bad type */
	JWT_EXPIRED,		/* expired */
	JWT_NOT_YET_VALID,	/* not_yet_valid: nbf, or iat in the future */
	JWT_WRONG_AUDIENCE,	/* wrong_audience */
	JWT_KEYS_UNAVAILABLE,	/* keys_unavailable: the issuer's set is too old */
	JWT_VERDICT_COUNT
};

/* A parsed token. The strings point into header/claims. */
struct jwt {
	cJSON		*header;
	cJSON		*claims;
	const char	*token;		/* the caller's bytes, not owned */
	size_t		 signed_len;	/* bytes of "header.payload" */
	unsigned char	*sig;
	size_t		 sig_len;
	const char	*alg;		/* header "alg", NULL when absent */
	const char	*kid;		/* header "kid", NULL when absent */
	const char	*iss;		/* claim "iss", NULL when absent */
	bool		 crit;		/* header has "crit" */
};

/*
 * What an issuer accepts. All pointers are borrowed; keys may be NULL
 * (the issuer's set is not available), which refuses every asymmetric
 * token with JWT_KEYS_UNAVAILABLE.
 */
struct jwt_issuer {
	const char		*issuer;
	const struct jwks	*keys;
	const char *const	*audiences;
	size_t			 naud;
	uint32_t		 algs;		/* JWA_BIT()s allowed */
	int64_t			 leeway;	/* seconds of clock skew */
	const unsigned char	*hs_secret;	/* NULL: no HS algorithm */
	size_t			 hs_len;
};

/*
 * Splits and decodes a compact JWS (header.payload.signature, base64url
 * without padding): header and payload must be valid UTF-8 (strict: no
 * overlong form, surrogate, code point above U+10FFFF or cut sequence)
 * (cJSON decodes a \u escape to valid UTF-8 or refuses it), and JSON
 * objects with no repeated member that revcheck reads. A part that is not
 * is refused as malformed. Does not verify anything; token
 * must outlive t. Returns 0 with t filled (release with jwt_free), or -1
 * with err (safe to show: never the token) and t empty.
 */
int jwt_parse(struct jwt *t, const char *token, size_t len, char *err,
    size_t errlen);

/*
 * jwt_parse() of the payload alone: the three parts are split and the
 * claims decoded as jwt_parse() does (t->claims, t->iss), the header and
 * signature left undecoded (t->header NULL, t->alg and t->kid NULL). For
 * a token whose exact bytes were verified before (a verified-token cache
 * hit), where only the claims are read again. Returns as jwt_parse().
 */
int jwt_parse_claims(struct jwt *t, const char *token, size_t len,
    char *err, size_t errlen);

/* Releases what t owns. Safe on a zeroed or freed struct. */
void jwt_free(struct jwt *t);

/*
 * The revocation key of a parsed token: (iss or "default", jti).
 * Returns 0, or -1 with err (no string jti, jti empty or too long, iss
 * not a valid scope).
 */
int jwt_key(const struct jwt *t, struct revkey *k, char *err, size_t errlen);

/*
 * The same key from the claim values themselves: iss (NULL: none) and
 * the jti's jlen bytes. jwt_key ends here, and so does a token found in
 * svc/trust.c's verified-token cache, so the two cannot differ.
 */
int jwt_key_values(struct revkey *k, const char *iss, const char *jti,
    size_t jlen, char *err, size_t errlen);

/*
 * Decodes the payload of a compact JWS and sets k to (iss or "default",
 * jti), without verifying anything: the revocation-only mode. Returns 0,
 * or -1 with err.
 */
int jwt_revkey(struct revkey *k, const char *token, size_t len, char *err,
    size_t errlen);

/*
 * Verifies t against issuer is at time now: t's iss equals is->issuer;
 * alg one of is->algs ("none" never exists); no "crit" header (revcheck
 * understands no extension); the key named by kid (or the set's only
 * key) whose type fits alg, or the HS secret for HS algorithms; the
 * signature; "exp" present and now < exp + leeway; "nbf" and "iat", when
 * present, not after now + leeway; "aud" holding one of is->audiences.
 * Returns 0 (JWT_VALID) only when every check passed, or -1 with *why
 * and err (safe to show). This function reads only.
 */
int jwt_verify(const struct jwt *t, const struct jwt_issuer *is, int64_t now,
    enum jwt_verdict *why, char *err, size_t errlen);

/* The stable name of v ("valid", "bad_signature", ...). Can't fail. */
const char *jwt_verdict_str(enum jwt_verdict v);

/* A string claim of t, or NULL when absent or not a string. */
const char *jwt_claim_str(const struct jwt *t, const char *name);

/*
 * A numeric date claim of t (whole seconds). Returns 0 with *out, or -1
 * when absent, not a number, or out of range.
 */
int jwt_claim_time(const struct jwt *t, const char *name, int64_t *out);

#endif

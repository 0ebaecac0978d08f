/* trust.h - the trusted token issuers: their keys and secrets, token verification */
#ifndef REVCHECK_SVC_TRUST_H
#define REVCHECK_SVC_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "jwks.h"
#include "jwt.h"
#include "revkey.h"
#include "sbuf.h"

#define TRUST_SECRET_MAX 4096	/* bytes of a secret file */

struct trust_issuer {
	const struct config_issuer *cfg;	/* borrowed from the config */
	struct jwks	 keys;
	unsigned char	*hs;			/* wiped on free */
	size_t		 hs_len;
	struct jwt_issuer ji;			/* points into the above */
};

/*
 * Built once at startup from the config, then read-only: every HTTP
 * worker verifies against it at the same time.
 */
struct trust {
	struct trust_issuer *iss;
	size_t		 n;
	bool		 revocation_only;
};

/*
 * Loads every issuer's JWKS file and HS secret named in c. c must
 * outlive t. Returns 0, or -1 with err naming the issuer and the file;
 * t is then empty (trust_free is still safe).
 */
int trust_init(struct trust *t, const struct config *c, char *err,
    size_t errlen);

/* Releases the keys, wipes the secrets, zeroes t. Safe when zeroed. */
void trust_free(struct trust *t);

/*
 * Reads a secret file: at most TRUST_SECRET_MAX bytes, one trailing
 * newline dropped, at least min bytes left. Returns 0 with *out (the
 * caller wipes and frees it), or -1 with err naming the file.
 */
int trust_read_secret(const char *path, size_t min, unsigned char **out,
    size_t *len, char *err, size_t errlen);

/*
 * The revocation key of a token, after proving the token valid: in
 * "required" mode (the default) the token must verify against the
 * issuer its "iss" names (jwt_verify), and with no issuer configured
 * every token is refused (untrusted_issuer); in revocation-only mode it
 * is only decoded. Returns 0 with k, or -1 with *why (JWT_MALFORMED when
 * the token cannot be read at all) and err (safe to show). t NULL
 * refuses every token. This function can be called from many threads.
 */
int trust_token(const struct trust *t, const char *tok, size_t len,
    int64_t now, struct revkey *k, enum jwt_verdict *why, char *err,
    size_t errlen);

/*
 * Appends ,"token_verification":{...} to a /v1/status object: the mode
 * and, per issuer, its name, key count and algorithms.
 */
void trust_status_json(struct sbuf *b, const struct trust *t);

#endif

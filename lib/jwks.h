/* jwks.h - JSON Web Key Sets: JWK parameters to OpenSSL public keys, JWS algorithms */
#ifndef REVCHECK_JWKS_H
#define REVCHECK_JWKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#define JWKS_MAX_LEN	(1024 * 1024)	/* bytes of one JWKS document */
#define JWKS_MAX_KEYS	64		/* keys kept from one set */
#define JWKS_MAX_ENTRIES 256		/* entries looked at in one set */
#define JWKS_MAX_WARN	8		/* skipped keys named, per set */
#define JWKS_KID_MAX	128		/* bytes of a "kid" */
#define JWKS_RSA_MIN_BITS 2048

/*
 * The JWS algorithms revcheck knows (RFC 7518, RFC 8037). "none" has no
 * value on purpose: no code path can name it. JWA_INVALID is 0 so that a
 * zeroed field never means an algorithm.
 */
enum jwa {
	JWA_INVALID = 0,
	JWA_RS256, JWA_RS384, JWA_RS512,
	JWA_PS256, JWA_PS384, JWA_PS512,
	JWA_ES256, JWA_ES384, JWA_ES512,
	JWA_EDDSA,
	JWA_HS256, JWA_HS384, JWA_HS512,
	JWA_COUNT
};

#define JWA_BIT(a)	(UINT32_C(1) << (a))
#define JWA_HS_MASK	(JWA_BIT(JWA_HS256) | JWA_BIT(JWA_HS384) | \
			 JWA_BIT(JWA_HS512))

/* The key types a JWK can give. */
enum jwk_type {
	JWK_RSA = 1,
	JWK_EC_P256,
	JWK_EC_P384,
	JWK_EC_P521,
	JWK_ED25519,
	JWK_ED448,
};

#define JWKS_VCTX_POOL	16	/* idle verification contexts kept per key */

/*
 * Verification contexts of one key, ready for EVP_PKEY_verify: made once
 * (fetching the algorithm, setting padding and digest costs about as
 * much as an RSA verification) and reused, one thread at a time each.
 */
struct jwk_pool;

struct jwk {
	char		 kid[JWKS_KID_MAX + 1];
	bool		 has_kid;
	enum jwk_type	 type;
	enum jwa	 alg;	/* the JWK's "alg", JWA_INVALID when absent */
	EVP_PKEY	*pkey;
	struct jwk_pool	*pool;	/* NULL for EdDSA keys (no pre-hash) */
};

/*
 * A parsed set. Owned by its creator; read-only once built (thread-safe:
 * the context pools lock themselves).
 */
struct jwks {
	struct jwk	*keys;
	size_t		 n;
};

/* The algorithm named by s (exact, case-sensitive), JWA_INVALID for any
 * other name including "none". */
enum jwa jwa_from_name(const char *s);

/* The name of a, "?" for JWA_INVALID. This function can't fail. */
const char *jwa_name(enum jwa a);

/*
 * Parses a JWKS document ({"keys": [...]}) into s, which this call
 * initialises. Keys that cannot be used are skipped with a logged reason
 * naming origin and the key's position: unknown kty or crv, "use" other
 * than "sig", "key_ops" without "verify", an "alg" that does not fit the
 * key type, RSA under JWKS_RSA_MIN_BITS, symmetric ("oct") keys (HS
 * secrets come from the config, never from a JWKS), bad base64url, a
 * point not on the curve, an Ed25519 or Ed448 point of small order, a
 * private parameter ("d" and the like: the key is no secret), a
 * duplicate kid. Returns 0 (a set with no usable key is valid, and
 * empty), or -1 with err for a document that is not a JWKS at all (size,
 * JSON, no "keys" array); s is then empty.
 */
int jwks_parse(struct jwks *s, const char *buf, size_t len,
    const char *origin, char *err, size_t errlen);

/*
 * Makes dst (initialised here) a copy of src sharing its keys (each
 * EVP_PKEY gets a reference) with context pools of its own. Returns 0,
 * or -1 when memory runs out (dst is then empty).
 */
int jwks_copy(struct jwks *dst, const struct jwks *src);

/* Releases every key and zeroes s. Safe on a zeroed struct. */
void jwks_free(struct jwks *s);

/*
 * The key for kid (NULL: the token has none). With a kid: the key with
 * that kid, or NULL. Without: the set's only key, or NULL when there are
 * several or none.
 */
const struct jwk *jwks_find(const struct jwks *s, const char *kid);

/*
 * True when k may verify a JWS made with a: RSA for RS and PS, the
 * matching curve for each ES, Ed25519/Ed448 for EdDSA, never HS; and
 * a equal to the key's own "alg" when it has one.
 */
bool jwks_key_fits(const struct jwk *k, enum jwa a);

/*
 * The digest of a (SHA-256/384/512), fetched once for the process, or
 * NULL for EdDSA and JWA_INVALID. This function can't fail otherwise.
 */
const EVP_MD *jwa_md(enum jwa a);

/*
 * A context that verifies a's signatures over a digest (jwa_md(a)) with
 * k's key (EVP_PKEY_verify): from k's pool, or made now when the pool has
 * none for a. a must fit k (jwks_key_fits) and have a digest. Returns
 * NULL when OpenSSL fails. The caller owns the context until it gives it
 * back with jwks_vctx_put. Safe from any thread.
 */
EVP_PKEY_CTX *jwks_vctx_get(const struct jwk *k, enum jwa a);

/*
 * Gives back a context from jwks_vctx_get(k, a) for reuse, or frees it
 * when the pool is full. NULL-safe. Safe from any thread.
 */
void jwks_vctx_put(const struct jwk *k, enum jwa a, EVP_PKEY_CTX *c);

#endif

/* jwks.c - JSON Web Key Sets: JWK parameters to OpenSSL public keys, JWS algorithms */
#include "jwks.h"
#include "log.h"
#include "util.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#define JWK_PARAM_MAX	1024	/* decoded bytes of n (8192-bit RSA) */

static const char *const jwa_names[JWA_COUNT] = {
	[JWA_INVALID] = "?",
	[JWA_RS256] = "RS256", [JWA_RS384] = "RS384", [JWA_RS512] = "RS512",
	[JWA_PS256] = "PS256", [JWA_PS384] = "PS384", [JWA_PS512] = "PS512",
	[JWA_ES256] = "ES256", [JWA_ES384] = "ES384", [JWA_ES512] = "ES512",
	[JWA_EDDSA] = "EdDSA",
	[JWA_HS256] = "HS256", [JWA_HS384] = "HS384", [JWA_HS512] = "HS512",
};

enum jwa
jwa_from_name(const char *s)
{
	int a;

	for (a = JWA_INVALID + 1; a < JWA_COUNT; a++)
		if (strcmp(s, jwa_names[a]) == 0)
			return (enum jwa)a;
	return JWA_INVALID;
}

const char *
jwa_name(enum jwa a)
{
	if (a <= JWA_INVALID || a >= JWA_COUNT)
		return "?";
	return jwa_names[a];
}

struct jwk_pool {
	pthread_mutex_t	 mu;
	size_t		 n;
	EVP_PKEY_CTX	*ctx[JWKS_VCTX_POOL];
	enum jwa	 alg[JWKS_VCTX_POOL];
};

/*
 * The three digests, fetched from the default provider once: an
 * EVP_sha256() given to EVP is fetched again on every call.
 */
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static EVP_MD *md_fetched[3];

static void
md_fetch(void)
{
	static const char *const names[3] = { "SHA256", "SHA384", "SHA512" };
	int i;

	for (i = 0; i < 3; i++)
		md_fetched[i] = EVP_MD_fetch(NULL, names[i], NULL);
}

const EVP_MD *
jwa_md(enum jwa a)
{
	int i;

	switch (a) {
	case JWA_RS256: case JWA_PS256: case JWA_ES256: case JWA_HS256:
		i = 0;
		break;
	case JWA_RS384: case JWA_PS384: case JWA_ES384: case JWA_HS384:
		i = 1;
		break;
	case JWA_RS512: case JWA_PS512: case JWA_ES512: case JWA_HS512:
		i = 2;
		break;
	default:
		return NULL;	/* EdDSA hashes inside the algorithm */
	}
	(void)pthread_once(&md_once, md_fetch);
	if (md_fetched[i] != NULL)
		return md_fetched[i];
	return i == 0 ? EVP_sha256() : i == 1 ? EVP_sha384() : EVP_sha512();
}

/* A fresh context for k and a, set up for EVP_PKEY_verify. */
static EVP_PKEY_CTX *
vctx_new(const struct jwk *k, enum jwa a)
{
	EVP_PKEY_CTX *c;
	const EVP_MD *md = jwa_md(a);

	if (md == NULL ||
	    (c = EVP_PKEY_CTX_new_from_pkey(NULL, k->pkey, NULL)) == NULL)
		return NULL;
	if (EVP_PKEY_verify_init(c) != 1)
		goto fail;
	if (a == JWA_PS256 || a == JWA_PS384 || a == JWA_PS512) {
		/* RFC 7518 3.5: MGF1 with the same hash, salt = hash size. */
		if (EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_PSS_PADDING) !=
		    1 || EVP_PKEY_CTX_set_signature_md(c, md) != 1 ||
		    EVP_PKEY_CTX_set_rsa_mgf1_md(c, md) != 1 ||
		    EVP_PKEY_CTX_set_rsa_pss_saltlen(c,
		    RSA_PSS_SALTLEN_DIGEST) != 1)
			goto fail;
	} else if (a == JWA_RS256 || a == JWA_RS384 || a == JWA_RS512) {
		if (EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_PADDING) != 1 ||
		    EVP_PKEY_CTX_set_signature_md(c, md) != 1)
			goto fail;
	} else if (EVP_PKEY_CTX_set_signature_md(c, md) != 1)
		goto fail;
	return c;
fail:
	EVP_PKEY_CTX_free(c);
	return NULL;
}

EVP_PKEY_CTX *
jwks_vctx_get(const struct jwk *k, enum jwa a)
{
	struct jwk_pool *p = k->pool;
	EVP_PKEY_CTX *c = NULL;
	size_t i;

	assert(jwks_key_fits(k, a));
	if (p != NULL) {
		pthread_mutex_lock(&p->mu);
		for (i = p->n; i > 0; i--)
			if (p->alg[i - 1] == a) {
				c = p->ctx[i - 1];
				p->ctx[i - 1] = p->ctx[p->n - 1];
				p->alg[i - 1] = p->alg[p->n - 1];
				p->n--;
				break;
			}
		pthread_mutex_unlock(&p->mu);
	}
	return c != NULL ? c : vctx_new(k, a);
}

void
jwks_vctx_put(const struct jwk *k, enum jwa a, EVP_PKEY_CTX *c)
{
	struct jwk_pool *p = k->pool;

	if (c == NULL)
		return;
	if (p != NULL) {
		pthread_mutex_lock(&p->mu);
		if (p->n < JWKS_VCTX_POOL) {
			p->ctx[p->n] = c;
			p->alg[p->n] = a;
			p->n++;
			c = NULL;
		}
		pthread_mutex_unlock(&p->mu);
	}
	EVP_PKEY_CTX_free(c);
}

static struct jwk_pool *
pool_new(void)
{
	struct jwk_pool *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void
pool_free(struct jwk_pool *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->n; i++)
		EVP_PKEY_CTX_free(p->ctx[i]);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

bool
jwks_key_fits(const struct jwk *k, enum jwa a)
{
	if (k->alg != JWA_INVALID && k->alg != a)
		return false;
	switch (a) {
	case JWA_RS256: case JWA_RS384: case JWA_RS512:
	case JWA_PS256: case JWA_PS384: case JWA_PS512:
		return k->type == JWK_RSA;
	case JWA_ES256:
		return k->type == JWK_EC_P256;
	case JWA_ES384:
		return k->type == JWK_EC_P384;
	case JWA_ES512:
		return k->type == JWK_EC_P521;
	case JWA_EDDSA:
		return k->type == JWK_ED25519 || k->type == JWK_ED448;
	default:
		return false;
	}
}

/*
 * Decodes the base64url string member name of o into a fresh buffer.
 * Returns the length, or -1 with why set (missing, not a string, bad
 * base64url, empty or over max bytes).
 */
static long
b64_member(const cJSON *o, const char *name, size_t max, unsigned char **out,
    const char **why)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, name);
	size_t len, bad;
	long n;

	*out = NULL;
	if (!cJSON_IsString(m)) {
		*why = "a required parameter is missing or not a string";
		return -1;
	}
	len = strlen(m->valuestring);
	if (len == 0 || len / 4 * 3 > max) {
		*why = "a parameter is empty or too long";
		return -1;
	}
	if ((*out = malloc(len / 4 * 3 + 3)) == NULL) {
		*why = "out of memory";
		return -1;
	}
	if ((n = util_b64url_decode(*out, m->valuestring, len, &bad)) <= 0 ||
	    (size_t)n > max) {
		free(*out);
		*out = NULL;
		*why = "a parameter is not base64url";
		return -1;
	}
	return n;
}

/* Builds a public key of OpenSSL type name from params. NULL on error. */
static EVP_PKEY *
pkey_fromdata(const char *name, OSSL_PARAM_BLD *bld)
{
	EVP_PKEY_CTX *ctx = NULL, *chk = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY *pk = NULL;

	if ((params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    (ctx = EVP_PKEY_CTX_new_from_name(NULL, name, NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		goto out;
	/* The point is on the curve, the modulus odd, and so on. */
	if ((chk = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL)) == NULL ||
	    EVP_PKEY_public_check(chk) != 1) {
		EVP_PKEY_free(pk);
		pk = NULL;
	}
out:
	EVP_PKEY_CTX_free(chk);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pk;
}

static EVP_PKEY *
rsa_key(const cJSON *o, const char **why)
{
	unsigned char *n = NULL, *e = NULL;
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pk = NULL;
	long nl, el;

	if ((nl = b64_member(o, "n", JWK_PARAM_MAX, &n, why)) < 0 ||
	    (el = b64_member(o, "e", 8, &e, why)) < 0)
		goto out;
	if ((bn = BN_bin2bn(n, (int)nl, NULL)) == NULL ||
	    (be = BN_bin2bn(e, (int)el, NULL)) == NULL) {
		*why = "out of memory";
		goto out;
	}
	if (BN_num_bits(bn) < JWKS_RSA_MIN_BITS) {
		*why = "RSA modulus shorter than 2048 bits";
		goto out;
	}
	if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be)) {
		*why = "out of memory";
		goto out;
	}
	if ((pk = pkey_fromdata("RSA", bld)) == NULL)
		*why = "OpenSSL refused the RSA parameters";
out:
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	free(n);
	free(e);
	return pk;
}

static EVP_PKEY *
ec_key(const cJSON *o, enum jwk_type t, const char **why)
{
	static const char *const groups[] = { "prime256v1", "secp384r1",
	    "secp521r1" };
	static const size_t sizes[] = { 32, 48, 66 };
	unsigned char *x = NULL, *y = NULL, pt[1 + 2 * 66];
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pk = NULL;
	size_t idx = (size_t)(t - JWK_EC_P256), fl = sizes[idx];
	long xl, yl;

	if ((xl = b64_member(o, "x", fl, &x, why)) < 0 ||
	    (yl = b64_member(o, "y", fl, &y, why)) < 0)
		goto out;
	/*
	 * RFC 7518 6.2.1.2 wants the full field size, but some producers
	 * (PyJWT 2.6 among them) drop leading zero bytes: the same number,
	 * so it is padded back. Longer was refused by b64_member().
	 */
	memset(pt, 0, sizeof(pt));
	pt[0] = 0x04;
	memcpy(pt + 1 + fl - (size_t)xl, x, (size_t)xl);
	memcpy(pt + 1 + 2 * fl - (size_t)yl, y, (size_t)yl);
	if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
	    groups[idx], 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt,
	    1 + 2 * fl)) {
		*why = "out of memory";
		goto out;
	}
	if ((pk = pkey_fromdata("EC", bld)) == NULL)
		*why = "the point is not on the curve";
out:
	OSSL_PARAM_BLD_free(bld);
	free(x);
	free(y);
	return pk;
}

/*
 * True when x, an Ed25519 or Ed448 public key of len bytes (RFC 8032:
 * y little-endian, the sign of x in the top bit), is a point of small
 * order or has y not below the prime p. Such a key verifies signatures
 * no private key made (for the neutral point, R = the neutral point and
 * S = 0 sign every message), and OpenSSL takes it. The points of order
 * 1, 2 and 4 have y = 1, p - 1 and 0; Ed25519's of order 8 have y = y8
 * or p - y8. A key made from a private one is never among them.
 */
static bool
okp_small_order(const unsigned char *x, size_t len, enum jwk_type t)
{
	static const char p25519[] = "7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
	    "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFED";
	static const char y8[] = "05FC536D880238B13933C6D305ACDFD5"
	    "F098EFF289F4C345B027B2C28F95E826";
	static const char p448[] = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
	    "FFFFFFFFFFFFFFFFFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
	    "FFFFFFFFFFFFFFFFFFFFFFFF";
	unsigned char b[57];
	BIGNUM *y = NULL, *p = NULL, *q = NULL;
	bool weak = true;	/* also when memory runs out */

	assert(len == (t == JWK_ED25519 ? 32 : 57) && len <= sizeof(b));
	memcpy(b, x, len);
	b[len - 1] &= 0x7f;
	if ((y = BN_lebin2bn(b, (int)len, NULL)) == NULL ||
	    BN_hex2bn(&p, t == JWK_ED25519 ? p25519 : p448) == 0 ||
	    (q = BN_new()) == NULL)
		goto out;
	if (BN_cmp(y, p) >= 0 || BN_is_zero(y) || BN_is_one(y) ||
	    !BN_sub(q, p, BN_value_one()) || BN_cmp(y, q) == 0)
		goto out;
	if (t == JWK_ED25519 && (BN_hex2bn(&q, y8) == 0 ||
	    BN_cmp(y, q) == 0 || !BN_sub(q, p, q) || BN_cmp(y, q) == 0))
		goto out;
	weak = false;
out:
	BN_free(y);
	BN_free(p);
	BN_free(q);
	return weak;
}

static EVP_PKEY *
okp_key(const cJSON *o, enum jwk_type t, const char **why)
{
	size_t want = t == JWK_ED25519 ? 32 : 57;
	OSSL_PARAM_BLD *bld = NULL;
	unsigned char *x = NULL;
	EVP_PKEY *pk = NULL;
	long xl;

	if ((xl = b64_member(o, "x", want, &x, why)) < 0)
		goto out;
	if ((size_t)xl != want) {
		*why = "\"x\" has the wrong length for the curve";
		goto out;
	}
	if (okp_small_order(x, want, t)) {
		*why = "\"x\" is a point of small order, or not below the "
		    "prime (it would verify forged signatures)";
		goto out;
	}
	if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, x,
	    want)) {
		*why = "out of memory";
		goto out;
	}
	if ((pk = pkey_fromdata(t == JWK_ED25519 ? "ED25519" : "ED448",
	    bld)) == NULL)
		*why = "OpenSSL refused the public key";
out:
	OSSL_PARAM_BLD_free(bld);
	free(x);
	return pk;
}

/* The key type of a JWK from kty and crv; 0 with why when unusable. */
static int
jwk_type_of(const cJSON *o, const char **why)
{
	const cJSON *kty = cJSON_GetObjectItemCaseSensitive(o, "kty");
	const cJSON *crv = cJSON_GetObjectItemCaseSensitive(o, "crv");
	const char *c = cJSON_IsString(crv) ? crv->valuestring : "";

	if (!cJSON_IsString(kty)) {
		*why = "no \"kty\"";
		return 0;
	}
	if (strcmp(kty->valuestring, "RSA") == 0)
		return JWK_RSA;
	if (strcmp(kty->valuestring, "EC") == 0) {
		if (strcmp(c, "P-256") == 0)
			return JWK_EC_P256;
		if (strcmp(c, "P-384") == 0)
			return JWK_EC_P384;
		if (strcmp(c, "P-521") == 0)
			return JWK_EC_P521;
		*why = "unsupported EC \"crv\"";
		return 0;
	}
	if (strcmp(kty->valuestring, "OKP") == 0) {
		if (strcmp(c, "Ed25519") == 0)
			return JWK_ED25519;
		if (strcmp(c, "Ed448") == 0)
			return JWK_ED448;
		*why = "unsupported OKP \"crv\" (X25519/X448 do not sign)";
		return 0;
	}
	if (strcmp(kty->valuestring, "oct") == 0) {
		*why = "symmetric key in a JWKS (HS secrets come from "
		    "hs_secret_file only)";
		return 0;
	}
	*why = "unsupported \"kty\"";
	return 0;
}

/*
 * True when "key_ops" (RFC 7517 4.3), an array of strings, holds
 * "verify": a key published for other operations (encrypt, wrapKey)
 * must not verify tokens, as with a "use" other than "sig".
 */
static bool
key_ops_verify(const cJSON *ops)
{
	const cJSON *it;
	bool verify = false;

	if (!cJSON_IsArray(ops))
		return false;
	cJSON_ArrayForEach(it, ops) {
		if (!cJSON_IsString(it))
			return false;
		if (strcmp(it->valuestring, "verify") == 0)
			verify = true;
	}
	return verify;
}

/*
 * Fills k from one JWK object. Returns 0, or -1 with why (the key is
 * then skipped).
 */
static int
jwk_load(struct jwk *k, const cJSON *o, const char **why)
{
	static const char *const priv[] = { "d", "p", "q", "dp", "dq", "qi",
	    "oth", "k" };
	const cJSON *kid, *use, *ops, *alg;
	size_t len, i;
	int t;

	memset(k, 0, sizeof(*k));
	if (!cJSON_IsObject(o)) {
		*why = "not a JSON object";
		return -1;
	}
	if ((t = jwk_type_of(o, why)) == 0)
		return -1;
	k->type = (enum jwk_type)t;
	/*
	 * A private parameter (RFC 7518 6.2.2, 6.3.2, 6.4.1) publishes the
	 * private half: anyone who reads the set can sign with the key.
	 */
	for (i = 0; i < sizeof(priv) / sizeof(priv[0]); i++)
		if (cJSON_GetObjectItemCaseSensitive(o, priv[i]) != NULL) {
			*why = "a private key parameter is published with the "
			    "key (anyone can sign with it)";
			return -1;
		}
	use = cJSON_GetObjectItemCaseSensitive(o, "use");
	if (use != NULL && (!cJSON_IsString(use) ||
	    strcmp(use->valuestring, "sig") != 0)) {
		*why = "\"use\" is not \"sig\"";
		return -1;
	}
	ops = cJSON_GetObjectItemCaseSensitive(o, "key_ops");
	if (ops != NULL && !key_ops_verify(ops)) {
		*why = "\"key_ops\" is not an array of strings holding "
		    "\"verify\"";
		return -1;
	}
	alg = cJSON_GetObjectItemCaseSensitive(o, "alg");
	if (alg != NULL) {
		if (!cJSON_IsString(alg) ||
		    (k->alg = jwa_from_name(alg->valuestring)) == JWA_INVALID) {
			*why = "unknown \"alg\"";
			return -1;
		}
		if (!jwks_key_fits(k, k->alg)) {
			*why = "\"alg\" does not fit the key type";
			return -1;
		}
	}
	kid = cJSON_GetObjectItemCaseSensitive(o, "kid");
	if (kid != NULL) {
		if (!cJSON_IsString(kid) ||
		    (len = strlen(kid->valuestring)) == 0 ||
		    len > JWKS_KID_MAX) {
			*why = "\"kid\" is not a string of 1-128 bytes";
			return -1;
		}
		memcpy(k->kid, kid->valuestring, len + 1);
		k->has_kid = true;
	}
	if (k->type == JWK_RSA)
		k->pkey = rsa_key(o, why);
	else if (k->type == JWK_ED25519 || k->type == JWK_ED448)
		k->pkey = okp_key(o, k->type, why);
	else
		k->pkey = ec_key(o, k->type, why);
	return k->pkey != NULL ? 0 : -1;
}

int
jwks_parse(struct jwks *s, const char *buf, size_t len, const char *origin,
    char *err, size_t errlen)
{
	const cJSON *keys, *it;
	const char *why, *end = NULL;
	cJSON *root = NULL;
	struct jwk k;
	size_t i, pos = 0, skipped = 0;
	int rc = -1;

	assert(s != NULL && (buf != NULL || len == 0));
	memset(s, 0, sizeof(*s));
	if (len > JWKS_MAX_LEN) {
		snprintf(err, errlen, "%s: JWKS over %d bytes", origin,
		    JWKS_MAX_LEN);
		return -1;
	}
	if ((why = util_json_refused(buf, len)) != NULL) {
		snprintf(err, errlen, "%s: JWKS refused: %s", origin, why);
		return -1;
	}
	root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (root == NULL || !cJSON_IsObject(root)) {
		snprintf(err, errlen, "%s: not a JSON object", origin);
		goto out;
	}
	for (; end < buf + len; end++)
		if (*end != ' ' && *end != '\t' && *end != '\r' &&
		    *end != '\n') {
			snprintf(err, errlen, "%s: data after the JSON object",
			    origin);
			goto out;
		}
	keys = cJSON_GetObjectItemCaseSensitive(root, "keys");
	if (!cJSON_IsArray(keys)) {
		snprintf(err, errlen, "%s: no \"keys\" array", origin);
		goto out;
	}
	if ((s->keys = calloc(JWKS_MAX_KEYS, sizeof(*s->keys))) == NULL) {
		snprintf(err, errlen, "%s: out of memory", origin);
		goto out;
	}
	/*
	 * A set full of unusable entries (a broken or hostile endpoint: a
	 * megabyte of "{}") costs a bounded amount of work and of log: at
	 * most JWKS_MAX_ENTRIES entries are looked at, and JWKS_MAX_WARN
	 * skipped ones named, the rest counted.
	 */
	cJSON_ArrayForEach(it, keys) {
		pos++;
		if (s->n == JWKS_MAX_KEYS || pos > JWKS_MAX_ENTRIES) {
			log_warn("%s: entries after the %zuth ignored (at most "
			    "%d keys, %d entries)", origin, pos - 1,
			    JWKS_MAX_KEYS, JWKS_MAX_ENTRIES);
			break;
		}
		if (jwk_load(&k, it, &why) == -1) {
			if (++skipped <= JWKS_MAX_WARN)
				log_warn("%s: key %zu ignored: %s", origin,
				    pos, why);
			EVP_PKEY_free(k.pkey);
			continue;
		}
		for (i = 0; i < s->n; i++)
			if (k.has_kid && s->keys[i].has_kid &&
			    strcmp(k.kid, s->keys[i].kid) == 0)
				break;
		if (i < s->n) {
			/* The first of a repeated kid wins, as in jwks_find(). */
			if (++skipped <= JWKS_MAX_WARN)
				log_warn("%s: key %zu ignored: duplicate "
				    "\"kid\"", origin, pos);
			EVP_PKEY_free(k.pkey);
			continue;
		}
		/* Without a pool every verification makes its context. */
		if (k.type != JWK_ED25519 && k.type != JWK_ED448)
			k.pool = pool_new();
		s->keys[s->n++] = k;
	}
	if (skipped > JWKS_MAX_WARN)
		log_warn("%s: %zu more keys ignored (the first %d are named "
		    "above)", origin, skipped - JWKS_MAX_WARN, JWKS_MAX_WARN);
	rc = 0;
out:
	if (rc == -1)
		jwks_free(s);
	cJSON_Delete(root);
	return rc;
}

int
jwks_copy(struct jwks *dst, const struct jwks *src)
{
	size_t i;

	memset(dst, 0, sizeof(*dst));
	if (src->n == 0)
		return 0;
	if ((dst->keys = calloc(src->n, sizeof(*dst->keys))) == NULL)
		return -1;
	for (i = 0; i < src->n; i++) {
		if (EVP_PKEY_up_ref(src->keys[i].pkey) != 1) {
			jwks_free(dst);
			return -1;
		}
		dst->keys[i] = src->keys[i];
		dst->keys[i].pool = NULL;
		dst->n = i + 1;
		if (src->keys[i].pool != NULL &&
		    (dst->keys[i].pool = pool_new()) == NULL) {
			jwks_free(dst);
			return -1;
		}
	}
	return 0;
}

void
jwks_free(struct jwks *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++) {
		pool_free(s->keys[i].pool);
		EVP_PKEY_free(s->keys[i].pkey);
	}
	free(s->keys);
	memset(s, 0, sizeof(*s));
}

const struct jwk *
jwks_find(const struct jwks *s, const char *kid)
{
	size_t i;

	if (kid == NULL)
		return s->n == 1 ? &s->keys[0] : NULL;
	for (i = 0; i < s->n; i++)
		if (s->keys[i].has_kid && strcmp(s->keys[i].kid, kid) == 0)
			return &s->keys[i];
	return NULL;
}

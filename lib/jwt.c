/* jwt.c - compact JWS tokens: parsing, signature and claim verification, the revocation key */
#include "jwt.h"
#include "util.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

static const char *const verdict_names[JWT_VERDICT_COUNT] = {
	[JWT_VALID] = "valid",
	[JWT_MALFORMED] = "malformed_token",
	[JWT_UNTRUSTED_ISSUER] = "untrusted_issuer",
	[JWT_ALG_REFUSED] = "algorithm_refused",
	[JWT_CRIT_REFUSED] = "unknown_critical_header",
	[JWT_UNKNOWN_KEY] = "unknown_key",
	[JWT_BAD_SIGNATURE] = "bad_signature",
	[JWT_MISSING_CLAIM] = "missing_claim",
	[JWT_EXPIRED] = "expired",
	[JWT_NOT_YET_VALID] = "not_yet_valid",
	[JWT_WRONG_AUDIENCE] = "wrong_audience",
	[JWT_KEYS_UNAVAILABLE] = "keys_unavailable",
};

const char *
jwt_verdict_str(enum jwt_verdict v)
{
	if ((unsigned)v >= JWT_VERDICT_COUNT)
		return "malformed_token";
	return verdict_names[v];
}

/*
 * Decodes one base64url part into a fresh NUL-terminated buffer and
 * parses it as a JSON object. what names the part in err.
 */
static cJSON *
json_part(const char *p, size_t len, size_t off, const char *what, char *err,
    size_t errlen)
{
	unsigned char *buf;
	const char *why;
	cJSON *root = NULL;
	size_t bad;
	long n;

	if ((buf = malloc(len / 4 * 3 + 4)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((n = util_b64url_decode(buf, p, len, &bad)) < 0) {
		snprintf(err, errlen, "bad base64url in %s at offset %zu",
		    what, off + bad);
		goto out;
	}
	buf[n] = '\0';
	if (memchr(buf, '\0', (size_t)n) != NULL) {
		snprintf(err, errlen, "%s is not JSON (NUL byte)", what);
		goto out;
	}
	/*
	 * RFC 7519 section 7.2: the decoded parts are UTF-8. cJSON copies
	 * string bytes as they are, so an invalid sequence would reach
	 * every answer that shows a claim, and a downstream reader that
	 * decodes it otherwise would read another value than was checked.
	 */
	if (!util_utf8_valid(buf, (size_t)n)) {
		snprintf(err, errlen, "%s is not valid UTF-8 (an overlong "
		    "form, a surrogate, a code point above U+10FFFF or a "
		    "broken sequence)", what);
		goto out;
	}
	if ((why = util_json_refused((const char *)buf, (size_t)n)) != NULL) {
		snprintf(err, errlen, "%s refused: %s", what, why);
		goto out;
	}
	root = cJSON_ParseWithLengthOpts((const char *)buf, (size_t)n + 1, NULL,
	    1);
	if (root == NULL || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		root = NULL;
		snprintf(err, errlen, "%s is not a JSON object", what);
	}
out:
	free(buf);
	return root;
}

/*
 * A repeated member among names is refused: parsers disagree on which
 * one wins, and a verifier that reads the first while a downstream
 * service reads the last is a bypass.
 */
static int
refuse_repeats(const cJSON *o, const char *const *names, const char *what,
    char *err, size_t errlen)
{
	const cJSON *it;
	uint32_t seen = 0;
	size_t i;

	for (it = o->child; it != NULL; it = it->next) {
		if (it->string == NULL)
			continue;
		for (i = 0; names[i] != NULL; i++) {
			if (strcmp(it->string, names[i]) != 0)
				continue;
			if (seen & (UINT32_C(1) << i)) {
				snprintf(err, errlen, "duplicate \"%s\" %s",
				    names[i], what);
				return -1;
			}
			seen |= UINT32_C(1) << i;
		}
	}
	return 0;
}

/* The string member name of o: NULL when absent; *bad when not a string. */
static const char *
str_member(const cJSON *o, const char *name, bool *bad)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, name);

	if (m == NULL)
		return NULL;
	if (!cJSON_IsString(m)) {
		*bad = true;
		return NULL;
	}
	return m->valuestring;
}

static const char *const claim_names[] = { "iss", "jti", "sub", "sid",
    "exp", "nbf", "iat", "aud", NULL };

/*
 * Checks the size and the three parts of token (t zeroed, t->token and
 * t->signed_len set); *d1 and *d2 are its two dots. 0, or -1 with err.
 */
static int
split(struct jwt *t, const char *token, size_t len, const char **d1,
    const char **d2, char *err, size_t errlen)
{
	assert(t != NULL && (token != NULL || len == 0));
	memset(t, 0, sizeof(*t));
	if (len == 0) {
		snprintf(err, errlen, "empty token");
		return -1;
	}
	if (len > JWT_MAX_LEN) {
		snprintf(err, errlen, "token is %zu bytes, over the limit of %d",
		    len, JWT_MAX_LEN);
		return -1;
	}
	if ((*d1 = memchr(token, '.', len)) == NULL ||
	    (*d2 = memchr(*d1 + 1, '.', len - (size_t)(*d1 + 1 - token))) ==
	    NULL) {
		snprintf(err, errlen, "malformed token: not header.payload."
		    "signature");
		return -1;
	}
	if (memchr(*d2 + 1, '.', len - (size_t)(*d2 + 1 - token)) != NULL) {
		snprintf(err, errlen, "malformed token: more than three parts "
		    "(encrypted JWE tokens are not supported)");
		return -1;
	}
	if (*d1 == token || *d2 == *d1 + 1) {
		snprintf(err, errlen, "malformed token: empty %s",
		    *d1 == token ? "header" : "payload");
		return -1;
	}
	t->token = token;
	t->signed_len = (size_t)(*d2 - token);
	return 0;
}

/* The claims of t from the payload between d1 and d2. 0, or -1 with err. */
static int
claims(struct jwt *t, const char *d1, const char *d2, char *err,
    size_t errlen)
{
	bool badtype = false;

	if ((t->claims = json_part(d1 + 1, (size_t)(d2 - d1 - 1),
	    (size_t)(d1 - t->token) + 1, "payload", err, errlen)) == NULL ||
	    refuse_repeats(t->claims, claim_names, "claim", err, errlen) == -1)
		return -1;
	t->iss = str_member(t->claims, "iss", &badtype);
	if (badtype) {
		snprintf(err, errlen, "\"iss\" is not a string");
		return -1;
	}
	return 0;
}

int
jwt_parse_claims(struct jwt *t, const char *token, size_t len, char *err,
    size_t errlen)
{
	const char *d1, *d2;

	if (split(t, token, len, &d1, &d2, err, errlen) == -1)
		return -1;
	if (claims(t, d1, d2, err, errlen) == -1) {
		jwt_free(t);
		return -1;
	}
	return 0;
}

int
jwt_parse(struct jwt *t, const char *token, size_t len, char *err,
    size_t errlen)
{
	static const char *const hnames[] = { "alg", "kid", "crit", "typ",
	    NULL };
	const char *d1, *d2;
	size_t slen, bad;
	bool badtype = false;
	long n;

	if (split(t, token, len, &d1, &d2, err, errlen) == -1)
		return -1;
	slen = len - (size_t)(d2 + 1 - token);
	if ((t->sig = malloc(slen / 4 * 3 + 4)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((n = util_b64url_decode(t->sig, d2 + 1, slen, &bad)) < 0) {
		snprintf(err, errlen, "bad base64url in signature at offset %zu",
		    (size_t)(d2 + 1 - token) + bad);
		goto fail;
	}
	t->sig_len = (size_t)n;
	if ((t->header = json_part(token, (size_t)(d1 - token), 0, "header",
	    err, errlen)) == NULL)
		goto fail;
	if (claims(t, d1, d2, err, errlen) == -1)
		goto fail;
	if (refuse_repeats(t->header, hnames, "header parameter", err,
	    errlen) == -1)
		goto fail;
	t->alg = str_member(t->header, "alg", &badtype);
	t->kid = str_member(t->header, "kid", &badtype);
	if (badtype) {
		snprintf(err, errlen, "header \"alg\" or \"kid\" is not a "
		    "string");
		goto fail;
	}
	t->crit = cJSON_GetObjectItemCaseSensitive(t->header, "crit") != NULL;
	return 0;
fail:
	jwt_free(t);
	return -1;
}

void
jwt_free(struct jwt *t)
{
	if (t == NULL)
		return;
	cJSON_Delete(t->header);
	cJSON_Delete(t->claims);
	free(t->sig);
	memset(t, 0, sizeof(*t));
}

int
jwt_key(const struct jwt *t, struct revkey *k, char *err, size_t errlen)
{
	const cJSON *jti = cJSON_GetObjectItemCaseSensitive(t->claims, "jti");

	if (jti == NULL || !cJSON_IsString(jti)) {
		snprintf(err, errlen, jti == NULL ? "no \"jti\" claim" :
		    "\"jti\" is not a string");
		return -1;
	}
	return jwt_key_values(k, t->iss, jti->valuestring,
	    strlen(jti->valuestring), err, errlen);
}

int
jwt_key_values(struct revkey *k, const char *iss, const char *jti,
    size_t jlen, char *err, size_t errlen)
{
	const char *scope = REVKEY_DEFAULT_SCOPE;

	if (jlen == 0 || jlen > REVKEY_ID_MAX) {
		snprintf(err, errlen, "\"jti\" must be 1 to %d bytes",
		    REVKEY_ID_MAX);
		return -1;
	}
	if (iss != NULL) {
		scope = iss;
		/*
		 * Token scopes never enter the X.509 issuer namespace, nor
		 * the cutoff scopes.
		 */
		if (!revkey_scope_valid(scope, strlen(scope)) ||
		    revkey_scope_is_x509(scope) ||
		    revkey_scope_is_cutoff(scope)) {
			snprintf(err, errlen, "\"iss\" is not a valid scope "
			    "(1-%d printable ASCII characters without spaces, "
			    "not starting with \"%s\", \"%s\" or \"%s\")",
			    REVKEY_SCOPE_MAX, REVKEY_X509_PREFIX,
			    REVKEY_SUB_PREFIX, REVKEY_SID_PREFIX);
			return -1;
		}
	}
	if (revkey_set(k, scope, jti, jlen) != 0) {
		snprintf(err, errlen, "cannot form the key");
		return -1;
	}
	return 0;
}

int
jwt_revkey(struct revkey *k, const char *token, size_t len, char *err,
    size_t errlen)
{
	struct jwt t;
	int rc;

	assert(k != NULL);
	if (jwt_parse(&t, token, len, err, errlen) == -1)
		return -1;
	rc = jwt_key(&t, k, err, errlen);
	jwt_free(&t);
	return rc;
}

const char *
jwt_claim_str(const struct jwt *t, const char *name)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(t->claims, name);

	return cJSON_IsString(m) ? m->valuestring : NULL;
}

int
jwt_claim_time(const struct jwt *t, const char *name, int64_t *out)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(t->claims, name);
	double v;

	if (!cJSON_IsNumber(m))
		return -1;
	v = m->valuedouble;
	/* RFC 7519 NumericDate; fractions are allowed and cut. */
	if (!isfinite(v) || v < 0 || v > 253402300799.0)	/* year 9999 */
		return -1;
	*out = (int64_t)floor(v);
	return 0;
}

/*
 * A JWS ECDSA signature is R || S, each the field size (RFC 7518 3.4);
 * OpenSSL wants DER. Returns the DER length in *der (OPENSSL_free), or
 * -1 when the length is wrong.
 */
static int
ecdsa_der(enum jwa a, const unsigned char *sig, size_t len,
    unsigned char **der)
{
	size_t half = a == JWA_ES256 ? 32 : a == JWA_ES384 ? 48 : 66;
	ECDSA_SIG *es = NULL;
	BIGNUM *r = NULL, *s = NULL;
	int n = -1;

	*der = NULL;
	if (len != 2 * half)
		return -1;
	if ((es = ECDSA_SIG_new()) == NULL ||
	    (r = BN_bin2bn(sig, (int)half, NULL)) == NULL ||
	    (s = BN_bin2bn(sig + half, (int)half, NULL)) == NULL)
		goto out;
	if (ECDSA_SIG_set0(es, r, s) != 1)
		goto out;
	r = s = NULL;	/* es owns them */
	n = i2d_ECDSA_SIG(es, der);
	if (n <= 0) {
		*der = NULL;
		n = -1;
	}
out:
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(es);
	return n;
}

/*
 * 1 when sig is a's signature of msg under k, 0 otherwise. Every
 * algorithm but EdDSA hashes msg first and verifies the digest with a
 * context from k's pool, which spares the per-call algorithm fetch and
 * padding set-up (bench/jwtverify.c measures the whole path).
 */
static int
pkey_verify(enum jwa a, const struct jwk *k, const unsigned char *msg,
    size_t mlen, const unsigned char *sig, size_t slen)
{
	unsigned char h[EVP_MAX_MD_SIZE], *der = NULL;
	EVP_MD_CTX *mc = NULL;
	EVP_PKEY_CTX *pc;
	unsigned hl = 0;
	int dl, ok = 0;

	if (a == JWA_EDDSA) {
		/* Ed25519 and Ed448 sign the message itself. */
		if ((mc = EVP_MD_CTX_new()) != NULL &&
		    EVP_DigestVerifyInit_ex(mc, NULL, NULL, NULL, NULL,
		    k->pkey, NULL) == 1)
			ok = EVP_DigestVerify(mc, sig, slen, msg, mlen) == 1;
		EVP_MD_CTX_free(mc);
		return ok;
	}
	if (a == JWA_ES256 || a == JWA_ES384 || a == JWA_ES512) {
		if ((dl = ecdsa_der(a, sig, slen, &der)) < 0)
			return 0;
		sig = der;
		slen = (size_t)dl;
	}
	if (EVP_Digest(msg, mlen, h, &hl, jwa_md(a), NULL) == 1 &&
	    (pc = jwks_vctx_get(k, a)) != NULL) {
		ok = EVP_PKEY_verify(pc, sig, slen, h, hl) == 1;
		jwks_vctx_put(k, a, pc);
	}
	OPENSSL_free(der);
	return ok;
}

static int
hmac_verify(enum jwa a, const unsigned char *key, size_t klen,
    const unsigned char *msg, size_t mlen, const unsigned char *sig,
    size_t slen)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	const EVP_MD *md = jwa_md(a);
	size_t ml = 0;
	int ok;

	if (EVP_Q_mac(NULL, "HMAC", NULL, EVP_MD_get0_name(md), NULL, key,
	    klen, msg, mlen, mac, sizeof(mac), &ml) == NULL)
		return 0;
	ok = ml == slen && CRYPTO_memcmp(mac, sig, ml) == 0;
	OPENSSL_cleanse(mac, sizeof(mac));
	return ok;
}

/* True when "aud" (a string or an array of strings) names one of is's. */
static bool
aud_ok(const cJSON *aud, const struct jwt_issuer *is)
{
	const cJSON *it;
	size_t i;

	if (cJSON_IsString(aud)) {
		for (i = 0; i < is->naud; i++)
			if (strcmp(aud->valuestring, is->audiences[i]) == 0)
				return true;
		return false;
	}
	if (!cJSON_IsArray(aud))
		return false;
	cJSON_ArrayForEach(it, aud)
		if (cJSON_IsString(it))
			for (i = 0; i < is->naud; i++)
				if (strcmp(it->valuestring,
				    is->audiences[i]) == 0)
					return true;
	return false;
}

#define REFUSE(v, ...) do {						\
	*why = (v);							\
	snprintf(err, errlen, __VA_ARGS__);				\
	return -1;							\
} while (0)

/* The time claims: exp required, nbf and iat optional. */
static int
check_times(const struct jwt *t, const struct jwt_issuer *is, int64_t now,
    enum jwt_verdict *why, char *err, size_t errlen)
{
	int64_t exp, nbf, iat;

	if (jwt_claim_time(t, "exp", &exp) == -1)
		REFUSE(JWT_MISSING_CLAIM, "\"exp\" is missing or not a "
		    "NumericDate");
	if (now >= exp && now - exp >= is->leeway)
		REFUSE(JWT_EXPIRED, "expired %lld s ago",
		    (long long)(now - exp));
	if (cJSON_GetObjectItemCaseSensitive(t->claims, "nbf") != NULL) {
		if (jwt_claim_time(t, "nbf", &nbf) == -1)
			REFUSE(JWT_MISSING_CLAIM, "\"nbf\" is not a "
			    "NumericDate");
		if (nbf > now && nbf - now > is->leeway)
			REFUSE(JWT_NOT_YET_VALID, "not valid before %lld s "
			    "from now", (long long)(nbf - now));
	}
	if (cJSON_GetObjectItemCaseSensitive(t->claims, "iat") != NULL) {
		if (jwt_claim_time(t, "iat", &iat) == -1)
			REFUSE(JWT_MISSING_CLAIM, "\"iat\" is not a "
			    "NumericDate");
		if (iat > now && iat - now > is->leeway)
			REFUSE(JWT_NOT_YET_VALID, "issued %lld s in the "
			    "future", (long long)(iat - now));
	}
	return 0;
}

int
jwt_verify(const struct jwt *t, const struct jwt_issuer *is, int64_t now,
    enum jwt_verdict *why, char *err, size_t errlen)
{
	const struct jwk *k;
	enum jwa a;
	int ok;

	assert(t != NULL && t->claims != NULL && is != NULL && why != NULL);
	*why = JWT_VALID;
	if (t->iss == NULL || strcmp(t->iss, is->issuer) != 0)
		REFUSE(JWT_UNTRUSTED_ISSUER, "\"iss\" is not the issuer's");
	if (t->alg == NULL || (a = jwa_from_name(t->alg)) == JWA_INVALID)
		REFUSE(JWT_ALG_REFUSED, "algorithm %s is not supported",
		    t->alg == NULL ? "(none given)" :
		    strcmp(t->alg, "none") == 0 ? "\"none\"" : "unknown");
	if ((is->algs & JWA_BIT(a)) == 0)
		REFUSE(JWT_ALG_REFUSED, "algorithm %s is not allowed for this "
		    "issuer", jwa_name(a));
	/* RFC 7515 4.1.11: a critical extension not understood refuses. */
	if (t->crit)
		REFUSE(JWT_CRIT_REFUSED, "the header has \"crit\"; revcheck "
		    "understands no critical extension");
	if (JWA_BIT(a) & JWA_HS_MASK) {
		if (is->hs_secret == NULL)
			REFUSE(JWT_UNKNOWN_KEY, "no HS secret for this issuer");
		ok = hmac_verify(a, is->hs_secret, is->hs_len,
		    (const unsigned char *)t->token, t->signed_len, t->sig,
		    t->sig_len);
	} else {
		if (is->keys == NULL)
			REFUSE(JWT_KEYS_UNAVAILABLE, "the issuer's keys are "
			    "not available");
		if ((k = jwks_find(is->keys, t->kid)) == NULL)
			REFUSE(JWT_UNKNOWN_KEY, t->kid != NULL ? "no key with "
			    "this \"kid\"" : "no \"kid\" and the issuer has "
			    "%zu keys", is->keys->n);
		if (!jwks_key_fits(k, a))
			REFUSE(JWT_ALG_REFUSED, "algorithm %s does not fit the "
			    "key", jwa_name(a));
		ok = pkey_verify(a, k, (const unsigned char *)t->token,
		    t->signed_len, t->sig, t->sig_len);
	}
	if (!ok)
		REFUSE(JWT_BAD_SIGNATURE, "the signature does not verify");
	if (check_times(t, is, now, why, err, errlen) == -1)
		return -1;
	if (!aud_ok(cJSON_GetObjectItemCaseSensitive(t->claims, "aud"), is))
		REFUSE(JWT_WRONG_AUDIENCE, "\"aud\" names none of the accepted "
		    "audiences");
	return 0;
}

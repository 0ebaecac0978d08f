/* fuzz_jwt.c - JWTs from untrusted bytes, as the daemon receives tokens to check */
/*
 * Besides parsing, every token is verified against the two issuers of the
 * PyJWT vectors (tests/vectors/jwt, found through REVCHECK_SRC or the
 * current directory) at their NOW, and a token whose header asks for
 * HS256 is signed again with the vectors' secret and verified once more,
 * so that mutated claims reach the time and audience checks; there the
 * verdict must be the one the claims call for.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "jwt.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define VEC_NOW		INT64_C(1700000000)

static struct jwks ka, kb;
static struct jwt_issuer ia, ib;
static unsigned char *sec;
static size_t seclen;
static char *resigned;

static void
load(const char *name, unsigned char **buf, size_t *len)
{
	char path[4096], err[512];
	const char *src = getenv("REVCHECK_SRC");

	snprintf(path, sizeof(path), "%s/tests/vectors/jwt/%s",
	    src != NULL ? src : ".", name);
	if (util_read_file(path, JWKS_MAX_LEN, buf, len, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_jwt: %s (set REVCHECK_SRC)\n", err);
		abort();
	}
}

static void
setup(void)
{
	static const char *const aud_a[] = { "api", "other" };
	static const char *const aud_b[] = { "api" };
	unsigned char *buf;
	size_t len;
	char err[512];

	load("a.jwks", &buf, &len);
	if (jwks_parse(&ka, (const char *)buf, len, "a.jwks", err,
	    sizeof(err)) != 0 || ka.n != 6)
		abort();
	free(buf);
	load("b.jwks", &buf, &len);
	if (jwks_parse(&kb, (const char *)buf, len, "b.jwks", err,
	    sizeof(err)) != 0 || kb.n != 1)
		abort();
	free(buf);
	load("hs.secret", &sec, &seclen);
	if (seclen < 2 || sec[seclen - 1] != '\n')
		abort();
	seclen--;
	ia = (struct jwt_issuer){ .issuer = "https://a.example",
	    .keys = &ka, .audiences = aud_a, .naud = 2, .leeway = 30,
	    .hs_secret = sec, .hs_len = seclen,
	    .algs = JWA_BIT(JWA_RS256) | JWA_BIT(JWA_RS384) |
	    JWA_BIT(JWA_RS512) | JWA_BIT(JWA_PS256) | JWA_BIT(JWA_PS384) |
	    JWA_BIT(JWA_PS512) | JWA_BIT(JWA_ES256) | JWA_BIT(JWA_ES384) |
	    JWA_BIT(JWA_ES512) | JWA_BIT(JWA_EDDSA) | JWA_BIT(JWA_HS256) };
	ib = (struct jwt_issuer){ .issuer = "https://b.example",
	    .keys = &kb, .audiences = aud_b, .naud = 1, .leeway = 30,
	    .algs = JWA_BIT(JWA_ES256) };
	if ((resigned = malloc(JWT_MAX_LEN + 128)) == NULL)
		abort();
}

/* A NumericDate as RFC 7519 and jwt_claim_time read it: 1, 0 absent, -1 bad. */
static int
date(const cJSON *claims, const char *name, int64_t *out)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(claims, name);

	if (m == NULL)
		return 0;
	if (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) ||
	    m->valuedouble < 0 || m->valuedouble > 253402300799.0)
		return -1;
	*out = (int64_t)floor(m->valuedouble);
	return 1;
}

static bool
aud_named(const cJSON *aud, const struct jwt_issuer *is)
{
	const cJSON *it;
	size_t i;

	if (cJSON_IsString(aud)) {
		for (i = 0; i < is->naud; i++)
			if (strcmp(aud->valuestring, is->audiences[i]) == 0)
				return true;
	} else if (cJSON_IsArray(aud)) {
		/* Strings in the array; nothing nested. */
		for (it = aud->child; it != NULL; it = it->next)
			if (cJSON_IsString(it) && aud_named(it, is))
				return true;
	}
	return false;
}

/*
 * What the claims of a token with a good signature from is call for
 * (RFC 7519 4.1): exp present and not passed, nbf and iat (when present)
 * not in the future, beyond the leeway each; aud naming an audience.
 */
static enum jwt_verdict
claims_verdict(const cJSON *c, const struct jwt_issuer *is, int64_t now)
{
	int64_t exp = 0, nbf = 0, iat = 0;
	int r;

	if (date(c, "exp", &exp) != 1)
		return JWT_MISSING_CLAIM;
	if (exp + is->leeway <= now)
		return JWT_EXPIRED;
	if ((r = date(c, "nbf", &nbf)) == -1)
		return JWT_MISSING_CLAIM;
	if (r == 1 && nbf > now + is->leeway)
		return JWT_NOT_YET_VALID;
	if ((r = date(c, "iat", &iat)) == -1)
		return JWT_MISSING_CLAIM;
	if (r == 1 && iat > now + is->leeway)
		return JWT_NOT_YET_VALID;
	if (!aud_named(cJSON_GetObjectItemCaseSensitive(c, "aud"), is))
		return JWT_WRONG_AUDIENCE;
	return JWT_VALID;
}

/*
 * jwt_verify's answer must fit the token: accepted only from the issuer,
 * with an allowed algorithm, no crit and claims that call for it, and no
 * longer once one bit of the signature changes; refused with a reason.
 */
static enum jwt_verdict
verify(struct jwt *t, const struct jwt_issuer *is)
{
	enum jwt_verdict why, why2;
	enum jwa a;
	char err[512];
	int rc;

	err[0] = '\0';
	rc = jwt_verify(t, is, VEC_NOW, &why, err, sizeof(err));
	if (rc != 0) {
		if (rc != -1 || why == JWT_VALID || why >= JWT_VERDICT_COUNT ||
		    err[0] == '\0')
			__builtin_trap();
		return why;
	}
	if (why != JWT_VALID || t->iss == NULL ||
	    strcmp(t->iss, is->issuer) != 0 || t->alg == NULL ||
	    (a = jwa_from_name(t->alg)) == JWA_INVALID ||
	    (is->algs & JWA_BIT(a)) == 0 || t->crit ||
	    claims_verdict(t->claims, is, VEC_NOW) != JWT_VALID ||
	    t->sig_len == 0)
		__builtin_trap();
	t->sig[t->sig_len - 1] ^= 0x01;
	rc = jwt_verify(t, is, VEC_NOW, &why2, err, sizeof(err));
	t->sig[t->sig_len - 1] ^= 0x01;
	if (rc != -1 || why2 != JWT_BAD_SIGNATURE)
		__builtin_trap();
	return why;
}

/* base64url without padding of in into out; the length written. */
static size_t
b64url(char *out, const unsigned char *in, size_t len)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t i, o = 0;
	uint32_t v;

	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
		    in[i + 2];
		out[o++] = al[v >> 18];
		out[o++] = al[(v >> 12) & 63];
		out[o++] = al[(v >> 6) & 63];
		out[o++] = al[v & 63];
	}
	if (len - i == 1) {
		v = (uint32_t)in[i] << 16;
		out[o++] = al[v >> 18];
		out[o++] = al[(v >> 12) & 63];
	} else if (len - i == 2) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = al[v >> 18];
		out[o++] = al[(v >> 12) & 63];
		out[o++] = al[(v >> 6) & 63];
	}
	return o;
}

/*
 * The token's header and payload signed again with issuer A's HS256
 * secret: a signature that verifies, so the verdict is the claims'.
 */
static void
resign(const struct jwt *full)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	enum jwt_verdict want, got;
	struct jwt t;
	size_t ml = 0, len;
	char err[512];

	if (full->alg == NULL || strcmp(full->alg, "HS256") != 0 ||
	    full->signed_len + 1 + 43 > JWT_MAX_LEN)
		return;
	if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, sec, seclen,
	    (const unsigned char *)full->token, full->signed_len, mac,
	    sizeof(mac), &ml) == NULL || ml != 32)
		abort();
	memcpy(resigned, full->token, full->signed_len);
	len = full->signed_len;
	resigned[len++] = '.';
	len += b64url(resigned + len, mac, ml);
	if (jwt_parse(&t, resigned, len, err, sizeof(err)) != 0)
		__builtin_trap();	/* the parts parsed before */
	if (t.iss == NULL || strcmp(t.iss, ia.issuer) != 0)
		want = JWT_UNTRUSTED_ISSUER;
	else if (t.crit)
		want = JWT_CRIT_REFUSED;
	else
		want = claims_verdict(t.claims, &ia, VEC_NOW);
	got = verify(&t, &ia);
	if (got != want)
		__builtin_trap();
	jwt_free(&t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char enc[REVKEY_ENC_MAX];
	struct revkey k, k2;
	struct jwt full, part;
	char err[256];
	int rk;

	if (resigned == NULL)
		setup();
	err[0] = '\0';
	rk = jwt_revkey(&k, (const char *)data, size, err, sizeof(err));
	if (rk == 0) {
		if (k.id_len == 0 || k.id_len > REVKEY_ID_MAX ||
		    !revkey_scope_valid(k.scope, k.scope_len) ||
		    revkey_scope_is_x509(k.scope) ||
		    revkey_scope_is_cutoff(k.scope))
			__builtin_trap();
		(void)revkey_encode(&k, enc);
	} else if (err[0] == '\0') {
		__builtin_trap();	/* every failure says why */
	}

	/*
	 * What a verified-token cache hit reads (jwt_parse_claims) is what
	 * a full parse reads: a token jwt_parse takes gives the same claims
	 * and iss, and jwt_parse_claims never refuses one it takes.
	 */
	if (jwt_parse(&full, (const char *)data, size, err, sizeof(err)) == 0) {
		char *a, *b;

		if (jwt_parse_claims(&part, (const char *)data, size, err,
		    sizeof(err)) != 0 || part.header != NULL ||
		    (full.iss == NULL) != (part.iss == NULL) ||
		    (full.iss != NULL && strcmp(full.iss, part.iss) != 0))
			__builtin_trap();
		a = cJSON_PrintUnformatted(full.claims);
		b = cJSON_PrintUnformatted(part.claims);
		if (a == NULL || b == NULL || strcmp(a, b) != 0)
			__builtin_trap();
		cJSON_free(a);
		cJSON_free(b);
		/* The key of a parsed token is jwt_revkey's. */
		if ((jwt_key(&full, &k2, err, sizeof(err)) == 0) != (rk == 0) ||
		    (rk == 0 && revkey_cmp(&k, &k2) != 0))
			__builtin_trap();
		(void)verify(&full, &ia);
		(void)verify(&full, &ib);
		resign(&full);
		jwt_free(&part);
		jwt_free(&full);
	} else if (rk == 0) {
		__builtin_trap();	/* jwt_revkey parses as jwt_parse */
	} else if (jwt_parse_claims(&part, (const char *)data, size, err,
	    sizeof(err)) == 0) {
		jwt_free(&part);
	}
	return 0;
}

/* test_jwt.c - tests of the JWT revocation key extraction */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "jwt.h"
#include "util.h"

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64url of s into out (which must be large enough). */
static void
enc(char *out, const char *s, size_t len)
{
	const unsigned char *in = (const unsigned char *)s;
	size_t i, o = 0;
	unsigned v;

	for (i = 0; i + 2 < len; i += 3) {
		v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64url[v >> 18 & 63];
		out[o++] = b64url[v >> 12 & 63];
		out[o++] = b64url[v >> 6 & 63];
		out[o++] = b64url[v & 63];
	}
	if (len - i == 1) {
		v = (unsigned)in[i] << 16;
		out[o++] = b64url[v >> 18 & 63];
		out[o++] = b64url[v >> 12 & 63];
	} else if (len - i == 2) {
		v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
		out[o++] = b64url[v >> 18 & 63];
		out[o++] = b64url[v >> 12 & 63];
		out[o++] = b64url[v >> 6 & 63];
	}
	out[o] = '\0';
}

/* A token "<hdr>.<payload>.<sig>" with payload JSON text; caller frees. */
static char *
mktoken(const char *payload)
{
	static const char hdr[] = "{\"alg\":\"ES256\",\"typ\":\"JWT\"}";
	size_t plen = strlen(payload);
	char *tok = malloc(64 + 2 * sizeof(hdr) + 2 * plen);
	size_t o;

	cr_assert_not_null(tok);
	enc(tok, hdr, sizeof(hdr) - 1);
	o = strlen(tok);
	tok[o++] = '.';
	enc(tok + o, payload, plen);
	o = strlen(tok);
	tok[o++] = '.';
	enc(tok + o, "signature-bytes", 15);
	return tok;
}

static int
run(struct revkey *k, const char *payload, char *err, size_t errlen)
{
	char *tok = mktoken(payload);
	int rc = jwt_revkey(k, tok, strlen(tok), err, errlen);

	free(tok);
	return rc;
}

Test(jwt, good_token_with_iss)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "{\"iss\":\"https://idp.example\",\"sub\":\"u1\","
	    "\"jti\":\"tok-123\",\"exp\":1999999999}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(k.scope, "https://idp.example");
	cr_assert_eq(k.scope_len, strlen("https://idp.example"));
	cr_assert_eq(k.id_len, 7);
	cr_assert_eq(memcmp(k.id, "tok-123", 7), 0);
}

Test(jwt, no_iss_gives_default_scope)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "{\"jti\":\"abc\"}", err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_str_eq(k.scope, "default");
	cr_assert_eq(k.id_len, 3);
	cr_assert_eq(memcmp(k.id, "abc", 3), 0);
}

Test(jwt, payload_lengths_mod_3)
{
	/* Payloads of every length modulo 3 exercise each base64 tail. */
	static const char *const p[] = {
		"{\"jti\":\"a\"}", "{\"jti\":\"ab\"}", "{\"jti\":\"abc\"}",
	};
	struct revkey k;
	char err[256] = "";
	size_t i;

	for (i = 0; i < 3; i++) {
		cr_assert_eq(run(&k, p[i], err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(k.id_len, i + 1);
	}
}

Test(jwt, empty_signature_accepted)
{
	char tok[256], pay[128];
	struct revkey k;
	char err[256] = "";

	enc(pay, "{\"jti\":\"x1\"}", 12);
	cr_assert(snprintf(tok, sizeof(tok), "eyJhbGciOiJub25lIn0.%s.", pay) <
	    (int)sizeof(tok));
	cr_assert_eq(jwt_revkey(&k, tok, strlen(tok), err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(memcmp(k.id, "x1", 2), 0);
}

Test(jwt, missing_jti)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "{\"iss\":\"a\",\"sub\":\"b\"}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "jti") != NULL, "%s", err);
}

Test(jwt, jti_not_string_or_empty_or_too_long)
{
	struct revkey k;
	char err[256] = "", *p, *q;

	cr_assert_eq(run(&k, "{\"jti\":42}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a string") != NULL, "%s", err);
	cr_assert_eq(run(&k, "{\"jti\":\"\"}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "jti") != NULL, "%s", err);

	p = malloc(REVKEY_ID_MAX + 32);
	cr_assert_not_null(p);
	memcpy(p, "{\"jti\":\"", 8);
	memset(p + 8, 'x', REVKEY_ID_MAX + 1);
	memcpy(p + 8 + REVKEY_ID_MAX + 1, "\"}", 3);
	cr_assert_eq(run(&k, p, err, sizeof(err)), -1);
	cr_assert(strstr(err, "jti") != NULL, "%s", err);
	/* Exactly REVKEY_ID_MAX bytes is fine. */
	q = p + 8 + REVKEY_ID_MAX;
	memcpy(q, "\"}", 3);
	cr_assert_eq(run(&k, p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(k.id_len, REVKEY_ID_MAX);
	free(p);
}

Test(jwt, duplicate_jti_refused)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "{\"jti\":\"a\",\"jti\":\"b\"}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "duplicate") != NULL, "%s", err);
}

Test(jwt, bad_iss)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "{\"jti\":\"a\",\"iss\":7}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "iss") != NULL, "%s", err);
	cr_assert_eq(run(&k, "{\"jti\":\"a\",\"iss\":\"has space\"}", err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "iss") != NULL, "%s", err);
	cr_assert_eq(run(&k, "{\"jti\":\"a\",\"iss\":\"x509:"
	    "0000000000000000000000000000000000000000000000000000000000000000"
	    "\"}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "iss") != NULL, "%s", err);
}

Test(jwt, bad_base64)
{
	struct revkey k;
	char err[256] = "";
	const char *t;

	t = "eyJhbGciOiJub25lIn0.eyJqdGkiOiJhIn0*.sig";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "base64url in payload") != NULL, "%s", err);
	cr_assert(strstr(err, "offset 35") != NULL, "%s", err);
	/* Padding is not base64url as JWS uses it. */
	t = "eyJhbGciOiJub25lIn0.eyJqdGkiOiJhIn0=.sig";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "base64url") != NULL, "%s", err);
	/* Standard base64's '+' and '/' are not in the url alphabet. */
	t = "eyJhbGciOiJub25lIn0.eyJqdGkiOiJhIn0.si+g/";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "signature") != NULL, "%s", err);
	/* A length leaving one dangling character. */
	t = "eyJhbGciOiJub25lIn0.eyJqdGkiOiJhIn0ab.sig";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "base64url") != NULL, "%s", err);
	/* Non-zero unused bits: "eyJqdGkiOiJhIn1" decodes like "...In0". */
	t = "eyJhbGciOiJub25lIn0.eyJqdGkiOiJhIn1.sig";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "base64url") != NULL, "%s", err);
	/* A bad header. */
	t = "ey!.eyJqdGkiOiJhIn0.sig";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "header") != NULL, "%s", err);
}

Test(jwt, payload_not_json)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "not json at all", err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a JSON object") != NULL, "%s", err);
	cr_assert_eq(run(&k, "[\"jti\",\"a\"]", err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a JSON object") != NULL, "%s", err);
	cr_assert_eq(run(&k, "{\"jti\":\"a\"} trailing", err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a JSON object") != NULL, "%s", err);
}

Test(jwt, malformed_structure)
{
	struct revkey k;
	char err[256] = "";
	const char *t;
	char *big;

	cr_assert_eq(jwt_revkey(&k, "", 0, err, sizeof(err)), -1);
	cr_assert(strstr(err, "empty") != NULL, "%s", err);
	t = "eyJhbGciOiJub25lIn0.eyJqdGkiOiJhIn0";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "malformed") != NULL, "%s", err);
	t = "a.b.c.d.e";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "JWE") != NULL, "%s", err);
	t = ".eyJqdGkiOiJhIn0.sig";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "empty header") != NULL, "%s", err);
	t = "eyJhbGciOiJub25lIn0..sig";
	cr_assert_eq(jwt_revkey(&k, t, strlen(t), err, sizeof(err)), -1);
	cr_assert(strstr(err, "empty payload") != NULL, "%s", err);

	big = malloc(JWT_MAX_LEN + 2);
	cr_assert_not_null(big);
	memset(big, 'A', JWT_MAX_LEN + 1);
	big[10] = '.';
	big[20] = '.';
	cr_assert_eq(jwt_revkey(&k, big, JWT_MAX_LEN + 1, err, sizeof(err)), -1);
	cr_assert(strstr(err, "over the limit") != NULL, "%s", err);
	free(big);
}

Test(jwt, length_is_respected)
{
	struct revkey k;
	char err[256] = "";
	char *tok = mktoken("{\"jti\":\"abc\"}");
	size_t len = strlen(tok);
	char *copy = malloc(len + 8);

	/* Bytes after len are not part of the token. */
	cr_assert_not_null(copy);
	memcpy(copy, tok, len);
	memcpy(copy + len, ".extra", 7);
	cr_assert_eq(jwt_revkey(&k, copy, len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(k.id, "abc", 3), 0);
	free(copy);
	free(tok);
}

/* Regression: cJSON cut a jti at \u0000, so "abc\u0000def" was checked as "abc". */
Test(jwt, escaped_nul_in_claims_refused)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "{\"jti\":\"abc\\u0000def\"}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "u0000") != NULL, "%s", err);
	cr_assert_eq(run(&k, "{\"jti\":\"abc\\\\u0000def\"}", err, sizeof(err)),
	    0, "an escaped backslash is not a NUL: %s", err);
	cr_assert_eq(k.id_len, 12);
}

/* A token of header text hdr and payload text pl; caller frees. */
static char *
mktoken_hp(const char *hdr, const char *pl)
{
	size_t hl = strlen(hdr), plen = strlen(pl), o;
	char *tok = malloc(64 + 2 * hl + 2 * plen);

	cr_assert_not_null(tok);
	enc(tok, hdr, hl);
	o = strlen(tok);
	tok[o++] = '.';
	enc(tok + o, pl, plen);
	o = strlen(tok);
	tok[o++] = '.';
	enc(tok + o, "signature-bytes", 15);
	return tok;
}

/*
 * RFC 7519 7.2: the decoded header and payload are UTF-8. cJSON copied a
 * string's bytes as they were, so an overlong '/', a surrogate or a byte
 * that starts no character reached the claims (and /v1/introspect's
 * answer) raw. Every invalid form is refused as malformed, in the
 * payload (jwt_parse and jwt_parse_claims alike) and in the header; the
 * valid forms at each boundary are kept.
 */
Test(jwt, invalid_utf8_in_header_or_payload_refused)
{
	static const char *const bad[] = {
		"\xc0\xaf",		/* overlong '/', two bytes */
		"\xc1\xbf",		/* overlong, two bytes */
		"\xe0\x80\xaf",	/* overlong '/', three bytes */
		"\xe0\x9f\xbf",	/* overlong U+07FF */
		"\xf0\x80\x80\xaf",	/* overlong '/', four bytes */
		"\xf0\x8f\xbf\xbf",	/* overlong U+FFFF */
		"\xed\xa0\x80",	/* U+D800, a high surrogate */
		"\xed\xbf\xbf",	/* U+DFFF, a low surrogate */
		"\xed\xa0\xbd\xed\xb8\x80", /* a CESU-8 pair */
		"\xf4\x90\x80\x80",	/* U+110000 */
		"\xf5\x80\x80\x80",	/* above U+10FFFF */
		"\xf8\x88\x80\x80\x80",	/* a five-byte form */
		"\xff",			/* never in UTF-8 */
		"\xfe",
		"\x80",			/* a stray continuation byte */
		"a\xbf" "b",
		"\xe2\x82",		/* cut: two of three bytes */
		"\xc3",			/* cut: one of two */
		"\xf0\x9f\x98",	/* cut: three of four */
		"\xc3\x28",		/* a lead byte, then ASCII */
	};
	static const char *const good[] = {
		"\xc2\x80", "\xc3\xa9", "\xdf\xbf", "\xe0\xa0\x80",
		"\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf",
		"\xf0\x90\x80\x80", "\xf0\x9f\x98\x80",
		"\xf4\x8f\xbf\xbf", "<>&'",
	};
	char pl[256], hdr[256], err[256], *tok;
	struct jwt t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(pl, sizeof(pl), "{\"jti\":\"j\",\"sub\":\"%s\"}",
		    bad[i]);
		tok = mktoken_hp("{\"alg\":\"ES256\"}", pl);
		err[0] = '\0';
		cr_assert_eq(jwt_parse(&t, tok, strlen(tok), err, sizeof(err)),
		    -1, "payload case %zu accepted", i);
		cr_assert(strstr(err, "payload is not valid UTF-8") != NULL,
		    "case %zu: %s", i, err);
		cr_assert_null(t.claims);
		cr_assert_eq(jwt_parse_claims(&t, tok, strlen(tok), err,
		    sizeof(err)), -1, "payload case %zu: claims alone", i);
		free(tok);
		/* Outside a string too: JSON text is UTF-8 throughout. */
		snprintf(pl, sizeof(pl), "{\"jti\":\"j\"} %s", bad[i]);
		tok = mktoken_hp("{\"alg\":\"ES256\"}", pl);
		cr_assert_eq(jwt_parse(&t, tok, strlen(tok), err, sizeof(err)),
		    -1, "payload case %zu outside a string", i);
		free(tok);
		snprintf(hdr, sizeof(hdr), "{\"alg\":\"ES256\",\"kid\":\"%s\"}",
		    bad[i]);
		tok = mktoken_hp(hdr, "{\"jti\":\"j\"}");
		err[0] = '\0';
		cr_assert_eq(jwt_parse(&t, tok, strlen(tok), err, sizeof(err)),
		    -1, "header case %zu accepted", i);
		cr_assert(strstr(err, "header is not valid UTF-8") != NULL,
		    "case %zu: %s", i, err);
		free(tok);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(pl, sizeof(pl), "{\"jti\":\"j\",\"sub\":\"%s\"}",
		    good[i]);
		snprintf(hdr, sizeof(hdr), "{\"alg\":\"ES256\",\"kid\":\"%s\"}",
		    good[i]);
		tok = mktoken_hp(hdr, pl);
		cr_assert_eq(jwt_parse(&t, tok, strlen(tok), err, sizeof(err)),
		    0, "good case %zu: %s", i, err);
		cr_assert_str_eq(jwt_claim_str(&t, "sub"), good[i]);
		cr_assert_str_eq(t.kid, good[i]);
		jwt_free(&t);
		free(tok);
	}
}

/* A \u escape of a lone surrogate is refused (cJSON); a pair is kept. */
Test(jwt, escaped_surrogates)
{
	struct revkey k;
	char err[256] = "";

	cr_assert_eq(run(&k, "{\"jti\":\"a\\ud800\"}", err, sizeof(err)), -1);
	cr_assert_eq(run(&k, "{\"jti\":\"a\\udc00b\"}", err, sizeof(err)),
	    -1);
	cr_assert_eq(run(&k, "{\"jti\":\"a\\ud800\\u0041\"}", err,
	    sizeof(err)), -1);
	cr_assert_eq(run(&k, "{\"jti\":\"\\ud83d\\ude00\"}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(k.id_len, 4);
	cr_assert_eq(memcmp(k.id, "\xf0\x9f\x98\x80", 4), 0);
}

/*
 * Verification against vectors signed by PyJWT (tests/vectors/jwt,
 * remade by mkvectors.py there): every algorithm, and the classic
 * attacks, each with the verdict it must get.
 */
#define VEC_NOW 1700000000

static char *
vec_path(char *buf, size_t len, const char *name)
{
	const char *src = getenv("REVCHECK_SRC");
	int n = snprintf(buf, len, "%s/tests/vectors/jwt/%s",
	    src != NULL ? src : ".", name);

	cr_assert(n > 0 && (size_t)n < len);
	return buf;
}

static void
vec_jwks(struct jwks *s, const char *name)
{
	unsigned char *buf;
	size_t len;
	char p[4096], err[512];

	cr_assert_eq(util_read_file(vec_path(p, sizeof(p), name),
	    JWKS_MAX_LEN, &buf, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jwks_parse(s, (const char *)buf, len, name, err,
	    sizeof(err)), 0, "%s", err);
	free(buf);
}

/* The two issuers of the vectors and what the cases need. */
struct vec_env {
	struct jwks	 ka, kb;
	struct jwt_issuer ia, ib;
	unsigned char	*sec;
	size_t		 seclen;
};

static void
vec_env_init(struct vec_env *v)
{
	static const char *const aud_a[] = { "api", "other" };
	static const char *const aud_b[] = { "api" };
	char p[4096], err[512];

	memset(v, 0, sizeof(*v));
	vec_jwks(&v->ka, "a.jwks");
	vec_jwks(&v->kb, "b.jwks");
	cr_assert_eq(v->ka.n, 6);
	cr_assert_eq(v->kb.n, 1);
	cr_assert_eq(util_read_file(vec_path(p, sizeof(p), "hs.secret"), 4096,
	    &v->sec, &v->seclen, err, sizeof(err)), 0, "%s", err);
	cr_assert(v->seclen > 1 && v->sec[v->seclen - 1] == '\n');
	v->seclen--;
	v->ia = (struct jwt_issuer){ .issuer = "https://a.example",
	    .keys = &v->ka, .audiences = aud_a, .naud = 2, .leeway = 30,
	    .hs_secret = v->sec, .hs_len = v->seclen,
	    .algs = JWA_BIT(JWA_RS256) | JWA_BIT(JWA_RS384) |
	    JWA_BIT(JWA_RS512) | JWA_BIT(JWA_PS256) | JWA_BIT(JWA_PS384) |
	    JWA_BIT(JWA_PS512) | JWA_BIT(JWA_ES256) | JWA_BIT(JWA_ES384) |
	    JWA_BIT(JWA_ES512) | JWA_BIT(JWA_EDDSA) | JWA_BIT(JWA_HS256) };
	v->ib = (struct jwt_issuer){ .issuer = "https://b.example",
	    .keys = &v->kb, .audiences = aud_b, .naud = 1, .leeway = 30,
	    .algs = JWA_BIT(JWA_ES256) };
}

static void
vec_env_free(struct vec_env *v)
{
	OPENSSL_cleanse(v->sec, v->seclen);
	free(v->sec);
	jwks_free(&v->ka);
	jwks_free(&v->kb);
}

/*
 * Runs every case of cases.tsv against v. With strict, each verdict is
 * asserted; otherwise (from other threads, where Criterion cannot
 * assert) the wrong ones are counted in *wrong. Counts cases and
 * accepted ones.
 */
static void
vec_run(const struct vec_env *v, bool strict, size_t *ncases,
    size_t *nvalid, size_t *wrong)
{
	struct jwt t;
	enum jwt_verdict why;
	char p[4096], err[512], line[20000], *name, *want, *iss, *tok, *nl;
	FILE *fp;
	int rc;

	*ncases = *nvalid = *wrong = 0;
	fp = fopen(vec_path(p, sizeof(p), "cases.tsv"), "r");
	if (strict)
		cr_assert_not_null(fp);
	else if (fp == NULL) {
		*wrong = 1;
		return;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (line[0] == '#')
			continue;
		if ((nl = strchr(line, '\n')) != NULL)
			*nl = '\0';
		name = line;
		want = iss = tok = NULL;
		if ((want = strchr(name, '\t')) != NULL)
			*want++ = '\0';
		if (want != NULL && (iss = strchr(want, '\t')) != NULL)
			*iss++ = '\0';
		if (iss != NULL && (tok = strchr(iss, '\t')) != NULL)
			*tok++ = '\0';
		if (strict)
			cr_assert_not_null(tok, "%s: bad line", name);
		if (tok == NULL ||
		    jwt_parse(&t, tok, strlen(tok), err, sizeof(err)) != 0) {
			if (strict)
				cr_assert_fail("%s: %s", name, err);
			(*wrong)++;
			continue;
		}
		rc = jwt_verify(&t, iss[0] == 'A' ? &v->ia : &v->ib, VEC_NOW,
		    &why, err, sizeof(err));
		if (strict) {
			cr_assert_str_eq(jwt_verdict_str(why), want, "%s: %s",
			    name, rc == 0 ? "accepted" : err);
			cr_assert_eq(rc, strcmp(want, "valid") == 0 ? 0 : -1,
			    "%s", name);
		} else if (strcmp(jwt_verdict_str(why), want) != 0 ||
		    rc != (strcmp(want, "valid") == 0 ? 0 : -1))
			(*wrong)++;
		*nvalid += rc == 0;
		(*ncases)++;
		jwt_free(&t);
	}
	fclose(fp);
}

Test(jwt, pyjwt_vectors)
{
	struct vec_env v;
	size_t ncases, nvalid, wrong;

	vec_env_init(&v);
	vec_run(&v, true, &ncases, &nvalid, &wrong);
	cr_assert_eq(ncases, 39);
	cr_assert_eq(nvalid, 16);
	vec_env_free(&v);
}

struct vec_thread {
	const struct vec_env *v;
	size_t		 wrong;
	size_t		 cases;
};

static void *
vec_thread_main(void *arg)
{
	struct vec_thread *vt = arg;
	size_t n, ok, w;
	int i;

	for (i = 0; i < 5; i++) {
		vec_run(vt->v, false, &n, &ok, &w);
		vt->wrong += w;
		vt->cases += n;
	}
	return NULL;
}

/*
 * A key's verification contexts are pooled (jwks_vctx_get): one made for
 * a signature that failed, or for another algorithm of the same RSA key,
 * is reused by later verifications. Every verdict stays the same when
 * the vectors run again and again, from four threads at once.
 */
Test(jwt, pooled_contexts_keep_verdicts)
{
	struct vec_env v;
	struct vec_thread vt[4];
	pthread_t th[4];
	size_t ncases, nvalid, wrong, i;

	vec_env_init(&v);
	vec_run(&v, true, &ncases, &nvalid, &wrong);
	vec_run(&v, true, &ncases, &nvalid, &wrong);
	cr_assert_eq(nvalid, 16);
	memset(vt, 0, sizeof(vt));
	for (i = 0; i < 4; i++) {
		vt[i].v = &v;
		cr_assert_eq(pthread_create(&th[i], NULL, vec_thread_main,
		    &vt[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(vt[i].wrong, 0, "thread %zu: %zu wrong verdicts",
		    i, vt[i].wrong);
		cr_assert_eq(vt[i].cases, 5 * 39);
	}
	vec_env_free(&v);
}

/* Every unusable key is skipped; the set keeps the one good key. */
Test(jwks, skips_unusable_keys)
{
	struct jwks s;

	vec_jwks(&s, "bad.jwks");
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.keys[0].kid, "good");
	cr_assert_eq(s.keys[0].type, JWK_EC_P256);
	cr_assert_not_null(jwks_find(&s, "good"));
	cr_assert_not_null(jwks_find(&s, NULL));	/* the only key */
	cr_assert_null(jwks_find(&s, "oct"));
	cr_assert_null(jwks_find(&s, "rsa-1024"));
	cr_assert_null(jwks_find(&s, "off-curve"));
	jwks_free(&s);
}

Test(jwks, refuses_non_sets)
{
	static const char *const bad[] = { "", "[]", "{}", "{\"keys\":{}}",
	    "{\"keys\":[]} x", "{\"keys\":\"x\"}" };
	struct jwks s;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(jwks_parse(&s, bad[i], strlen(bad[i]), "t", err,
		    sizeof(err)), -1, "%s", bad[i]);
		cr_assert_eq(s.n, 0);
		cr_assert_null(s.keys);
	}
	cr_assert_eq(jwks_parse(&s, "{\"keys\":[]}", 11, "t", err,
	    sizeof(err)), 0);
	cr_assert_eq(s.n, 0);
	cr_assert_null(jwks_find(&s, NULL));
	jwks_free(&s);
}

/*
 * A megabyte of "{}" (a broken or hostile JWKS endpoint) is bounded work
 * and a bounded log: at most JWKS_MAX_ENTRIES entries looked at, and
 * JWKS_MAX_WARN skipped keys named, the rest counted (it logged a line
 * per entry, some 350,000 per fetch).
 */
Test(jwks, junk_entries_bounded)
{
	size_t n = 300000, i, len = 0, named = 0, lines = 0;
	char *buf, line[512], err[256];
	struct jwks s;
	FILE *cap;
	int saved, rc;

	cr_assert_not_null(buf = malloc(3 * n + 16));
	memcpy(buf, "{\"keys\":[{}", 11);
	len = 11;
	for (i = 1; i < n; i++) {
		memcpy(buf + len, ",{}", 3);
		len += 3;
	}
	memcpy(buf + len, "]}", 2);
	len += 2;
	cr_assert_leq(len, JWKS_MAX_LEN);
	cr_assert_not_null(cap = tmpfile());
	fflush(stderr);
	cr_assert_geq(saved = dup(2), 0);
	cr_assert_eq(dup2(fileno(cap), 2), 2);
	rc = jwks_parse(&s, buf, len, "junk", err, sizeof(err));
	fflush(stderr);
	cr_assert_eq(dup2(saved, 2), 2);
	close(saved);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(s.n, 0);
	rewind(cap);
	while (fgets(line, sizeof(line), cap) != NULL) {
		lines++;
		if (strstr(line, "junk: key ") != NULL)
			named++;
	}
	fclose(cap);
	cr_assert_eq(named, JWKS_MAX_WARN, "%zu keys named", named);
	cr_assert_leq(lines, JWKS_MAX_WARN + 2, "%zu lines logged", lines);
	jwks_free(&s);
	free(buf);
}

Test(jwa, names)
{
	cr_assert_eq(jwa_from_name("none"), JWA_INVALID);
	cr_assert_eq(jwa_from_name("NONE"), JWA_INVALID);
	cr_assert_eq(jwa_from_name("es256"), JWA_INVALID);
	cr_assert_eq(jwa_from_name("ES256"), JWA_ES256);
	cr_assert_eq(jwa_from_name("EdDSA"), JWA_EDDSA);
	cr_assert_str_eq(jwa_name(JWA_PS384), "PS384");
}

/* A set from JSON text s; the caller frees it (jwks_free). */
static void
jwks_of(struct jwks *set, const char *s)
{
	char err[256];

	cr_assert_eq(jwks_parse(set, s, strlen(s), "test", err, sizeof(err)),
	    0, "%s", err);
}

/*
 * A token of issuer https://a.example (audience api, jti forged, exp an
 * hour after VEC_NOW) with header hdr and the sig_len bytes of sig as its
 * signature; the caller frees it.
 */
static char *
forged_token(const char *hdr, const unsigned char *sig, size_t sig_len)
{
	char payload[160], *tok;
	size_t o;

	snprintf(payload, sizeof(payload), "{\"iss\":\"https://a.example\","
	    "\"aud\":\"api\",\"jti\":\"forged\",\"exp\":%d}", VEC_NOW + 3600);
	tok = malloc(2 * (strlen(hdr) + strlen(payload) + sig_len) + 16);
	cr_assert_not_null(tok);
	enc(tok, hdr, strlen(hdr));
	o = strlen(tok);
	tok[o++] = '.';
	enc(tok + o, payload, strlen(payload));
	o = strlen(tok);
	tok[o++] = '.';
	enc(tok + o, (const char *)sig, sig_len);
	return tok;
}

/* jwt_verify of tok against issuer https://a.example with keys s. */
static int
verify_with_set(const char *tok, const struct jwks *s, uint32_t algs,
    enum jwt_verdict *why)
{
	static const char *const aud[] = { "api" };
	struct jwt_issuer is = { .issuer = "https://a.example", .keys = s,
	    .audiences = aud, .naud = 1, .algs = algs, .leeway = 30 };
	struct jwt t;
	char err[256];
	int rc;

	cr_assert_eq(jwt_parse(&t, tok, strlen(tok), err, sizeof(err)), 0,
	    "%s", err);
	rc = jwt_verify(&t, &is, VEC_NOW, why, err, sizeof(err));
	jwt_free(&t);
	return rc;
}

/*
 * An Ed25519 or Ed448 public key of small order verifies signatures that
 * no private key made: with the neutral point as the key, R = the neutral
 * point and S = 0 is a signature of every message. A JWKS holding one (a
 * placeholder "x" of zero bytes is one: order 4) would let anyone mint
 * tokens; such keys are skipped, like a point off its curve.
 */
Test(jwks, small_order_okp_keys_skipped)
{
	/*
	 * y of order 4, 1, 8, 8 and 2, then p and p + 1, each with the sign
	 * bit of x clear and set; Ed448's y of order 4, 1 and 2, p, p + 1.
	 */
	static const char *const weak[][2] = {
	    { "Ed25519", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
	    { "Ed25519", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA" },
	    { "Ed25519", "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
	    { "Ed25519", "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA" },
	    { "Ed25519", "JuiVj8KyJ7BFw_SJ8u-Y8NXfrAXTxjM5sTgCiG1T_AU" },
	    { "Ed25519", "JuiVj8KyJ7BFw_SJ8u-Y8NXfrAXTxjM5sTgCiG1T_IU" },
	    { "Ed25519", "xxdqcD1N2E-6PAt2DRBnDyogU_osOczGTsf9d5KsA3o" },
	    { "Ed25519", "xxdqcD1N2E-6PAt2DRBnDyogU_osOczGTsf9d5KsA_o" },
	    { "Ed25519", "7P_______________________________________38" },
	    { "Ed25519", "7P________________________________________8" },
	    { "Ed25519", "7f_______________________________________38" },
	    { "Ed25519", "7f________________________________________8" },
	    { "Ed25519", "7v_______________________________________38" },
	    { "Ed25519", "7v________________________________________8" },
	    { "Ed448", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
	    { "Ed448", "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
	    { "Ed448", "_v____________________________________7___________________________________8A" },
	    { "Ed448", "______________________________________7___________________________________8A" },
	    { "Ed448", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAP____________________________________8A" },
	};
	static const unsigned char ident[64] = { 0x01 };
	char json[8192], *tok;
	enum jwt_verdict why;
	struct jwks s;
	size_t i, o;

	/* The neutral point as the key, and a signature anyone can make. */
	snprintf(json, sizeof(json), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":"
	    "\"Ed25519\",\"kid\":\"k\",\"x\":\"%s\"}]}", weak[2][1]);
	jwks_of(&s, json);
	tok = forged_token("{\"alg\":\"EdDSA\",\"kid\":\"k\"}", ident,
	    sizeof(ident));
	cr_expect_neq(verify_with_set(tok, &s, JWA_BIT(JWA_EDDSA), &why), 0,
	    "a token signed R = neutral point, S = 0 verified");
	cr_expect_eq(s.n, 0, "the neutral point was kept as a key");
	free(tok);
	jwks_free(&s);

	o = (size_t)snprintf(json, sizeof(json), "{\"keys\":[");
	for (i = 0; i < sizeof(weak) / sizeof(weak[0]); i++)
		o += (size_t)snprintf(json + o, sizeof(json) - o,
		    "{\"kty\":\"OKP\",\"crv\":\"%s\",\"x\":\"%s\"},", weak[i][0],
		    weak[i][1]);
	/* RFC 8032 7.1, test 1: a real Ed25519 key is still used. */
	snprintf(json + o, sizeof(json) - o, "{\"kty\":\"OKP\",\"crv\":"
	    "\"Ed25519\",\"kid\":\"good\",\"x\":"
	    "\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}]}");
	jwks_of(&s, json);
	cr_expect_eq(s.n, 1, "%zu keys kept of 19 small-order ones and a "
	    "good one", s.n);
	cr_expect_not_null(jwks_find(&s, "good"));
	jwks_free(&s);
}

/* A P-256 key and a token of it (kid k, jti forged), made by PyJWT. */
#define EC_X	"8lUL_PeVTNrC30VBgjtqnpyNK0PjaEB7J619ZWoOazA"
#define EC_Y	"DDnvlNKwY5v9Cqq-BUYuN_bi3ynXQr0ez59uSTPjuYI"
#define EC_TOKEN "eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.eyJpc3MiOiJodHRwczovL2Eu" \
	"ZXhhbXBsZSIsImF1ZCI6ImFwaSIsImp0aSI6ImZvcmdlZCIsImV4cCI6MTcwMDAwMzYwMH0." \
	"7qLU9t1lQWabuVoR1ZuTdCAQVPF23WOEY0ppCJVXpOqmvwMfT_hbvKnvQ0KpK77WtCP74dTp" \
	"FszcK3N-jFZ3Lw"

/*
 * "key_ops" (RFC 7517 4.3) names what a key is for: a key whose list
 * lacks "verify" (an encryption key published for clients to encrypt
 * to, say) verifies no token, as a "use" other than "sig" does not.
 */
/* A set of one P-256 key (EC_X, EC_Y, kid "k") with member added. */
static void
ec_jwks_with(struct jwks *s, const char *member)
{
	char json[1024];

	snprintf(json, sizeof(json), "{\"keys\":[{\"kty\":\"EC\",\"crv\":"
	    "\"P-256\",\"kid\":\"k\",\"x\":\"" EC_X "\",\"y\":\"" EC_Y
	    "\"%s%s}]}", member[0] != '\0' ? "," : "", member);
	jwks_of(s, json);
}

Test(jwks, key_ops_without_verify_skipped)
{
	static const char *const bad[] = { "[\"encrypt\"]",
	    "[\"wrapKey\",\"encrypt\"]", "[\"sign\"]", "[]", "\"verify\"",
	    "[1]", "[\"verify\",null]", "{\"verify\":true}" };
	static const char *const good[] = { "[\"verify\"]",
	    "[\"sign\",\"verify\"]" };
	enum jwt_verdict why;
	char json[512];
	struct jwks s;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), "\"key_ops\":%s", bad[i]);
		ec_jwks_with(&s, json);
		cr_expect_neq(verify_with_set(EC_TOKEN, &s, JWA_BIT(JWA_ES256),
		    &why), 0, "key_ops %s: the token verified", bad[i]);
		cr_expect_eq(s.n, 0, "key_ops %s: the key was kept", bad[i]);
		jwks_free(&s);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(json, sizeof(json), "\"key_ops\":%s", good[i]);
		ec_jwks_with(&s, json);
		cr_expect_eq(verify_with_set(EC_TOKEN, &s, JWA_BIT(JWA_ES256),
		    &why), 0, "key_ops %s: %s", good[i], jwt_verdict_str(why));
		jwks_free(&s);
	}
}

/*
 * A JWK carrying private parameters has its private half published to
 * whoever reads the set: anyone can sign with it, so it proves nothing
 * (as a private key given as a --trusted-key is refused). PyJWT's to_jwk
 * of a private key writes one; EC_D is the private half of EC_X, EC_Y.
 */
#define EC_D	"6r5ifgZSOnVgcEaXgslaBxS3PZtSgw5gI4ov-35Cb-Y"

Test(jwks, private_parameters_skipped)
{
	static const char *const priv[] = { "\"d\":\"" EC_D "\"",
	    "\"p\":\"AQAB\"", "\"q\":\"AQAB\"", "\"dp\":\"AQAB\"",
	    "\"dq\":\"AQAB\"", "\"qi\":\"AQAB\"", "\"oth\":[]",
	    "\"k\":\"AQAB\"", "\"d\":null" };
	enum jwt_verdict why;
	struct jwks s;
	size_t i;

	for (i = 0; i < sizeof(priv) / sizeof(priv[0]); i++) {
		ec_jwks_with(&s, priv[i]);
		cr_expect_neq(verify_with_set(EC_TOKEN, &s, JWA_BIT(JWA_ES256),
		    &why), 0, "with %s: the token verified", priv[i]);
		cr_expect_eq(s.n, 0, "with %s: the key was kept", priv[i]);
		jwks_free(&s);
	}
	ec_jwks_with(&s, "");
	cr_expect_eq(verify_with_set(EC_TOKEN, &s, JWA_BIT(JWA_ES256), &why),
	    0, "the public key alone: %s", jwt_verdict_str(why));
	jwks_free(&s);
}

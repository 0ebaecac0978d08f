/* test_trust.c - tests of the verified-token cache's lifetime (svc/trust.c) */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "../svc/config.h"
#include "jwks.h"
#include "jwt.h"
#include "revkey.h"
#include "../svc/sbuf.h"
#include "../svc/trust.h"
#include "util.h"

/*
 * The PyJWT vectors of tests/vectors/jwt (mkvectors.py): ok-b is an
 * ES256 token of https://b.example (b.jwks), iat NOW - 10, exp NOW + 3600.
 * Time is passed to trust_token() explicitly: the tests drive the clock.
 */
#define VEC_NOW		1700000000
#define VEC_EXP		(VEC_NOW + 3600)
#define LEEWAY		30

static char *
vec_path(char *buf, size_t len, const char *name)
{
	const char *src = getenv("REVCHECK_SRC");
	int n = snprintf(buf, len, "%s/tests/vectors/jwt/%s",
	    src != NULL ? src : ".", name);

	cr_assert(n > 0 && (size_t)n < len);
	return buf;
}

/* The token named name in cases.tsv; caller frees. */
static char *
vec_token(const char *name)
{
	char p[4096], line[20000], *tok, *nl;
	size_t nlen = strlen(name);
	FILE *fp = fopen(vec_path(p, sizeof(p), "cases.tsv"), "r");

	cr_assert_not_null(fp);
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strncmp(line, name, nlen) != 0 || line[nlen] != '\t')
			continue;
		fclose(fp);
		if ((nl = strchr(line, '\n')) != NULL)
			*nl = '\0';
		tok = strrchr(line, '\t');
		cr_assert_not_null(tok);
		tok = strdup(tok + 1);
		cr_assert_not_null(tok);
		return tok;
	}
	fclose(fp);
	cr_assert_fail("no vector %s", name);
	return NULL;
}

/* A set parsed from the vector file name, as the refresh thread holds one. */
static struct jwks *
vec_set(const char *name)
{
	struct jwks *s = calloc(1, sizeof(*s));
	unsigned char *buf;
	size_t len;
	char p[4096], err[512];

	cr_assert_not_null(s);
	cr_assert_eq(util_read_file(vec_path(p, sizeof(p), name),
	    JWKS_MAX_LEN, &buf, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jwks_parse(s, (const char *)buf, len, name, err,
	    sizeof(err)), 0, "%s", err);
	free(buf);
	return s;
}

/* What refresh() does with a fetched set: trust_set_keys, gen bumped. */
static void
install(struct trust *t, struct jwks *s, int64_t at)
{
	trust_set_keys(t, 0, s, at);
}

/*
 * A trust with the single issuer https://b.example, its keys either
 * from b.jwks (uri false) or "fetched" from a jwks_uri: trust_init does
 * not fetch, so the test installs b.jwks as refresh() would.
 */
static void
setup(struct config *c, struct trust *t, bool uri, const char *cache_max,
    const char *max_age)
{
	char json[8192], p[4096], err[512];
	int n;

	config_init(c);
	if (uri)
		n = snprintf(json, sizeof(json), "{\"token_cache_size\": 64, "
		    "\"token_cache_max\": \"%s\", \"issuers\": [{\"issuer\": "
		    "\"https://b.example\", \"jwks_uri\": "
		    "\"https://127.0.0.1:1/jwks\", \"jwks_max_age\": \"%s\", "
		    "\"audiences\": [\"api\"], \"algorithms\": [\"ES256\"], "
		    "\"leeway\": \"%ds\"}]}", cache_max, max_age, LEEWAY);
	else
		n = snprintf(json, sizeof(json), "{\"token_cache_size\": 64, "
		    "\"token_cache_max\": \"%s\", \"issuers\": [{\"issuer\": "
		    "\"https://b.example\", \"jwks_file\": \"%s\", "
		    "\"audiences\": [\"api\"], \"algorithms\": [\"ES256\"], "
		    "\"leeway\": \"%ds\"}]}", cache_max,
		    vec_path(p, sizeof(p), "b.jwks"), LEEWAY);
	cr_assert(n > 0 && (size_t)n < sizeof(json));
	cr_assert_eq(config_load_buf(c, json, strlen(json), "test.json", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(trust_init(t, c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(t->n, 1);
	cr_assert_not_null(t->cache);
	if (uri) {
		cr_assert_null(t->iss[0].keys);
		install(t, vec_set("b.jwks"), VEC_NOW);
	}
}

/* Checks tok at now: the verdict, and whether the cache answered. */
static void
check(struct trust *t, const char *tok, int64_t now, const char *want,
    bool want_hit)
{
	uint64_t hits = atomic_load(&t->cache_hits);
	uint64_t misses = atomic_load(&t->cache_misses);
	enum jwt_verdict why;
	struct revkey k;
	char err[512] = "";
	int rc;

	rc = trust_token(t, tok, strlen(tok), now, &k, &why, err, sizeof(err));
	cr_assert_str_eq(jwt_verdict_str(why), want, "at NOW%+lld: %s",
	    (long long)(now - VEC_NOW), rc == 0 ? "accepted" : err);
	cr_assert_eq(rc, strcmp(want, "valid") == 0 ? 0 : -1);
	cr_assert_eq(atomic_load(&t->cache_hits), hits + (want_hit ? 1 : 0),
	    "at NOW%+lld: the cache %s", (long long)(now - VEC_NOW),
	    want_hit ? "did not answer" : "answered");
	cr_assert_eq(atomic_load(&t->cache_misses),
	    misses + (want_hit ? 0 : 1));
}

/*
 * exp comes first: the entry lives until exp + leeway, and a cached
 * token past it gets "expired", never a cached "valid".
 */
Test(trust_cache, entry_ends_at_exp)
{
	struct config c;
	struct trust t;
	char *tok = vec_token("ok-b");

	setup(&c, &t, false, "1d", NULL);
	check(&t, tok, VEC_EXP - 100, "valid", false);
	check(&t, tok, VEC_EXP - 99, "valid", true);
	check(&t, tok, VEC_EXP + LEEWAY - 1, "valid", true);
	check(&t, tok, VEC_EXP + LEEWAY + 1, "expired", false);
	check(&t, tok, VEC_EXP + LEEWAY + 2, "expired", false);
	free(tok);
	trust_free(&t);
	config_free(&c);
}

/*
 * token_cache_max comes first: the entry is dropped after it and the
 * token verified again (the fresh verification caches it anew).
 */
Test(trust_cache, entry_ends_at_token_cache_max)
{
	struct config c;
	struct trust t;
	char *tok = vec_token("ok-b");

	setup(&c, &t, false, "60s", NULL);
	check(&t, tok, VEC_NOW, "valid", false);
	check(&t, tok, VEC_NOW + 59, "valid", true);
	check(&t, tok, VEC_NOW + 60, "valid", false);
	check(&t, tok, VEC_NOW + 61, "valid", true);
	check(&t, tok, VEC_NOW + 121, "valid", false);
	/* Each end was one eviction (expired); one entry is left. */
	cr_assert_eq(atomic_load(&t.cache_evict_expired), 2);
	cr_assert_eq(atomic_load(&t.cache_entries), 1);
	free(tok);
	trust_free(&t);
	config_free(&c);
}

/*
 * New keys for the issuer drop its cached tokens: one signed by a key
 * no longer in the set is refused at once, not when its entry ends.
 */
Test(trust_cache, entry_dropped_when_keys_change)
{
	struct config c;
	struct trust t;
	char *tok = vec_token("ok-b");

	setup(&c, &t, true, "1d", "1d");
	check(&t, tok, VEC_NOW, "valid", false);
	check(&t, tok, VEC_NOW + 1, "valid", true);
	/* The same keys fetched again: verified again, still valid. */
	install(&t, vec_set("b.jwks"), VEC_NOW + 2);
	check(&t, tok, VEC_NOW + 3, "valid", false);
	check(&t, tok, VEC_NOW + 4, "valid", true);
	/* A set without the token's key (a.jwks: another issuer's). */
	install(&t, vec_set("a.jwks"), VEC_NOW + 5);
	check(&t, tok, VEC_NOW + 6, "unknown_key", false);
	check(&t, tok, VEC_NOW + 7, "unknown_key", false);
	/* Both new sets dropped the entry made under the set before. */
	cr_assert_eq(atomic_load(&t.cache_evict_keys), 2);
	cr_assert_eq(atomic_load(&t.cache_entries), 0);
	/* No set at all: refused as well, never from the cache. */
	install(&t, NULL, VEC_NOW + 8);
	check(&t, tok, VEC_NOW + 9, "keys_unavailable", false);
	free(tok);
	trust_free(&t);
	config_free(&c);
}

/*
 * Fetched keys: the entry never outlives the set's jwks_max_age, after
 * which the issuer's tokens are refused (keys_unavailable).
 */
Test(trust_cache, entry_ends_with_fetched_set)
{
	struct config c;
	struct trust t;
	char *tok = vec_token("ok-b");

	setup(&c, &t, true, "1d", "10m");
	check(&t, tok, VEC_NOW + 500, "valid", false);
	check(&t, tok, VEC_NOW + 600, "valid", true);
	check(&t, tok, VEC_NOW + 601, "keys_unavailable", false);
	free(tok);
	trust_free(&t);
	config_free(&c);
}

/*
 * Two valid tokens sharing the one slot of a one-slot cache: each
 * verification replaces the other's entry (counted as replaced), a token
 * that fails is never cached; /metrics shows the counters and the
 * issuer's key count, and no fetch series for a jwks_file issuer.
 */
Test(trust_cache, slot_replacement_counted_and_shown)
{
	struct config c;
	struct trust t;
	struct sbuf b;
	char json[8192], p[4096], err[512];
	char *t1 = vec_token("ok-es256"), *t2 = vec_token("ok-no-nbf-no-iat");
	char *bad = vec_token("sig-flipped");
	int i, n;

	config_init(&c);
	n = snprintf(json, sizeof(json), "{\"token_cache_size\": 1, "
	    "\"issuers\": [{\"issuer\": \"https://a.example\", "
	    "\"jwks_file\": \"%s\", \"audiences\": [\"api\"], "
	    "\"algorithms\": [\"ES256\"]}]}", vec_path(p, sizeof(p), "a.jwks"));
	cr_assert(n > 0 && (size_t)n < sizeof(json));
	cr_assert_eq(config_load_buf(&c, json, strlen(json), "test.json", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(trust_init(&t, &c, err, sizeof(err)), 0, "%s", err);
	for (i = 0; i < 2; i++) {
		check(&t, t1, VEC_NOW, "valid", false);
		check(&t, t2, VEC_NOW, "valid", false);
		check(&t, bad, VEC_NOW, "bad_signature", false);
	}
	check(&t, t2, VEC_NOW, "valid", true);
	/* t1, t2, t1, t2 each took the slot from the other: 3 replaced. */
	cr_assert_eq(atomic_load(&t.cache_evict_replaced), 3);
	cr_assert_eq(atomic_load(&t.cache_entries), 1);
	sbuf_init(&b, 4096, 0);
	trust_metrics(&b, &t);
	cr_assert(sbuf_ok(&b));
	cr_assert_not_null(strstr(b.p, "revcheckd_token_cache_hits_total 1\n"),
	    "%s", b.p);
	cr_assert_not_null(strstr(b.p,
	    "revcheckd_token_cache_misses_total 6\n"), "%s", b.p);
	cr_assert_not_null(strstr(b.p, "revcheckd_token_cache_entries 1\n"));
	cr_assert_not_null(strstr(b.p, "revcheckd_token_cache_size 1\n"));
	cr_assert_not_null(strstr(b.p, "revcheckd_token_cache_evictions_total"
	    "{reason=\"replaced\"} 3\n"), "%s", b.p);
	cr_assert_not_null(strstr(b.p, "revcheckd_jwks_keys{issuer="
	    "\"https://a.example\"} 6\n"), "%s", b.p);
	cr_assert_null(strstr(b.p, "revcheckd_jwks_refreshes_total{"));
	sbuf_free(&b);
	free(bad);
	free(t2);
	free(t1);
	trust_free(&t);
	config_free(&c);
}

/* ---------------------------------------------------------------- hits form the same keys */

static void
b64url(char *out, size_t outlen, const unsigned char *in, size_t len)
{
	unsigned char tmp[4096];
	size_t i, n;

	cr_assert(len <= 3000 && outlen > 4 * ((len + 2) / 3));
	n = (size_t)EVP_EncodeBlock(tmp, in, (int)len);
	while (n > 0 && tmp[n - 1] == '=')
		n--;
	for (i = 0; i < n; i++)
		out[i] = tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' :
		    (char)tmp[i];
	out[n] = '\0';
}

/* An HS256 token of payload, signed with secret; caller frees. */
static char *
hs256(const char *payload, const char *secret)
{
	static const char hdr[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char h[128], p[4096], s[128], *tok;
	size_t n;

	b64url(h, sizeof(h), (const unsigned char *)hdr, strlen(hdr));
	b64url(p, sizeof(p), (const unsigned char *)payload, strlen(payload));
	n = strlen(h) + 1 + strlen(p) + 1 + sizeof(s);
	cr_assert_not_null(tok = malloc(n));
	snprintf(tok, n, "%s.%s", h, p);
	cr_assert_not_null(HMAC(EVP_sha256(), secret, (int)strlen(secret),
	    (const unsigned char *)tok, strlen(tok), mac, &maclen));
	b64url(s, sizeof(s), mac, maclen);
	snprintf(tok + strlen(tok), n - strlen(tok), ".%s", s);
	return tok;
}

#define HS_SECRET	"a test secret of more than 32 bytes, for HS256"

/* A trust with issuer https://h.example, HS256 with HS_SECRET. */
static void
setup_hs(struct config *c, struct trust *t, char *dir, size_t dirlen)
{
	char json[8192], sec[4096], err[512];
	FILE *fp;
	int n;

	snprintf(dir, dirlen, "/tmp/test_trust.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sec, sizeof(sec), "%s/hs.secret", dir);
	cr_assert_not_null(fp = fopen(sec, "w"));
	fputs(HS_SECRET "\n", fp);
	fclose(fp);
	config_init(c);
	n = snprintf(json, sizeof(json), "{\"token_cache_size\": 64, "
	    "\"issuers\": [{\"issuer\": \"https://h.example\", "
	    "\"hs_secret_file\": \"%s\", \"audiences\": [\"api\"], "
	    "\"algorithms\": [\"HS256\"]}]}", sec);
	cr_assert(n > 0 && (size_t)n < sizeof(json));
	cr_assert_eq(config_load_buf(c, json, strlen(json), "test.json", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(trust_init(t, c, err, sizeof(err)), 0, "%s", err);
	unlink(sec);
	rmdir(dir);
}

static void
same_key(const struct revkey *a, const struct revkey *b, const char *what)
{
	cr_assert_eq(a->scope_len, b->scope_len, "%s: scope", what);
	cr_assert_str_eq(a->scope, b->scope, "%s", what);
	cr_assert_eq(a->id_len, b->id_len, "%s: id length", what);
	cr_assert_eq(memcmp(a->id, b->id, a->id_len), 0, "%s: id", what);
}

/*
 * An HS256 token of issuer h.example for audience api, valid until
 * VEC_EXP, with the claims members (JSON text) too; its payload into
 * payload. The caller frees it.
 */
static char *
hs_claims(char *payload, size_t cap, const char *claims)
{
	snprintf(payload, cap, "{\"iss\":\"https://h.example\",\"aud\":"
	    "\"api\",\"exp\":%d,%s}", VEC_EXP, claims);
	return hs256(payload, HS_SECRET);
}

/*
 * A cache hit parses nothing: it forms the jti key and the sub and sid
 * cutoff keys from the values kept at verification. Whatever the claims,
 * a hit must give exactly the keys the verification gave, or a revoked
 * subject could pass on its second request.
 */
Test(trust_cache, hit_forms_the_keys_a_verification_forms)
{
	static const char *const claims[] = {
		"\"jti\":\"only-jti\"",
		"\"jti\":\"j2\",\"sub\":\"user-1\",\"iat\":1699999990",
		"\"jti\":\"j3\",\"sub\":\"user-1\",\"sid\":\"s-9\","
		    "\"iat\":1699999000",
		"\"jti\":\"j4\",\"sid\":\"only-sid\"",
		"\"jti\":\"j6\",\"sub\":\"\\u00e9l\\u00e8ve \\\"q\\\"\","
		    "\"sid\":\"\\ud83d\\ude00\",\"iat\":1699999999.5",
		"\"jti\":\"\\u00e9\",\"sub\":\"s\"",
	};
	static const bool want_sub[] = { false, true, true, false, true,
	    true };
	static const bool want_sid[] = { false, false, true, true, true,
	    false };
	struct config c;
	struct trust t;
	struct revkey k1, k2;
	struct trust_cutoffs c1, c2;
	enum jwt_verdict why;
	char dir[64], payload[1024], err[512];
	size_t i;
	uint64_t hits;

	setup_hs(&c, &t, dir, sizeof(dir));
	for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		char *tok = hs_claims(payload, sizeof(payload), claims[i]);

		hits = atomic_load(&t.cache_hits);
		memset(&k1, 0xa5, sizeof(k1));
		memset(&c1, 0xa5, sizeof(c1));
		cr_assert_eq(trust_token_cut(&t, tok, strlen(tok), VEC_NOW,
		    &k1, &c1, NULL, &why, err, sizeof(err)), 0, "%s: %s: %s",
		    payload, jwt_verdict_str(why), err);
		cr_assert_eq(atomic_load(&t.cache_hits), hits);
		memset(&k2, 0x5a, sizeof(k2));
		memset(&c2, 0x5a, sizeof(c2));
		cr_assert_eq(trust_token_cut(&t, tok, strlen(tok), VEC_NOW,
		    &k2, &c2, NULL, &why, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(atomic_load(&t.cache_hits), hits + 1,
		    "%s: not answered by the cache", payload);
		same_key(&k1, &k2, payload);
		cr_assert_str_eq(k1.scope, "https://h.example");
		cr_assert_eq(c1.has_sub, want_sub[i], "%s", payload);
		cr_assert_eq(c1.has_sid, want_sid[i], "%s", payload);
		cr_assert_eq(c2.has_sub, c1.has_sub, "%s", payload);
		cr_assert_eq(c2.has_sid, c1.has_sid, "%s", payload);
		cr_assert_eq(c2.has_iat, c1.has_iat, "%s", payload);
		cr_assert_eq(c2.iat, c1.iat, "%s", payload);
		if (c1.has_sub)
			same_key(&c1.sub, &c2.sub, payload);
		if (c1.has_sid)
			same_key(&c1.sid, &c2.sid, payload);
		free(tok);
	}
	trust_free(&t);
	config_free(&c);
}

/*
 * A sub or sid that is there but not a string is refused, at the first
 * request and at the next (a refusal is never cached): the cutoffs are
 * keyed on the string, and could not name such a token.
 */
Test(trust_cache, sub_or_sid_not_a_string_refused)
{
	static const char *const claims[] = {
		"\"jti\":\"j5\",\"sub\":12345",
		"\"jti\":\"j5\",\"sub\":\"u\",\"sid\":[\"x\"]",
		"\"jti\":\"j5\",\"sub\":{\"a\":\"u\"}",
		"\"jti\":\"j5\",\"sid\":null",
		"\"jti\":\"j5\",\"sid\":true",
	};
	struct config c;
	struct trust t;
	struct revkey k;
	struct trust_cutoffs cut;
	enum jwt_verdict why;
	char dir[64], payload[1024], err[512];
	size_t i;
	int pass;

	setup_hs(&c, &t, dir, sizeof(dir));
	for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		char *tok = hs_claims(payload, sizeof(payload), claims[i]);

		for (pass = 0; pass < 2; pass++) {
			err[0] = '\0';
			cr_assert_eq(trust_token_cut(&t, tok, strlen(tok),
			    VEC_NOW, &k, &cut, NULL, &why, err, sizeof(err)),
			    -1, "%s accepted (pass %d)", payload, pass);
			cr_assert(strstr(err, "is not a string") != NULL,
			    "%s: %s", payload, err);
		}
		free(tok);
	}
	cr_assert_eq(atomic_load(&t.cache_hits), 0);
	trust_free(&t);
	config_free(&c);
}

/* tok with the first character of its jti's value changed; caller frees. */
static char *
payload_changed(const char *tok)
{
	const char *d1 = strchr(tok, '.'), *d2 = strrchr(tok, '.');
	unsigned char json[4096];
	char p[6000], *out, *j;
	size_t bad, n;
	long len;

	cr_assert(d1 != NULL && d2 > d1);
	len = util_b64url_decode(json, d1 + 1, (size_t)(d2 - d1 - 1), &bad);
	cr_assert(len > 0 && (size_t)len < sizeof(json));
	json[len] = '\0';
	cr_assert_not_null(j = strstr((char *)json, "\"jti\":\""));
	j[7] = j[7] == 'x' ? 'y' : 'x';
	b64url(p, sizeof(p), json, (size_t)len);
	n = (size_t)(d1 - tok) + 1 + strlen(p) + strlen(d2) + 1;
	cr_assert_not_null(out = malloc(n));
	snprintf(out, n, "%.*s.%s%s", (int)(d1 - tok), tok, p, d2);
	return out;
}

/*
 * The cache knows a token by its exact bytes: a copy with one byte
 * changed anywhere (payload or signature) is verified, never a hit.
 */
Test(trust_cache, one_byte_changed_is_never_a_hit)
{
	struct config c;
	struct trust t;
	char *tok = vec_token("ok-b"), *bad;
	size_t len = strlen(tok);

	setup(&c, &t, false, "1d", NULL);
	check(&t, tok, VEC_NOW, "valid", false);
	check(&t, tok, VEC_NOW, "valid", true);
	cr_assert_not_null(bad = strdup(tok));
	/* The last byte of the signature, then one of the payload (a
	 * character of the jti's value, so that it still parses). */
	bad[len - 1] = bad[len - 1] == 'A' ? 'B' : 'A';
	check(&t, bad, VEC_NOW, "bad_signature", false);
	free(bad);
	bad = payload_changed(tok);
	check(&t, bad, VEC_NOW, "bad_signature", false);
	/* Neither displaced the valid entry. */
	check(&t, tok, VEC_NOW, "valid", true);
	free(bad);
	free(tok);
	trust_free(&t);
	config_free(&c);
}

/* Introspection on a hit gets the very claims the verification gave. */
Test(trust_cache, hit_gives_the_same_claims)
{
	struct config c;
	struct trust t;
	struct revkey k;
	enum jwt_verdict why;
	cJSON *a = NULL, *b = NULL;
	char err[512];
	char *tok = vec_token("ok-b");
	uint64_t hits;

	setup(&c, &t, false, "1d", NULL);
	cr_assert_eq(trust_token_claims(&t, tok, strlen(tok), VEC_NOW, &k, &a,
	    &why, err, sizeof(err)), 0, "%s", err);
	hits = atomic_load(&t.cache_hits);
	cr_assert_eq(trust_token_claims(&t, tok, strlen(tok), VEC_NOW, &k, &b,
	    &why, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_load(&t.cache_hits), hits + 1);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert(cJSON_Compare(a, b, true));
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(b, "jti"));
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(tok);
	trust_free(&t);
	config_free(&c);
}

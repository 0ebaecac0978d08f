/* test_issued.c - the issued set of exact scopes: certificate and id files, scanned and streamed per scope */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "issued.h"
#include "util.h"

static char dir[] = "/tmp/revcheck-test-issued-XXXXXX";

static const char *
src_path(const char *rel)
{
	static char buf[4][1024];
	static int n;
	const char *src = getenv("REVCHECK_SRC");
	char *p = buf[n++ % 4];

	snprintf(p, 1024, "%s/%s", src != NULL ? src : ".", rel);
	return p;
}

static const char *
tmp_path(const char *name)
{
	static char buf[8][1024];
	static int n;
	char *p = buf[n++ % 8];

	snprintf(p, 1024, "%s/%s", dir, name);
	return p;
}

static void
put(const char *name, const char *text)
{
	FILE *fp = fopen(tmp_path(name), "w");

	cr_assert_not_null(fp);
	cr_assert_eq(fputs(text, fp) >= 0, true);
	cr_assert_eq(fclose(fp), 0);
}

static X509 *
load_der(const char *rel)
{
	FILE *fp = fopen(src_path(rel), "rb");
	X509 *x;

	cr_assert_not_null(fp, "%s", rel);
	x = d2i_X509_fp(fp, NULL);
	fclose(fp);
	cr_assert_not_null(x, "%s", rel);
	return x;
}

/* Two PKITS certificates of the Trust Anchor: DER concatenated, and PEM. */
static void
make_cert_files(X509 **a, X509 **b)
{
	FILE *fd = fopen(tmp_path("certs.der"), "wb");
	FILE *fp = fopen(tmp_path("certs.pem"), "w");

	*a = load_der("tests/data/pkits/certs/GoodCACert.crt");
	*b = load_der("tests/data/pkits/certs/BadCRLSignatureCACert.crt");
	cr_assert(fd != NULL && fp != NULL);
	cr_assert_eq(i2d_X509_fp(fd, *a), 1);
	cr_assert_eq(i2d_X509_fp(fd, *b), 1);
	cr_assert_eq(PEM_write_X509(fp, *a), 1);
	cr_assert_eq(PEM_write_X509(fp, *b), 1);
	fclose(fd);
	fclose(fp);
}

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[1100];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	/* A system() result must be used under _FORTIFY_SOURCE. */
	if (system(cmd) != 0)
		fprintf(stderr, "test_issued: could not remove %s\n", dir);
}

TestSuite(issued, .init = setup, .fini = teardown);

/* Counts a scope's stream, and checks each key is one of want[0..n). */
static size_t
drain(const struct issued_set *s, const char *scope, char *err, size_t errlen,
    int *rc)
{
	struct issued_stream *st = issued_stream_new(s, scope);
	struct exact_src src;
	const unsigned char *k;
	size_t len, n = 0;

	cr_assert_not_null(st);
	issued_stream_src(st, &src);
	cr_assert_eq(src.rewind(src.arg, err, errlen), 0);
	while ((*rc = src.next(src.arg, &k, &len, err, errlen)) == 1) {
		cr_assert_gt(len, strlen(scope));
		cr_assert_eq(memcmp(k, scope, strlen(scope)), 0);
		cr_assert_eq(k[strlen(scope)], 0);
		n++;
	}
	issued_stream_free(st);
	return n;
}

Test(issued, certificates_and_lists_by_scope)
{
	struct issued_set s;
	const struct issued_scope *sc;
	struct revkey ka;
	X509 *a, *b;
	int64_t nba, nbb;
	char err[256];
	int rc;

	make_cert_files(&a, &b);
	put("ids.txt", "\xef\xbb\xbf# issued tokens\ntok-1\n\n  tok-2  \r\ntok-3\n");
	put("ids.json", "[\"tok-4\", {\"id\": \"t-9\", \"scope\": \"tenant\", "
	    "\"issued_at\": 12}, {\"note\": \"x\", \"id\": \"tok-\\u0035\"}]");
	memset(&s, 0, sizeof(s));
	s.paths[s.npaths++] = tmp_path("certs.der");
	s.paths[s.npaths++] = tmp_path("ids.txt");
	s.paths[s.npaths++] = tmp_path("certs.pem");
	s.paths[s.npaths++] = tmp_path("ids.json");
	s.list_scope = "api";
	cr_assert_eq(issued_scan(&s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.nscopes, 3);
	cr_assert_eq(revkey_from_cert(&ka, a, err, sizeof(err)), 0);
	cr_assert_eq(revkey_cert_not_before(a, &nba), 0);
	cr_assert_eq(revkey_cert_not_before(b, &nbb), 0);
	sc = issued_scope(&s, ka.scope);
	cr_assert_not_null(sc, "the certificates' issuer scope");
	cr_assert_eq(sc->listed, 4, "two certificates in two files");
	cr_assert_not(sc->from_list);
	cr_assert_eq(sc->newest, nba > nbb ? nba : nbb);
	sc = issued_scope(&s, "api");
	cr_assert_not_null(sc);
	cr_assert_eq(sc->listed, 5);
	cr_assert(sc->from_list);
	cr_assert_eq(sc->newest, 0);
	cr_assert_not_null(issued_scope(&s, "tenant"));
	/* Each scope's stream, read twice (re-readable). */
	cr_assert_eq(drain(&s, "api", err, sizeof(err), &rc), 5);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(drain(&s, "api", err, sizeof(err), &rc), 5);
	cr_assert_eq(drain(&s, ka.scope, err, sizeof(err), &rc), 4);
	cr_assert_eq(drain(&s, "tenant", err, sizeof(err), &rc), 1);
	cr_assert_eq(drain(&s, "none", err, sizeof(err), &rc), 0);
	issued_free(&s);
	X509_free(a);
	X509_free(b);
}

/* The key of a certificate listed is the key of its CRL entry. */
Test(issued, certificate_keys_are_the_crl_keys)
{
	struct issued_set s;
	struct issued_stream *st;
	struct exact_src src;
	struct revkey ka;
	unsigned char enc[REVKEY_ENC_MAX];
	const unsigned char *k;
	size_t len;
	X509 *a, *b;
	char err[256];

	make_cert_files(&a, &b);
	memset(&s, 0, sizeof(s));
	s.paths[s.npaths++] = tmp_path("certs.pem");
	s.list_scope = "default";
	cr_assert_eq(issued_scan(&s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(revkey_from_issuer_serial(&ka, X509_get_issuer_name(a),
	    X509_get0_serialNumber(a), err, sizeof(err)), 0);
	st = issued_stream_new(&s, ka.scope);
	issued_stream_src(st, &src);
	cr_assert_eq(src.rewind(src.arg, err, sizeof(err)), 0);
	cr_assert_eq(src.next(src.arg, &k, &len, err, sizeof(err)), 1);
	cr_assert_eq(len, revkey_encode(&ka, enc));
	cr_assert_eq(memcmp(k, enc, len), 0);
	issued_stream_free(st);
	issued_free(&s);
	X509_free(a);
	X509_free(b);
}

Test(issued, lists_that_are_not_id_lists_are_refused)
{
	static const struct { const char *text, *why; } bad[] = {
		{ "tok-1\n-----BEGIN CERTIFICATE-----\nMIIB\n", "PEM armour" },
		{ "tok-1\ntok 2\n", "whitespace" },
		{ "tok-1\ntok\x01" "2\n", "control byte" },
		{ "[\"a\", 3]", "element 2" },
		{ "[\"a\"", "element 2" },
		{ "[\"a\"] x", "bytes after" },
		{ "[{\"scope\": \"api\"}]", "element 1" },
		{ "[{\"id\": [\"a\"]}]", "element 1" },
	};
	struct issued_set s;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put("bad", bad[i].text);
		memset(&s, 0, sizeof(s));
		s.paths[s.npaths++] = tmp_path("bad");
		s.list_scope = "api";
		cr_assert_eq(issued_scan(&s, err, sizeof(err)), -1, "case %zu "
		    "accepted", i);
		cr_assert(strstr(err, bad[i].why) != NULL, "case %zu: %s", i,
		    err);
		issued_free(&s);
	}
	memset(&s, 0, sizeof(s));
	s.paths[s.npaths++] = tmp_path("missing");
	s.list_scope = "api";
	cr_assert_eq(issued_scan(&s, err, sizeof(err)), -1);
	issued_free(&s);
}

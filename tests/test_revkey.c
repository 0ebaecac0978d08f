/* test_revkey.c - the key model: certificates and CRL entries derive the same (scope, id) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "revkey.h"
#include "util.h"

static char dir[] = "/tmp/revkey-test-XXXXXX";

static void
sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert(n > 0 && (size_t)n < sizeof(cmd));
	cr_assert_eq(system(cmd), 0, "command failed: %s", cmd);
}

/* A CA made by the openssl CLI, one certificate per serial, all revoked. */
static void
make_pki(void)
{
	static const char *serials[] = { "01", "00AB", "7F", "00FF00",
	    "1234567890ABCDEF1234567890ABCDEF12" };
	FILE *f;
	char path[256];
	size_t i;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ca.cnf", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "[ca]\ndefault_ca=c\n[c]\ndir=%s\ndatabase=$dir/index.txt\n"
	    "new_certs_dir=$dir\ncertificate=$dir/ca.pem\nprivate_key=$dir/ca.key\n"
	    "serial=$dir/serial\ncrlnumber=$dir/crlnumber\ndefault_md=sha256\n"
	    "default_days=30\ndefault_crl_days=7\npolicy=p\nunique_subject=no\n"
	    "[p]\ncommonName=supplied\n", dir);
	fclose(f);
	sh("cd %s && touch index.txt && echo 01 > crlnumber && "
	    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
	    "-nodes -keyout ca.key -out ca.pem -subj '/O=Test/CN=Test CA' "
	    "-days 30 2>/dev/null", dir);
	for (i = 0; i < sizeof(serials) / sizeof(serials[0]); i++) {
		sh("cd %s && echo %s > serial && openssl req -newkey ec "
		    "-pkeyopt ec_paramgen_curve:P-256 -nodes -keyout l%zu.key "
		    "-out l%zu.csr -subj '/CN=leaf %zu' 2>/dev/null && "
		    "openssl ca -batch -config ca.cnf -in l%zu.csr -out l%zu.pem "
		    "2>/dev/null && openssl ca -config ca.cnf -revoke l%zu.pem "
		    "-crl_reason keyCompromise 2>/dev/null", dir, serials[i],
		    i, i, i, i, i, i);
	}
	sh("cd %s && openssl ca -config ca.cnf -gencrl -out crl.pem 2>/dev/null && "
	    "openssl x509 -in l0.pem -outform DER -out l0.der", dir);
}

static void
cleanup(void)
{
	sh("rm -rf %s", dir);
}

static X509 *
load_cert(const char *name)
{
	char path[256];
	X509 *x;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	cr_assert_not_null(x);
	return x;
}

TestSuite(revkey_pki, .init = make_pki, .fini = cleanup, .timeout = 60);

Test(revkey_pki, cert_and_crl_entry_derive_the_same_key)
{
	STACK_OF(X509_REVOKED) *revs;
	struct revkey kc, kr;
	X509_CRL *crl;
	X509 *cert;
	char path[256], name[32], err[256];
	int i, found, j;
	FILE *f;

	snprintf(path, sizeof(path), "%s/crl.pem", dir);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	cr_assert_not_null(crl);
	revs = X509_CRL_get_REVOKED(crl);
	cr_assert_eq(sk_X509_REVOKED_num(revs), 5);

	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "l%d.pem", i);
		cert = load_cert(name);
		cr_assert_eq(revkey_from_cert(&kc, cert, err, sizeof(err)), 0,
		    "%s", err);
		cr_assert(revkey_scope_is_x509(kc.scope));
		cr_assert(revkey_scope_valid(kc.scope, kc.scope_len));
		cr_assert_neq(kc.id[0], 0, "serial id has a leading zero");
		found = 0;
		for (j = 0; j < sk_X509_REVOKED_num(revs); j++) {
			cr_assert_eq(revkey_from_crl_entry(&kr, crl,
			    sk_X509_REVOKED_value(revs, j), err, sizeof(err)), 0);
			if (revkey_cmp(&kc, &kr) == 0)
				found++;
		}
		cr_assert_eq(found, 1, "%s: CRL entry with the same key", name);
		X509_free(cert);
	}
	X509_CRL_free(crl);
}

Test(revkey_pki, pem_der_and_text_agree)
{
	struct revkey a, b, c;
	unsigned char *buf;
	size_t len;
	char path[256], err[256];
	X509 *cert;

	snprintf(path, sizeof(path), "%s/l1.pem", dir);	/* serial 00AB */
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0);
	cr_assert_eq(revkey_from_cert_bytes(&a, buf, len, err, sizeof(err)), 0,
	    "%s", err);
	free(buf);
	cr_assert_eq(a.id_len, 1);
	cr_assert_eq(a.id[0], 0xab);

	/* The same scope with the serial as text, in openssl's notation. */
	cr_assert_eq(revkey_from_text(&b, a.scope, "00:AB", 5, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(revkey_cmp(&a, &b), 0);
	cr_assert_eq(revkey_from_text(&b, a.scope, "0xab", 4, err,
	    sizeof(err)), 0);
	cr_assert_eq(revkey_cmp(&a, &b), 0);

	snprintf(path, sizeof(path), "%s/l0.der", dir);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0);
	cr_assert_eq(revkey_from_cert_bytes(&c, buf, len, err, sizeof(err)), 0);
	cr_assert_eq(revkey_from_cert_bytes(&b, buf, len - 1, err,
	    sizeof(err)), -1);
	free(buf);
	cert = load_cert("l0.pem");
	cr_assert_eq(revkey_from_cert(&b, cert, err, sizeof(err)), 0);
	X509_free(cert);
	cr_assert_eq(revkey_cmp(&b, &c), 0);
	cr_assert_str_eq(a.scope, c.scope, "same issuer, same scope");
}

/*
 * A PEM block holds one certificate's DER and nothing else, as a DER
 * input does: a second certificate (a revoked one) or any byte after the
 * first in the same block would go unchecked while the answer reads as
 * the block's.
 */
Test(revkey_pki, pem_block_with_bytes_after_its_certificate_refused)
{
	static const char *const cases[] = {
		"cat l0.der l1.der",			/* clean, then revoked */
		"cat l0.der; printf '\\000'",		/* one byte after */
		"cat l0.der l0.der",
	};
	struct revkey k;
	unsigned char *buf;
	size_t len, i;
	char path[256], err[256];

	sh("cd %s && openssl x509 -in l1.pem -outform DER -out l1.der", dir);
	snprintf(path, sizeof(path), "%s/b.pem", dir);
	/* The control: one DER in a block of openssl's own making. */
	sh("cd %s && (echo '-----BEGIN CERTIFICATE-----'; cat l0.der | "
	    "openssl base64; echo '-----END CERTIFICATE-----') > b.pem", dir);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0);
	cr_assert_eq(revkey_from_cert_bytes(&k, buf, len, err, sizeof(err)), 0,
	    "%s", err);
	free(buf);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sh("cd %s && (echo '-----BEGIN CERTIFICATE-----'; (%s) | "
		    "openssl base64; echo '-----END CERTIFICATE-----') > b.pem",
		    dir, cases[i]);
		cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
		    sizeof(err)), 0);
		cr_assert_eq(revkey_from_cert_bytes(&k, buf, len, err,
		    sizeof(err)), -1, "%s: accepted", cases[i]);
		free(buf);
	}
}

Test(revkey, scope_rules)
{
	cr_assert(revkey_scope_valid("default", 7));
	cr_assert(revkey_scope_valid("https://issuer.example", 22));
	cr_assert(!revkey_scope_valid("", 0));
	cr_assert(!revkey_scope_valid("a b", 3));
	cr_assert(!revkey_scope_valid("x509:abc", 8));
	cr_assert(!revkey_scope_valid("x509:" "ABCDEF0123456789ABCDEF0123456789"
	    "ABCDEF0123456789ABCDEF0123456789", 69));
	cr_assert(revkey_scope_valid("x509:" "abcdef0123456789abcdef0123456789"
	    "abcdef0123456789abcdef0123456789", 69));
}

Test(revkey, text_ids_and_encoding)
{
	static const char x509[] = "x509:"
	    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
	unsigned char enc[REVKEY_ENC_MAX];
	char text[REVKEY_ID_TEXT_MAX], err[128], big[REVKEY_ID_MAX + 2];
	struct revkey k, k2;
	size_t n;

	cr_assert_eq(revkey_from_text(&k, "default", "tok-1", 5, err,
	    sizeof(err)), 0);
	n = revkey_encode(&k, enc);
	cr_assert_eq(n, 7 + 1 + 5);
	cr_assert_eq(memcmp(enc, "default\0tok-1", n), 0);
	cr_assert_eq(revkey_id_text(&k, text), 5);
	cr_assert_str_eq(text, "tok-1");

	cr_assert_eq(revkey_from_text(&k, x509, "0000ff", 6, err,
	    sizeof(err)), 0);
	cr_assert_eq(k.id_len, 1);
	revkey_id_text(&k, text);
	cr_assert_str_eq(text, "ff");
	cr_assert_eq(revkey_from_text(&k, x509, "00", 2, err, sizeof(err)), 0);
	cr_assert_eq(k.id_len, 1);
	cr_assert_eq(k.id[0], 0);

	cr_assert_eq(revkey_from_text(&k, x509, "zz", 2, err, sizeof(err)), -1);
	cr_assert(strstr(err, "hex") != NULL);
	cr_assert_eq(revkey_from_text(&k, x509, "ab::cd", 6, err,
	    sizeof(err)), -1);
	cr_assert_eq(revkey_from_text(&k, "default", "", 0, err,
	    sizeof(err)), -1);
	memset(big, 'a', sizeof(big));
	cr_assert_eq(revkey_from_text(&k, "default", big, REVKEY_ID_MAX, err,
	    sizeof(err)), 0);
	cr_assert_eq(revkey_from_text(&k, "default", big, REVKEY_ID_MAX + 1,
	    err, sizeof(err)), -1);

	/* Order is that of the encoded bytes: a shorter scope sorts first. */
	cr_assert_eq(revkey_from_text(&k, "ab", "z", 1, err, sizeof(err)), 0);
	cr_assert_eq(revkey_from_text(&k2, "abc", "a", 1, err, sizeof(err)), 0);
	cr_assert_lt(revkey_cmp(&k, &k2), 0);
	cr_assert_eq(revkey_from_text(&k2, "ab", "za", 2, err, sizeof(err)), 0);
	cr_assert_lt(revkey_cmp(&k, &k2), 0);
	cr_assert_gt(revkey_cmp(&k2, &k), 0);
}

Test(revkey, garbage_is_not_a_certificate)
{
	static const char pem[] = "-----BEGIN CERTIFICATE-----\nAAAA\n"
	    "-----END CERTIFICATE-----\n";
	struct revkey k;
	char err[128];

	cr_assert_eq(revkey_from_cert_bytes(&k, pem, sizeof(pem) - 1, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "certificate") != NULL);
	cr_assert_eq(revkey_from_cert_bytes(&k, "\x30\x03\x02\x01", 4, err,
	    sizeof(err)), -1);
	cr_assert_eq(revkey_from_cert_bytes(&k, "", 0, err, sizeof(err)), -1);
}

/* ---- canonical issuer names (RFC 5280 section 7.1) ------------------------ */

/* OpenSSL's X509_NAME_hash_ex: the first 4 bytes of SHA-1 of its canon. */
static void
expect_openssl_canon(const X509_NAME *n, const char *what)
{
	unsigned char *c = NULL, md[SHA_DIGEST_LENGTH];
	unsigned long want, got;
	size_t len = 0;
	int ok = 0;

	cr_assert_eq(revkey_name_canon(n, &c, &len), 0, "%s", what);
	SHA1(c != NULL ? c : (const unsigned char *)"", len, md);
	got = (unsigned long)md[0] | (unsigned long)md[1] << 8 |
	    (unsigned long)md[2] << 16 | (unsigned long)md[3] << 24;
	want = X509_NAME_hash_ex(n, NULL, NULL, &ok);
	cr_assert(ok);
	cr_assert_eq(got, want, "%s: canon hash %08lx, OpenSSL's %08lx", what,
	    got, want);
	free(c);
}

/*
 * Every subject and issuer Name of the PKITS certificates (PrintableString,
 * UTF8String, T61String, BMPString, case and white-space variants, multi-
 * valued RDNs, DN qualifiers and UIDs) has the canonical encoding OpenSSL
 * computes: their SHA-1 hashes agree.
 */
Test(revkey, canonical_names_match_openssl)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[1024], cmd[1200], line[512];
	const unsigned char *p;
	unsigned char *buf;
	size_t len, n = 0;
	char err[256];
	X509 *x;
	FILE *ls;

	if (src == NULL)
		src = ".";
	snprintf(cmd, sizeof(cmd), "ls '%s/tests/data/pkits/certs'", src);
	ls = popen(cmd, "r");
	cr_assert_not_null(ls);
	while (fgets(line, sizeof(line), ls) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/tests/data/pkits/certs/%s", src,
		    line);
		cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
		    sizeof(err)), 0, "%s", err);
		p = buf;
		x = d2i_X509(NULL, &p, (long)len);
		cr_assert_not_null(x, "%s", path);
		expect_openssl_canon(X509_get_subject_name(x), line);
		expect_openssl_canon(X509_get_issuer_name(x), line);
		X509_free(x);
		free(buf);
		n++;
	}
	pclose(ls);
	cr_assert_gt(n, 100, "only %zu PKITS certificates", n);
}

/* A Name from (type, value, string type, set) rows. */
struct nrow {
	const char *type, *value;
	int strtype, set;	/* set: 0 a new RDN, -1 the one before */
};

static X509_NAME *
name_of(const struct nrow *r, size_t n)
{
	X509_NAME *name = X509_NAME_new();
	size_t i;

	cr_assert_not_null(name);
	for (i = 0; i < n; i++)
		cr_assert(X509_NAME_add_entry_by_txt(name, r[i].type,
		    r[i].strtype, (const unsigned char *)r[i].value, -1, -1,
		    r[i].set));
	return name;
}

static void
scope_of(char *out, const struct nrow *r, size_t n)
{
	X509_NAME *name = name_of(r, n);

	expect_openssl_canon(name, r[0].value);
	cr_assert_eq(revkey_x509_scope(out, name), 0);
	X509_NAME_free(name);
}

/*
 * Names equal under RFC 5280 section 7.1 share a scope (string type, case,
 * white space); names that differ do not. The first vector is the one
 * docs/FORMAT.md section 1 works through.
 */
Test(revkey, reencoded_names_share_a_scope)
{
	static const struct nrow a[] = {
		{ "C", "US", V_ASN1_PRINTABLESTRING, 0 },
		{ "O", "Test Certificates 2011", V_ASN1_PRINTABLESTRING, 0 },
		{ "CN", "Good CA", V_ASN1_PRINTABLESTRING, 0 },
	}, b[] = {
		{ "C", "us", V_ASN1_PRINTABLESTRING, 0 },
		{ "O", "  test   CERTIFICATES 2011 ", V_ASN1_UTF8STRING, 0 },
		{ "CN", "GOOD\tCA", V_ASN1_UTF8STRING, 0 },
	}, other[] = {
		{ "C", "US", V_ASN1_PRINTABLESTRING, 0 },
		{ "O", "Test Certificates 2011", V_ASN1_PRINTABLESTRING, 0 },
		{ "CN", "Good CA2", V_ASN1_PRINTABLESTRING, 0 },
	}, swapped[] = {
		{ "O", "Test Certificates 2011", V_ASN1_PRINTABLESTRING, 0 },
		{ "C", "US", V_ASN1_PRINTABLESTRING, 0 },
		{ "CN", "Good CA", V_ASN1_PRINTABLESTRING, 0 },
	}, multi1[] = {
		{ "CN", "Alice", V_ASN1_UTF8STRING, 0 },
		{ "UID", "a1", V_ASN1_UTF8STRING, -1 },
	}, multi2[] = {
		{ "UID", "A1", V_ASN1_PRINTABLESTRING, 0 },
		{ "CN", "alice", V_ASN1_PRINTABLESTRING, -1 },
	};
	char sa[REVKEY_X509_SCOPE_LEN + 1], sb[REVKEY_X509_SCOPE_LEN + 1];
	unsigned char *c = NULL;
	char hex[256];
	size_t len;
	X509_NAME *n;

	scope_of(sa, a, 3);
	scope_of(sb, b, 3);
	cr_assert_str_eq(sa, sb);
	cr_assert_str_eq(sa, "x509:"
	    "4252c6ae35531be8b89661438486c4c40a81b49ef9c4aee933b88f823f7ebbe8");
	n = name_of(a, 3);
	cr_assert_eq(revkey_name_canon(n, &c, &len), 0);
	cr_assert_lt(len, sizeof(hex) / 2);
	util_hex(hex, c, len);
	cr_assert_str_eq(hex, "310b300906035504060c027573"
	    "311f301d060355040a0c16746573742063657274696669636174657320323031"
	    "31"
	    "3110300e06035504030c07676f6f64206361");
	free(c);
	X509_NAME_free(n);
	scope_of(sb, other, 3);
	cr_assert_str_neq(sa, sb);
	scope_of(sb, swapped, 3);
	cr_assert_str_neq(sa, sb);
	/* A multi-valued RDN: its members are sorted, whatever their order. */
	scope_of(sa, multi1, 2);
	scope_of(sb, multi2, 2);
	cr_assert_str_eq(sa, sb);
	/* The empty Name has the empty encoding. */
	n = X509_NAME_new();
	expect_openssl_canon(n, "empty");
	cr_assert_eq(revkey_x509_scope(sa, n), 0);
	cr_assert_str_eq(sa, "x509:"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	X509_NAME_free(n);
}

/* A negative serial keeps its sign: -1 is not 1, in text and from DER. */
Test(revkey, negative_serials_keep_their_sign)
{
	static const char x509[] = "x509:"
	    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
	ASN1_INTEGER *ai = ASN1_INTEGER_new();
	X509_NAME *n = X509_NAME_new();
	char text[REVKEY_ID_TEXT_MAX], err[128];
	struct revkey pos, neg, t;

	cr_assert(ai != NULL && n != NULL);
	cr_assert(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)"CA", -1, -1, 0));
	cr_assert(ASN1_INTEGER_set(ai, 1));
	cr_assert_eq(revkey_from_issuer_serial(&pos, n, ai, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert(ASN1_INTEGER_set(ai, -1));
	cr_assert_eq(revkey_from_issuer_serial(&neg, n, ai, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_neq(revkey_cmp(&pos, &neg), 0);
	cr_assert_eq(neg.id_len, 2);
	cr_assert_eq(neg.id[0], 0);
	cr_assert_eq(neg.id[1], 1);
	revkey_id_text(&neg, text);
	cr_assert_str_eq(text, "-01");
	cr_assert_eq(revkey_from_text(&t, neg.scope, "-0x01", 5, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(revkey_cmp(&t, &neg), 0);
	cr_assert_eq(revkey_from_text(&t, x509, "-00", 3, err, sizeof(err)), 0);
	cr_assert_eq(t.id_len, 1);	/* -0 is 0 */
	cr_assert_eq(t.id[0], 0);
	cr_assert_eq(revkey_from_text(&t, x509, "-", 1, err, sizeof(err)), -1);
	ASN1_INTEGER_free(ai);
	X509_NAME_free(n);
}

/*
 * Every key a certificate or a CRL entry gives reads back from its text,
 * as GET ?id=, text and JSON lists and the PostgreSQL source give it: a
 * positive serial of 1024 bytes had a key whose 2048 hex digits
 * revkey_from_text refused, so such a certificate could be checked but
 * revoked by no list (found by fuzz_cert). A negative serial's magnitude
 * has one byte less room (its sign byte), both ways.
 */
Test(revkey, longest_serials_read_back_from_their_text)
{
	static const size_t lens[] = { 1, 1023, 1024 };
	unsigned char mag[REVKEY_ID_MAX];
	char text[REVKEY_ID_TEXT_MAX + 1], err[256];
	struct revkey k, t;
	ASN1_INTEGER *ai;
	X509_NAME *n = X509_NAME_new();
	BIGNUM *bn;
	size_t i, tl;
	int neg, rc;

	cr_assert(n != NULL && X509_NAME_add_entry_by_txt(n, "CN",
	    MBSTRING_ASC, (const unsigned char *)"CA", -1, -1, 0));
	memset(mag, 0xa5, sizeof(mag));
	for (neg = 0; neg <= 1; neg++)
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			cr_assert_not_null(bn = BN_bin2bn(mag, (int)lens[i],
			    NULL));
			BN_set_negative(bn, neg);
			cr_assert_not_null(ai = BN_to_ASN1_INTEGER(bn, NULL));
			rc = revkey_from_issuer_serial(&k, n, ai, err,
			    sizeof(err));
			ASN1_INTEGER_free(ai);
			BN_free(bn);
			if (neg && lens[i] == REVKEY_ID_MAX) {
				cr_assert_eq(rc, -1, "-%zu bytes accepted",
				    lens[i]);
				/* Nor as text. */
				text[0] = '-';
				util_hex(text + 1, mag, lens[i]);
				cr_assert_eq(revkey_from_text(&t, k.scope, text,
				    1 + 2 * lens[i], err, sizeof(err)), -1);
				continue;
			}
			cr_assert_eq(rc, 0, "%s%zu bytes: %s", neg ? "-" : "",
			    lens[i], err);
			cr_assert_eq(k.id_len, lens[i] + (size_t)neg);
			tl = revkey_id_text(&k, text);
			cr_assert_eq(revkey_from_text(&t, k.scope, text, tl,
			    err, sizeof(err)), 0, "%s%zu bytes: %s",
			    neg ? "-" : "", lens[i], err);
			cr_assert_eq(revkey_cmp(&t, &k), 0);
		}
	X509_NAME_free(n);
}

/* A PKITS certificate's key (tests/data/pkits/certs/name). */
static struct revkey
pkits_key(const char *name)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[1024], err[256];
	const unsigned char *p;
	unsigned char *buf;
	struct revkey k;
	size_t len;
	X509 *x;

	snprintf(path, sizeof(path), "%s/tests/data/pkits/certs/%s",
	    src != NULL ? src : ".", name);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	p = buf;
	x = d2i_X509(NULL, &p, (long)len);
	cr_assert_not_null(x, "%s", path);
	cr_assert_eq(revkey_from_cert(&k, x, err, sizeof(err)), 0, "%s", err);
	X509_free(x);
	free(buf);
	return k;
}

/* The dp hash of "C=US, O=Test Certificates 2011, OU=ou[, CN=cn]". */
static void
pkits_dn_hash(const char *ou, const char *cn, unsigned char out[32])
{
	X509_NAME *n = X509_NAME_new();

	cr_assert_not_null(n);
	cr_assert(X509_NAME_add_entry_by_txt(n, "C", MBSTRING_ASC,
	    (const unsigned char *)"US", -1, -1, 0));
	cr_assert(X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
	    (const unsigned char *)"Test Certificates 2011", -1, -1, 0));
	cr_assert(X509_NAME_add_entry_by_txt(n, "OU", MBSTRING_ASC,
	    (const unsigned char *)ou, -1, -1, 0));
	if (cn != NULL)
		cr_assert(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
		    (const unsigned char *)cn, -1, -1, 0));
	cr_assert_eq(revkey_dp_name_hash(n, out), 0);
	X509_NAME_free(n);
}

/*
 * A distribution point with a cRLIssuer: the issuer's scope hash is kept,
 * and the point's names are tagged as that issuer's (a name relative to
 * the CRL issuer is made a full name under the cRLIssuer, not under the
 * certificate's issuer); without names, the cRLIssuer names stand for
 * the point. A point without cRLIssuer stays untagged.
 */
Test(revkey, crl_issuer_distribution_points)
{
	unsigned char want[32], ci_name[32];
	struct revkey k;
	X509_NAME *n;

	/* PKITS 4.14.29: relative name under the cRLIssuer. */
	k = pkits_key("ValidcRLIssuerTest29EE.crt");
	cr_assert_eq(k.nci, 1);
	n = X509_NAME_new();
	cr_assert(n != NULL && X509_NAME_add_entry_by_txt(n, "C", MBSTRING_ASC,
	    (const unsigned char *)"US", -1, -1, 0) &&
	    X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
	    (const unsigned char *)"Test Certificates 2011", -1, -1, 0) &&
	    X509_NAME_add_entry_by_txt(n, "OU", MBSTRING_ASC,
	    (const unsigned char *)"indirectCRL CA3 cRLIssuer", -1, -1, 0));
	cr_assert_eq(revkey_x509_scope_hash(ci_name, n), 0);
	X509_NAME_free(n);
	cr_assert_eq(memcmp(k.ci[0], ci_name, 32), 0);
	pkits_dn_hash("indirectCRL CA3 cRLIssuer",
	    "indirect CRL for indirectCRL CA3", want);
	cr_assert_eq(k.ndp, 1);
	cr_assert_eq(k.dp_ci[0], 1);
	cr_assert_eq(memcmp(k.dp[0], want, 32), 0);

	/* PKITS 4.14.25: a cRLIssuer and no distributionPoint. */
	k = pkits_key("ValidIDPwithindirectCRLTest25EE.crt");
	cr_assert_eq(k.nci, 1);
	cr_assert_eq(k.ndp, 1);
	cr_assert_eq(k.dp_ci[0], 1);

	/* A plain distribution point (PKITS 4.14.2): untagged, no cRLIssuer. */
	k = pkits_key("ValiddistributionPointTest1EE.crt");
	cr_assert_eq(k.nci, 0);
	cr_assert(k.ndp >= 1);
	cr_assert_eq(k.dp_ci[0], 0);
}

/*
 * revkey_set_like is revkey_set with the scope of a key revkey_set made:
 * the same key for any id of 1 to REVKEY_ID_MAX bytes, every field the
 * key is compared by included; other ids refused with k unchanged.
 */
Test(revkey, set_like_is_set_with_the_same_scope)
{
	static struct revkey like, k, ref, before;
	unsigned char id[REVKEY_ID_MAX + 1];

	memset(id, 'i', sizeof(id));
	cr_assert_eq(revkey_set(&like, "tenant-a", "first", 5), 0);
	memset(&k, 0x5a, sizeof(k));
	memset(&ref, 0x5a, sizeof(ref));
	cr_assert_eq(revkey_set_like(&k, &like, id, REVKEY_ID_MAX), 0);
	cr_assert_eq(revkey_set(&ref, "tenant-a", id, REVKEY_ID_MAX), 0);
	cr_assert_eq(k.scope_len, ref.scope_len);
	cr_assert_str_eq(k.scope, ref.scope);
	cr_assert_eq(k.id_len, ref.id_len);
	cr_assert(memcmp(k.id, ref.id, k.id_len) == 0);
	cr_assert_eq(k.cert, ref.cert);
	cr_assert_eq(k.ndp, ref.ndp);
	cr_assert_eq(k.nci, ref.nci);
	cr_assert_eq(revkey_cmp(&k, &ref), 0);
	memcpy(&before, &k, sizeof(k));
	cr_assert_eq(revkey_set_like(&k, &like, id, 0), -1);
	cr_assert_eq(revkey_set_like(&k, &like, id, REVKEY_ID_MAX + 1), -1);
	cr_assert(memcmp(&k, &before, sizeof(k)) == 0, "k unchanged");
}

/* test_revkey.c - the key model: certificates and CRL entries derive the same (scope, id) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/pem.h>
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

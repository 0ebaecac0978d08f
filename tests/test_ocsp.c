/* test_ocsp.c - OCSP requests read (hostile ones too), responders checked, responses signed and cached */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "ocsp.h"
#include "revkey.h"
#include "util.h"

/*
 * One PKI for the whole run, made by the openssl CLI the first time a
 * test needs it (tests run in processes of their own, maybe at once: it
 * is built aside and renamed into place), removed when the run ends.
 */
static char dir[256];

static void
sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert(n > 0 && (size_t)n < sizeof(cmd));
	cr_assert_eq(system(cmd), 0, "command failed: %s", cmd);
}

#define CNF "[req]\\ndistinguished_name=dn\\nprompt=no\\n[dn]\\nCN=x\\n" \
	"[ca]\\nbasicConstraints=critical,CA:TRUE\\nkeyUsage=critical,keyCertSign,cRLSign\\n" \
	"subjectKeyIdentifier=hash\\n" \
	"[ocsp]\\nbasicConstraints=critical,CA:FALSE\\nextendedKeyUsage=OCSPSigning\\n" \
	"noCheck=ignored\\n[plain]\\nbasicConstraints=critical,CA:FALSE\\n"

static void
make_pki(void)
{
	char tmp[300];
	struct stat st;

	snprintf(dir, sizeof(dir), "/tmp/ocsp-test-%ld", (long)getppid());
	if (stat(dir, &st) == 0)
		return;
	snprintf(tmp, sizeof(tmp), "%s.%ld", dir, (long)getpid());
	sh("mkdir -p %s && cd %s && printf '" CNF "' > x.cnf && "
	    /* the CA and another CA */
	    "for c in ca other; do openssl req -x509 -config x.cnf -extensions ca "
	    "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $c.key "
	    "-out $c.pem -subj \"/O=Test/CN=$c\" -days 30 2>/dev/null || exit 1; done && "
	    /* keys of every kind */
	    "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa.key 2>/dev/null && "
	    "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out p256.key 2>/dev/null && "
	    "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out p384.key 2>/dev/null && "
	    "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-521 -out p521.key 2>/dev/null && "
	    "openssl genpkey -algorithm ED25519 -out ed.key 2>/dev/null && "
	    /* issue NAME KEY EXT ISSUER SERIAL */
	    "issue() { openssl req -new -config x.cnf -key $2 -subj \"/CN=$1\" -out $1.csr 2>/dev/null && "
	    "openssl x509 -req -in $1.csr -CA $4.pem -CAkey $4.key -set_serial $5 -days 30 "
	    "-extfile x.cnf -extensions $3 -out $1.pem 2>/dev/null; } && "
	    "issue rsa rsa.key ocsp ca 100 && issue p256 p256.key ocsp ca 101 && "
	    "issue p384 p384.key ocsp ca 102 && issue p521 p521.key ocsp ca 103 && "
	    "issue ed ed.key ocsp ca 104 && issue noeku p256.key plain ca 105 && "
	    "issue foreign p256.key ocsp other 106 && "
	    "issue leaf p256.key plain ca 4660 && issue neg p256.key plain ca -42 && "
	    "issue oleaf p256.key plain other 4660 && cd / && "
	    "mv -T %s %s 2>/dev/null || rm -rf %s", tmp, tmp, tmp, dir, tmp);
}

static void
pki(void)
{
	make_pki();
}

/* The runner is the parent of every test process: its PKI goes with it. */
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	char cmd[300];

	(void)stats;
	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/ocsp-test-%ld", (long)getpid());
	if (system(cmd) != 0)
		fprintf(stderr, "test_ocsp: cannot remove its PKI\n");
}

static unsigned char *
file(const char *name, size_t *len)
{
	char path[512], err[256];
	unsigned char *buf;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, len, err,
	    sizeof(err)), 0, "%s", err);
	return buf;
}

static X509 *
cert(const char *name)
{
	unsigned char *b;
	size_t len;
	BIO *bio;
	X509 *x;

	b = file(name, &len);
	bio = BIO_new_mem_buf(b, (int)len);
	x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	free(b);
	cr_assert_not_null(x, "%s", name);
	return x;
}

/* A responder for CA ca signed by cert with key; NULL and err on refusal. */
static struct ocsp_responder *
responder(const char *ca, const char *crt, const char *key, char *err,
    size_t errlen)
{
	unsigned char *a, *b, *c;
	size_t al, bl, cl;
	struct ocsp_responder *r;

	a = file(ca, &al);
	b = file(crt, &bl);
	c = file(key, &cl);
	r = ocsp_responder_new(a, al, b, bl, c, cl, err, errlen);
	free(a);
	free(b);
	free(c);
	return r;
}

/* The DER of a request for leaf under ca, hashed with md, nonce of n. */
static unsigned char *
request(const char *leaf, const char *ca, const EVP_MD *md, int nonce_len,
    int copies, size_t *len)
{
	X509 *l = cert(leaf), *c = cert(ca);
	OCSP_REQUEST *req = OCSP_REQUEST_new();
	unsigned char *der = NULL;
	unsigned char nonce[64];
	int i, n;

	for (i = 0; i < copies; i++)
		cr_assert_not_null(OCSP_request_add0_id(req,
		    OCSP_cert_to_id(md, l, c)));
	if (nonce_len > 0) {
		cr_assert(RAND_bytes(nonce, nonce_len) == 1);
		cr_assert_eq(OCSP_request_add1_nonce(req, nonce, nonce_len), 1);
	}
	n = i2d_OCSP_REQUEST(req, &der);
	cr_assert_gt(n, 0);
	*len = (size_t)n;
	OCSP_REQUEST_free(req);
	X509_free(l);
	X509_free(c);
	return der;
}

TestSuite(ocsp, .init = pki, .timeout = 120);

Test(ocsp, every_key_type_loads_and_signs_verifiably)
{
	static const char *const names[] = { "rsa", "p256", "p384", "ed" };
	struct ocsp_answer a = { V_OCSP_CERTSTATUS_GOOD, 0, -1, 1700000000,
	    1700003600 };
	struct ocsp_responder *r;
	struct ocsp_req q;
	unsigned char *der, *out;
	const unsigned char *p;
	char err[512], c[32], k[32];
	size_t len, olen, i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(c, sizeof(c), "%s.pem", names[i]);
		snprintf(k, sizeof(k), "%s.key", names[i]);
		r = responder("ca.pem", c, k, err, sizeof(err));
		cr_assert_not_null(r, "%s: %s", names[i], err);
		der = request("leaf.pem", "ca.pem", EVP_sha1(), 16, 1, &len);
		cr_assert_eq(ocsp_request_parse(&q, der, len, err,
		    sizeof(err)), 0, "%s", err);
		cr_assert(ocsp_responder_matches(r, &q));
		cr_assert_eq(ocsp_sign(r, &q, &a, &out, &olen, err,
		    sizeof(err)), 0, "%s: %s", names[i], err);
		/* OpenSSL's own client check: signature, signer, nonce. */
		{
			OCSP_RESPONSE *resp;
			OCSP_BASICRESP *bs;
			X509_STORE *st = X509_STORE_new();
			STACK_OF(X509) *certs = sk_X509_new_null();
			X509 *ca = cert("ca.pem");
			int status, reason;
			ASN1_GENERALIZEDTIME *rev, *tu, *nu;

			X509_STORE_add_cert(st, ca);
			p = out;
			resp = d2i_OCSP_RESPONSE(NULL, &p, (long)olen);
			cr_assert_not_null(resp);
			cr_assert_eq(OCSP_response_status(resp),
			    OCSP_RESPONSE_STATUS_SUCCESSFUL);
			bs = OCSP_response_get1_basic(resp);
			cr_assert_not_null(bs);
			cr_assert_eq(OCSP_basic_verify(bs, certs, st, 0), 1,
			    "%s: the signature does not verify", names[i]);
			cr_assert_eq(OCSP_check_nonce(q.req, bs), 1,
			    "nonce not echoed");
			cr_assert_eq(OCSP_resp_find_status(bs, q.id, &status,
			    &reason, &rev, &tu, &nu), 1);
			cr_assert_eq(status, V_OCSP_CERTSTATUS_GOOD);
			cr_assert_not_null(nu);
			OCSP_BASICRESP_free(bs);
			OCSP_RESPONSE_free(resp);
			sk_X509_free(certs);
			X509_free(ca);
			X509_STORE_free(st);
		}
		free(out);
		ocsp_request_free(&q);
		OPENSSL_free(der);
		ocsp_responder_free(r);
	}
}

Test(ocsp, the_ca_itself_may_sign)
{
	struct ocsp_answer a = { V_OCSP_CERTSTATUS_GOOD, 0, -1, 1700000000,
	    1700003600 };
	char err[512];
	struct ocsp_responder *r = responder("ca.pem", "ca.pem", "ca.key",
	    err, sizeof(err));
	STACK_OF(X509) *certs = sk_X509_new_null();
	X509_STORE *st = X509_STORE_new();
	X509 *ca = cert("ca.pem");
	OCSP_RESPONSE *resp;
	OCSP_BASICRESP *bs;
	struct ocsp_req q;
	unsigned char *der, *out;
	const unsigned char *p;
	size_t len, olen;

	cr_assert_not_null(r, "%s", err);
	der = request("leaf.pem", "ca.pem", EVP_sha1(), 0, 1, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), 0);
	cr_assert_eq(ocsp_sign(r, &q, &a, &out, &olen, err, sizeof(err)), 0);
	/* No certificate in it: the client has the CA's. */
	p = out;
	resp = d2i_OCSP_RESPONSE(NULL, &p, (long)olen);
	bs = OCSP_response_get1_basic(resp);
	cr_assert_not_null(bs);
	cr_assert_leq(sk_X509_num(OCSP_resp_get0_certs(bs)), 0);
	X509_STORE_add_cert(st, ca);
	sk_X509_push(certs, ca);
	cr_assert_eq(OCSP_basic_verify(bs, certs, st, 0), 1);
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(resp);
	sk_X509_free(certs);
	X509_STORE_free(st);
	X509_free(ca);
	free(out);
	ocsp_request_free(&q);
	OPENSSL_free(der);
	ocsp_responder_free(r);
}

Test(ocsp, refuses_a_signer_it_cannot_vouch_for)
{
	char err[512];

	cr_assert_null(responder("ca.pem", "noeku.pem", "p256.key", err,
	    sizeof(err)));
	cr_assert(strstr(err, "OCSPSigning") != NULL, "%s", err);
	cr_assert_null(responder("ca.pem", "foreign.pem", "p256.key", err,
	    sizeof(err)));
	cr_assert(strstr(err, "neither the CA certificate nor issued by it")
	    != NULL, "%s", err);
	cr_assert_null(responder("ca.pem", "p256.pem", "p384.key", err,
	    sizeof(err)));
	cr_assert(strstr(err, "not the private key") != NULL, "%s", err);
	cr_assert_null(responder("ca.pem", "p521.pem", "p521.key", err,
	    sizeof(err)));
	cr_assert(strstr(err, "P-256") != NULL, "%s", err);
	cr_assert_null(responder("ca.pem", "ca.key", "ca.key", err,
	    sizeof(err)));
	cr_assert_null(responder("ca.pem", "p256.pem", "p256.pem", err,
	    sizeof(err)));
}

Test(ocsp, certid_matches_with_sha1_and_sha256_only_its_ca)
{
	static const EVP_MD *(*const mds[])(void) = {
		EVP_sha1, EVP_sha256, EVP_sha384, EVP_sha512,
	};
	struct ocsp_responder *r, *o;
	struct ocsp_req q;
	struct revkey k, kc;
	unsigned char *der;
	char err[512];
	size_t len, i;
	X509 *leaf = cert("leaf.pem");

	r = responder("ca.pem", "p256.pem", "p256.key", err, sizeof(err));
	o = responder("other.pem", "other.pem", "other.key", err, sizeof(err));
	cr_assert(r != NULL && o != NULL, "%s", err);
	cr_assert_eq(revkey_from_cert(&kc, leaf, err, sizeof(err)), 0);
	for (i = 0; i < sizeof(mds) / sizeof(mds[0]); i++) {
		der = request("leaf.pem", "ca.pem", mds[i](), 0, 1, &len);
		cr_assert_eq(ocsp_request_parse(&q, der, len, err,
		    sizeof(err)), 0, "%s", err);
		cr_assert(ocsp_responder_matches(r, &q));
		cr_assert_not(ocsp_responder_matches(o, &q));
		cr_assert_not(q.has_nonce);
		/* The key /v1/check forms for the certificate, minus what
		 * only the certificate knows. */
		cr_assert_eq(ocsp_responder_key(r, &q, &k, err, sizeof(err)),
		    0);
		cr_assert_str_eq(k.scope, kc.scope);
		cr_assert_eq(k.id_len, kc.id_len);
		cr_assert_eq(memcmp(k.id, kc.id, k.id_len), 0);
		cr_assert_eq(k.cert, 0, "a bare id: partial scopes fail closed");
		ocsp_request_free(&q);
		OPENSSL_free(der);
	}
	/* The same serial under another CA is another CA's question. */
	der = request("oleaf.pem", "other.pem", EVP_sha1(), 0, 1, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), 0);
	cr_assert_not(ocsp_responder_matches(r, &q));
	cr_assert(ocsp_responder_matches(o, &q));
	ocsp_request_free(&q);
	OPENSSL_free(der);
	X509_free(leaf);
	ocsp_responder_free(r);
	ocsp_responder_free(o);
}

Test(ocsp, a_negative_serial_keeps_its_sign)
{
	struct ocsp_responder *r;
	struct ocsp_req q;
	struct revkey k, kc;
	unsigned char *der;
	char err[512];
	size_t len;
	X509 *neg = cert("neg.pem");

	r = responder("ca.pem", "p256.pem", "p256.key", err, sizeof(err));
	cr_assert_not_null(r);
	der = request("neg.pem", "ca.pem", EVP_sha256(), 0, 1, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), 0);
	cr_assert_eq(ocsp_responder_key(r, &q, &k, err, sizeof(err)), 0);
	cr_assert_eq(revkey_from_cert(&kc, neg, err, sizeof(err)), 0);
	cr_assert_eq(k.id_len, kc.id_len);
	cr_assert_eq(memcmp(k.id, kc.id, k.id_len), 0);
	cr_assert_eq(k.id[0], 0x00, "negative: 0x00 then the magnitude");
	ocsp_request_free(&q);
	OPENSSL_free(der);
	X509_free(neg);
	ocsp_responder_free(r);
}

Test(ocsp, refuses_what_rfc5019_and_8954_do_not_allow)
{
	struct ocsp_req q;
	unsigned char *der, *big;
	char err[512];
	size_t len;

	/* Two CertIDs: refused whole. */
	der = request("leaf.pem", "ca.pem", EVP_sha1(), 0, 2, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), -1);
	cr_assert(strstr(err, "more than one") != NULL, "%s", err);
	OPENSSL_free(der);
	/* Nonces of 32 octets pass, 33 do not. */
	der = request("leaf.pem", "ca.pem", EVP_sha1(), 32, 1, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert(q.has_nonce && q.nonce_len == 32);
	ocsp_request_free(&q);
	OPENSSL_free(der);
	der = request("leaf.pem", "ca.pem", EVP_sha1(), 33, 1, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), -1);
	cr_assert(strstr(err, "33 octets") != NULL, "%s", err);
	/* Bytes after the request. */
	big = malloc(len + 1);
	memcpy(big, der, len);
	big[len] = 0;
	cr_assert_eq(ocsp_request_parse(&q, big, len + 1, err, sizeof(err)),
	    -1);
	OPENSSL_free(der);
	free(big);
	/* A hash other than the SHA family. */
	der = request("leaf.pem", "ca.pem", EVP_md5(), 0, 1, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), -1);
	OPENSSL_free(der);
	cr_assert_eq(ocsp_request_parse(&q, (const unsigned char *)"", 0, err,
	    sizeof(err)), -1);
	/* ocsp_request_free is safe on what a refusal left. */
	ocsp_request_free(&q);
}

/*
 * A request for leaf under ca hashed with md whose CertID's name hash is
 * cut or padded to nlen bytes (its key hash left as md made it).
 */
static unsigned char *
request_name_hash_len(const EVP_MD *md, int nlen, size_t *len)
{
	static const unsigned char fill[64];
	X509 *l = cert("leaf.pem"), *c = cert("ca.pem");
	OCSP_REQUEST *req = OCSP_REQUEST_new();
	OCSP_CERTID *id = OCSP_cert_to_id(md, l, c);
	ASN1_OCTET_STRING *nh = NULL;
	unsigned char *der = NULL;
	int n;

	cr_assert_eq(OCSP_id_get0_info(&nh, NULL, NULL, NULL, id), 1);
	cr_assert_eq(ASN1_OCTET_STRING_set(nh, fill, nlen), 1);
	cr_assert_not_null(OCSP_request_add0_id(req, id));
	n = i2d_OCSP_REQUEST(req, &der);
	cr_assert_gt(n, 0);
	*len = (size_t)n;
	OCSP_REQUEST_free(req);
	X509_free(l);
	X509_free(c);
	return der;
}

/* Each CertID hash is read at its own size, and only at that size. */
Test(ocsp, certid_hashes_only_at_their_own_size)
{
	const EVP_MD *mds[] = { EVP_sha1(), EVP_sha256(), EVP_sha384(),
	    EVP_sha512() };
	static const int sizes[] = { 20, 32, 48, 64 };
	struct ocsp_req q;
	unsigned char *der;
	char err[512];
	size_t len, i, j;

	for (i = 0; i < 4; i++) {
		der = request("leaf.pem", "ca.pem", mds[i], 0, 1, &len);
		cr_assert_eq(ocsp_request_parse(&q, der, len, err,
		    sizeof(err)), 0, "%zu: %s", i, err);
		ocsp_request_free(&q);
		OPENSSL_free(der);
		for (j = 0; j < 4; j++) {
			if (j == i)
				continue;
			der = request_name_hash_len(mds[i], sizes[j], &len);
			cr_assert_eq(ocsp_request_parse(&q, der, len, err,
			    sizeof(err)), -1, "%zu with %d bytes", i, sizes[j]);
			cr_assert(strstr(err, "wrong length") != NULL, "%s",
			    err);
			OPENSSL_free(der);
		}
		der = request_name_hash_len(mds[i], sizes[i] - 1, &len);
		cr_assert_eq(ocsp_request_parse(&q, der, len, err,
		    sizeof(err)), -1);
		OPENSSL_free(der);
	}
}

/*
 * Hostile DER: every truncation and every single-byte change of a valid
 * request either parses into a whole request or is refused, never
 * crashes, leaks or reads past the end (ASan in SANITIZE builds).
 */
Test(ocsp, hostile_der_is_refused_or_read_whole)
{
	static const unsigned char vals[] = { 0x00, 0x01, 0x7f, 0x80, 0x81,
	    0xff };
	struct ocsp_req q;
	unsigned char *der, *m;
	char err[512];
	size_t len, i, j;

	der = request("leaf.pem", "ca.pem", EVP_sha256(), 16, 1, &len);
	m = malloc(len);
	for (i = 0; i < len; i++) {
		memcpy(m, der, i);
		if (ocsp_request_parse(&q, m, i, err, sizeof(err)) == 0)
			cr_assert_fail("a truncation at %zu parsed", i);
	}
	for (i = 0; i < len; i++)
		for (j = 0; j < sizeof(vals); j++) {
			memcpy(m, der, len);
			m[i] = vals[j];
			if (ocsp_request_parse(&q, m, len, err,
			    sizeof(err)) == 0) {
				cr_assert_not_null(q.id);
				cr_assert_not_null(q.serial);
				cr_assert_leq(q.nonce_len, OCSP_NONCE_MAX);
				ocsp_request_free(&q);
			}
		}
	free(m);
	OPENSSL_free(der);
}

Test(ocsp, base64_of_get_requests)
{
	unsigned char out[16];

	cr_assert_eq(ocsp_b64_decode("TWFu", 4, out, sizeof(out)), 3);
	cr_assert_eq(memcmp(out, "Man", 3), 0);
	cr_assert_eq(ocsp_b64_decode("TWE=", 4, out, sizeof(out)), 2);
	cr_assert_eq(ocsp_b64_decode("TWE", 3, out, sizeof(out)), 2);
	cr_assert_eq(ocsp_b64_decode("TQ==", 4, out, sizeof(out)), 1);
	/* '+' unescaped, or made a space by a form decoder. */
	cr_assert_eq(ocsp_b64_decode("+/+/", 4, out, sizeof(out)), 3);
	cr_assert_eq(ocsp_b64_decode(" /+/", 4, out, sizeof(out)), 3);
	cr_assert_eq(out[0], 0xfb);
	cr_assert_eq(ocsp_b64_decode("TWFu=", 5, out, sizeof(out)), -1);
	cr_assert_eq(ocsp_b64_decode("TQ=a", 4, out, sizeof(out)), -1);
	cr_assert_eq(ocsp_b64_decode("T", 1, out, sizeof(out)), -1);
	cr_assert_eq(ocsp_b64_decode("TR==", 4, out, sizeof(out)), -1,
	    "stray bits");
	cr_assert_eq(ocsp_b64_decode("TW!u", 4, out, sizeof(out)), -1);
	cr_assert_eq(ocsp_b64_decode("TWFuTWFu", 8, out, 5), -1, "over cap");
}

/* Signs a for q and reads back its single response. */
static void
signed_status(const struct ocsp_responder *r, const struct ocsp_req *q,
    const struct ocsp_answer *a, int *status, int *reason, int64_t *rev,
    bool *has_next)
{
	unsigned char *out;
	const unsigned char *p;
	size_t olen;
	char err[256];
	OCSP_RESPONSE *resp;
	OCSP_BASICRESP *bs;
	ASN1_GENERALIZEDTIME *rt = NULL, *tu = NULL, *nu = NULL;
	struct tm tm;

	cr_assert_eq(ocsp_sign(r, q, a, &out, &olen, err, sizeof(err)), 0);
	p = out;
	resp = d2i_OCSP_RESPONSE(NULL, &p, (long)olen);
	cr_assert_not_null(resp);
	bs = OCSP_response_get1_basic(resp);
	cr_assert_eq(OCSP_resp_find_status(bs, q->id, status, reason, &rt,
	    &tu, &nu), 1);
	*rev = 0;
	if (rt != NULL) {
		cr_assert_eq(ASN1_TIME_to_tm(rt, &tm), 1);
		*rev = (int64_t)timegm(&tm);
	}
	cr_assert_eq(ASN1_TIME_to_tm(tu, &tm), 1);
	cr_assert_eq((int64_t)timegm(&tm), a->this_update);
	*has_next = nu != NULL;
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(resp);
	free(out);
}

Test(ocsp, responses_say_what_was_decided)
{
	struct ocsp_answer a = { V_OCSP_CERTSTATUS_REVOKED, 1690000000,
	    1, 1700000000, 0 };
	struct ocsp_responder *r;
	struct ocsp_req q;
	unsigned char *der;
	char err[512];
	size_t len;
	int status, reason;
	int64_t rev;
	bool next;

	r = responder("ca.pem", "ed.pem", "ed.key", err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	der = request("leaf.pem", "ca.pem", EVP_sha1(), 0, 1, &len);
	cr_assert_eq(ocsp_request_parse(&q, der, len, err, sizeof(err)), 0);
	signed_status(r, &q, &a, &status, &reason, &rev, &next);
	cr_assert_eq(status, V_OCSP_CERTSTATUS_REVOKED);
	cr_assert_eq(reason, 1, "keyCompromise");
	cr_assert_eq(rev, 1690000000);
	cr_assert_not(next, "no nextUpdate when none is proven");
	a.reason = -1;
	a.revoked_at = 0;
	signed_status(r, &q, &a, &status, &reason, &rev, &next);
	cr_assert_eq(reason, -1, "no reason when the table has none");
	cr_assert_eq(rev, 0, "an unknown time is sent as 1970");
	a.status = V_OCSP_CERTSTATUS_UNKNOWN;
	a.next_update = 1700000600;
	signed_status(r, &q, &a, &status, &reason, &rev, &next);
	cr_assert_eq(status, V_OCSP_CERTSTATUS_UNKNOWN);
	cr_assert(next);
	cr_assert_eq(ocsp_reason_code("keyCompromise"), 1);
	cr_assert_eq(ocsp_reason_code("removeFromCRL"), 8);
	cr_assert_eq(ocsp_reason_code(""), -1);
	cr_assert_eq(ocsp_reason_code("subject cutoff"), -1);
	ocsp_request_free(&q);
	OPENSSL_free(der);
	ocsp_responder_free(r);
}

Test(ocsp, error_responses_are_bare_statuses)
{
	const unsigned char *d;
	const unsigned char *p;
	OCSP_RESPONSE *resp;
	size_t len;

	d = ocsp_error_der(OCSP_RS_TRYLATER, &len);
	p = d;
	resp = d2i_OCSP_RESPONSE(NULL, &p, (long)len);
	cr_assert_not_null(resp);
	cr_assert_eq(OCSP_response_status(resp), OCSP_RESPONSE_STATUS_TRYLATER);
	OCSP_RESPONSE_free(resp);
	d = ocsp_error_der(OCSP_RS_UNAUTHORIZED, &len);
	cr_assert_eq(d[4], 6);
	d = ocsp_error_der(OCSP_RS_MALFORMED, &len);
	cr_assert_eq(d[4], 1);
	d = ocsp_error_der(OCSP_RS_INTERNAL, &len);
	cr_assert_eq(d[4], 2);
}

/* A parsed request for leaf with serial s (the serial bytes replaced). */
static void
req_serial(struct ocsp_req *q, unsigned s)
{
	unsigned char *der;
	char err[256];
	size_t len;

	der = request("leaf.pem", "ca.pem", EVP_sha1(), 0, 1, &len);
	cr_assert_eq(ocsp_request_parse(q, der, len, err, sizeof(err)), 0);
	OPENSSL_free(der);
	cr_assert_eq(ASN1_INTEGER_set((ASN1_INTEGER *)(uintptr_t)q->serial,
	    (long)s), 1);
}

Test(ocsp, cache_reuses_only_for_the_same_state)
{
	struct ocsp_cache *c = ocsp_cache_new(1 << 20);
	struct ocsp_stamp st = { 3, 7, 1700000000, 1700003600 }, st2;
	struct ocsp_req q;
	unsigned char *der;
	size_t len;
	int status;

	req_serial(&q, 1);
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st, &der, &len, &status), -1);
	ocsp_cache_put(c, 0, &q, &st, (const unsigned char *)"resp-a", 6,
	    V_OCSP_CERTSTATUS_GOOD);
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st, &der, &len, &status), 0);
	cr_assert_eq(len, 6);
	cr_assert_eq(memcmp(der, "resp-a", 6), 0);
	cr_assert_eq(status, V_OCSP_CERTSTATUS_GOOD);
	free(der);
	/* Another responder, another delta, base, or time: no reuse. */
	cr_assert_eq(ocsp_cache_get(c, 1, &q, &st, &der, &len, &status), -1);
	st2 = st;
	st2.seq++;
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st2, &der, &len, &status), -1);
	st2 = st;
	st2.version++;
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st2, &der, &len, &status), -1);
	st2 = st;
	st2.next_update += 60;
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st2, &der, &len, &status), -1);
	/* A response for the newer state replaces the older one. */
	st2 = st;
	st2.seq++;
	ocsp_cache_put(c, 0, &q, &st2, (const unsigned char *)"resp-b", 6,
	    V_OCSP_CERTSTATUS_REVOKED);
	{
		uint64_t n, b;

		ocsp_cache_stats(c, &n, &b);
		cr_assert_eq(n, 1);
	}
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st, &der, &len, &status), -1);
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st2, &der, &len, &status), 0);
	cr_assert_eq(status, V_OCSP_CERTSTATUS_REVOKED);
	free(der);
	ocsp_request_free(&q);
	ocsp_cache_free(c);
}

Test(ocsp, cache_stays_within_its_bound)
{
	struct ocsp_cache *c = ocsp_cache_new(64 * 1024);
	struct ocsp_stamp st = { 1, 0, 1700000000, 1700003600 };
	unsigned char resp[700], *der;
	struct ocsp_req q;
	uint64_t n, b;
	size_t len;
	unsigned i;
	int status;

	memset(resp, 0xab, sizeof(resp));
	req_serial(&q, 0);
	for (i = 1; i <= 2000; i++) {
		cr_assert_eq(ASN1_INTEGER_set((ASN1_INTEGER *)(uintptr_t)
		    q.serial, (long)i), 1);
		ocsp_cache_put(c, 0, &q, &st, resp, sizeof(resp),
		    V_OCSP_CERTSTATUS_GOOD);
		ocsp_cache_stats(c, &n, &b);
		cr_assert_leq(b, 64 * 1024, "%llu bytes held",
		    (unsigned long long)b);
	}
	cr_assert_gt(n, 20, "it keeps some");
	/* The most recent is there, the first long evicted. */
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st, &der, &len, &status), 0);
	free(der);
	cr_assert_eq(ASN1_INTEGER_set((ASN1_INTEGER *)(uintptr_t)q.serial, 1),
	    1);
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st, &der, &len, &status), -1);
	ocsp_request_free(&q);
	ocsp_cache_free(c);
	/* A zero bound keeps nothing. */
	c = ocsp_cache_new(0);
	req_serial(&q, 5);
	ocsp_cache_put(c, 0, &q, &st, resp, sizeof(resp), 0);
	cr_assert_eq(ocsp_cache_get(c, 0, &q, &st, &der, &len, &status), -1);
	ocsp_request_free(&q);
	ocsp_cache_free(c);
}

/* ---- the "ocsp" configuration section ---------------------------------- */

#include "../svc/config.h"
#include "../svc/config_ocsp.h"

/* Loads text as a config file: 0 or -1 with err. */
static int
load(struct config *c, const char *text, char *err, size_t errlen)
{
	config_init(c);
	return config_load_buf(c, text, strlen(text), "test.json", err,
	    errlen);
}

Test(ocsp_config, reads_the_section)
{
	struct config c, d;
	char err[512];

	cr_assert_eq(load(&c, "{\"ocsp\": {\"path\": \"/\", \"cache_max\": "
	    "1024, \"responders\": [{\"issuer\": \"a.pem\", \"cert\": "
	    "\"b.pem\", \"key\": \"b.key\"}]}}", err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(c.ocsp.nresponders, 1);
	cr_assert_str_eq(c.ocsp.responders[0].key, "b.key");
	cr_assert_str_eq(config_ocsp_path(&c), "/");
	cr_assert_eq(c.ocsp.cache_max, 1024);
	cr_assert_eq(config_ocsp_validate(&c, err, sizeof(err)), 0, "%s", err);
	/* Copied deep, compared by value: what SIGHUP relies on. */
	cr_assert_eq(config_copy(&d, &c, err, sizeof(err)), 0);
	cr_assert_neq(d.ocsp.responders[0].key, c.ocsp.responders[0].key);
	cr_assert_not(config_ocsp_differ(&c, &d));
	free(d.ocsp.responders[0].key);
	d.ocsp.responders[0].key = strdup("other.key");
	cr_assert(config_ocsp_differ(&c, &d));
	cr_assert(config_key_is_live("ocsp"));
	config_free(&d);
	config_free(&c);
	cr_assert_eq(load(&c, "{}", err, sizeof(err)), 0);
	cr_assert_str_eq(config_ocsp_path(&c), "/ocsp");
	cr_assert_eq(c.ocsp.nresponders, 0);
	config_free(&c);
}

Test(ocsp_config, refuses_what_would_go_wrong)
{
	static const char *const bad[] = {
		"{\"ocsp\": []}",
		"{\"ocsp\": {\"responder\": []}}",
		"{\"ocsp\": {\"responders\": [{\"issuer\": \"a\", \"crt\": \"b\"}]}}",
		"{\"ocsp\": {\"responders\": {}}}",
		"{\"ocsp\": {\"cache_max\": -1}}",
		"{\"ocsp\": {\"cache_max\": 1.5}}",
		"{\"ocsp\": {\"path\": \"\"}}",
	};
	static const char *const invalid[] = {
		"{\"ocsp\": {\"responders\": [{\"issuer\": \"a\", \"cert\": \"b\"}]}}",
		"{\"ocsp\": {\"path\": \"ocsp\"}}",
		"{\"ocsp\": {\"path\": \"/ocsp/\"}}",
		"{\"ocsp\": {\"path\": \"/v1/check\"}}",
		"{\"ocsp\": {\"path\": \"/metrics\"}}",
		"{\"ocsp\": {\"path\": \"/o?x=1\"}}",
	};
	struct config c;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(load(&c, bad[i], err, sizeof(err)), -1, "%s", bad[i]);
		cr_assert(strstr(err, "ocsp") != NULL, "%s", err);
		config_free(&c);
	}
	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		cr_assert_eq(load(&c, invalid[i], err, sizeof(err)), 0, "%s",
		    err);
		cr_assert_eq(config_ocsp_validate(&c, err, sizeof(err)), -1,
		    "%s", invalid[i]);
		config_free(&c);
	}
}

/* True when der is what OpenSSL writes for what it reads from it: DER. */
static bool
canonical(const unsigned char *der, size_t len)
{
	const unsigned char *p = der;
	OCSP_RESPONSE *resp = d2i_OCSP_RESPONSE(NULL, &p, (long)len);
	OCSP_BASICRESP *bs;
	unsigned char *re = NULL, *rb = NULL;
	int n, m;
	bool ok;

	if (resp == NULL || p != der + len)
		return false;
	n = i2d_OCSP_RESPONSE(resp, &re);
	bs = OCSP_response_get1_basic(resp);
	m = bs != NULL ? i2d_OCSP_BASICRESP(bs, &rb) : -1;
	ok = n == (int)len && memcmp(re, der, len) == 0 && m > 0 &&
	    memmem(der, len, rb, (size_t)m) != NULL;
	OPENSSL_free(re);
	OPENSSL_free(rb);
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(resp);
	return ok;
}

/*
 * The response is written in DER by hand (lib/ocsp_sign.c): every shape
 * (each status, reason or none, nextUpdate or none, a nonce, a serial
 * long enough for two-byte lengths, each key type) must be the DER
 * OpenSSL writes for the same values, and verify.
 */
Test(ocsp, responses_are_canonical_der)
{
	static const char *const names[] = { "rsa", "p256", "p384", "ed" };
	static const int st[] = { V_OCSP_CERTSTATUS_GOOD,
	    V_OCSP_CERTSTATUS_REVOKED, V_OCSP_CERTSTATUS_UNKNOWN };
	struct ocsp_answer a = { 0, 1690000000, 4, 1700000000, 1700003600 };
	struct ocsp_responder *r;
	struct ocsp_req q;
	OCSP_REQUEST *req;
	OCSP_CERTID *id;
	ASN1_INTEGER *serial;
	BIGNUM *bn;
	X509 *ca = cert("ca.pem");
	unsigned char *der = NULL, *out, big[600];
	char err[512], c[32], k[32];
	size_t olen, i, j;
	int n;

	/* A CertID with a 600-byte serial, and a nonce. */
	memset(big, 0x5a, sizeof(big));
	bn = BN_bin2bn(big, sizeof(big), NULL);
	serial = BN_to_ASN1_INTEGER(bn, NULL);
	id = OCSP_cert_id_new(EVP_sha256(), X509_get_subject_name(ca),
	    X509_get0_pubkey_bitstr(ca), serial);
	req = OCSP_REQUEST_new();
	cr_assert_not_null(OCSP_request_add0_id(req, id));
	cr_assert_eq(OCSP_request_add1_nonce(req, big, 20), 1);
	n = i2d_OCSP_REQUEST(req, &der);
	cr_assert_eq(ocsp_request_parse(&q, der, (size_t)n, err, sizeof(err)),
	    0, "%s", err);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(c, sizeof(c), "%s.pem", names[i]);
		snprintf(k, sizeof(k), "%s.key", names[i]);
		r = responder("ca.pem", c, k, err, sizeof(err));
		cr_assert_not_null(r, "%s", err);
		for (j = 0; j < 6; j++) {
			a.status = st[j % 3];
			a.next_update = j < 3 ? 1700003600 : 0;
			a.reason = j < 3 ? 4 : -1;
			cr_assert_eq(ocsp_sign(r, &q, &a, &out, &olen, err,
			    sizeof(err)), 0, "%s", err);
			cr_assert(canonical(out, olen), "%s, shape %zu: not "
			    "the DER OpenSSL writes", names[i], j);
			free(out);
		}
		ocsp_responder_free(r);
	}
	ocsp_request_free(&q);
	OPENSSL_free(der);
	OCSP_REQUEST_free(req);
	ASN1_INTEGER_free(serial);
	BN_free(bn);
	X509_free(ca);
}

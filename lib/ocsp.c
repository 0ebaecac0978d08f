/* ocsp.c - OCSP requests read, responders loaded and checked, responses signed */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ocsp.h"
#include "ocsp_int.h"
#include "util.h"

/* The CertID hashes matched, in the order of the responder's tables. */
static const int hash_nids[OCSP_NHASH] = {
	NID_sha1, NID_sha256, NID_sha384, NID_sha512,
};
/* Their output sizes: a request's hashes are checked without a digest lookup. */
static const int hash_sizes[OCSP_NHASH] = { 20, 32, 48, 64 };
#define NHASH	OCSP_NHASH

/* ---- requests ------------------------------------------------------------ */

static int
hash_index(int nid)
{
	size_t i;

	for (i = 0; i < NHASH; i++)
		if (hash_nids[i] == nid)
			return (int)i;
	return -1;
}

void
ocsp_request_free(struct ocsp_req *q)
{
	if (q == NULL)
		return;
	OCSP_REQUEST_free(q->req);
	memset(q, 0, sizeof(*q));
}

/* Reads the nonce extension of q->req, if any. 0, or -1 with err. */
static int
request_nonce(struct ocsp_req *q, char *err, size_t errlen)
{
	const ASN1_OCTET_STRING *v;
	ASN1_OCTET_STRING *inner;
	const unsigned char *p;
	X509_EXTENSION *ext;
	int idx, n;

	idx = OCSP_REQUEST_get_ext_by_NID(q->req, NID_id_pkix_OCSP_Nonce, -1);
	if (idx < 0)
		return 0;
	if (OCSP_REQUEST_get_ext_by_NID(q->req, NID_id_pkix_OCSP_Nonce,
	    idx) >= 0) {
		snprintf(err, errlen, "more than one nonce extension");
		return -1;
	}
	if ((ext = OCSP_REQUEST_get_ext(q->req, idx)) == NULL ||
	    (v = X509_EXTENSION_get_data(ext)) == NULL) {
		snprintf(err, errlen, "unreadable nonce extension");
		return -1;
	}
	/* RFC 8954: the extension's value is the DER of an OCTET STRING. */
	p = ASN1_STRING_get0_data(v);
	n = ASN1_STRING_length(v);
	inner = d2i_ASN1_OCTET_STRING(NULL, &p, n);
	if (inner == NULL || p != ASN1_STRING_get0_data(v) + n) {
		ASN1_OCTET_STRING_free(inner);
		ERR_clear_error();
		snprintf(err, errlen, "the nonce is not an OCTET STRING");
		return -1;
	}
	n = ASN1_STRING_length(inner);
	if (n < 1 || n > OCSP_NONCE_MAX) {
		ASN1_OCTET_STRING_free(inner);
		snprintf(err, errlen, "a nonce of %d octets (1 to %d allowed)",
		    n, OCSP_NONCE_MAX);
		return -1;
	}
	memcpy(q->nonce, ASN1_STRING_get0_data(inner), (size_t)n);
	q->nonce_len = (size_t)n;
	q->has_nonce = true;
	ASN1_OCTET_STRING_free(inner);
	return 0;
}

/* Reads the one CertID of q->req. 0, or -1 with err. */
static int
request_certid(struct ocsp_req *q, char *err, size_t errlen)
{
	ASN1_OCTET_STRING *nh = NULL, *kh = NULL;
	ASN1_OBJECT *md = NULL;
	ASN1_INTEGER *serial = NULL;
	OCSP_ONEREQ *one;
	int n, hi;

	n = OCSP_request_onereq_count(q->req);
	if (n != 1) {
		snprintf(err, errlen, n < 1 ? "no certificate asked about" :
		    "more than one certificate asked about in one request "
		    "(send one request per certificate)");
		return -1;
	}
	if ((one = OCSP_request_onereq_get0(q->req, 0)) == NULL ||
	    (q->id = OCSP_onereq_get0_id(one)) == NULL ||
	    OCSP_id_get0_info(&nh, &md, &kh, &serial, q->id) != 1 ||
	    nh == NULL || md == NULL || kh == NULL || serial == NULL) {
		snprintf(err, errlen, "unreadable CertID");
		return -1;
	}
	q->md_nid = OBJ_obj2nid(md);
	if ((hi = hash_index(q->md_nid)) < 0) {
		snprintf(err, errlen, "a CertID hash other than SHA-1, SHA-256, "
		    "SHA-384 or SHA-512");
		return -1;
	}
	if (ASN1_STRING_length(nh) != hash_sizes[hi] ||
	    ASN1_STRING_length(kh) != hash_sizes[hi]) {
		snprintf(err, errlen, "CertID hashes of the wrong length");
		return -1;
	}
	n = ASN1_STRING_length(serial);
	if (n < 1 || n > OCSP_SERIAL_MAX) {
		snprintf(err, errlen, "a serial number of %d bytes", n);
		return -1;
	}
	q->serial = serial;
	return 0;
}

int
ocsp_request_parse(struct ocsp_req *q, const unsigned char *der,
    size_t len, char *err, size_t errlen)
{
	const unsigned char *p = der;

	memset(q, 0, sizeof(*q));
	if (len == 0 || len > OCSP_REQ_MAX) {
		snprintf(err, errlen, len == 0 ? "an empty request" :
		    "a request over %d bytes", OCSP_REQ_MAX);
		return -1;
	}
	q->req = d2i_OCSP_REQUEST(NULL, &p, (long)len);
	if (q->req == NULL) {
		ERR_clear_error();
		snprintf(err, errlen, "not a DER OCSPRequest");
		goto fail;
	}
	if (p != der + len) {
		snprintf(err, errlen, "bytes after the OCSPRequest");
		goto fail;
	}
	if (request_certid(q, err, errlen) == -1 ||
	    request_nonce(q, err, errlen) == -1)
		goto fail;
	return 0;
fail:
	ocsp_request_free(q);
	return -1;
}

long
ocsp_b64_decode(const char *in, size_t len, unsigned char *out, size_t cap)
{
	uint32_t acc = 0;
	size_t i, n = 0, bits = 0, pad = 0;
	int v;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '=') {
			pad++;
			continue;
		}
		if (pad > 0)
			return -1;	/* text after padding */
		v = c == ' ' ? 62 : util_b64_value(c, false);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= cap)
				return -1;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* A dangling character, too much padding or stray bits: not base64. */
	if (bits >= 6 || pad > 2 || acc != 0)
		return -1;
	if (pad > 0 && (len - pad) % 4 + pad != 4)
		return -1;
	return (long)n;
}

/* ---- responders ---------------------------------------------------------- */

/* Never asks for a pass phrase: an encrypted key is refused. */
static int
no_pass(char *buf, int size, int rw, void *u)
{
	(void)buf;
	(void)size;
	(void)rw;
	(void)u;
	return -1;
}

static X509 *
pem_cert(const unsigned char *buf, size_t len)
{
	BIO *b;
	X509 *x;

	if (len > INT32_MAX || (b = BIO_new_mem_buf(buf, (int)len)) == NULL)
		return NULL;
	x = PEM_read_bio_X509(b, NULL, no_pass, NULL);
	BIO_free(b);
	ERR_clear_error();
	return x;
}

static EVP_PKEY *
pem_key(const unsigned char *buf, size_t len)
{
	EVP_PKEY *k;
	BIO *b;

	if (len > INT32_MAX || (b = BIO_new_mem_buf(buf, (int)len)) == NULL)
		return NULL;
	k = PEM_read_bio_PrivateKey(b, NULL, no_pass, NULL);
	BIO_free(b);
	ERR_clear_error();
	return k;
}

/* The signing digest for key k (NULL for Ed25519). 0, or -1 with err. */
static int
key_digest(EVP_PKEY *k, const EVP_MD **md, char *err, size_t errlen)
{
	char group[64];

	switch (EVP_PKEY_get_base_id(k)) {
	case EVP_PKEY_RSA:
		if (EVP_PKEY_get_bits(k) < 2048) {
			snprintf(err, errlen, "an RSA key of %d bits: use 2048 "
			    "bits or more", EVP_PKEY_get_bits(k));
			return -1;
		}
		*md = EVP_sha256();
		return 0;
	case EVP_PKEY_EC:
		if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME,
		    group, sizeof(group), NULL) != 1) {
			ERR_clear_error();
			group[0] = '\0';
		}
		if (strcmp(group, "prime256v1") == 0) {
			*md = EVP_sha256();
			return 0;
		}
		if (strcmp(group, "secp384r1") == 0) {
			*md = EVP_sha384();
			return 0;
		}
		snprintf(err, errlen, "an EC key on curve \"%s\": use P-256 "
		    "(prime256v1) or P-384 (secp384r1)", group);
		return -1;
	case EVP_PKEY_ED25519:
		*md = NULL;
		return 0;
	}
	snprintf(err, errlen, "a key of an unsupported type: use RSA, ECDSA "
	    "P-256/P-384 or Ed25519");
	return -1;
}

/*
 * Whether r->cert may sign for r->ca: the CA itself, or issued by it
 * (names, key identifiers, signature) with id-kp-OCSPSigning. 0, or -1
 * with err.
 */
static int
signer_check(struct ocsp_responder *r, char *err, size_t errlen)
{
	int rc;

	if (X509_cmp(r->cert, r->ca) == 0) {
		r->self = true;
		return 0;
	}
	rc = X509_check_issued(r->ca, r->cert);
	if (rc != X509_V_OK || X509_verify(r->cert,
	    X509_get0_pubkey(r->ca)) != 1) {
		ERR_clear_error();
		snprintf(err, errlen, "the responder certificate is neither the "
		    "CA certificate nor issued by it (%s): issue it with the "
		    "CA's key (openssl x509 -req -CA ca.pem -CAkey ca.key "
		    "-extfile ... with extendedKeyUsage = OCSPSigning), or "
		    "give the CA certificate itself as \"cert\"",
		    rc != X509_V_OK ? X509_verify_cert_error_string(rc) :
		    "its signature does not verify with the CA's key");
		return -1;
	}
	if ((X509_get_extension_flags(r->cert) & EXFLAG_XKUSAGE) == 0 ||
	    (X509_get_extended_key_usage(r->cert) & XKU_OCSP_SIGN) == 0) {
		snprintf(err, errlen, "the responder certificate lacks "
		    "extendedKeyUsage OCSPSigning (id-kp-OCSPSigning): clients "
		    "refuse responses it signs; issue it with "
		    "\"extendedKeyUsage = OCSPSigning\" (and \"noCheck = "
		    "ignored\")");
		return -1;
	}
	return 0;
}

/* The CA's name and key hashes under every CertID hash. 0 or -1. */
static int
responder_hashes(struct ocsp_responder *r)
{
	const EVP_MD *md;
	unsigned nl, kl;
	size_t i;

	for (i = 0; i < NHASH; i++) {
		if ((md = EVP_get_digestbynid(hash_nids[i])) == NULL ||
		    X509_NAME_digest(X509_get_subject_name(r->ca), md,
		    r->name_hash[i], &nl) != 1 ||
		    X509_pubkey_digest(r->ca, md, r->key_hash[i], &kl) != 1 ||
		    nl != kl || nl != (unsigned)hash_sizes[i])
			return -1;
		r->hash_len[i] = nl;
	}
	return 0;
}

/* Loads the three PEM buffers into r. 0, or -1 with err. */
static int
responder_load(struct ocsp_responder *r, const unsigned char *ca,
    size_t calen, const unsigned char *cert, size_t certlen,
    const unsigned char *key, size_t keylen, char *err, size_t errlen)
{
	if ((r->ca = pem_cert(ca, calen)) == NULL) {
		snprintf(err, errlen, "issuer: no PEM certificate");
		return -1;
	}
	if ((r->cert = pem_cert(cert, certlen)) == NULL) {
		snprintf(err, errlen, "cert: no PEM certificate");
		return -1;
	}
	if ((r->key = pem_key(key, keylen)) == NULL) {
		snprintf(err, errlen, "key: no PEM private key (an encrypted "
		    "key is not read: decrypt it, e.g. openssl pkey -in KEY "
		    "-out KEY.plain)");
		return -1;
	}
	return 0;
}

struct ocsp_responder *
ocsp_responder_new(const unsigned char *ca, size_t calen,
    const unsigned char *cert, size_t certlen, const unsigned char *key,
    size_t keylen, char *err, size_t errlen)
{
	struct ocsp_responder *r;
	char e[512];

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (responder_load(r, ca, calen, cert, certlen, key, keylen, err,
	    errlen) == -1)
		goto fail;
	if (signer_check(r, err, errlen) == -1)
		goto fail;
	if (X509_check_private_key(r->cert, r->key) != 1) {
		ERR_clear_error();
		snprintf(err, errlen, "key: not the private key of the "
		    "responder certificate (compare openssl x509 -pubkey "
		    "-noout -in CERT with openssl pkey -pubout -in KEY)");
		goto fail;
	}
	if (key_digest(r->key, &r->md, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "key: %s", e);
		goto fail;
	}
	if (X509_cmp_time(X509_get0_notAfter(r->cert), NULL) <= 0) {
		snprintf(err, errlen, "cert: expired (notAfter passed): clients "
		    "refuse what it signs; issue a new one");
		goto fail;
	}
	if (responder_hashes(r) == -1) {
		snprintf(err, errlen, "issuer: cannot hash its name and key");
		goto fail;
	}
	if (ocsp_sign_prepare(r, err, errlen) == -1)
		goto fail;
	if (X509_NAME_oneline(X509_get_subject_name(r->ca), r->name,
	    (int)sizeof(r->name)) == NULL)
		snprintf(r->name, sizeof(r->name), "?");
	ERR_clear_error();
	return r;
fail:
	ERR_clear_error();
	ocsp_responder_free(r);
	return NULL;
}

void
ocsp_responder_free(struct ocsp_responder *r)
{
	if (r == NULL)
		return;
	ocsp_sign_release(r);
	X509_free(r->ca);
	X509_free(r->cert);
	EVP_PKEY_free(r->key);
	free(r);
}

const char *
ocsp_responder_name(const struct ocsp_responder *r)
{
	return r->name;
}

bool
ocsp_responder_matches(const struct ocsp_responder *r,
    const struct ocsp_req *q)
{
	ASN1_OCTET_STRING *nh = NULL, *kh = NULL;
	ASN1_OBJECT *md = NULL;
	ASN1_INTEGER *serial = NULL;
	int i = hash_index(q->md_nid);

	if (i < 0 || OCSP_id_get0_info(&nh, &md, &kh, &serial, q->id) != 1)
		return false;
	return (unsigned)ASN1_STRING_length(nh) == r->hash_len[i] &&
	    (unsigned)ASN1_STRING_length(kh) == r->hash_len[i] &&
	    CRYPTO_memcmp(ASN1_STRING_get0_data(nh), r->name_hash[i],
	    r->hash_len[i]) == 0 &&
	    CRYPTO_memcmp(ASN1_STRING_get0_data(kh), r->key_hash[i],
	    r->hash_len[i]) == 0;
}

int
ocsp_responder_key(const struct ocsp_responder *r, const struct ocsp_req *q,
    struct revkey *k, char *err, size_t errlen)
{
	return revkey_from_issuer_serial(k, X509_get_subject_name(r->ca),
	    q->serial, err, errlen);
}

/* ---- responses ----------------------------------------------------------- */

int
ocsp_reason_code(const char *name)
{
	static const char *const names[] = {
		"unspecified", "keyCompromise", "cACompromise",
		"affiliationChanged", "superseded", "cessationOfOperation",
		"certificateHold", NULL, "removeFromCRL", "privilegeWithdrawn",
		"aACompromise",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] != NULL && strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

const unsigned char *
ocsp_error_der(enum ocsp_rstatus st, size_t *len)
{
	/* OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED } */
	static const unsigned char der[][5] = {
		{ 0x30, 0x03, 0x0a, 0x01, 0x01 },
		{ 0x30, 0x03, 0x0a, 0x01, 0x02 },
		{ 0x30, 0x03, 0x0a, 0x01, 0x03 },
		{ 0x30, 0x03, 0x0a, 0x01, 0x06 },
	};

	*len = sizeof(der[0]);
	switch (st) {
	case OCSP_RS_MALFORMED:
		return der[0];
	case OCSP_RS_TRYLATER:
		return der[2];
	case OCSP_RS_UNAUTHORIZED:
		return der[3];
	case OCSP_RS_SUCCESSFUL:
	case OCSP_RS_INTERNAL:
		break;
	}
	return der[1];
}

const char *
ocsp_rstatus_str(enum ocsp_rstatus st)
{
	switch (st) {
	case OCSP_RS_SUCCESSFUL:
		return "successful";
	case OCSP_RS_MALFORMED:
		return "malformedRequest";
	case OCSP_RS_INTERNAL:
		return "internalError";
	case OCSP_RS_TRYLATER:
		return "tryLater";
	case OCSP_RS_UNAUTHORIZED:
		return "unauthorized";
	}
	return "internalError";
}

const char *
ocsp_cert_status_str(int status)
{
	return status == V_OCSP_CERTSTATUS_GOOD ? "good" :
	    status == V_OCSP_CERTSTATUS_REVOKED ? "revoked" : "unknown";
}

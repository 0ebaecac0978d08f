/* ocsp_sign.c - OCSP responses written straight in DER and signed, what a responder's responses share encoded once */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/params.h>
#include <openssl/x509.h>

#include "ocsp_int.h"
#include "util.h"

/*
 * RFC 6960 section 4.2.1 (EXPLICIT tags), the fields in the order
 * written:
 *
 * OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED,
 *     responseBytes [0] SEQUENCE { id-pkix-ocsp-basic, OCTET STRING {
 * BasicOCSPResponse ::= SEQUENCE { tbsResponseData, signatureAlgorithm,
 *     signature BIT STRING, certs [0] SEQUENCE OF Certificate }
 * ResponseData ::= SEQUENCE { responderID [2] KeyHash, producedAt,
 *     responses SEQUENCE OF SingleResponse, [1] Extensions }
 * SingleResponse ::= SEQUENCE { certID, certStatus (good [0] IMPLICIT
 *     NULL, revoked [1] IMPLICIT { revocationTime, [0] CRLReason },
 *     unknown [2] IMPLICIT NULL), thisUpdate, nextUpdate [0] }
 *
 * OpenSSL's OCSP structures take as long to build and encode as a P-256
 * signature takes to make; this takes a small part of it. Every field a
 * client reads is checked by OpenSSL's and python3-cryptography's parsers
 * in the tests (tests/test_ocsp.c, tests/integration/it_ocsp.sh).
 */

#define GT_LEN		17	/* 0x18 0x0f YYYYMMDDHHMMSSZ */

static const unsigned char basic_oid[] = {
	0x06, 0x09, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01,
};

/* Bytes of a tag and a DER length. */
static size_t
hdr_len(size_t len)
{
	size_t n = 2;

	if (len < 0x80)
		return n;
	for (; len > 0; len >>= 8)
		n++;		/* one byte of the length each, after 0x8N */
	return n;
}

static unsigned char *
put_hdr(unsigned char *p, unsigned char tag, size_t len)
{
	size_t n = hdr_len(len) - 2, i;

	*p++ = tag;
	if (n == 0) {
		*p++ = (unsigned char)len;
		return p;
	}
	*p++ = (unsigned char)(0x80 | n);
	for (i = n; i-- > 0;)
		*p++ = (unsigned char)(len >> (8 * i));
	return p;
}

static unsigned char *
put(unsigned char *p, const void *b, size_t n)
{
	memcpy(p, b, n);
	return p + n;
}

/* A GeneralizedTime; -1 for a time without a four-digit year. */
static int
put_time(unsigned char *p, int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;
	char s[32];

	if (gmtime_r(&tt, &tm) == NULL || tm.tm_year + 1900 < 0 ||
	    tm.tm_year + 1900 > 9999 ||
	    snprintf(s, sizeof(s), "%04d%02d%02d%02d%02d%02dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec) != GT_LEN - 2)
		return -1;
	p[0] = 0x18;
	p[1] = GT_LEN - 2;
	memcpy(p + 2, s, GT_LEN - 2);
	return 0;
}

/* A fresh context that signs with r's key. NULL on failure. */
static EVP_MD_CTX *
sign_ctx(const struct ocsp_responder *r)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (c == NULL)
		return NULL;
	if (r->tmpl != NULL ? EVP_MD_CTX_copy_ex(c, r->tmpl) != 1 :
	    EVP_DigestSignInit(c, NULL, r->md, NULL, r->key) != 1) {
		EVP_MD_CTX_free(c);
		return NULL;
	}
	return c;
}

/* Signs tbs into a malloc'ed *sig. 0 or -1. */
static int
sign_bytes(const struct ocsp_responder *r, const unsigned char *tbs,
    size_t tbslen, unsigned char **sig, size_t *siglen)
{
	EVP_MD_CTX *c;
	int max = EVP_PKEY_get_size(r->key), rc = -1;

	*sig = NULL;
	if (max <= 0 || (c = sign_ctx(r)) == NULL)
		return -1;
	*siglen = (size_t)max;
	if ((*sig = malloc(*siglen)) != NULL &&
	    EVP_DigestSign(c, *sig, siglen, tbs, tbslen) == 1)
		rc = 0;
	EVP_MD_CTX_free(c);
	if (rc == -1) {
		free(*sig);
		*sig = NULL;
	}
	return rc;
}

/* The AlgorithmIdentifier c signs with, from its provider. 0 or -1. */
static int
prepare_sigalg(struct ocsp_responder *r, EVP_MD_CTX *c)
{
	unsigned char aid[256];
	OSSL_PARAM p[2];
	EVP_PKEY_CTX *pc = EVP_MD_CTX_get_pkey_ctx(c);

	p[0] = OSSL_PARAM_construct_octet_string(OSSL_SIGNATURE_PARAM_ALGORITHM_ID,
	    aid, sizeof(aid));
	p[1] = OSSL_PARAM_construct_end();
	if (pc == NULL || EVP_PKEY_CTX_get_params(pc, p) != 1 ||
	    !OSSL_PARAM_modified(&p[0]) || p[0].return_size == 0 ||
	    p[0].return_size > sizeof(aid) ||
	    (r->sigalg = malloc(p[0].return_size)) == NULL)
		return -1;
	memcpy(r->sigalg, aid, p[0].return_size);
	r->sigalg_len = p[0].return_size;
	return 0;
}

/* certs [0] EXPLICIT SEQUENCE OF Certificate, holding r->cert. 0 or -1. */
static int
prepare_certs(struct ocsp_responder *r)
{
	unsigned char *p;
	int n;

	if (r->self)
		return 0;	/* the client has the CA's certificate */
	if ((n = i2d_X509(r->cert, NULL)) <= 0)
		return -1;
	r->certs_len = hdr_len(hdr_len((size_t)n) + (size_t)n) +
	    hdr_len((size_t)n) + (size_t)n;
	if ((r->certs = malloc(r->certs_len)) == NULL)
		return -1;
	p = put_hdr(r->certs, 0xa0, hdr_len((size_t)n) + (size_t)n);
	p = put_hdr(p, 0x30, (size_t)n);
	return i2d_X509(r->cert, &p) == n ? 0 : -1;
}

/*
 * The signing context kept for copying, when the key's context can be
 * copied and a signature made through a copy verifies with the
 * certificate's key (else each signature initialises its own).
 */
static void
prepare_tmpl(struct ocsp_responder *r, EVP_MD_CTX *c)
{
	static const unsigned char probe[] = "revcheck ocsp probe";
	unsigned char *sig = NULL;
	EVP_MD_CTX *v = NULL;
	size_t siglen = 0;

	r->tmpl = c;
	if (sign_bytes(r, probe, sizeof(probe), &sig, &siglen) == -1 ||
	    (v = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestVerifyInit(v, NULL, r->md, NULL,
	    X509_get0_pubkey(r->cert)) != 1 ||
	    EVP_DigestVerify(v, sig, siglen, probe, sizeof(probe)) != 1) {
		r->tmpl = NULL;
		EVP_MD_CTX_free(c);
	}
	EVP_MD_CTX_free(v);
	free(sig);
	ERR_clear_error();
}

int
ocsp_sign_prepare(struct ocsp_responder *r, char *err, size_t errlen)
{
	unsigned char h[EVP_MAX_MD_SIZE];
	unsigned hl = 0;
	EVP_MD_CTX *c;

	/* responderID byKey: SHA-1 of the signer's public key (RFC 6960). */
	if (X509_pubkey_digest(r->cert, EVP_sha1(), h, &hl) != 1 || hl != 20)
		goto fail;
	memcpy(r->respid, "\xa2\x16\x04\x14", 4);
	memcpy(r->respid + 4, h, 20);
	if ((c = EVP_MD_CTX_new()) == NULL)
		goto fail;
	if (EVP_DigestSignInit(c, NULL, r->md, NULL, r->key) != 1 ||
	    prepare_sigalg(r, c) == -1) {
		EVP_MD_CTX_free(c);
		goto fail;
	}
	if (prepare_certs(r) == -1)
		goto fail_c;
	prepare_tmpl(r, c);
	return 0;
fail_c:
	EVP_MD_CTX_free(c);
fail:
	ERR_clear_error();
	ocsp_sign_release(r);
	snprintf(err, errlen, "key: cannot prepare signing with it");
	return -1;
}

void
ocsp_sign_release(struct ocsp_responder *r)
{
	free(r->sigalg);
	free(r->certs);
	EVP_MD_CTX_free(r->tmpl);
	r->sigalg = r->certs = NULL;
	r->sigalg_len = r->certs_len = 0;
	r->tmpl = NULL;
}

/* The certStatus of a into st (at most 24 bytes). Its length, or 0. */
static size_t
cert_status(const struct ocsp_answer *a, unsigned char *st)
{
	bool reason = a->reason >= 0 && a->reason <= 10 && a->reason != 7;

	if (a->status == V_OCSP_CERTSTATUS_GOOD ||
	    a->status == V_OCSP_CERTSTATUS_UNKNOWN) {
		st[0] = a->status == V_OCSP_CERTSTATUS_GOOD ? 0x80 : 0x82;
		st[1] = 0x00;
		return 2;
	}
	st[0] = 0xa1;
	st[1] = (unsigned char)(GT_LEN + (reason ? 5 : 0));
	if (put_time(st + 2, a->revoked_at) == -1)
		return 0;
	if (reason)
		memcpy(st + 2 + GT_LEN, (const unsigned char[]){ 0xa0, 0x03,
		    0x0a, 0x01, (unsigned char)a->reason }, 5);
	return 2 + GT_LEN + (reason ? 5 : 0);
}

/* The parts of a request a response repeats, DER (OpenSSL allocates). */
struct req_der {
	unsigned char	*cid;
	size_t		 cidn;
	unsigned char	*ext;		/* the nonce extension, or NULL */
	size_t		 extn;
};

static int
req_der(const struct ocsp_req *q, struct req_der *d)
{
	X509_EXTENSION *x;
	int n, idx;

	memset(d, 0, sizeof(*d));
	if ((n = i2d_OCSP_CERTID(q->id, &d->cid)) <= 0)
		return -1;
	d->cidn = (size_t)n;
	if (!q->has_nonce)
		return 0;
	idx = OCSP_REQUEST_get_ext_by_NID(q->req, NID_id_pkix_OCSP_Nonce, -1);
	if (idx < 0 || (x = OCSP_REQUEST_get_ext(q->req, idx)) == NULL ||
	    (n = i2d_X509_EXTENSION(x, &d->ext)) <= 0)
		return -1;
	d->extn = (size_t)n;
	return 0;
}

/* ResponseData for q saying a, into a malloc'ed *tbs. 0 or -1. */
static int
write_tbs(const struct ocsp_responder *r, const struct req_der *d,
    const struct ocsp_answer *a, unsigned char **tbs, size_t *len)
{
	unsigned char st[32], *p;
	size_t stn, single, resps, exts = 0, body;

	if ((stn = cert_status(a, st)) == 0)
		return -1;
	single = d->cidn + stn + GT_LEN + (a->next_update != 0 ?
	    2 + GT_LEN : 0);
	resps = hdr_len(single) + single;
	if (d->ext != NULL)
		exts = hdr_len(hdr_len(d->extn) + d->extn) +
		    hdr_len(d->extn) + d->extn;
	body = sizeof(r->respid) + GT_LEN + hdr_len(resps) + resps + exts;
	*len = hdr_len(body) + body;
	if ((p = *tbs = malloc(*len)) == NULL)
		return -1;
	p = put_hdr(p, 0x30, body);
	p = put(p, r->respid, sizeof(r->respid));
	if (put_time(p, util_now()) == -1)
		goto fail;
	p = put_hdr(p + GT_LEN, 0x30, resps);
	p = put_hdr(p, 0x30, single);
	p = put(p, d->cid, d->cidn);
	p = put(p, st, stn);
	if (put_time(p, a->this_update) == -1)
		goto fail;
	p += GT_LEN;
	if (a->next_update != 0) {
		p = put_hdr(p, 0xa0, GT_LEN);
		if (put_time(p, a->next_update) == -1)
			goto fail;
		p += GT_LEN;
	}
	if (d->ext != NULL) {
		p = put_hdr(p, 0xa1, hdr_len(d->extn) + d->extn);
		p = put_hdr(p, 0x30, d->extn);
		p = put(p, d->ext, d->extn);
	}
	return 0;
fail:
	free(*tbs);
	*tbs = NULL;
	return -1;
}

/* The OCSPResponse around tbs and its signature. 0 or -1. */
static int
write_response(const struct ocsp_responder *r, const unsigned char *tbs,
    size_t tbslen, const unsigned char *sig, size_t siglen,
    unsigned char **der, size_t *len)
{
	size_t bits = 1 + siglen, basic, octet, rb, outer;
	unsigned char *p;

	basic = tbslen + r->sigalg_len + hdr_len(bits) + bits + r->certs_len;
	octet = hdr_len(basic) + basic;
	rb = sizeof(basic_oid) + hdr_len(octet) + octet;
	outer = 3 + hdr_len(hdr_len(rb) + rb) + hdr_len(rb) + rb;
	*len = hdr_len(outer) + outer;
	if ((p = *der = malloc(*len)) == NULL)
		return -1;
	p = put_hdr(p, 0x30, outer);
	p = put(p, "\x0a\x01\x00", 3);		/* successful */
	p = put_hdr(p, 0xa0, hdr_len(rb) + rb);
	p = put_hdr(p, 0x30, rb);
	p = put(p, basic_oid, sizeof(basic_oid));
	p = put_hdr(p, 0x04, octet);
	p = put_hdr(p, 0x30, basic);
	p = put(p, tbs, tbslen);
	p = put(p, r->sigalg, r->sigalg_len);
	p = put_hdr(p, 0x03, bits);
	*p++ = 0x00;				/* no unused bits */
	p = put(p, sig, siglen);
	if (r->certs_len > 0)
		put(p, r->certs, r->certs_len);
	return 0;
}

int
ocsp_sign(const struct ocsp_responder *r, const struct ocsp_req *q,
    const struct ocsp_answer *a, unsigned char **der, size_t *len,
    char *err, size_t errlen)
{
	unsigned char *tbs = NULL, *sig = NULL;
	size_t tbslen = 0, siglen = 0;
	struct req_der d;
	int rc = -1;

	*der = NULL;
	*len = 0;
	if (req_der(q, &d) == -1 ||
	    write_tbs(r, &d, a, &tbs, &tbslen) == -1) {
		snprintf(err, errlen, "cannot build the response");
		goto out;
	}
	if (sign_bytes(r, tbs, tbslen, &sig, &siglen) == -1) {
		snprintf(err, errlen, "signing failed");
		goto out;
	}
	if (write_response(r, tbs, tbslen, sig, siglen, der, len) == -1) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	ERR_clear_error();
	OPENSSL_free(d.cid);
	OPENSSL_free(d.ext);
	free(tbs);
	free(sig);
	return rc;
}

/* authzcred.c - /v1/authz credentials from a gateway's headers, and the identity headers of an allow */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "authzcred.h"
#include "checkio.h"
#include "util.h"
#include "xfcc.h"

int
authzcred_escape(char *out, const char *in, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)in;
	size_t i, o = 0;

	out[0] = '\0';
	if (len > AUTHZCRED_ID_MAX)
		return -1;
	for (i = 0; i < len; i++) {
		if (p[i] > 0x20 && p[i] < 0x7f && p[i] != '%') {
			out[o++] = (char)p[i];
			continue;
		}
		out[o++] = '%';
		out[o++] = hex[p[i] >> 4];
		out[o++] = hex[p[i] & 15];
	}
	out[o] = '\0';
	return 0;
}

/*
 * The subject of x as RFC 4514 text (UTF-8, special characters
 * backslash-escaped by OpenSSL), escaped into subj[AUTHZCRED_ID_BUF];
 * "" when it cannot be printed or is too long.
 */
static void
x509_subject(X509 *x, char *subj)
{
	BIO *b;
	char *p;
	long n;

	subj[0] = '\0';
	if ((b = BIO_new(BIO_s_mem())) == NULL)
		return;
	if (X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
	    XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0 &&
	    (n = BIO_get_mem_data(b, &p)) > 0)
		(void)authzcred_escape(subj, p, (size_t)n);
	BIO_free(b);
}

/* The subject of the first PEM certificate of text[0..len). */
static void
pem_subject(const char *text, size_t len, char *subj)
{
	BIO *b;
	X509 *x;

	subj[0] = '\0';
	if (len > INT32_MAX ||
	    (b = BIO_new_mem_buf(text, (int)len)) == NULL)
		return;
	if ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		x509_subject(x, subj);
		X509_free(x);
	}
	BIO_free(b);
}

/* The subject of DER certificate der[0..len). */
static void
der_subject(const unsigned char *der, size_t len, char *subj)
{
	const unsigned char *p = der;
	X509 *x;

	subj[0] = '\0';
	if (len > INT32_MAX || (x = d2i_X509(NULL, &p, (long)len)) == NULL)
		return;
	x509_subject(x, subj);
	X509_free(x);
}

/* Bare base64 of each DER, comma-separated (Traefik): every one parsed. */
static int
b64_der_keys(const char *buf, size_t len, struct revkey *keys, size_t max,
    size_t *n, char *subj, char *err, size_t errlen)
{
	char *b64 = NULL, e[200];
	unsigned char *der = NULL;
	size_t i, nb, pos = 0, first = *n;
	int dl, rc = -1;

	if ((b64 = malloc(len + 1)) == NULL || (der = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i <= len; i++) {
		if (i < len && buf[i] != ',') {
			if (buf[i] != ' ' && buf[i] != '\t' &&
			    buf[i] != '\r' && buf[i] != '\n')
				b64[pos++] = buf[i];
			continue;
		}
		nb = pos;
		pos = 0;
		if (nb == 0 || nb % 4 != 0 || nb > INT32_MAX) {
			snprintf(err, errlen, "certificate header is neither "
			    "PEM nor base64 DER");
			goto out;
		}
		dl = EVP_DecodeBlock(der, (unsigned char *)b64, (int)nb);
		if (dl < 0) {
			snprintf(err, errlen, "certificate header: bad base64");
			goto out;
		}
		if (b64[nb - 1] == '=')
			dl--;
		if (b64[nb - 2] == '=')
			dl--;
		if (*n >= max) {
			snprintf(err, errlen, "certificate header: more than "
			    "%zu certificates", max);
			goto out;
		}
		if (revkey_from_cert_bytes(&keys[*n], der, (size_t)dl, e,
		    sizeof(e)) == -1) {
			snprintf(err, errlen, "certificate header: %s", e);
			goto out;
		}
		if (*n == first && subj != NULL)
			der_subject(der, (size_t)dl, subj);
		(*n)++;
	}
	rc = 0;
out:
	free(b64);
	free(der);
	return rc;
}

/* The keys of PEM text[0..len), which must be armoured. */
static int
pem_keys(const char *what, const char *text, size_t len, struct revkey *keys,
    size_t max, size_t *n, char *err, size_t errlen)
{
	char e[200];

	if (memmem(text, len, "-----BEGIN", 10) == NULL) {
		snprintf(err, errlen, "%s: not PEM", what);
		return -1;
	}
	if (checkio_keys_from_pem(text, len, keys, max, n, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "%s: %s", what, e);
		return -1;
	}
	return 0;
}

/*
 * XFCC: the Cert and Chain of every element, in header order (the worst
 * verdict wins, so an earlier hop's revoked certificate refuses too);
 * the last element, the immediate client, must carry a Cert.
 */
static int
xfcc_keys(const char *v, size_t len, struct revkey *keys, size_t max,
    size_t *n, char *subj, char *err, size_t errlen)
{
	const struct xfcc_value *cv;
	struct xfcc x;
	char e[200];
	size_t i;
	int rc = -1;

	if (xfcc_parse(&x, v, len, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "x-forwarded-client-cert: %s", e);
		return -1;
	}
	if (x.elem[x.n - 1].v[XFCC_CERT].s == NULL) {
		snprintf(err, errlen, "x-forwarded-client-cert: no Cert in its "
		    "last element (the immediate client)");
		goto out;
	}
	for (i = 0; i < x.n; i++) {
		cv = &x.elem[i].v[XFCC_CERT];
		if (cv->s != NULL && pem_keys("x-forwarded-client-cert Cert",
		    cv->s, cv->len, keys, max, n, err, errlen) == -1)
			goto out;
		cv = &x.elem[i].v[XFCC_CHAIN];
		if (cv->s != NULL && pem_keys("x-forwarded-client-cert Chain",
		    cv->s, cv->len, keys, max, n, err, errlen) == -1)
			goto out;
	}
	cv = &x.elem[x.n - 1].v[XFCC_CERT];
	if (subj != NULL)
		pem_subject(cv->s, cv->len, subj);
	rc = 0;
out:
	xfcc_free(&x);
	return rc;
}

int
authzcred_cert_keys(const char *v, bool xfcc, struct revkey *keys,
    size_t max, size_t *n, char *subj, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = strlen(v), first = *n;
	int rc = -1;

	if (subj != NULL)
		subj[0] = '\0';
	if (len == 0 || len > AUTHZCRED_CERT_MAX) {
		snprintf(err, errlen, "certificate header empty or too long");
		return -1;
	}
	if (xfcc)
		return xfcc_keys(v, len, keys, max, n, subj, err, errlen);
	if ((buf = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(buf, v, len + 1);
	if (util_pct_decode(buf, &len) == -1) {
		snprintf(err, errlen, "bad percent-encoding in the "
		    "certificate header");
		goto out;
	}
	if (memmem(buf, len, "-----BEGIN", 10) != NULL) {
		if (pem_keys("certificate header", buf, len, keys, max, n, err,
		    errlen) == -1)
			goto out;
		if (subj != NULL && *n > first)
			pem_subject(buf, len, subj);
		rc = 0;
		goto out;
	}
	rc = b64_der_keys(buf, len, keys, max, n, subj, err, errlen);
out:
	free(buf);
	return rc;
}

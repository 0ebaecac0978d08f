/* revkey.c - the key model: every revocation entry is a pair (scope, id) */
#include "revkey.h"

#include <stdio.h>
#include <limits.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "util.h"

#define REVKEY_CERT_MAX (64 * 1024)

bool
revkey_scope_is_x509(const char *scope)
{
	return strncmp(scope, REVKEY_X509_PREFIX,
	    sizeof(REVKEY_X509_PREFIX) - 1) == 0;
}

bool
revkey_scope_is_cutoff(const char *scope)
{
	return strncmp(scope, REVKEY_SUB_PREFIX,
	    sizeof(REVKEY_SUB_PREFIX) - 1) == 0 ||
	    strncmp(scope, REVKEY_SID_PREFIX,
	    sizeof(REVKEY_SID_PREFIX) - 1) == 0;
}

int
revkey_cutoff(struct revkey *k, const char *prefix, const char *issuer,
    const char *value, size_t len)
{
	char scope[REVKEY_SCOPE_MAX + 1];
	int n;

	n = snprintf(scope, sizeof(scope), "%s%s", prefix, issuer);
	if (n < 0 || (size_t)n >= sizeof(scope))
		return -1;
	return revkey_set(k, scope, value, len);
}

bool
revkey_scope_valid(const char *scope, size_t len)
{
	size_t i, plen = sizeof(REVKEY_X509_PREFIX) - 1;

	if (len == 0 || len > REVKEY_SCOPE_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (scope[i] <= 0x20 || scope[i] >= 0x7f)
			return false;
	if (len >= plen && memcmp(scope, REVKEY_X509_PREFIX, plen) == 0) {
		if (len != REVKEY_X509_SCOPE_LEN)
			return false;
		for (i = plen; i < len; i++)
			if (!((scope[i] >= '0' && scope[i] <= '9') ||
			    (scope[i] >= 'a' && scope[i] <= 'f')))
				return false;
	}
	return true;
}

int
revkey_set(struct revkey *k, const char *scope, const void *id,
    size_t id_len)
{
	size_t slen = strnlen(scope, REVKEY_SCOPE_MAX + 1);

	if (!revkey_scope_valid(scope, slen) || id_len == 0 ||
	    id_len > REVKEY_ID_MAX)
		return -1;
	memcpy(k->scope, scope, slen);
	k->scope[slen] = '\0';
	k->scope_len = slen;
	memcpy(k->id, id, id_len);
	k->id_len = id_len;
	return 0;
}

/* Strips leading zero bytes of a serial, keeping at least one byte. */
static size_t
serial_canon(unsigned char *b, size_t len)
{
	size_t z = 0;

	while (z + 1 < len && b[z] == 0)
		z++;
	if (z > 0)
		memmove(b, b + z, len - z);
	return len - z;
}

int
revkey_from_text(struct revkey *k, const char *scope, const char *id,
    size_t id_len, char *err, size_t errlen)
{
	unsigned char buf[REVKEY_ID_MAX];
	size_t slen = strnlen(scope, REVKEY_SCOPE_MAX + 1);
	long n;

	if (!revkey_scope_valid(scope, slen)) {
		snprintf(err, errlen, "invalid scope (1-%d printable "
		    "characters, or x509: and 64 hex digits)", REVKEY_SCOPE_MAX);
		return -1;
	}
	if (id_len == 0) {
		snprintf(err, errlen, "empty id");
		return -1;
	}
	if (!revkey_scope_is_x509(scope)) {
		if (id_len > REVKEY_ID_MAX) {
			snprintf(err, errlen, "id is %zu bytes, over the limit "
			    "of %d", id_len, REVKEY_ID_MAX);
			return -1;
		}
		return revkey_set(k, scope, id, id_len);
	}
	if (id_len > 2 && id[0] == '0' && (id[1] == 'x' || id[1] == 'X')) {
		id += 2;
		id_len -= 2;
	}
	n = util_unhex(buf, sizeof(buf), id, id_len, true);
	if (n <= 0) {
		snprintf(err, errlen, "serial is not hex (digits 0-9a-f, "
		    "optional ':' between bytes, at most %d bytes)",
		    REVKEY_ID_MAX);
		return -1;
	}
	n = (long)serial_canon(buf, (size_t)n);
	return revkey_set(k, scope, buf, (size_t)n);
}

int
revkey_x509_scope(char out[REVKEY_X509_SCOPE_LEN + 1],
    const X509_NAME *issuer)
{
	const unsigned char *der = NULL;
	unsigned char md[UTIL_SHA256_LEN];
	size_t derlen = 0;

	if (issuer == NULL || X509_NAME_get0_der((X509_NAME *)(uintptr_t)issuer,
	    &der, &derlen) != 1 || util_sha256(md, der, derlen) != 0)
		return -1;
	memcpy(out, REVKEY_X509_PREFIX, sizeof(REVKEY_X509_PREFIX) - 1);
	util_hex(out + sizeof(REVKEY_X509_PREFIX) - 1, md, sizeof(md));
	return 0;
}

int
revkey_from_issuer_serial(struct revkey *k, const X509_NAME *issuer,
    const ASN1_INTEGER *serial, char *err, size_t errlen)
{
	char scope[REVKEY_X509_SCOPE_LEN + 1];
	unsigned char buf[REVKEY_ID_MAX];
	BIGNUM *bn;
	int n;

	if (revkey_x509_scope(scope, issuer) != 0) {
		snprintf(err, errlen, "cannot encode the issuer name");
		return -1;
	}
	if (serial == NULL || (bn = ASN1_INTEGER_to_BN(serial, NULL)) == NULL) {
		snprintf(err, errlen, "missing or invalid serial number");
		return -1;
	}
	/* The magnitude, big-endian, no leading zeros; zero is one 0x00. */
	if (BN_num_bytes(bn) > REVKEY_ID_MAX) {
		BN_free(bn);
		snprintf(err, errlen, "serial number longer than %d bytes",
		    REVKEY_ID_MAX);
		return -1;
	}
	n = BN_bn2bin(bn, buf);
	BN_free(bn);
	if (n == 0) {
		buf[0] = 0;
		n = 1;
	}
	return revkey_set(k, scope, buf, (size_t)n);
}

int
revkey_from_cert(struct revkey *k, const X509 *cert, char *err, size_t errlen)
{
	return revkey_from_issuer_serial(k, X509_get_issuer_name(cert),
	    X509_get0_serialNumber(cert), err, errlen);
}

int
revkey_from_crl_entry(struct revkey *k, const X509_CRL *crl,
    const X509_REVOKED *entry, char *err, size_t errlen)
{
	/* Indirect CRLs (certificate issuer entry extensions) are not supported. */
	return revkey_from_issuer_serial(k, X509_CRL_get_issuer(crl),
	    X509_REVOKED_get0_serialNumber(entry), err, errlen);
}

int
revkey_from_cert_bytes(struct revkey *k, const void *buf, size_t len,
    char *err, size_t errlen)
{
	const unsigned char *p = buf;
	X509 *cert = NULL;
	BIO *bio;
	int rc;

	if (len == 0 || len > REVKEY_CERT_MAX || len > INT_MAX) {
		snprintf(err, errlen, "certificate must be 1 to %d bytes",
		    REVKEY_CERT_MAX);
		return -1;
	}
	if (memmem(buf, len, "-----BEGIN", 10) != NULL) {
		if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
		BIO_free(bio);
	} else {
		cert = d2i_X509(NULL, &p, (long)len);
		if (cert != NULL && p != (const unsigned char *)buf + len) {
			X509_free(cert);
			cert = NULL;
		}
	}
	ERR_clear_error();
	if (cert == NULL) {
		snprintf(err, errlen, "not a PEM or DER X.509 certificate");
		return -1;
	}
	rc = revkey_from_cert(k, cert, err, errlen);
	X509_free(cert);
	return rc;
}

size_t
revkey_encode(const struct revkey *k, unsigned char *out)
{
	memcpy(out, k->scope, k->scope_len);
	out[k->scope_len] = 0;
	memcpy(out + k->scope_len + 1, k->id, k->id_len);
	return k->scope_len + 1 + k->id_len;
}

size_t
revkey_id_text(const struct revkey *k, char *out)
{
	if (revkey_scope_is_x509(k->scope)) {
		util_hex(out, k->id, k->id_len);
		return 2 * k->id_len;
	}
	memcpy(out, k->id, k->id_len);
	out[k->id_len] = '\0';
	return k->id_len;
}

int
revkey_cmp(const struct revkey *a, const struct revkey *b)
{
	size_t n;
	int c;

	/* Same order as comparing the encoded bytes scope || 0 || id. */
	c = strcmp(a->scope, b->scope);
	if (c != 0)
		return c;
	n = a->id_len < b->id_len ? a->id_len : b->id_len;
	c = memcmp(a->id, b->id, n);
	if (c != 0)
		return c;
	return (a->id_len > b->id_len) - (a->id_len < b->id_len);
}

/* revkey.c - the key model: every revocation entry is a pair (scope, id) */
#include "revkey.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

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

/* A bare key of scope (slen bytes, valid) and no id yet. */
static void
key_bare(struct revkey *k, const char *scope, size_t slen)
{
	memcpy(k->scope, scope, slen);
	k->scope[slen] = '\0';
	k->scope_len = slen;
	k->cert = 0;
	k->ndp = 0;
	k->nci = 0;
	k->has_issued = false;
	k->issued_at = 0;
}

int
revkey_set(struct revkey *k, const char *scope, const void *id,
    size_t id_len)
{
	size_t slen = strnlen(scope, REVKEY_SCOPE_MAX + 1);

	if (!revkey_scope_valid(scope, slen) || id_len == 0 ||
	    id_len > REVKEY_ID_MAX)
		return -1;
	key_bare(k, scope, slen);
	return revkey_set_id(k, id, id_len);
}

int
revkey_set_like(struct revkey *k, const struct revkey *like,
    const void *id, size_t id_len)
{
	assert(k != like);
	if (id_len == 0 || id_len > REVKEY_ID_MAX)
		return -1;
	key_bare(k, like->scope, like->scope_len);
	return revkey_set_id(k, id, id_len);
}

int
revkey_set_id(struct revkey *k, const void *id, size_t id_len)
{
	if (id_len == 0 || id_len > REVKEY_ID_MAX)
		return -1;
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
	unsigned char buf[1 + REVKEY_ID_MAX];	/* sign byte, magnitude */
	size_t slen = strnlen(scope, REVKEY_SCOPE_MAX + 1);
	bool neg = false;
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
	/* "-" for a negative serial: 0x00 before its magnitude. */
	if (id_len > 1 && id[0] == '-') {
		neg = true;
		id++;
		id_len--;
	}
	if (id_len > 2 && id[0] == '0' && (id[1] == 'x' || id[1] == 'X')) {
		id += 2;
		id_len -= 2;
	}
	/*
	 * As many bytes as revkey_from_issuer_serial takes from a
	 * certificate or a CRL entry, so that every key's text reads back.
	 */
	n = util_unhex(buf + 1, sizeof(buf) - 1, id, id_len, true);
	if (n <= 0) {
		snprintf(err, errlen, "serial is not hex (digits 0-9a-f, "
		    "optional ':' between bytes, a '-' before a negative one, "
		    "at most %d bytes)", REVKEY_ID_MAX);
		return -1;
	}
	n = (long)serial_canon(buf + 1, (size_t)n);
	if (neg && !(n == 1 && buf[1] == 0)) {
		if (n > REVKEY_ID_MAX - 1) {
			snprintf(err, errlen, "a negative serial is at most %d "
			    "bytes", REVKEY_ID_MAX - 1);
			return -1;
		}
		buf[0] = 0;
		return revkey_set(k, scope, buf, (size_t)n + 1);
	}
	return revkey_set(k, scope, buf + 1, (size_t)n);
}

/*
 * Canonical Name encoding (RFC 5280 section 7.1 comparison), byte for
 * byte what OpenSSL computes as a Name's canonical encoding (x_name.c,
 * x509_name_canon): each attribute value of a string type (UTF8String,
 * BMPString, UniversalString, PrintableString, T61String, IA5String,
 * VisibleString) is converted to UTF-8, leading and trailing white space
 * removed, inner runs of white space collapsed into one space, ASCII
 * upper case folded to lower case, and encoded as a UTF8String; other
 * values keep their bytes and type. Each RDN is DER-encoded as a SET OF
 * its AttributeTypeAndValue (sorted, as DER wants), and the encoding is
 * the concatenation of these SETs without the outer SEQUENCE. An empty
 * Name has an empty encoding.
 */
#define CANON_MASK (B_ASN1_UTF8STRING | B_ASN1_BMPSTRING | \
	B_ASN1_UNIVERSALSTRING | B_ASN1_PRINTABLESTRING | B_ASN1_T61STRING | \
	B_ASN1_IA5STRING | B_ASN1_VISIBLESTRING)
#define CANON_MAX	(64 * 1024)	/* an encoding this long is refused */

/* A growing byte buffer with a cap; a failed append poisons it. */
struct cbuf {
	unsigned char	*p;
	size_t		 len, cap;
	bool		 bad;
};

static void
cbuf_add(struct cbuf *b, const void *d, size_t n)
{
	unsigned char *np;
	size_t ncap;

	if (b->bad)
		return;
	if (n > CANON_MAX - b->len) {
		b->bad = true;
		return;
	}
	if (b->len + n > b->cap) {
		ncap = b->cap == 0 ? 256 : b->cap;
		while (ncap < b->len + n)
			ncap *= 2;
		if ((np = realloc(b->p, ncap)) == NULL) {
			b->bad = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

/* Appends a DER tag and length for n content bytes. */
static void
cbuf_hdr(struct cbuf *b, unsigned char tag, size_t n)
{
	unsigned char h[6];
	size_t i = 0;

	h[i++] = tag;
	if (n < 0x80) {
		h[i++] = (unsigned char)n;
	} else if (n <= 0xff) {
		h[i++] = 0x81;
		h[i++] = (unsigned char)n;
	} else if (n <= 0xffff) {
		h[i++] = 0x82;
		h[i++] = (unsigned char)(n >> 8);
		h[i++] = (unsigned char)n;
	} else {
		h[i++] = 0x83;
		h[i++] = (unsigned char)(n >> 16);
		h[i++] = (unsigned char)(n >> 8);
		h[i++] = (unsigned char)n;
	}
	cbuf_add(b, h, i);
}

static bool
canon_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	    c == '\r';
}

/* The canonical AttributeTypeAndValue of one entry into b. */
static void
canon_entry(struct cbuf *b, const X509_NAME_ENTRY *ne)
{
	const ASN1_STRING *v = X509_NAME_ENTRY_get_data(ne);
	unsigned char *oid = NULL, *u = NULL, *from, *to;
	struct cbuf val = { NULL, 0, 0, false };
	int olen, ulen, type = ASN1_STRING_type(v);
	size_t len, i;

	olen = i2d_ASN1_OBJECT(X509_NAME_ENTRY_get_object(ne), &oid);
	if (olen <= 0 || type <= 0 || type > 30) {
		b->bad = true;
		goto out;
	}
	if ((ASN1_tag2bit(type) & CANON_MASK) == 0) {
		cbuf_hdr(&val, (unsigned char)type,
		    (size_t)ASN1_STRING_length(v));
		cbuf_add(&val, ASN1_STRING_get0_data(v),
		    (size_t)ASN1_STRING_length(v));
	} else {
		if ((ulen = ASN1_STRING_to_UTF8(&u, v)) < 0) {
			b->bad = true;
			goto out;
		}
		from = u;
		len = (size_t)ulen;
		while (len > 0 && canon_space(*from)) {
			from++;
			len--;
		}
		while (len > 0 && canon_space(from[len - 1]))
			len--;
		/* In place: the output is never longer than the input. */
		to = u;
		for (i = 0; i < len; ) {
			if (from[i] >= 0x80) {
				*to++ = from[i++];
			} else if (canon_space(from[i])) {
				*to++ = ' ';
				while (i < len && canon_space(from[i]))
					i++;
			} else {
				*to++ = (unsigned char)(from[i] >= 'A' &&
				    from[i] <= 'Z' ? from[i] - 'A' + 'a' : from[i]);
				i++;
			}
		}
		cbuf_hdr(&val, V_ASN1_UTF8STRING, (size_t)(to - u));
		cbuf_add(&val, u, (size_t)(to - u));
	}
	if (val.bad) {
		b->bad = true;
		goto out;
	}
	cbuf_hdr(b, 0x30, (size_t)olen + val.len);
	cbuf_add(b, oid, (size_t)olen);
	cbuf_add(b, val.p, val.len);
out:
	OPENSSL_free(oid);
	OPENSSL_free(u);
	free(val.p);
}

/* One encoded AttributeTypeAndValue of an RDN being sorted. */
struct canon_el {
	size_t	off, len;
};

/* DER SET OF order: bytes, then the shorter first (qsort_r: reentrant). */
static int
canon_el_cmp(const void *a, const void *b, void *arg)
{
	const struct canon_el *x = a, *y = b;
	const unsigned char *base = arg;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(base + x->off, base + y->off, n);

	if (c != 0)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

int
revkey_name_canon(const X509_NAME *name, unsigned char **out, size_t *outlen)
{
	struct cbuf res = { NULL, 0, 0, false }, rdn = { NULL, 0, 0, false };
	struct canon_el els[64];
	const X509_NAME_ENTRY *ne;
	size_t nels = 0, total, i;
	int n, k, set = -1;

	n = X509_NAME_entry_count(name);
	for (k = 0; k <= n; k++) {
		ne = k < n ? X509_NAME_get_entry(name, k) : NULL;
		/* An RDN ends where the set number changes, or at the end. */
		if (nels > 0 && (ne == NULL || X509_NAME_ENTRY_set(ne) != set)) {
			qsort_r(els, nels, sizeof(els[0]), canon_el_cmp, rdn.p);
			for (i = 0, total = 0; i < nels; i++)
				total += els[i].len;
			cbuf_hdr(&res, 0x31, total);
			for (i = 0; i < nels && !rdn.bad; i++)
				cbuf_add(&res, rdn.p + els[i].off, els[i].len);
			rdn.len = 0;
			nels = 0;
		}
		if (ne == NULL)
			break;
		if (nels == sizeof(els) / sizeof(els[0])) {
			res.bad = true;
			break;
		}
		set = X509_NAME_ENTRY_set(ne);
		els[nels].off = rdn.len;
		canon_entry(&rdn, ne);
		els[nels].len = rdn.len - els[nels].off;
		nels++;
		if (rdn.bad)
			break;
	}
	free(rdn.p);
	if (res.bad || rdn.bad) {
		free(res.p);
		return -1;
	}
	*out = res.p;	/* NULL for an empty Name */
	*outlen = res.len;
	return 0;
}

int
revkey_x509_scope_hash(unsigned char out[32], const X509_NAME *issuer)
{
	unsigned char *canon = NULL;
	size_t len = 0;
	int rc;

	if (issuer == NULL || revkey_name_canon(issuer, &canon, &len) != 0)
		return -1;
	rc = util_sha256(out, canon != NULL ? canon : (const unsigned char *)"",
	    len);
	free(canon);
	return rc;
}

int
revkey_x509_scope(char out[REVKEY_X509_SCOPE_LEN + 1],
    const X509_NAME *issuer)
{
	unsigned char md[UTIL_SHA256_LEN];

	if (revkey_x509_scope_hash(md, issuer) != 0)
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
	bool neg;
	int n;

	if (revkey_x509_scope(scope, issuer) != 0) {
		snprintf(err, errlen, "cannot encode the issuer name");
		return -1;
	}
	if (serial == NULL || (bn = ASN1_INTEGER_to_BN(serial, NULL)) == NULL) {
		snprintf(err, errlen, "missing or invalid serial number");
		return -1;
	}
	/*
	 * The magnitude, big-endian, no leading zeros; zero is one 0x00; a
	 * negative serial keeps its sign as a leading 0x00 (RFC 5280 asks
	 * for positive serials, but CAs have issued negative ones: -1 must
	 * not be taken for 1).
	 */
	neg = BN_is_negative(bn) && !BN_is_zero(bn);
	if (BN_num_bytes(bn) > REVKEY_ID_MAX - (neg ? 1 : 0)) {
		BN_free(bn);
		snprintf(err, errlen, "serial number longer than %d bytes",
		    REVKEY_ID_MAX - (neg ? 1 : 0));
		return -1;
	}
	buf[0] = 0;
	n = BN_bn2bin(bn, buf + (neg ? 1 : 0)) + (neg ? 1 : 0);
	BN_free(bn);
	if (n == 0)
		n = 1;
	return revkey_set(k, scope, buf, (size_t)n);
}

int
revkey_dp_name_hash(const X509_NAME *name, unsigned char out[32])
{
	unsigned char *canon = NULL, *buf;
	size_t len = 0;
	int rc;

	if (revkey_name_canon(name, &canon, &len) != 0)
		return -1;
	if ((buf = malloc(len + 3)) == NULL) {
		free(canon);
		return -1;
	}
	memcpy(buf, "dn:", 3);
	if (len > 0)
		memcpy(buf + 3, canon, len);
	rc = util_sha256(out, buf, len + 3);
	free(buf);
	free(canon);
	return rc;
}

int
revkey_dp_hash(const GENERAL_NAME *gn, unsigned char out[32])
{
	unsigned char *der = NULL, *buf;
	int len, rc;

	if (gn->type == GEN_DIRNAME)
		return revkey_dp_name_hash(gn->d.directoryName, out);
	if ((len = i2d_GENERAL_NAME((GENERAL_NAME *)(uintptr_t)gn, &der)) <= 0)
		return -1;
	if ((buf = malloc((size_t)len + 3)) == NULL) {
		OPENSSL_free(der);
		return -1;
	}
	memcpy(buf, "gn:", 3);
	memcpy(buf + 3, der, (size_t)len);
	rc = util_sha256(out, buf, (size_t)len + 3);
	free(buf);
	OPENSSL_free(der);
	return rc;
}

/*
 * The reasons a distribution point's CRLs cover (RFC 5280 section
 * 4.2.1.13): its reasons field as ReasonFlags bits 1..8, every reason
 * without one.
 */
static uint16_t
cert_dp_reasons(const DIST_POINT *dp)
{
	uint16_t mask = 0;
	int b;

	if (dp->reasons == NULL)
		return REVKEY_REASONS_ALL;
	for (b = 1; b <= 8; b++)
		if (ASN1_BIT_STRING_get_bit(dp->reasons, b))
			mask |= (uint16_t)(1u << b);
	return mask;
}

/*
 * Adds one name's hash to k, tagged ci (0 or 1 + cRLIssuer index), with
 * the reasons of the distribution point it belongs to.
 */
static void
cert_dp_add(struct revkey *k, const GENERAL_NAME *gn, const X509_NAME *dn,
    uint8_t ci, uint16_t reasons)
{
	if (k->ndp >= REVKEY_DP_MAX)
		return;
	if ((dn != NULL ? revkey_dp_name_hash(dn, k->dp[k->ndp]) :
	    revkey_dp_hash(gn, k->dp[k->ndp])) != 0)
		return;
	k->dp_reasons[k->ndp] = reasons;
	k->dp_ci[k->ndp++] = ci;
}

/*
 * Adds the names of one distribution point of a certificate to k, tagged
 * ci: its full names, or its nameRelativeToCRLIssuer made a full name
 * under base (the CRL issuer: its cRLIssuer, else the certificate's
 * issuer, RFC 5280 section 4.2.1.13).
 */
static void
cert_dp_names(struct revkey *k, DIST_POINT *dp, const X509_NAME *base,
    uint8_t ci)
{
	GENERAL_NAMES *names;
	uint16_t reasons = cert_dp_reasons(dp);
	int i;

	if (dp->distpoint->type == 1) {
		if (DIST_POINT_set_dpname(dp->distpoint, base) == 1 &&
		    dp->distpoint->dpname != NULL)
			cert_dp_add(k, NULL, dp->distpoint->dpname, ci,
			    reasons);
		return;
	}
	names = dp->distpoint->name.fullname;
	for (i = 0; i < sk_GENERAL_NAME_num(names); i++)
		cert_dp_add(k, sk_GENERAL_NAME_value(names, i), NULL, ci,
		    reasons);
}

/*
 * A distribution point with a cRLIssuer: each directoryName of it is a
 * CRL issuer whose indirect CRL covers the certificate, with the point's
 * names (or, without them, the cRLIssuer names themselves) as what that
 * CRL's issuingDistributionPoint must name.
 */
static void
cert_dp_crl_issuer(struct revkey *k, DIST_POINT *dp)
{
	const GENERAL_NAME *gn;
	int i, j;

	for (i = 0; i < sk_GENERAL_NAME_num(dp->CRLissuer); i++) {
		gn = sk_GENERAL_NAME_value(dp->CRLissuer, i);
		if (gn->type != GEN_DIRNAME || k->nci >= REVKEY_CI_MAX ||
		    revkey_x509_scope_hash(k->ci[k->nci],
		    gn->d.directoryName) != 0)
			continue;
		k->nci++;
		if (dp->distpoint != NULL) {
			cert_dp_names(k, dp, gn->d.directoryName, k->nci);
			continue;
		}
		for (j = 0; j < sk_GENERAL_NAME_num(dp->CRLissuer); j++)
			cert_dp_add(k, sk_GENERAL_NAME_value(dp->CRLissuer, j),
			    NULL, k->nci, cert_dp_reasons(dp));
	}
}

int
revkey_cert_not_before(const X509 *cert, int64_t *out)
{
	struct tm tm;
	time_t v;

	if (ASN1_TIME_to_tm(X509_get0_notBefore(cert), &tm) != 1 ||
	    (v = timegm(&tm)) == (time_t)-1)
		return -1;
	*out = (int64_t)v;
	return 0;
}

int
revkey_from_cert(struct revkey *k, const X509 *cert, char *err, size_t errlen)
{
	CRL_DIST_POINTS *dps;
	X509 *c = (X509 *)(uintptr_t)cert;
	int i, crit = 0;

	if (revkey_from_issuer_serial(k, X509_get_issuer_name(cert),
	    X509_get0_serialNumber(cert), err, errlen) != 0)
		return -1;
	k->cert = REVKEY_CERT_KNOWN;
	k->has_issued = revkey_cert_not_before(cert, &k->issued_at) == 0;
	if ((X509_get_extension_flags(c) & EXFLAG_CA) != 0)
		k->cert |= REVKEY_CERT_CA;
	/*
	 * More names than kept only means fewer matches: a partial CRL
	 * then does not cover the certificate (not_covered), never wrongly.
	 */
	dps = X509_get_ext_d2i(cert, NID_crl_distribution_points, &crit, NULL);
	for (i = 0; dps != NULL && i < sk_DIST_POINT_num(dps); i++) {
		DIST_POINT *dp = sk_DIST_POINT_value(dps, i);

		if (dp->CRLissuer != NULL)
			cert_dp_crl_issuer(k, dp);
		else if (dp->distpoint != NULL)
			cert_dp_names(k, dp, X509_get_issuer_name(cert), 0);
	}
	CRL_DIST_POINTS_free(dps);
	ERR_clear_error();
	return 0;
}

int
revkey_from_crl_entry(struct revkey *k, const X509_CRL *crl,
    const X509_REVOKED *entry, char *err, size_t errlen)
{
	/* Indirect CRLs (certificate issuer entry extensions) are not supported. */
	return revkey_from_issuer_serial(k, X509_CRL_get_issuer(crl),
	    X509_REVOKED_get0_serialNumber(entry), err, errlen);
}

/* No password for an encrypted PEM block: never a prompt on a terminal. */
static int
pem_no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

int
revkey_from_cert_bytes(struct revkey *k, const void *buf, size_t len,
    char *err, size_t errlen)
{
	const unsigned char *p = buf, *end = p + len;
	unsigned char *der = NULL;
	X509 *cert = NULL;
	long dlen = 0;
	bool pem;
	BIO *bio;
	int rc;

	if (len == 0 || len > REVKEY_CERT_MAX || len > INT_MAX) {
		snprintf(err, errlen, "certificate must be 1 to %d bytes",
		    REVKEY_CERT_MAX);
		return -1;
	}
	pem = memmem(buf, len, "-----BEGIN", 10) != NULL;
	if (pem) {
		if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		/*
		 * The block's DER is read as a DER input is, to its last
		 * byte: PEM_read_bio_X509 would take the first certificate
		 * and skip what follows it in the block (another
		 * certificate, a revoked one).
		 */
		if (PEM_bytes_read_bio(&der, &dlen, NULL, PEM_STRING_X509, bio,
		    pem_no_password, NULL) == 1 && dlen > 0) {
			p = der;
			end = der + dlen;
		}
		BIO_free(bio);
	}
	if (!pem || p == der) {
		cert = d2i_X509(NULL, &p, (long)(end - p));
		if (cert != NULL && p != end) {
			X509_free(cert);
			cert = NULL;
		}
	}
	OPENSSL_free(der);
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
		if (k->id_len > 1 && k->id[0] == 0) {	/* negative */
			out[0] = '-';
			util_hex(out + 1, k->id + 1, k->id_len - 1);
			return 2 * k->id_len - 1;
		}
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

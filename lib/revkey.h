/* revkey.h - the key model: every revocation entry is a pair (scope, id) */
#ifndef REVCHECK_REVKEY_H
#define REVCHECK_REVKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/*
 * Scopes are short strings. X.509 scopes are "x509:" followed by the
 * lowercase hex SHA-256 of the canonical encoding of the issuer Name
 * (revkey_name_canon); token scopes are
 * named by the operator (or the JWT "iss"), "default" when none is given.
 * Ids are bytes: for X.509 the serial number as canonical big-endian bytes
 * (magnitude, no leading zero bytes; serial 0 is the single byte 0x00);
 * a negative serial is 0x00 followed by its magnitude (a magnitude never
 * starts with 0x00, so the two cannot meet); for tokens the token id
 * ("jti") bytes.
 *
 * The filter key is scope || 0x00 || id. Scopes never contain NUL, so the
 * encoding is unambiguous.
 */
#define REVKEY_SCOPE_MAX	255
#define REVKEY_ID_MAX		1024
#define REVKEY_X509_PREFIX	"x509:"
#define REVKEY_DEFAULT_SCOPE	"default"
/*
 * Cutoff scopes: "all tokens of subject S (or session S) from issuer I
 * issued before T" is the key ("sub:" I, S) or ("sid:" I, S) with T as
 * its revocation time. A token's own scope (its iss) never starts with
 * these prefixes, so a jti can never be taken for a cutoff.
 */
#define REVKEY_SUB_PREFIX	"sub:"
#define REVKEY_SID_PREFIX	"sid:"
#define REVKEY_ENC_MAX		(REVKEY_SCOPE_MAX + 1 + REVKEY_ID_MAX)

/*
 * What a key derived from a certificate knows about it, for CRLs that
 * cover only part of an issuer's certificates (issuingDistributionPoint):
 * whether it is a CA certificate, which distribution point names it
 * lists (revkey_dp_hash of each), and which CRL issuers other than its
 * own issuer its distribution points name (cRLIssuer: an indirect CRL of
 * that issuer is where its revocation is published, RFC 5280 section
 * 4.2.1.13). dp_ci[i] says to which distribution point dp[i] belongs: 0
 * for one without cRLIssuer, j + 1 for one whose cRLIssuer is ci[j] (for
 * such a point without a distributionPoint name, its cRLIssuer names
 * stand for it, as RFC 5280 section 6.3.3 (b)(2)(i) says). dp_reasons[i]
 * holds the reasons field of that distribution point (ReasonFlags bits
 * 1..8; REVKEY_REASONS_ALL when it has none): a CRL found through the
 * point's name covers the certificate only for those reasons (section
 * 6.3.3 (d)); 0 covers it for none. A bare id
 * (text, JSON, a query) has cert 0 and knows none of it. Not part of the
 * encoded key.
 */
#define REVKEY_DP_MAX		8
#define REVKEY_CI_MAX		4
#define REVKEY_CERT_KNOWN	0x01	/* derived from a certificate */
#define REVKEY_CERT_CA		0x02	/* basicConstraints cA */
#define REVKEY_REASONS_ALL	0x01fe	/* ReasonFlags bits 1..8 */

struct revkey {
	char		scope[REVKEY_SCOPE_MAX + 1];	/* NUL-terminated */
	size_t		scope_len;
	unsigned char	id[REVKEY_ID_MAX];
	size_t		id_len;
	uint8_t		cert;		/* REVKEY_CERT_*, 0 for a bare id */
	uint8_t		ndp;		/* distribution point names kept */
	unsigned char	dp[REVKEY_DP_MAX][32];
	uint8_t		dp_ci[REVKEY_DP_MAX];	/* 0, or 1 + index in ci */
	uint16_t	dp_reasons[REVKEY_DP_MAX];	/* the point's reasons */
	uint8_t		nci;		/* cRLIssuer names kept */
	unsigned char	ci[REVKEY_CI_MAX][32];	/* SHA-256 of each one's
					   canonical Name: its scope's hex */
	/*
	 * When the credential was issued, when known (has_issued): a
	 * certificate's notBefore, a verified token's iat. An exact scope
	 * answers revoked from the filter alone only for a key issued no
	 * later than its cutoff (ffile.h). Not part of the encoded key.
	 */
	bool		has_issued;
	int64_t		issued_at;
};

/*
 * The hash a distribution point name is compared by: SHA-256 of "dn:"
 * and the canonical encoding for a directoryName (a nameRelativeToCRLIssuer
 * is made a full name first), of "gn:" and the DER GeneralName otherwise.
 * 0 or -1.
 */
int revkey_dp_hash(const GENERAL_NAME *gn, unsigned char out[32]);
int revkey_dp_name_hash(const X509_NAME *name, unsigned char out[32]);

/*
 * Checks that a scope name is acceptable: 1..255 bytes, printable ASCII
 * without spaces, and, when it starts with "x509:", exactly 64 lowercase
 * hex digits after it.
 */
bool revkey_scope_valid(const char *scope, size_t len);

/* True when the scope is an X.509 issuer scope. */
bool revkey_scope_is_x509(const char *scope);

/* True when the scope is a sub: or sid: cutoff scope. */
bool revkey_scope_is_cutoff(const char *scope);

/*
 * Sets k to the cutoff key (prefix issuer, value): prefix is
 * REVKEY_SUB_PREFIX or REVKEY_SID_PREFIX. Returns 0, or -1 (k unchanged)
 * when the scope would be too long or invalid, or value is empty or too
 * long.
 */
int revkey_cutoff(struct revkey *k, const char *prefix, const char *issuer,
    const char *value, size_t len);

/*
 * Sets k from a scope and raw id bytes. Returns 0, or -1 (k unchanged)
 * when the scope is invalid or the id is empty or too long.
 */
int revkey_set(struct revkey *k, const char *scope, const void *id,
    size_t id_len);

/*
 * Replaces the raw id of a key revkey_set made, keeping its scope (a
 * list's ids one after the other, without checking the scope again).
 * Returns 0, or -1 when id_len is 0 or over REVKEY_ID_MAX.
 */
int revkey_set_id(struct revkey *k, const void *id, size_t id_len);

/*
 * Sets k to the scope of like, a key revkey_set made (its scope already
 * valid), and the raw id: what revkey_set(k, like->scope, id, id_len)
 * gives, without checking the scope again (a batch's ids of one scope
 * into keys of their own). k and like must differ. Returns 0, or -1 (k
 * unchanged) when id_len is 0 or over REVKEY_ID_MAX.
 */
int revkey_set_like(struct revkey *k, const struct revkey *like,
    const void *id, size_t id_len);

/*
 * Sets k from a scope and an id as text, as in lists and HTTP queries: in
 * an X.509 scope the id is a hex serial (colons and a 0x prefix allowed,
 * leading zeros dropped, "-" before a negative serial); in other scopes
 * the text bytes are the id.
 * Returns 0, or -1 with err saying why.
 */
int revkey_from_text(struct revkey *k, const char *scope, const char *id,
    size_t id_len, char *err, size_t errlen);

/*
 * The canonical encoding of a Name (RFC 5280 section 7.1 comparison rules,
 * the same bytes as OpenSSL's canonical Name encoding; docs/FORMAT.md
 * section 1): *out is malloc'ed (NULL for an empty Name, *outlen 0), the
 * caller frees it. Returns 0, or -1 (nothing allocated) when a value
 * cannot be converted or the encoding would pass 64 KiB.
 */
int revkey_name_canon(const X509_NAME *name, unsigned char **out,
    size_t *outlen);

/*
 * The X.509 scope string for an issuer Name, into out[70]: "x509:" and
 * the SHA-256 of its canonical encoding, so names equal under RFC 5280
 * section 7.1 (re-encoded strings, case, white space) share a scope.
 * 0 or -1.
 */
#define REVKEY_X509_SCOPE_LEN (5 + 64)
int revkey_x509_scope(char out[REVKEY_X509_SCOPE_LEN + 1],
    const X509_NAME *issuer);

/* The same scope's 32 raw hash bytes (what follows "x509:" in hex). 0 or -1. */
int revkey_x509_scope_hash(unsigned char out[32], const X509_NAME *issuer);

/* Key from an issuer Name and a serial. 0, or -1 (err says why). */
int revkey_from_issuer_serial(struct revkey *k, const X509_NAME *issuer,
    const ASN1_INTEGER *serial, char *err, size_t errlen);

/* A certificate's notBefore in Unix seconds. 0, or -1 when unreadable. */
int revkey_cert_not_before(const X509 *cert, int64_t *out);

/*
 * Key of a certificate: its issuer and serial, its notBefore
 * (has_issued), with what it says about
 * itself (CA or not, its CRL distribution point names with each point's
 * reasons, and the cRLIssuer of a distribution point with its names,
 * tagged as that issuer's). More
 * names than kept are left out, which only means fewer matches. 0 or -1.
 */
int revkey_from_cert(struct revkey *k, const X509 *cert, char *err,
    size_t errlen);

/* Key of a CRL entry: the CRL's issuer and the entry's serial. 0 or -1. */
int revkey_from_crl_entry(struct revkey *k, const X509_CRL *crl,
    const X509_REVOKED *entry, char *err, size_t errlen);

/*
 * Parses one certificate, PEM or DER, from untrusted bytes (at most
 * 64 KiB) and derives its key. Returns 0, or -1 with err saying why.
 */
int revkey_from_cert_bytes(struct revkey *k, const void *buf, size_t len,
    char *err, size_t errlen);

/*
 * Writes the filter key bytes (scope || 0x00 || id) into out, which must
 * hold REVKEY_ENC_MAX bytes. Returns the length. This function can't fail.
 */
size_t revkey_encode(const struct revkey *k, unsigned char *out);

/*
 * Writes the id as text: lowercase hex for X.509 scopes ("-" first for a
 * negative serial), the bytes
 * themselves otherwise (callers escape them for their output format).
 * out must hold 2*REVKEY_ID_MAX+1 bytes. Returns the length.
 */
#define REVKEY_ID_TEXT_MAX (2 * REVKEY_ID_MAX + 1)
size_t revkey_id_text(const struct revkey *k, char *out);

/* Byte-wise order of encoded keys; the table is sorted by it. */
int revkey_cmp(const struct revkey *a, const struct revkey *b);

#endif

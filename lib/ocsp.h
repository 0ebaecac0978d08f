/* ocsp.h - OCSP (RFC 6960, RFC 5019 profile): requests read, responders loaded, responses signed and cached */
#ifndef REVCHECK_OCSP_H
#define REVCHECK_OCSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ocsp.h>

#include "revkey.h"

/*
 * The parts of an OCSP responder that know nothing of HTTP nor of the
 * filter: a request's DER read into the one certificate it asks about,
 * matched against the CAs served (struct ocsp_responder), and the
 * answer a caller decided signed into a response. Every parser takes
 * hostile bytes and refuses with a message that never contains them.
 */

/* OCSPResponseStatus values (RFC 6960 section 4.2.1). */
enum ocsp_rstatus {
	OCSP_RS_SUCCESSFUL = 0,
	OCSP_RS_MALFORMED = 1,
	OCSP_RS_INTERNAL = 2,
	OCSP_RS_TRYLATER = 3,
	OCSP_RS_UNAUTHORIZED = 6,
};

/* The longest request body or decoded GET request read. */
#define OCSP_REQ_MAX		(16 * 1024)
/* RFC 8954: Nonce ::= OCTET STRING (SIZE(1..32)). */
#define OCSP_NONCE_MAX		32
/* The longest serial a CertID may carry (revkey's id). */
#define OCSP_SERIAL_MAX		REVKEY_ID_MAX

/* One request read (ocsp_request_parse). */
struct ocsp_req {
	OCSP_REQUEST	*req;		/* owned */
	OCSP_CERTID	*id;		/* borrowed from req */
	int		 md_nid;	/* the CertID's hash: NID_sha1, ... */
	const ASN1_INTEGER *serial;	/* borrowed from req */
	bool		 has_nonce;
	unsigned char	 nonce[OCSP_NONCE_MAX];
	size_t		 nonce_len;
};

/*
 * Reads one OCSPRequest from der[0..len): exactly one DER value, nothing
 * after it, exactly one Request in its list (RFC 5019 section 2.1.1: a
 * request with several is refused, never answered in part), a CertID
 * hashed with SHA-1, SHA-256, SHA-384 or SHA-512, a serial of at most
 * OCSP_SERIAL_MAX bytes, and at most one nonce extension whose value is
 * an OCTET STRING of 1..OCSP_NONCE_MAX octets. Returns 0 with q filled
 * (ocsp_request_free releases it), or -1 with err (safe to show) and q
 * holding nothing: answer malformedRequest.
 */
int ocsp_request_parse(struct ocsp_req *q, const unsigned char *der,
    size_t len, char *err, size_t errlen);

/* Releases what q holds and zeroes it. NULL-safe, safe on a zeroed q. */
void ocsp_request_free(struct ocsp_req *q);

/*
 * The DER an RFC 6960 appendix A.1 GET carries: the path segment after
 * the responder's path, percent-decoded already by the HTTP layer,
 * standard base64 (padding optional; '+' or ' ' for a plus, as some
 * clients leave a plus unescaped and a form decoder makes it a space).
 * Returns the length written into out (cap bytes), or -1 when the text
 * is not base64 or decodes to more than cap bytes.
 */
long ocsp_b64_decode(const char *in, size_t len, unsigned char *out,
    size_t cap);

struct ocsp_responder;

/*
 * Loads one CA served: ca, cert and key are PEM (cert may be the CA's
 * own certificate). cert must be the CA itself or a certificate issued
 * by it (name and signature) that carries extendedKeyUsage
 * id-kp-OCSPSigning, and key must be the private key of cert: RSA,
 * ECDSA P-256 or P-384, or Ed25519. Returns the responder, or NULL with
 * err saying what is wrong and how to fix it. The buffers stay the
 * caller's (wipe the key's).
 */
struct ocsp_responder *ocsp_responder_new(const unsigned char *ca,
    size_t calen, const unsigned char *cert, size_t certlen,
    const unsigned char *key, size_t keylen, char *err, size_t errlen);

/* Frees r. NULL-safe. */
void ocsp_responder_free(struct ocsp_responder *r);

/*
 * True when q's CertID names r's CA: its issuerNameHash is the hash of
 * the CA's subject Name and its issuerKeyHash that of the CA's public
 * key, both with the CertID's hash. This function can't fail.
 */
bool ocsp_responder_matches(const struct ocsp_responder *r,
    const struct ocsp_req *q);

/*
 * The key /v1/check forms for a certificate of r's CA with q's serial:
 * the CA's X.509 scope and the serial, with nothing known about the
 * certificate itself (a bare id: a partial CRL scope does not cover it
 * unless its parts cover every certificate of that CA). 0, or -1 with
 * err.
 */
int ocsp_responder_key(const struct ocsp_responder *r,
    const struct ocsp_req *q, struct revkey *k, char *err, size_t errlen);

/* The CA's subject as text, for logs. Can't fail. */
const char *ocsp_responder_name(const struct ocsp_responder *r);

/* What a successful response says about the certificate asked for. */
struct ocsp_answer {
	int		 status;	/* V_OCSP_CERTSTATUS_GOOD, _REVOKED
					 * or _UNKNOWN */
	int64_t		 revoked_at;	/* REVOKED: unix time; 0 unknown
					 * (1970-01-01 is sent) */
	int		 reason;	/* REVOKED: CRLReason code, -1 none */
	int64_t		 this_update;	/* unix time */
	int64_t		 next_update;	/* unix time; 0: none sent */
};

/*
 * The CRLReason code of a reason name as the table holds it
 * ("keyCompromise", ...), -1 for "" or a name that is not one.
 */
int ocsp_reason_code(const char *name);

/*
 * Signs a BasicOCSPResponse for q's CertID saying a, with r's key
 * (responderID byKey; r's certificate included unless it is the CA's
 * own), q's nonce echoed when it has one, wrapped in a successful
 * OCSPResponse. Returns 0 with *der (malloc'ed, the caller frees it)
 * and *len, or -1 with err.
 */
int ocsp_sign(const struct ocsp_responder *r, const struct ocsp_req *q,
    const struct ocsp_answer *a, unsigned char **der, size_t *len,
    char *err, size_t errlen);

/*
 * The unsigned OCSPResponse for an error status (not SUCCESSFUL): static
 * bytes, *len set. This function can't fail.
 */
const unsigned char *ocsp_error_der(enum ocsp_rstatus st, size_t *len);

/* "malformedRequest", ... for a status; "good", "revoked", "unknown". */
const char *ocsp_rstatus_str(enum ocsp_rstatus st);
const char *ocsp_cert_status_str(int status);

/*
 * A bounded cache of signed responses, safe from any number of threads
 * (sharded, a lock per shard, least recently used evicted first). An
 * entry is found by its CertID (responder index, hash, serial) and
 * reused only for the very state it was made from: the caller's stamp
 * (filter version, delta sequence, thisUpdate, nextUpdate) must be equal,
 * so a new base, any delta, a head that moves the times or an expiry
 * makes a new signature. Nonce-bearing responses are never put in.
 */
struct ocsp_stamp {
	uint64_t	 version;
	uint64_t	 seq;
	int64_t		 this_update;
	int64_t		 next_update;
};

struct ocsp_cache;

/*
 * A cache holding at most max_bytes of responses and their keys (0: a
 * cache that keeps nothing). NULL when memory runs out.
 */
struct ocsp_cache *ocsp_cache_new(uint64_t max_bytes);

/* Frees c and every entry. NULL-safe. */
void ocsp_cache_free(struct ocsp_cache *c);

/*
 * Looks up q's CertID for responder ri at stamp st: returns 0 with
 * *der (malloc'ed copy, the caller frees it), *len and *status (what
 * was put with it), or -1 when there is none for that state (or memory
 * ran out).
 */
int ocsp_cache_get(struct ocsp_cache *c, unsigned ri,
    const struct ocsp_req *q, const struct ocsp_stamp *st,
    unsigned char **der, size_t *len, int *status);

/*
 * Keeps a copy of der[0..len) and status (the certStatus it says) for
 * q's CertID at stamp st, replacing an older one, evicting the least
 * recently used ones to stay under the bound. A response larger than a
 * shard's share is not kept. Can't fail (out of memory: nothing is
 * kept).
 */
void ocsp_cache_put(struct ocsp_cache *c, unsigned ri,
    const struct ocsp_req *q, const struct ocsp_stamp *st,
    const unsigned char *der, size_t len, int status);

/* Entries and bytes held now. */
void ocsp_cache_stats(struct ocsp_cache *c, uint64_t *entries,
    uint64_t *bytes);

#endif

/* ffile.h - the signed filter file: header, scopes, bit array, signature */
#ifndef REVCHECK_FFILE_H
#define REVCHECK_FFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bloom.h"
#include "exact.h"
#include "revkey.h"
#include "sign.h"

/*
 * The byte layout is specified in docs/FORMAT.md. All integers are
 * little-endian; everything before the trailing 64-byte Ed25519 signature
 * is signed. Hard caps keep a hostile file from asking for absurd work.
 */
#define FFILE_MAGIC		"RCFILTR1"	/* 8 bytes, no NUL */
/*
 * Format 5 adds exact scopes (an exact structure over the scope's issued
 * set, section 2.7 of docs/FORMAT.md); a filter without one is written
 * as format 4, which readers keep accepting, so that readers before
 * format 5 read it.
 */
#define FFILE_FORMAT		5
#define FFILE_FORMAT_PLAIN	4
#define FFILE_MAX_SCOPES	65536
#define FFILE_MAX_SIZE		(UINT64_C(1) << 37)	/* 128 GiB */


/*
 * Fixed header (FFILE_HDR_LEN bytes), then nscopes variable scope entries,
 * zero padding to a multiple of 8, the bit array at bits_off, and the
 * signature. See docs/FORMAT.md for every offset.
 */
#define FFILE_HDR_LEN		168
#define FFILE_SCOPE_MIN_LEN	64	/* a scope entry with empty strings */
#define FFILE_ISSUER_MAX	511
#define FFILE_CRLNUM_MAX	79

enum ffile_source {
	FFILE_SRC_LIST = 0,	/* text or JSON id list */
	FFILE_SRC_CRL  = 1,	/* an X.509 CRL */
};

/*
 * Scope flags (CRL sources only; a list has none). Signed with the rest,
 * so a reader can tell how much the builder vouched for.
 */
#define FFILE_SCOPE_UNVERIFIED	0x01	/* CRL signature not verified
					   (--unverified-crl) */
#define FFILE_SCOPE_ASSUMED_NEXT 0x02	/* the CRL had no nextUpdate:
					   next_update is thisUpdate plus
					   the operator's --crl-validity */
#define FFILE_SCOPE_KEPT	0x04	/* its new CRL was bad: kept from
					   the previous version (--keep-going)
					   until its nextUpdate */
#define FFILE_SCOPE_ATTRIBUTED	0x08	/* no CRL of its own: listed only for
					   the entries an indirect CRL of
					   another issuer attributed to it;
					   covers nothing by itself */
#define FFILE_SCOPE_FLAGS_KNOWN	0x0f

/*
 * The part of an issuer's certificates a partial CRL covers (from its
 * issuingDistributionPoint). A CRL scope with no parts is covered whole;
 * with parts, a certificate is covered only when the parts that apply to
 * it (its kind, a distribution point name it lists or none) together
 * cover every reason (crl_covered). Each part also names the CRL it comes
 * from (issuer, CRL number, thisUpdate), so that a later build can refuse
 * an older CRL for the same part (input_check_previous).
 */
#define FFILE_PART_MAX		16
#define FFILE_PART_MIN_LEN	77	/* kind, reasons, dp hash, flags,
					   CRL issuer hash, thisUpdate,
					   CRL number length */
#define FFILE_PART_CRLNUM_MAX	40	/* hex digits: 20 octets */
#define FFILE_PART_ANY		0	/* user and CA certificates */
#define FFILE_PART_USER		1	/* onlyContainsUserCerts */
#define FFILE_PART_CA		2	/* onlyContainsCACerts */
#define FFILE_REASONS_ALL	0x01fe	/* ReasonFlags bits 1..8 */
/* Part flags. */
#define FFILE_PART_INDIRECT	0x01	/* from an indirect CRL (IDP
					   indirectCRL): in its issuer's own
					   scope, it also covers another CA's
					   certificate whose distribution point
					   names this issuer as cRLIssuer */
#define FFILE_PART_DELEGATED	0x02	/* copied into another CA's scope
					   from that indirect CRL, because the
					   operator said (--delegate) the CA
					   has its CRLs issued there */
#define FFILE_PART_FLAGS_KNOWN	0x03

struct ffile_part {
	uint8_t		 kind;		/* FFILE_PART_* */
	uint16_t	 reasons;	/* ReasonFlags bits 1..8 */
	unsigned char	 dp[32];	/* revkey_dp_hash of the name, or zeros */
	uint8_t		 flags;		/* FFILE_PART_INDIRECT, _DELEGATED */
	unsigned char	 crl_issuer[32];	/* SHA-256 of the canonical
					   Name of the CRL's issuer (the hex
					   of its X.509 scope) */
	int64_t		 this_update;	/* the CRL's thisUpdate */
	char		 crl_number[FFILE_PART_CRLNUM_MAX + 1];	/* hex, or "" */
};

/*
 * An exact scope (format 5): its keys are not in the filter's bit array;
 * they are answered by an exact structure over the scope's issued set U
 * (exact.h), built with U complete up to cutoff. On encoding, blob and
 * blob_len are the caller's serialized structure; on parsing they point
 * into the file and view is attached (exact_attach) and checked against
 * the counts: the file is refused otherwise.
 */
#define FFILE_EXACT_LEN		40	/* cutoff, |U|, |R|, offset, length */

struct ffile_exact {
	int64_t		 cutoff;	/* U holds every id issued up to it */
	uint64_t	 issued;	/* |U| */
	uint64_t	 blob_off;	/* parsing: its offset in the file */
	const unsigned char *blob;
	size_t		 blob_len;
	struct exact	 view;		/* parsing only */
};

struct ffile_scope {
	char		 name[REVKEY_SCOPE_MAX + 1];
	uint64_t	 keys;
	enum ffile_source source;
	uint8_t		 flags;			/* FFILE_SCOPE_* */
	/* CRL sources only: */
	char		 issuer[512];		/* RFC 2253 text of the issuer */
	char		 crl_number[80];	/* hex, "" if absent */
	int64_t		 this_update;
	int64_t		 next_update;		/* 0 if absent */
	unsigned char	 crl_sha256[32];
	uint8_t		 npart;			/* 0: covered whole */
	struct ffile_part part[FFILE_PART_MAX];
	bool		 exact;		/* answered by ex, not the bit array */
	struct ffile_exact ex;		/* exact scopes only */
};

struct ffile_info {
	uint16_t	 format;
	enum bloom_layout layout;
	uint64_t	 version;
	int64_t		 issued_at;
	int64_t		 expires_at;
	uint64_t	 keys;
	uint64_t	 m;
	uint32_t	 k;
	uint32_t	 seglog;	/* fuse layouts: log2 segment length */
	uint32_t	 width;		/* BLOOM_FUSE: fingerprint bits, else 0 */
	uint64_t	 seed;
	double		 fp_rate_target;
	unsigned char	 signer[SIGN_KEYID_LEN];
	unsigned char	 table_sha256[32];
	uint64_t	 table_len;
	uint32_t	 nscopes;
	struct ffile_scope *scopes;	/* sorted by name */
	uint32_t	 nexact;	/* exact scopes among them */
	uint64_t	 filter_keys;	/* keys in the bit array: keys less
					   those of the exact scopes */
};

struct ffile;	/* opaque: parsed file, its bytes, its bloom view */

/*
 * Serializes and signs a filter: info (signer filled in from key), the
 * bloom's bit array (over the keys of every scope that is not exact),
 * the exact scopes' structures (format 5 when there is one, else format
 * 4), and an Ed25519 signature. On success returns 0 and
 * *out and *outlen hold a malloc'ed buffer the caller owns. -1 with err.
 */
int ffile_encode(const struct ffile_info *info, const struct bloom *b,
    EVP_PKEY *key, unsigned char **out, size_t *outlen, char *err,
    size_t errlen);

/*
 * Parses a filter file from untrusted bytes. Checks magic, format, every
 * length and offset, the caps, and that the size matches header plus bits
 * plus signature. Does not check the signature. With take, the ffile owns
 * buf (free()) even on failure; without, buf must outlive the ffile.
 * Returns the ffile or NULL with err saying what is wrong and at which
 * offset.
 */
struct ffile *ffile_parse(const unsigned char *buf, size_t len, bool take,
    char *err, size_t errlen);

/*
 * Copies a file into private read-only memory (util_copy_fd) and parses
 * it. NULL with err naming the file.
 */
struct ffile *ffile_open(const char *path, char *err, size_t errlen);

/*
 * Checks the signature against a trusted ring: the signer id in the header
 * must be in the ring and the signature valid. Returns 0, or -1 with err
 * ("signer <id> not trusted", "bad signature").
 */
int ffile_verify(const struct ffile *f, const struct sign_ring *ring,
    char *err, size_t errlen);

/* Same, against one public key. */
int ffile_verify_key(const struct ffile *f, EVP_PKEY *pub, char *err,
    size_t errlen);

const struct ffile_info *ffile_info(const struct ffile *f);
const struct bloom *ffile_bloom(const struct ffile *f);

/* The whole file's bytes and their SHA-256 (computed once at parse). */
const unsigned char *ffile_bytes(const struct ffile *f, size_t *len);
const unsigned char *ffile_sha256(const struct ffile *f);

/* Hashes the bytes again: true when they still match ffile_sha256(). */
bool ffile_intact(const struct ffile *f);

/* The scope entry with this name, or NULL when the filter does not cover it. */
const struct ffile_scope *ffile_scope(const struct ffile *f, const char *name);

/*
 * True when the key may be present (all of its Bloom bits set, or for a
 * fuse filter its fingerprint matches; for a key of an exact scope, its
 * structure answers EXACT_REVOKED); false is definite.
 */
bool ffile_query(const struct ffile *f, const struct revkey *k);

/*
 * The answer of exact scope sc (sc->exact) for k, a key of that scope.
 * EXACT_NOT_REVOKED is proof; EXACT_REVOKED proves revocation only for a
 * key shown to be in the scope's issued set (exact.h). Can't fail.
 */
enum exact_answer ffile_exact_query(const struct ffile_scope *sc,
    const struct revkey *k);

/* True when the filter must not be used at time now (now >= expires_at). */
bool ffile_expired(const struct ffile *f, int64_t now);

/*
 * Adds a reference to f, which stays open (its bytes unchanged: they are
 * never written after parsing) until its last ffile_close. Any thread.
 */
struct ffile *ffile_ref(struct ffile *f);

/* Drops a reference; the last one frees. NULL-safe, any thread. */
void ffile_close(struct ffile *f);

#endif

/* delta.h - signed delta chains: the revocations added and removed since a base filter */
#ifndef REVCHECK_DELTA_H
#define REVCHECK_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sign.h"
#include "table.h"

/*
 * A delta file says "after base B and deltas 1..seq-1, these keys were
 * added or removed"; a head says "the chain through delta seq is complete
 * and fresh until expires_at". Both are signed like a filter and chain to
 * their predecessor by its SHA-256: delta 1 and a head of seq 0 chain to
 * the base filter file itself. The byte layout is in docs/FORMAT.md
 * section 6. All integers are little-endian; everything before the
 * trailing 64-byte Ed25519 signature is signed.
 */
#define DELTA_MAGIC		"RCDELTA1"	/* 8 bytes, no NUL */
#define DELTA_FORMAT		1
#define DELTA_HDR_LEN		184
#define DELTA_ENTRY_HDR_LEN	14
#define DELTA_MAX_SIZE		(UINT64_C(1) << 30)	/* 1 GiB */
#define DELTA_MAX_ENTRIES	(UINT64_C(1) << 24)
#define DELTA_MAX_SCOPES	65536

enum delta_kind {
	DELTA_KIND_DELTA = 1,
	DELTA_KIND_HEAD  = 2,
};

enum delta_op {
	DELTA_ADD    = 1,	/* the key is revoked (with revoked_at, reason) */
	DELTA_REMOVE = 2,	/* the key is no longer revoked */
};

struct delta_info {
	enum delta_kind	 kind;
	uint64_t	 base_version;
	unsigned char	 base_sha256[32];	/* SHA-256 of the base filter file */
	uint64_t	 seq;			/* delta: >= 1; head: last delta, or 0 */
	unsigned char	 prev_sha256[32];	/* the predecessor file's SHA-256 */
	int64_t		 issued_at;
	int64_t		 expires_at;
	uint64_t	 cursor;		/* the source's cursor after this file */
	int64_t		 changed_at;		/* latest change covered; 0 unknown */
	uint32_t	 nscopes;
	uint64_t	 nentries;
	unsigned char	 signer[SIGN_KEYID_LEN];
};

struct delta_entry {
	enum delta_op	 op;
	struct table_rec rec;	/* key; revoked_at and reason for an add */
};

/*
 * Serializes and signs a delta (n entries) or a head (n must be 0).
 * Entries need not be sorted and may repeat a key: the last one of a key
 * wins, as the changes did. info's signer, nscopes and nentries are
 * filled in. On success returns 0 and *out, *outlen hold a malloc'ed
 * buffer the caller owns; -1 with err (an invalid key or reason, a remove
 * with a reason, too many entries).
 */
int delta_encode(const struct delta_info *info, const struct delta_entry *e,
    size_t n, EVP_PKEY *key, unsigned char **out, size_t *outlen, char *err,
    size_t errlen);

struct delta;	/* opaque: a parsed delta or head and its bytes */

/*
 * Parses untrusted bytes: magic, format, kind, every length against the
 * bytes present, the caps, scopes valid and strictly ascending, entries
 * strictly ascending by key and each well formed, the size exactly header
 * plus body plus signature. Does not check the signature. The delta keeps
 * its own copy of buf. NULL with err naming the offset and the problem.
 */
struct delta *delta_parse(const unsigned char *buf, size_t len, char *err,
    size_t errlen);

/* Reads and parses a file (at most DELTA_MAX_SIZE). NULL with err. */
struct delta *delta_open(const char *path, char *err, size_t errlen);

/*
 * Checks the signature against a trusted ring (the signer must be in it).
 * 0, or -1 with err ("signer <id> not trusted", "bad signature").
 */
int delta_verify(const struct delta *d, const struct sign_ring *ring,
    char *err, size_t errlen);

const struct delta_info *delta_info(const struct delta *d);
const unsigned char *delta_sha256(const struct delta *d);
const unsigned char *delta_bytes(const struct delta *d, size_t *len);

/* The i-th entry (i < nentries), in key order. 0, or -1 when out of range. */
int delta_get(const struct delta *d, uint64_t i, struct delta_entry *out);

void delta_free(struct delta *d);

/* Where a chain stands: the base and the last delta applied to it. */
struct delta_pos {
	uint64_t	 base_version;
	unsigned char	 base_sha256[32];
	uint64_t	 seq;			/* 0: no delta yet */
	unsigned char	 last_sha256[32];	/* of delta seq, or of the base */
};

enum delta_link {
	DELTA_LINK_NEXT = 0,	/* a delta that extends pos by one */
	DELTA_LINK_HEAD,	/* a head for exactly pos */
	DELTA_LINK_OLD,		/* a replay: seq at or below pos (or an older head) */
	DELTA_LINK_GAP,		/* seq beyond pos + 1: something is missing */
	DELTA_LINK_FORK,	/* right seq, wrong predecessor hash */
	DELTA_LINK_OTHER_BASE,	/* made for another base */
};

/*
 * Says how a verified delta or head relates to pos, with a sentence in
 * err for every answer but NEXT and HEAD. Only NEXT may be applied; only
 * HEAD (or NEXT) may extend freshness. This function can't fail.
 */
enum delta_link delta_link(const struct delta *d, const struct delta_pos *pos,
    char *err, size_t errlen);

/*
 * Walks the chain in ddir (a base version's delta/ directory) from pos:
 * for seq = pos->seq + 1, ... reads each delta file present, verifies it
 * against ring, checks that it links (DELTA_LINK_NEXT), calls fn (when
 * not NULL; a non-zero return stops the walk with -1) and advances pos.
 * The walk stops at the first missing file. Then reads the head, when
 * there is one: *head (caller frees) is set only when it verifies and is
 * the head of exactly the final pos; *head_seq is the head's seq (or
 * UINT64_MAX without a head), so a caller can tell a head one delta
 * behind (a kill between the two writes) from one ahead (files missing).
 * Returns 0, or -1 with err naming the file when a file that is present
 * does not parse, verify or link: a broken chain is never crossed.
 */
int delta_chain_walk(const char *ddir, const struct sign_ring *ring,
    struct delta_pos *pos, int (*fn)(void *arg, const struct delta *d),
    void *arg, struct delta **head, uint64_t *head_seq, char *err,
    size_t errlen);

/*
 * Where a walk gets its files: the bytes of delta seq, or of the head
 * when seq is DELTA_SEQ_HEAD, in a malloc'ed *buf the walk frees. Returns
 * 1 with the bytes, 0 when there is no such file, -1 with err.
 */
#define DELTA_SEQ_HEAD	UINT64_MAX
typedef int (*delta_src_fn)(void *arg, uint64_t seq, unsigned char **buf,
    size_t *len, char *err, size_t errlen);

/* A delta_src_fn over a chain directory (arg: its path). */
int delta_src_dir(void *arg, uint64_t seq, unsigned char **buf, size_t *len,
    char *err, size_t errlen);

/*
 * delta_chain_walk() over any source (a directory, a downloaded bundle);
 * where names the source in messages. Same rules and results.
 */
int delta_chain_walk_src(delta_src_fn src, void *src_arg, const char *where,
    const struct sign_ring *ring, struct delta_pos *pos,
    int (*fn)(void *arg, const struct delta *d), void *arg,
    struct delta **head, uint64_t *head_seq, char *err, size_t errlen);

/*
 * Splits a bundle (delta and head files back to back, as /v1/delta
 * serves them) at the lengths their headers declare. Fills up to max
 * (offset, length) pairs and returns how many, or -1 with err when a
 * piece is cut or declares an impossible length. The pieces are not
 * parsed: delta_parse() does that.
 */
int delta_bundle_split(const unsigned char *buf, size_t len, size_t *offs,
    size_t *lens, size_t max, char *err, size_t errlen);

/*
 * Names of the chain's files inside a base version's directory:
 * "delta/" + 20-digit seq + ".rcd", and "delta/head.rcd".
 */
#define DELTA_DIR		"delta"
#define DELTA_HEAD_NAME		"head.rcd"
#define DELTA_NAME_LEN		24	/* 20 digits + ".rcd" */
void delta_file_name(char out[DELTA_NAME_LEN + 1], uint64_t seq);

#endif

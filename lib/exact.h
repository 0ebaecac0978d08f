/* exact.h - exact answers over a known issued set: a two-stage retrieval structure per scope */
#ifndef REVCHECK_EXACT_H
#define REVCHECK_EXACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Over an issued set U with a revoked set R inside it, an exact structure
 * answers "revoked" for every key of R and "not revoked" for every key of
 * U \ R, with no false positive inside U and no false negative anywhere.
 *
 * Stage 1 is an approximate filter over R with w = floor(log2(|U\R|/|R|))
 * fingerprint bits (clamped to 1..EXACT_MAX_W); stage 2 is a 1-bit
 * retrieval structure over R plus stage 1's false positives in U \ R,
 * mapping each to revoked (1) or not (0). Keys are the encoded revkey bytes
 * (scope 0x00 id), the same bytes the filter hashes.
 *
 * The promise, for ANY key (in U or not): EXACT_NOT_REVOKED is returned
 * only for keys that are not in R. EXACT_REVOKED is proof of revocation
 * only for a key shown (by the caller) to be in U; for a key outside U it
 * means no more than a filter positive. The byte layout is in
 * docs/FORMAT.md.
 */

#define EXACT_MAX_W		32
#define EXACT_MAX_KEYS		(UINT64_C(1) << 34)	/* |U| cap */

enum exact_answer {
	EXACT_NOT_REVOKED = 0,	/* proof: the key is not in R */
	EXACT_REVOKED = 1,	/* in R if the key is in U */
};

/*
 * A re-readable stream of keys (the builder reads the issued set twice,
 * and both again after a hash seed retry). rewind returns 0 or -1; next
 * returns 1 with a key (valid until the next call), 0 at the end, -1 on
 * error with err set. Duplicate keys are allowed and answered right; a
 * key of R counts once (in R and in U), a key of U \ R listed twice
 * counts twice in issued (U is never held whole to tell). The issued
 * stream must give the same count on every read (else the build fails).
 */
struct exact_src {
	void	*arg;
	int	(*rewind)(void *arg, char *err, size_t errlen);
	int	(*next)(void *arg, const unsigned char **key, size_t *len,
		    char *err, size_t errlen);
};

struct exact_stats {
	uint64_t	 issued;	/* |U| counted after adding R \ U */
	uint64_t	 revoked;	/* |R| */
	uint64_t	 revoked_not_issued;	/* keys of R missing from U
					   (added to U; the caller warns) */
	uint32_t	 w;		/* stage-1 fingerprint bits */
	uint64_t	 stage2_keys;	/* |R| + stage-1 false positives */
	uint64_t	 bits;		/* total size of the structure, in bits */
	double		 bound_bits;	/* log2 C(|U|, |R|) */
	uint64_t	 stage1_bits;	/* stage 1's shard table and solution */
	uint64_t	 stage2_bits;	/* stage 2's */
	uint64_t	 seed_retries;	/* shards solved again with another seed */
	uint64_t	 hash_seed;	/* the key hash seed the blob holds */
};

/*
 * Builds the structure for revoked (R) over issued (U), streaming U (never
 * held whole in memory: memory is O(|R|) plus the output; R's keys are
 * hashed, not kept). Stages are standard ribbon retrievals in shards of
 * about 2^16 keys, each retried with another seed byte if it does not
 * solve (docs/FORMAT.md section 7). The same inputs and seed give the
 * same bytes. For a large U the second read runs on two threads: the
 * streams are still only called from the calling thread. On success returns 0, *out and *outlen hold a malloc'ed
 * serialized structure the caller owns, and *st is filled. -1 with err
 * (what and why), nothing allocated left, when a stream fails or the
 * issued stream's count changes between reads, |U| exceeds
 * EXACT_MAX_KEYS, memory runs out or no seed solves.
 */
int exact_build(const struct exact_src *revoked, const struct exact_src *issued,
    uint64_t seed, unsigned char **out, size_t *outlen,
    struct exact_stats *st, char *err, size_t errlen);

/* A validated view over serialized bytes (not copied: bytes must outlive it). */
struct exact {
	const unsigned char	*bytes;
	size_t			 len;
	uint32_t		 w;
	uint64_t		 issued;
	uint64_t		 revoked;
	/* reader's private fields follow; set only by exact_attach */
	uint64_t		 priv[16];
};

/*
 * Attaches e to len bytes at bytes after checking the checksum and every
 * field against the length and the caps, refusing any shape that could
 * answer wrongly (sizes that do not match the counts, a width that does
 * not match them, shards out of order or too small). 0, or -1 with err
 * naming the field and e left unattached (exact_query on it answers
 * EXACT_REVOKED). Reads all len bytes once (the checksum), never outside
 * [bytes, bytes+len), here or in exact_query. Picks the query compiled
 * for the CPU (AVX-512, AVX2, POPCNT or plain: the same answers); the
 * environment variable REVCHECK_EXACT_ISA=plain|popcnt|avx2 caps it
 * (for tests).
 */
int exact_attach(struct exact *e, const void *bytes, size_t len,
    char *err, size_t errlen);

/*
 * The answer for key (see the promise above): a hash, stage 1 (three
 * 64-bit words per fingerprint bit) and, for stage 1's positives, stage 2
 * (three words). On a view that is not attached: EXACT_REVOKED. This
 * function can't fail.
 */
enum exact_answer exact_query(const struct exact *e, const void *key,
    size_t len);

/*
 * exact_query for a key whose hash is h = exact_key_hash(seed of e, key):
 * for a caller that hashes keys ahead (batches). Can't fail.
 */
enum exact_answer exact_query_hash(const struct exact *e, uint64_t h);

/* The key hash of the layout: XXH3-64 of the key bytes with seed. Can't fail. */
uint64_t exact_key_hash(uint64_t seed, const void *key, size_t len);

/*
 * Stage 1's width for issued keys of which revoked are revoked:
 * floor(log2((issued - revoked) / revoked)) clamped to 1..EXACT_MAX_W
 * (1 when revoked is 0 or issued <= revoked). Can't fail.
 */
uint32_t exact_width(uint64_t issued, uint64_t revoked);

/* log2 C(n, k) in bits (the information-theoretic bound); 0 for k = 0 or k >= n. */
double exact_bound_bits(uint64_t n, uint64_t k);

#endif

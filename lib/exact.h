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
 * A re-readable stream of keys (the builder may read it more than once,
 * e.g. after a seed retry). rewind returns 0 or -1; next returns 1 with a
 * key (valid until the next call), 0 at the end, -1 on error with err set.
 * Duplicate keys are allowed and counted once.
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
};

/*
 * Builds the structure for revoked (R) over issued (U), streaming U (never
 * held whole in memory: memory is O(|R|) plus the output). On success
 * returns 0, *out/*outlen hold a malloc'ed serialized structure the caller
 * owns, and *st is filled. -1 with err (what and why) when a stream fails,
 * |U| exceeds EXACT_MAX_KEYS, memory runs out or no seed solves.
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
 * Attaches e to len bytes at bytes after checking every field against the
 * length and the caps, refusing any shape that could answer wrongly
 * (sizes that do not match the counts, out-of-range widths or seeds). 0,
 * or -1 with err naming the field. Never reads outside [bytes, bytes+len).
 */
int exact_attach(struct exact *e, const void *bytes, size_t len,
    char *err, size_t errlen);

/* The answer for key (see the promise above). This function can't fail. */
enum exact_answer exact_query(const struct exact *e, const void *key,
    size_t len);

/* log2 C(n, k) in bits (the information-theoretic bound). */
double exact_bound_bits(uint64_t n, uint64_t k);

#endif

/* bloom.h - Bloom filter build and query over a fixed, endian-independent byte layout */
#ifndef REVCHECK_BLOOM_H
#define REVCHECK_BLOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Three layouts share one interface. All set bit i of the array as bit
 * (i % 8) of byte (i / 8), so a filter answers the same on any machine.
 *
 * BLOOM_CLASSIC: k probes (h1 + i*h2) mod m over the whole array.
 * BLOOM_BLOCKED: all k probes of a key fall in one 512-bit (64-byte) block,
 *   chosen from h1; bit positions inside the block come from h2. One cache
 *   miss per query, at the price of a slightly higher FP rate, which the
 *   sizing compensates for.
 * BLOOM_FUSE: not a Bloom filter but a binary fuse filter (Graf and Lemire,
 *   "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022) behind
 *   the same interface: an array of 8-bit fingerprints cut into segments of
 *   2^seglog entries; a key's three cells lie in three consecutive segments
 *   and the key is "possibly present" when their XOR equals its fingerprint.
 *   FP rate 2^-8 at about 9 bits per key (a Bloom filter needs 11.5 bits for
 *   that rate, 9.6 for 1%), three cache lines per query, no false negatives.
 *   It is built once from all keys (bloom_build_fuse), never added to.
 */
enum bloom_layout {
	BLOOM_CLASSIC = 1,
	BLOOM_BLOCKED = 2,
	BLOOM_FUSE = 3,
};

/* "classic", "blocked", "fuse" or "unknown". */
const char *bloom_layout_name(enum bloom_layout layout);

#define BLOOM_BLOCK_BITS 512u
#define BLOOM_MAX_BITS   (UINT64_C(1) << 40)	/* 128 GiB of bits: a hard cap */
#define BLOOM_MAX_K      64u
#define BLOOM_FUSE_ARITY 3u		/* cells per key: the k of a fuse filter */
#define BLOOM_FUSE_FP	 (1.0 / 256.0)	/* 8-bit fingerprints */
#define BLOOM_FUSE_MAX_SEGLOG 18u	/* segments of at most 2^18 cells */
/*
 * Keys and cells are indexed by 32 bits: with the largest size factor a
 * retry can reach (1.125 x 1.2) and whole segments, 3e9 keys stay under
 * 2^32 cells.
 */
#define BLOOM_FUSE_MAX_KEYS  UINT64_C(3000000000)

struct bloom {
	enum bloom_layout layout;
	uint64_t	 m;		/* bits */
	uint32_t	 k;		/* probes per key */
	uint64_t	 seed;		/* XXH3 seed */
	uint64_t	 nblocks;	/* BLOOM_BLOCKED only: m / 512 */
	uint32_t	 seglog;	/* BLOOM_FUSE only: log2 segment length */
	uint64_t	 seglen;	/* BLOOM_FUSE: 2^seglog */
	uint64_t	 span;		/* BLOOM_FUSE: cells a first probe spans */
	unsigned char	*bits;		/* nbytes = bloom_nbytes(m) */
	size_t		 nbytes;
	bool		 owned;		/* bits freed by bloom_free() */
};

/* One XXH3-128 hash of a key; h2 is forced odd so probes never collapse. */
struct bloom_hash {
	uint64_t h1;
	uint64_t h2;
};

/*
 * Classic sizing for n keys at false-positive rate p:
 * m = ceil(-n ln p / (ln 2)^2), k = round(m/n ln 2), at least 1.
 * Returns 0, or -1 when n is 0, p is not in (0, 1), or m would exceed
 * BLOOM_MAX_BITS.
 */
int bloom_size_classic(uint64_t n, double p, uint64_t *m, uint32_t *k);

/*
 * Sizing for a layout. For BLOOM_BLOCKED, m is a multiple of 512 grown
 * until the layout's expected FP rate (bloom_expected_fp) is at most p.
 * For BLOOM_FUSE, m and k = 3 are what bloom_build_fuse() will first try,
 * and p must be at least BLOOM_FUSE_FP. Returns 0, or -1 as
 * bloom_size_classic() and for a fuse target below 2^-8.
 */
int bloom_size(enum bloom_layout layout, uint64_t n, double p, uint64_t *m,
    uint32_t *k);

/*
 * The layout a builder should use for n keys at FP rate p when the
 * operator leaves it open: the fuse layout when it can meet p (p >= 2^-8)
 * and its array is no larger than the blocked layout's, else blocked.
 * At 1 % and 10^5 keys or more that is fuse (smaller, a lower FP rate,
 * faster); at the default 0.1 %, or at 5 %, blocked.
 */
enum bloom_layout bloom_pick_layout(uint64_t n, double p);

/* Expected FP rate of a layout holding n keys in m bits with k probes. */
double bloom_expected_fp(enum bloom_layout layout, uint64_t n, uint64_t m,
    uint32_t k);

/* Bytes in the bit array of an m-bit filter: ceil(m / 8). */
size_t bloom_nbytes(uint64_t m);

/*
 * Creates an empty filter with its own zeroed bit array. Returns 0, or -1
 * when the parameters are invalid (m or k zero or over the caps, a blocked
 * m not a multiple of 512) or memory runs out; b is then left zeroed.
 */
int bloom_init(struct bloom *b, enum bloom_layout layout, uint64_t m,
    uint32_t k, uint64_t seed);

/*
 * Makes b a read-only view over an existing bit array (for example inside
 * an mmap of a filter file). The caller keeps ownership of bits, which must
 * outlive b. seglog is the fuse layout's log2 segment length, 0 for the
 * others. Returns 0, or -1 when the parameters are invalid (a fuse filter
 * needs k = 3, m a multiple of 8 and at least three whole segments of
 * 2^seglog cells, 1 <= seglog <= 18) or nbytes is not bloom_nbytes(m).
 */
int bloom_attach(struct bloom *b, enum bloom_layout layout, uint64_t m,
    uint32_t k, uint32_t seglog, uint64_t seed, const unsigned char *bits,
    size_t nbytes);

/*
 * The key source of bloom_build_fuse(): key i of n, its bytes and length.
 */
typedef const void *(*bloom_key_fn)(void *arg, size_t i, size_t *len);

/*
 * Builds a fuse filter holding the n distinct keys key(arg, 0..n-1). The
 * construction fails for an unlucky seed now and then: it retries with
 * seeds derived from seed (the one used ends in b->seed) and grows the
 * array slightly after repeated failures. Returns 0; -1 when n exceeds
 * BLOOM_FUSE_MAX_KEYS, memory runs out, or no seed works (duplicate keys
 * do that); b is then left zeroed.
 */
int bloom_build_fuse(struct bloom *b, size_t n, uint64_t seed,
    bloom_key_fn key, void *arg);

/* Releases an owned bit array and zeroes b. Safe on a zeroed struct. */
void bloom_free(struct bloom *b);

/*
 * Hashes a key with the filter's seed. This function can't fail. A fuse
 * filter takes its first cell from h1, the other two cells' offsets from
 * bits 1..18 and 21..38 of h2 and the fingerprint from its top byte.
 */
struct bloom_hash bloom_hash(uint64_t seed, const void *key, size_t len);

/* The i-th classic probe: (h1 + i*h2) mod m in 64-bit arithmetic. */
uint64_t bloom_probe(const struct bloom_hash *h, uint32_t i, uint64_t m);

/* Adds a key. The filter must own its bits and not be a fuse filter. */
void bloom_add(struct bloom *b, const void *key, size_t len);
void bloom_add_hash(struct bloom *b, const struct bloom_hash *h);

/*
 * True when every probed bit is set ("possibly present"); false at the
 * first zero bit ("definitely absent"). A fuse filter answers true when
 * the key's three cells XOR to its fingerprint.
 */
bool bloom_query(const struct bloom *b, const void *key, size_t len);
bool bloom_query_hash(const struct bloom *b, const struct bloom_hash *h);

/* Hints the cache line a key's (first) probe will touch. */
void bloom_prefetch(const struct bloom *b, const struct bloom_hash *h);

/*
 * Queries n hashed keys at once (revcheckd's batch checks, through
 * check_keys_tally, and the benchmark): each key's
 * cache lines are hinted a few keys before they are read, so the misses
 * of successive keys overlap. out[i] is set to bloom_query_hash(b, &h[i])
 * for every i < n. This function can't fail.
 */
void bloom_query_many(const struct bloom *b, const struct bloom_hash *h,
    size_t n, bool *out);

/*
 * Set bits, set bits / m, and the FP rate that fill implies (fill^k; for a
 * fuse filter the fixed 2^-8, whatever its fill).
 */
uint64_t bloom_popcount(const struct bloom *b);
double bloom_fill_ratio(const struct bloom *b);
double bloom_estimated_fp(const struct bloom *b);

#endif

/* bloom.h - Bloom filter build and query over a fixed, endian-independent byte layout */
#ifndef REVCHECK_BLOOM_H
#define REVCHECK_BLOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Five layouts share one interface. All set bit i of the array as bit
 * (i % 8) of byte (i / 8), so a filter answers the same on any machine.
 *
 * BLOOM_CLASSIC: k probes (h1 + i*h2) mod m over the whole array.
 * BLOOM_BLOCKED: all k probes of a key fall in one 512-bit (64-byte) block,
 *   chosen from h1; bit positions inside the block come from h2. One cache
 *   miss per query, at the price of a slightly higher FP rate, which the
 *   sizing compensates for.
 * BLOOM_FUSE: not a Bloom filter but a binary fuse filter (Graf and Lemire,
 *   "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022) behind
 *   the same interface: an array of w-bit fingerprints (4 <= w <= 16), cell
 *   i in bits i*w .. i*w+w-1 of the array, cut into segments of 2^seglog
 *   cells; a key's three cells lie in three consecutive segments and the
 *   key is "possibly present" when their XOR equals its fingerprint. FP
 *   rate 2^-w at about 1.13 w bits per key from 10^6 keys on (a Bloom
 *   filter needs 1.44 log2(1/p)), three cache lines per query, no false
 *   negatives. A cell is read with one unaligned 64-bit load and a shift;
 *   BLOOM_FUSE_PAD zero bytes after the cells keep that load inside the
 *   array. It is built once from all keys (bloom_build_fuse), never added
 *   to. Its keys are hashed with XXH3-64 (bloom_hash), half the work of
 *   the XXH3-128 of the other layouts: a fuse lookup is mostly its hash.
 * BLOOM_FUSE128: the same filter with keys hashed by XXH3-128, what
 *   filterbuild wrote as "fuse" before BLOOM_FUSE. Files of this layout
 *   are still read; bloom_build_fuse128 remains for the tests that write
 *   such files. The layout byte is what tells the two hashes apart: a
 *   reader that took one for the other would miss present keys.
 * BLOOM_FUSE8: the first fuse layout, byte cells (w = 8, no padding,
 *   XXH3-128). Files of this layout are still read (bloom_build_fuse8
 *   remains for the tests).
 */
enum bloom_layout {
	BLOOM_CLASSIC = 1,
	BLOOM_BLOCKED = 2,
	BLOOM_FUSE8 = 3,
	BLOOM_FUSE128 = 4,
	BLOOM_FUSE = 5,
};

/* True for the layouts of packed w-bit cells: BLOOM_FUSE, BLOOM_FUSE128. */
bool bloom_fuse_packed(enum bloom_layout layout);

/* "classic", "blocked", "fuse8", "fuse128", "fuse" or "unknown". */
const char *bloom_layout_name(enum bloom_layout layout);

#define BLOOM_BLOCK_BITS 512u
#define BLOOM_MAX_BITS   (UINT64_C(1) << 40)	/* 128 GiB of bits: a hard cap */
#define BLOOM_MAX_K      64u
#define BLOOM_FUSE_ARITY 3u		/* cells per key: the k of a fuse filter */
#define BLOOM_FUSE8_FP	 (1.0 / 256.0)	/* BLOOM_FUSE8: 8-bit fingerprints */
#define BLOOM_FUSE_MIN_WIDTH 4u		/* BLOOM_FUSE fingerprint bits ... */
#define BLOOM_FUSE_MAX_WIDTH 16u	/* ... from 4 to 16 */
#define BLOOM_FUSE_MIN_FP (1.0 / 65536.0)	/* the lowest target: 2^-16 */
#define BLOOM_FUSE_PAD	 8u		/* zero bytes after packed cells */
#define BLOOM_FUSE_MAX_SEGLOG 18u	/* segments of at most 2^18 cells */
/*
 * Keys and cells are indexed by 32 bits: with the largest size factor a
 * retry can reach (1.125 x 1.2) and whole segments, 3e9 keys stay under
 * 2^32 cells.
 */
#define BLOOM_FUSE_MAX_KEYS  UINT64_C(3000000000)

#define BLOOM_FSEC_WORDS 16u	/* XXH3's 17..128-byte path: 128 bytes */

struct bloom {
	enum bloom_layout layout;
	uint64_t	 m;		/* bits */
	uint32_t	 k;		/* probes per key */
	uint64_t	 seed;		/* XXH3 seed */
	uint64_t	 nblocks;	/* BLOOM_BLOCKED only: m / 512 */
	uint32_t	 seglog;	/* fuse layouts only: log2 segment length */
	uint64_t	 seglen;	/* fuse layouts: 2^seglog */
	uint64_t	 span;		/* fuse layouts: cells a first probe spans */
	uint32_t	 width;		/* fuse layouts: fingerprint bits */
	uint32_t	 fmask;		/* fuse layouts: 2^width - 1 */
	uint64_t	 fsec[BLOOM_FSEC_WORDS];	/* XXH3's secret with
					   the seed folded in (bloomhash.h) */
	unsigned char	*bits;		/* nbytes = bloom_array_len(layout, m) */
	size_t		 nbytes;
	bool		 owned;		/* bits freed by bloom_free() */
};

/*
 * A key's hash: XXH3-128 (XXH3-64 and a remix for BLOOM_FUSE, see
 * bloom_hash); h2 is forced odd so probes never collapse.
 */
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
 * The fingerprint width a BLOOM_FUSE filter needs for FP rate p:
 * ceil(log2(1/p)), at least BLOOM_FUSE_MIN_WIDTH. Between two powers of two
 * the filter is therefore more precise than asked, and larger than
 * 1.125 log2(1/p) bits per key by the rounding (at 0.1 %: w = 10 for
 * log2(1/p) = 9.97). Returns 0 when p is not in (0, 1) or below
 * BLOOM_FUSE_MIN_FP: no width meets it.
 */
uint32_t bloom_fuse_width(double p);

/*
 * Sizing for a layout. For BLOOM_BLOCKED, m is a multiple of 512 grown
 * until the layout's expected FP rate (bloom_expected_fp) is at most p.
 * For BLOOM_FUSE, m (cells times bloom_fuse_width(p)) and k = 3 are what
 * bloom_build_fuse() will first try; for BLOOM_FUSE8, p must be at least
 * BLOOM_FUSE8_FP. Returns 0, or -1 as bloom_size_classic() and for a fuse
 * target no width meets.
 */
int bloom_size(enum bloom_layout layout, uint64_t n, double p, uint64_t *m,
    uint32_t *k);

/*
 * The layout a builder should use for n keys at FP rate p when the
 * operator leaves it open: BLOOM_FUSE when it can meet p (p >= 2^-16) and
 * its array (bloom_array_len) is no larger than the blocked layout's, else
 * blocked. At the default 0.1 % that is fuse from about 100 keys up (at
 * 10^6 keys: 11.3 bits per key against 15.6), at 1 % from about 1,000,
 * at 5 % and 10 % only for large sets (10^6 keys, not 10^4); above about
 * 10 % and below 2^-16, blocked (but for a few tiny sets, where blocked's
 * 512-bit minimum is larger).
 */
enum bloom_layout bloom_pick_layout(uint64_t n, double p);

/*
 * Expected FP rate of a layout holding n keys in m bits with k probes. For
 * BLOOM_FUSE, 2^-w with w the width m implies for n keys at the first
 * shape bloom_size() gives (1.0 when m is no such shape).
 */
double bloom_expected_fp(enum bloom_layout layout, uint64_t n, uint64_t m,
    uint32_t k);

/* Bytes in the bit array of an m-bit filter: ceil(m / 8). */
size_t bloom_nbytes(uint64_t m);

/*
 * Bytes a layout's array takes for m bits: bloom_nbytes(m), plus
 * BLOOM_FUSE_PAD for the packed layouts (BLOOM_FUSE, BLOOM_FUSE128). The
 * filter file stores exactly this.
 */
size_t bloom_array_len(enum bloom_layout layout, uint64_t m);

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
 * outlive b. seglog is the fuse layouts' log2 segment length, width
 * the packed layouts' fingerprint bits; both 0 for the layouts without them
 * (width 0 for BLOOM_FUSE8 too). Returns 0, or -1 when the parameters are
 * invalid (a fuse filter needs k = 3, 1 <= seglog <= 18, m a whole number
 * of cells of w bits (8 for BLOOM_FUSE8, 4..16 packed) forming at
 * least three whole segments of 2^seglog cells, at most 2^32 - 1 cells) or
 * nbytes is not bloom_array_len(layout, m). The padding is not read here:
 * a query masks it out, whatever it holds.
 */
int bloom_attach(struct bloom *b, enum bloom_layout layout, uint64_t m,
    uint32_t k, uint32_t seglog, uint32_t width, uint64_t seed,
    const unsigned char *bits, size_t nbytes);

/*
 * The key source of bloom_build_fuse(): key i of n, its bytes and length.
 */
typedef const void *(*bloom_key_fn)(void *arg, size_t i, size_t *len);

/*
 * Builds a BLOOM_FUSE filter with width-bit fingerprints (FP rate
 * 2^-width) holding the n distinct keys key(arg, 0..n-1). The
 * construction fails for an unlucky seed now and then: it retries with
 * seeds derived from seed (the one used ends in b->seed) and grows the
 * array slightly after repeated failures. Returns 0; -1 when width is not
 * in 4..16, n exceeds BLOOM_FUSE_MAX_KEYS, memory runs out, or no seed
 * works (duplicate keys do that); b is then left zeroed.
 */
int bloom_build_fuse(struct bloom *b, uint32_t width, size_t n,
    uint64_t seed, bloom_key_fn key, void *arg);

/*
 * The same for the BLOOM_FUSE128 layout (XXH3-128) and the BLOOM_FUSE8
 * layout (byte cells, 2^-8), which new filters no longer use; kept so
 * that tests can write such files.
 */
int bloom_build_fuse128(struct bloom *b, uint32_t width, size_t n,
    uint64_t seed, bloom_key_fn key, void *arg);
int bloom_build_fuse8(struct bloom *b, size_t n, uint64_t seed,
    bloom_key_fn key, void *arg);

/* Releases an owned bit array and zeroes b. Safe on a zeroed struct. */
void bloom_free(struct bloom *b);

/*
 * Hashes a key for filter b, with its seed. Every layout but BLOOM_FUSE
 * takes h1 and h2 from XXH3-128; BLOOM_FUSE takes x = XXH3-64, h1 = x and
 * h2 = x * 0x9e3779b97f4a7c15 (mod 2^64), bit 0 set. A hash is only good
 * for the layout it was made for. This function can't fail. A fuse filter
 * takes its first cell from h1, the other two cells' offsets from bits
 * 1..18 and 21..38 of h2 and the fingerprint from its top w bits.
 */
struct bloom_hash bloom_hash(const struct bloom *b, const void *key,
    size_t len);

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
 * Queries n keys at once, hashing each on the way: out[i] is set to
 * bloom_query(b, key[i], len[i]) for every i < n (revcheckd's batch
 * checks, through check_keys_tally, and the benchmark). For the fuse
 * layout one pass hashes a key, hints its three cells' lines (filters over
 * BLOOM_HINT_MIN_BYTES only) and reads
 * the cells of the key BLOOM_AHEAD_FUSE before it, so that one key's
 * hashing overlaps another's loads; hashing all keys first and reading
 * after (bloom_query_many) left the two apart, and cost a quarter more
 * per key where the cells are in cache. Other layouts hash a chunk, then
 * bloom_query_many. This function can't fail.
 */
void bloom_query_keys(const struct bloom *b, const unsigned char *const *key,
    const size_t *len, size_t n, bool *out);

/*
 * Fuse filters larger than this are hinted ahead in bloom_query_many()
 * and bloom_query_keys(); smaller ones are in a core's L2 cache anyway.
 */
#define BLOOM_HINT_MIN_BYTES	(UINT64_C(1) << 20)

/*
 * Set bits, set bits / m, and the FP rate that fill implies (fill^k; for a
 * fuse filter 2^-w, whatever its fill).
 */
uint64_t bloom_popcount(const struct bloom *b);
double bloom_fill_ratio(const struct bloom *b);
double bloom_estimated_fp(const struct bloom *b);

#endif

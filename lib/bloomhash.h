/* bloomhash.h - the key hashes and the one-key query inline, for loops over many keys */
#ifndef REVCHECK_BLOOMHASH_H
#define REVCHECK_BLOOMHASH_H

#include "bloom.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/*
 * The one definition of the key hashes of docs/FORMAT.md section 2.4,
 * inline: lib/bloom.c's bloom_hash() is bloom_hash_inline(). A caller
 * that hashes a batch of keys in a loop (revcheckd's batch checks, the
 * benchmark) saves the call and the XXH3 dispatch per key, about a
 * quarter of a batch lookup whose cells are in cache.
 */

/*
 * BLOOM_FUSE: one XXH3-64, remixed for h2 by a multiplication by an odd
 * constant (a bijection). The first cell comes from the high bits of h1;
 * the cell offsets from bits 1..38 of h2, which depend only on bits 0..38
 * of x; the fingerprint from the top bits of h2, which depend on all of x.
 */
static inline uint64_t
bloom_fuse_h2(uint64_t x)
{
	return (x * UINT64_C(0x9e3779b97f4a7c15)) | 1;
}

/*
 * Bit i of the array is bit i % 64 of the little-endian 64-bit word at byte
 * (i / 64) * 8, the same bit as bit i % 8 of byte i / 8: word loads read the
 * fixed byte layout on any machine. The same holds for a word at any byte
 * offset, which is how BLOOM_FUSE reads its cells.
 */
static inline uint64_t
bloom_load64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/*
 * XXH3-64 of a fuse key for lengths outside 17..128, a call (bloom.c):
 * inlined whole, XXH3's code for every length made the one-key loops it
 * went into slower, not faster, and whether GCC inlined it changed with
 * unrelated code in the same file.
 */
uint64_t bloom_xxh3_64(const void *key, size_t len, uint64_t seed);

/* XXH3-128 of a key of the other layouts outside 17..128 bytes, a call. */
XXH128_hash_t bloom_xxh3_128(const void *key, size_t len, uint64_t seed);

/*
 * XXH3-64's 17..128-byte path (xxhash.h, XXH3_len_17to128_64b), inline,
 * with the seed already folded into the secret: fsec[2i] is the secret's
 * little-endian word 2i plus the seed, fsec[2i + 1] word 2i + 1 minus it
 * (bloom_set_params). Keys of that length (every X.509 key, most token
 * keys) hash with no call, no length dispatch beyond this one and two
 * fewer additions per 16 bytes; every other length takes the call. The
 * result is XXH3_64bits_withSeed's, bit for bit (test_bloom checks every
 * length 0..300 at every alignment).
 */
#define BLOOM_XXH3_PRIME64_1	UINT64_C(0x9E3779B185EBCA87)
#define BLOOM_XXH3_AVALANCHE	UINT64_C(0x165667919E3779F9)

static inline uint64_t
bloom_xxh3_mix16(const unsigned char *in, const uint64_t *fsec)
{
	unsigned __int128 m = (unsigned __int128)(bloom_load64(in) ^ fsec[0]) *
	    (bloom_load64(in + 8) ^ fsec[1]);

	return (uint64_t)m ^ (uint64_t)(m >> 64);
}

static inline uint64_t
bloom_xxh3_avalanche(uint64_t h)
{
	h ^= h >> 37;
	h *= BLOOM_XXH3_AVALANCHE;
	return h ^ (h >> 32);
}

static inline __attribute__((always_inline)) uint64_t
bloom_fuse_xxh3(const struct bloom *b, const void *key, size_t len)
{
	const unsigned char *in = key;
	const uint64_t *s = b->fsec;
	uint64_t acc;

	if (len <= 16 || len > 128)
		return bloom_xxh3_64(key, len, b->seed);
	acc = len * BLOOM_XXH3_PRIME64_1;
	if (len > 32) {
		if (len > 64) {
			if (len > 96) {
				acc += bloom_xxh3_mix16(in + 48, s + 12);
				acc += bloom_xxh3_mix16(in + len - 64, s + 14);
			}
			acc += bloom_xxh3_mix16(in + 32, s + 8);
			acc += bloom_xxh3_mix16(in + len - 48, s + 10);
		}
		acc += bloom_xxh3_mix16(in + 16, s + 4);
		acc += bloom_xxh3_mix16(in + len - 32, s + 6);
	}
	acc += bloom_xxh3_mix16(in, s);
	acc += bloom_xxh3_mix16(in + len - 16, s + 2);
	return bloom_xxh3_avalanche(acc);
}

/* BLOOM_FUSE's key hash: h1 the XXH3-64, h2 its remix. */
static inline __attribute__((always_inline)) struct bloom_hash
bloom_hash_fuse(const struct bloom *b, const void *key, size_t len)
{
	uint64_t x = bloom_fuse_xxh3(b, key, len);
	struct bloom_hash h;

	h.h1 = x;
	h.h2 = bloom_fuse_h2(x);
	return h;
}

/*
 * Every other layout: XXH3-128, h2 forced odd (never 0, never even).
 * Keys of 17..128 bytes take XXH3-128's path for those lengths
 * (XXH3_len_17to128_128b) with the seed folded into b->fsec as above,
 * bit for bit XXH3_128bits_withSeed's (test_bloom); others XXH3 itself.
 * A blocked filter of 10^7 keys misses the cache on every lookup, and
 * fewer instructions a lookup leave room for more lookups' loads in
 * flight (one at a time, present keys: 22.2-22.3 ns against 25.5-26.0,
 * Intel Xeon).
 */
#define BLOOM_XXH3_PRIME64_2	UINT64_C(0xC2B2AE3D27D4EB4F)
#define BLOOM_XXH3_PRIME64_4	UINT64_C(0x85EBCA77C2B2AE63)

/* XXH128_mix32B of xxhash.h, the seed in the secret. */
static inline __attribute__((always_inline)) void
bloom_xxh3_mix32(uint64_t acc[2], const unsigned char *in1,
    const unsigned char *in2, const uint64_t *fsec)
{
	acc[0] += bloom_xxh3_mix16(in1, fsec);
	acc[0] ^= bloom_load64(in2) + bloom_load64(in2 + 8);
	acc[1] += bloom_xxh3_mix16(in2, fsec + 2);
	acc[1] ^= bloom_load64(in1) + bloom_load64(in1 + 8);
}

static inline __attribute__((always_inline)) struct bloom_hash
bloom_hash_xxh128(const struct bloom *b, const void *key, size_t len)
{
	const unsigned char *in = key;
	const uint64_t *s = b->fsec;
	struct bloom_hash h;
	XXH128_hash_t x;
	uint64_t acc[2];

	if (len <= 16 || len > 128) {
		x = bloom_xxh3_128(key, len, b->seed);
		h.h1 = x.low64;
		h.h2 = x.high64 | 1;
		return h;
	}
	acc[0] = len * BLOOM_XXH3_PRIME64_1;
	acc[1] = 0;
	if (len > 32) {
		if (len > 64) {
			if (len > 96)
				bloom_xxh3_mix32(acc, in + 48, in + len - 64,
				    s + 12);
			bloom_xxh3_mix32(acc, in + 32, in + len - 48, s + 8);
		}
		bloom_xxh3_mix32(acc, in + 16, in + len - 32, s + 4);
	}
	bloom_xxh3_mix32(acc, in, in + len - 16, s);
	h.h1 = bloom_xxh3_avalanche(acc[0] + acc[1]);
	h.h2 = (0 - bloom_xxh3_avalanche(acc[0] * BLOOM_XXH3_PRIME64_1 +
	    acc[1] * BLOOM_XXH3_PRIME64_4 +
	    (len - b->seed) * BLOOM_XXH3_PRIME64_2)) | 1;
	return h;
}

/* Exactly bloom_hash(b, key, len). */
static inline struct bloom_hash
bloom_hash_inline(const struct bloom *b, const void *key, size_t len)
{
	if (b->layout == BLOOM_FUSE)
		return bloom_hash_fuse(b, key, len);
	return bloom_hash_xxh128(b, key, len);
}

/*
 * Cell c of a BLOOM_FUSE filter: bits c*w .. c*w+w-1, read with one load
 * of the 8 bytes from byte c*w/8. The shift is at most 7 and w at most 16,
 * so the cell lies inside the word; the last cell's word ends at most 7
 * bytes past the cells, inside the BLOOM_FUSE_PAD bytes of padding.
 */
static inline uint32_t
bloom_fuse_get(const struct bloom *b, uint64_t c)
{
	uint64_t bit = c * b->width;

	return (uint32_t)(bloom_load64(b->bits + (bit >> 3)) >> (bit & 7)) &
	    b->fmask;
}

/*
 * A fuse key's three cells: the first anywhere in the first span cells
 * (a multiply-shift of h1), the second and third at the same offset one
 * and two segments on, each XORed with its own 18 bits of h2. XOR with a
 * value below the segment length keeps a cell inside its aligned segment.
 */
static inline void
bloom_fuse_cells(const struct bloom *b, const struct bloom_hash *h,
    uint64_t c[3])
{
	uint64_t mask = b->seglen - 1;

	c[0] = (uint64_t)(((unsigned __int128)h->h1 * b->span) >> 64);
	c[1] = (c[0] + b->seglen) ^ ((h->h2 >> 1) & mask);
	c[2] = (c[0] + 2 * b->seglen) ^ ((h->h2 >> 21) & mask);
}

/* A key's fingerprint: the top w bits of h2, clear of the cell offsets. */
static inline uint32_t
bloom_fuse_fingerprint(const struct bloom *b, const struct bloom_hash *h)
{
	return (uint32_t)(h->h2 >> (64 - b->width));
}

/* A fuse key is possibly present when its three cells XOR to its fingerprint. */
static inline bool
bloom_query_fuse(const struct bloom *b, const struct bloom_hash *h)
{
	uint64_t c[3];

	bloom_fuse_cells(b, h, c);
	return (bloom_fuse_get(b, c[0]) ^ bloom_fuse_get(b, c[1]) ^
	    bloom_fuse_get(b, c[2])) == bloom_fuse_fingerprint(b, h);
}

/*
 * Keys up to this length take the inline path of bloom_query() and
 * bloom_query_inline(): for the blocked layout XXH3-128's 0..128-byte
 * branches inline, none of its calls for longer input; for the fuse
 * layout the cell reads and, for 17..128-byte keys, the hash
 * (bloom_fuse_xxh3).
 */
#define BLOOM_QUERY_INLINE_MAX	128

/* Golden-ratio multiplier that remixes h2 between blocked probes. */
#define BLOOM_MIX UINT64_C(0x9e3779b97f4a7c15)

/* Index of a key's block: a multiply-shift range reduction of h1. */
static inline uint64_t
bloom_block(const struct bloom *b, const struct bloom_hash *h)
{
	return (uint64_t)(((unsigned __int128)h->h1 * b->nblocks) >> 64);
}

/*
 * The blocked query reads all k bits of its one cache line without a
 * data-dependent branch: an absent key costs no misprediction, so the CPU
 * goes on to the next key's load while this one is in flight.
 */
static inline bool
bloom_query_blocked(const struct bloom *b, const struct bloom_hash *h)
{
	const unsigned char *blk;
	uint64_t x = h->h2, acc = 1;
	uint32_t i, k = b->k;

	/*
	 * Probe position x >> 55 (9 bits, 0..511): word x >> 61, bit
	 * (x >> 55) & 63. Two probes a turn: the loop's own count, test
	 * and branch are a fifth of a probe's instructions, and a lookup
	 * whose block misses the cache goes faster the fewer instructions
	 * it takes (more lookups' loads fit in flight at once).
	 */
	blk = b->bits + bloom_block(b, h) * (BLOOM_BLOCK_BITS / 8);
	for (i = 0; i + 1 < k; i += 2) {
		acc &= bloom_load64(blk + (x >> 61) * 8) >> ((x >> 55) & 63);
		x *= BLOOM_MIX;
		acc &= bloom_load64(blk + (x >> 61) * 8) >> ((x >> 55) & 63);
		x *= BLOOM_MIX;
	}
	if (i < k)
		acc &= bloom_load64(blk + (x >> 61) * 8) >> ((x >> 55) & 63);
	return (acc & 1) != 0;
}

/* bloom_query()'s fast path: b is BLOOM_FUSE, len <= BLOOM_QUERY_INLINE_MAX. */
static inline bool
bloom_query_fuse_key(const struct bloom *b, const void *key, size_t len)
{
	struct bloom_hash h = bloom_hash_fuse(b, key, len);

	return bloom_query_fuse(b, &h);
}

/*
 * Exactly bloom_query(b, key, len), the fuse and blocked layouts' paths
 * inline: a caller that looks up one key after another in a loop
 * (ffile_query(), the benchmark) saves the call and the registers
 * bloom_query() saves for its other paths. Where the cells are in cache
 * that is about a tenth of a lookup; where each lookup misses the cache,
 * fewer instructions per lookup leave room for more lookups' loads in
 * flight at once (a blocked filter of 10^7 keys: 20-22 ns against 24-30
 * ns through the call, docs/BENCHMARKS.md).
 * Keys over BLOOM_QUERY_INLINE_MAX bytes and the classic and old fuse
 * layouts take the call.
 */
static inline bool
bloom_query_inline(const struct bloom *b, const void *key, size_t len)
{
	struct bloom_hash h;

	if (len <= BLOOM_QUERY_INLINE_MAX) {
		if (b->layout == BLOOM_FUSE)
			return bloom_query_fuse_key(b, key, len);
		if (b->layout == BLOOM_BLOCKED) {
			h = bloom_hash_xxh128(b, key, len);
			return bloom_query_blocked(b, &h);
		}
	}
	return bloom_query(b, key, len);
}

#endif

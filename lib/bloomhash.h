/* bloomhash.h - bloom_hash() inline, for the loops that hash many keys before bloom_query_many() */
#ifndef REVCHECK_BLOOMHASH_H
#define REVCHECK_BLOOMHASH_H

#include "bloom.h"

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

static inline struct bloom_hash
bloom_hash_xxh64(uint64_t seed, const void *key, size_t len)
{
	uint64_t x = XXH3_64bits_withSeed(key, len, seed);
	struct bloom_hash h;

	h.h1 = x;
	h.h2 = bloom_fuse_h2(x);
	return h;
}

/* Every other layout: XXH3-128, h2 forced odd (never 0, never even). */
static inline struct bloom_hash
bloom_hash_xxh128(uint64_t seed, const void *key, size_t len)
{
	XXH128_hash_t x = XXH3_128bits_withSeed(key, len, seed);
	struct bloom_hash h;

	h.h1 = x.low64;
	h.h2 = x.high64 | 1;
	return h;
}

/* Exactly bloom_hash(b, key, len). */
static inline struct bloom_hash
bloom_hash_inline(const struct bloom *b, const void *key, size_t len)
{
	if (b->layout == BLOOM_FUSE)
		return bloom_hash_xxh64(b->seed, key, len);
	return bloom_hash_xxh128(b->seed, key, len);
}

#endif

/* bloom.c - Bloom filter build and query over a fixed, endian-independent byte layout */
#include "bloom.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bloomhash.h"
#include "util.h"

/* bloomhash.h's hash of fuse keys outside 17..128 bytes: a call, see there. */
__attribute__((noinline)) uint64_t
bloom_xxh3_64(const void *key, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(key, len, seed);
}

/* The same for the other layouts' XXH3-128. */
XXH128_hash_t
bloom_xxh3_128(const void *key, size_t len, uint64_t seed)
{
	return XXH3_128bits_withSeed(key, len, seed);
}

const char *
bloom_layout_name(enum bloom_layout layout)
{
	switch (layout) {
	case BLOOM_CLASSIC:
		return "classic";
	case BLOOM_BLOCKED:
		return "blocked";
	case BLOOM_FUSE8:
		return "fuse8";
	case BLOOM_FUSE128:
		return "fuse128";
	case BLOOM_FUSE:
		return "fuse";
	}
	return "unknown";
}

size_t
bloom_nbytes(uint64_t m)
{
	return (size_t)((m + 7) / 8);
}

size_t
bloom_array_len(enum bloom_layout layout, uint64_t m)
{
	return bloom_nbytes(m) + (bloom_fuse_packed(layout) ? BLOOM_FUSE_PAD :
	    0);
}

bool
bloom_fuse_packed(enum bloom_layout layout)
{
	return layout == BLOOM_FUSE || layout == BLOOM_FUSE128;
}

static bool
fuse_layout(enum bloom_layout layout)
{
	return bloom_fuse_packed(layout) || layout == BLOOM_FUSE8;
}

uint32_t
bloom_fuse_width(double p)
{
	double w;

	if (!(p > 0.0 && p < 1.0) || p < BLOOM_FUSE_MIN_FP)
		return 0;
	/* log2 of a power of two is exact: 2^-w itself gets w. */
	w = ceil(-log2(p));
	if (w < BLOOM_FUSE_MIN_WIDTH)
		w = BLOOM_FUSE_MIN_WIDTH;
	if (w > BLOOM_FUSE_MAX_WIDTH)
		return 0;
	return (uint32_t)w;
}

int
bloom_size_classic(uint64_t n, double p, uint64_t *m, uint32_t *k)
{
	double bits, kk;

	if (n == 0 || !(p > 0.0 && p < 1.0))
		return -1;
	bits = ceil(-(double)n * log(p) / (M_LN2 * M_LN2));
	if (!(bits >= 1.0) || bits > (double)BLOOM_MAX_BITS)
		return -1;
	kk = round(bits / (double)n * M_LN2);
	if (kk < 1.0)
		kk = 1.0;
	if (kk > BLOOM_MAX_K)
		kk = BLOOM_MAX_K;
	*m = (uint64_t)bits;
	*k = (uint32_t)kk;
	return 0;
}

/*
 * Blocked filters: the number of keys landing in one block is about
 * Poisson(n / nblocks); a block holding j keys has each bit set with
 * probability 1 - (1 - 1/512)^(k j), and an absent key is a false positive
 * when all k of its probes hit set bits.
 */
static double
blocked_fp(uint64_t n, uint64_t m, uint32_t k)
{
	double lambda, pj, sum = 0.0, q;
	uint64_t j, jmax;

	lambda = (double)n / (double)(m / BLOOM_BLOCK_BITS);
	jmax = (uint64_t)(lambda + 12.0 * sqrt(lambda) + 32.0);
	pj = exp(-lambda);			/* P(0) */
	for (j = 0; j <= jmax; j++) {
		if (j > 0)
			pj *= lambda / (double)j;
		q = 1.0 - pow(1.0 - 1.0 / BLOOM_BLOCK_BITS,
		    (double)k * (double)j);
		sum += pj * pow(q, (double)k);
	}
	return sum;
}

static double fuse_expected_fp(uint64_t n, uint64_t m);

double
bloom_expected_fp(enum bloom_layout layout, uint64_t n, uint64_t m,
    uint32_t k)
{
	if (m == 0 || k == 0)
		return 1.0;
	if (layout == BLOOM_FUSE8)
		return BLOOM_FUSE8_FP;
	if (bloom_fuse_packed(layout))
		return fuse_expected_fp(n, m);
	if (layout == BLOOM_BLOCKED && m >= BLOOM_BLOCK_BITS)
		return blocked_fp(n, m, k);
	return pow(1.0 - exp(-(double)k * (double)n / (double)m), (double)k);
}

/*
 * The shape of a fuse filter for n keys: segments of 2^seglog cells, and
 * enough whole segments (at least three) for n times a size factor. The
 * rules are the ones Graf and Lemire measured for three-wise binary fuse
 * filters: segment length 2^floor(ln n / ln 3.33 + 2.25) capped at 2^18,
 * factor max(1.125, 0.875 + 0.25 ln 10^6 / ln n). Each eight failed seeds
 * (attempt) add 5% to the factor. Only the builder calls this: readers
 * take the shape from the file.
 */
static void
fuse_shape(uint64_t n, unsigned attempt, uint32_t *seglog, uint64_t *cells)
{
	double factor, lg, cap;
	uint64_t seglen, segs;

	if (n < 2) {
		lg = 1.0;
		factor = 1.0;
	} else {
		lg = floor(log((double)n) / log(3.33) + 2.25);
		factor = 0.875 + 0.25 * log(1e6) / log((double)n);
		if (factor < 1.125)
			factor = 1.125;
	}
	if (lg < 1.0)
		lg = 1.0;
	if (lg > BLOOM_FUSE_MAX_SEGLOG)
		lg = BLOOM_FUSE_MAX_SEGLOG;
	factor *= 1.0 + 0.05 * (double)(attempt / 8);
	cap = ceil((double)n * factor);
	seglen = UINT64_C(1) << (unsigned)lg;
	segs = (uint64_t)ceil(cap / (double)seglen);
	if (segs < 3)
		segs = 3;
	*seglog = (uint32_t)lg;
	*cells = segs * seglen;
}

static double
fuse_expected_fp(uint64_t n, uint64_t m)
{
	uint64_t cells;
	uint32_t lg;

	fuse_shape(n, 0, &lg, &cells);
	if (m % cells != 0 || m / cells < BLOOM_FUSE_MIN_WIDTH ||
	    m / cells > BLOOM_FUSE_MAX_WIDTH)
		return 1.0;
	return ldexp(1.0, -(int)(m / cells));
}

int
bloom_size(enum bloom_layout layout, uint64_t n, double p, uint64_t *m,
    uint32_t *k)
{
	uint64_t mm, step;
	uint32_t kk, best_k, kc;
	double fp, best;
	int guard;

	if (bloom_size_classic(n, p, m, k) != 0)
		return -1;
	if (layout == BLOOM_CLASSIC)
		return 0;
	if (fuse_layout(layout)) {
		uint32_t lg, w;
		uint64_t cells;

		w = layout == BLOOM_FUSE8 ? (p < BLOOM_FUSE8_FP ? 0 : 8) :
		    bloom_fuse_width(p);
		if (w == 0 || n > BLOOM_FUSE_MAX_KEYS)
			return -1;
		fuse_shape(n, 0, &lg, &cells);
		*m = cells * w;
		*k = BLOOM_FUSE_ARITY;
		return 0;
	}
	if (layout != BLOOM_BLOCKED)
		return -1;

	/*
	 * Start from the classic size rounded up to whole blocks and grow by
	 * about 1% until the best k for that size meets the target.
	 */
	kc = *k;
	mm = (*m + BLOOM_BLOCK_BITS - 1) / BLOOM_BLOCK_BITS * BLOOM_BLOCK_BITS;
	for (guard = 0; guard < 400; guard++) {
		best = 2.0;
		best_k = 1;
		for (kk = 1; kk <= kc + 2 && kk <= BLOOM_MAX_K; kk++) {
			fp = blocked_fp(n, mm, kk);
			if (fp < best) {
				best = fp;
				best_k = kk;
			}
		}
		if (best <= p) {
			*m = mm;
			*k = best_k;
			return 0;
		}
		step = mm / 100 / BLOOM_BLOCK_BITS * BLOOM_BLOCK_BITS;
		if (step < BLOOM_BLOCK_BITS)
			step = BLOOM_BLOCK_BITS;
		if (mm > BLOOM_MAX_BITS - step)
			return -1;
		mm += step;
	}
	return -1;
}

enum bloom_layout
bloom_pick_layout(uint64_t n, double p)
{
	uint64_t mf, mb;
	uint32_t kf, kb;

	if (n == 0)
		n = 1;
	if (bloom_size(BLOOM_FUSE, n, p, &mf, &kf) != 0)
		return BLOOM_BLOCKED;
	if (bloom_size(BLOOM_BLOCKED, n, p, &mb, &kb) != 0)
		return BLOOM_FUSE;
	return bloom_array_len(BLOOM_FUSE, mf) <=
	    bloom_array_len(BLOOM_BLOCKED, mb) ? BLOOM_FUSE : BLOOM_BLOCKED;
}

/*
 * width is the fingerprint width of BLOOM_FUSE (the caller's argument),
 * 0 for every other layout.
 */
static int
bloom_check_params(enum bloom_layout layout, uint64_t m, uint32_t k,
    uint32_t seglog, uint32_t width)
{
	uint64_t cells;
	uint32_t w;

	if (m == 0 || m > BLOOM_MAX_BITS || k == 0 || k > BLOOM_MAX_K)
		return -1;
	if (fuse_layout(layout)) {
		if (layout == BLOOM_FUSE8 ? width != 0 :
		    width < BLOOM_FUSE_MIN_WIDTH || width > BLOOM_FUSE_MAX_WIDTH)
			return -1;
		w = layout == BLOOM_FUSE8 ? 8 : width;
		/* Three whole segments at least; cell indexes fit 32 bits. */
		if (k != BLOOM_FUSE_ARITY || m % w != 0 || seglog < 1 ||
		    seglog > BLOOM_FUSE_MAX_SEGLOG)
			return -1;
		cells = m / w;
		if (cells % (UINT64_C(1) << seglog) != 0 ||
		    cells / (UINT64_C(1) << seglog) < 3 || cells > UINT32_MAX)
			return -1;
		return 0;
	}
	if (seglog != 0 || width != 0)
		return -1;
	if (layout == BLOOM_BLOCKED)
		return m % BLOOM_BLOCK_BITS == 0 ? 0 : -1;
	return layout == BLOOM_CLASSIC ? 0 : -1;
}

/* bloom_fuse_xxh3's secret: XXH3's first 128 bytes with the seed folded in. */
static void
bloom_fold_secret(uint64_t fsec[BLOOM_FSEC_WORDS], uint64_t seed)
{
	const unsigned char *s = (const unsigned char *)XXH3_kSecret;
	unsigned i;

	for (i = 0; i < BLOOM_FSEC_WORDS; i++)
		fsec[i] = i % 2 == 0 ? bloom_load64(s + 8 * i) + seed :
		    bloom_load64(s + 8 * i) - seed;
}

static void
bloom_set_params(struct bloom *b, enum bloom_layout layout, uint64_t m,
    uint32_t k, uint32_t seglog, uint32_t width, uint64_t seed)
{
	b->layout = layout;
	b->m = m;
	b->k = k;
	b->seed = seed;
	b->nblocks = layout == BLOOM_BLOCKED ? m / BLOOM_BLOCK_BITS : 0;
	b->nbytes = bloom_array_len(layout, m);
	if (fuse_layout(layout)) {
		b->width = layout == BLOOM_FUSE8 ? 8 : width;
		b->fmask = (UINT32_C(1) << b->width) - 1;
		b->seglog = seglog;
		b->seglen = UINT64_C(1) << seglog;
		b->span = m / b->width - 2 * b->seglen;
	}
	bloom_fold_secret(b->fsec, seed);
}

/* Cells of a fuse filter. */
static inline uint64_t
fuse_ncells(const struct bloom *b)
{
	return b->m / b->width;
}

int
bloom_init(struct bloom *b, enum bloom_layout layout, uint64_t m, uint32_t k,
    uint64_t seed)
{
	memset(b, 0, sizeof(*b));
	/* A fuse filter comes only whole, from bloom_build_fuse(). */
	if (fuse_layout(layout) || bloom_check_params(layout, m, k, 0, 0) != 0)
		return -1;
	if ((b->bits = calloc(1, bloom_nbytes(m))) == NULL)
		return -1;
	bloom_set_params(b, layout, m, k, 0, 0, seed);
	b->owned = true;
	return 0;
}

int
bloom_attach(struct bloom *b, enum bloom_layout layout, uint64_t m,
    uint32_t k, uint32_t seglog, uint32_t width, uint64_t seed,
    const unsigned char *bits, size_t nbytes)
{
	memset(b, 0, sizeof(*b));
	if (bloom_check_params(layout, m, k, seglog, width) != 0 ||
	    bits == NULL || nbytes != bloom_array_len(layout, m))
		return -1;
	bloom_set_params(b, layout, m, k, seglog, width, seed);
	/* A view never writes: bloom_add() asserts ownership. */
	b->bits = (unsigned char *)(uintptr_t)bits;
	b->owned = false;
	return 0;
}

void
bloom_free(struct bloom *b)
{
	if (b->owned)
		free(b->bits);
	memset(b, 0, sizeof(*b));
}

/* The hashes themselves are in bloomhash.h, inline for batch loops. */
__attribute__((flatten)) struct bloom_hash
bloom_hash(const struct bloom *b, const void *key, size_t len)
{
	return bloom_hash_inline(b, key, len);
}

uint64_t
bloom_probe(const struct bloom_hash *h, uint32_t i, uint64_t m)
{
	unsigned __int128 x;

	/* The exact (h1 + i*h2) mod m, with no wrap of any width. */
	x = (unsigned __int128)h->h1 + (unsigned __int128)i * h->h2;
	return (uint64_t)(x % m);
}

static inline void
bloom_store64(unsigned char *p, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	memcpy(p, &w, 8);
}

/* The line holding cell c of a BLOOM_FUSE filter. */
static inline const unsigned char *
fuse_addr(const struct bloom *b, uint64_t c)
{
	return b->bits + ((c * b->width) >> 3);
}

static inline bool
bloom_query_fuse8(const struct bloom *b, const struct bloom_hash *h)
{
	uint64_t c[3];

	bloom_fuse_cells(b, h, c);
	return (uint32_t)(b->bits[c[0]] ^ b->bits[c[1]] ^ b->bits[c[2]]) ==
	    bloom_fuse_fingerprint(b, h);
}

void
bloom_add_hash(struct bloom *b, const struct bloom_hash *h)
{
	uint64_t pos, step, x;
	unsigned char *blk;
	uint32_t i;

	assert(b->owned);
	/* Setting bits in a fuse filter would lose keys: never. */
	if (fuse_layout(b->layout))
		abort();
	if (b->layout == BLOOM_BLOCKED) {
		blk = b->bits + bloom_block(b, h) * (BLOOM_BLOCK_BITS / 8);
		x = h->h2;
		for (i = 0; i < b->k; i++) {
			pos = x >> 55;		/* 9 bits: 0..511 */
			blk[pos >> 3] |= (unsigned char)(1u << (pos & 7));
			x *= BLOOM_MIX;
		}
		return;
	}
	pos = h->h1 % b->m;
	step = h->h2 % b->m;
	if (step == 0)
		step = 1;
	for (i = 0; i < b->k; i++) {
		b->bits[pos >> 3] |= (unsigned char)(1u << (pos & 7));
		/* pos + step without overflow: both are below m. */
		pos = pos >= b->m - step ? pos - (b->m - step) : pos + step;
	}
}


bool
bloom_query_hash(const struct bloom *b, const struct bloom_hash *h)
{
	uint64_t pos, step;
	uint32_t i;

	if (b->layout == BLOOM_BLOCKED)
		return bloom_query_blocked(b, h);
	if (bloom_fuse_packed(b->layout))
		return bloom_query_fuse(b, h);
	if (b->layout == BLOOM_FUSE8)
		return bloom_query_fuse8(b, h);
	pos = h->h1 % b->m;
	step = h->h2 % b->m;
	if (step == 0)
		step = 1;
	for (i = 0; i < b->k; i++) {
		if ((b->bits[pos >> 3] & (1u << (pos & 7))) == 0)
			return false;
		pos = pos >= b->m - step ? pos - (b->m - step) : pos + step;
	}
	return true;
}

void
bloom_prefetch(const struct bloom *b, const struct bloom_hash *h)
{
	uint64_t c[3];

	if (b->layout == BLOOM_BLOCKED) {
		__builtin_prefetch(b->bits + bloom_block(b, h) *
		    (BLOOM_BLOCK_BITS / 8));
	} else if (bloom_fuse_packed(b->layout)) {
		bloom_fuse_cells(b, h, c);
		__builtin_prefetch(fuse_addr(b, c[0]));
	} else if (b->layout == BLOOM_FUSE8) {
		bloom_fuse_cells(b, h, c);
		__builtin_prefetch(b->bits + c[0]);
	} else {
		__builtin_prefetch(b->bits + ((h->h1 % b->m) >> 3));
	}
}

/*
 * Exact x mod d by multiplication (Lemire, Kaser and Kurz, "Faster
 * remainder by direct computation", 2019): with M = floor((2^128 - 1) / d)
 * + 1, x mod d is the high 64 bits of (M * x mod 2^128) * d, for every
 * 64-bit x and d. One 128-bit division per batch replaces two 64-bit
 * divisions per key.
 */
static inline uint64_t
bloom_fastmod(uint64_t x, unsigned __int128 mm, uint64_t d)
{
	unsigned __int128 low = mm * x;
	unsigned __int128 bot = ((low & UINT64_MAX) * d) >> 64;
	unsigned __int128 top = (low >> 64) * d;

	return (uint64_t)((bot + top) >> 64);
}

/*
 * Prefetch distances of bloom_query_many(): how many keys ahead the lines
 * are hinted. Hinting a whole batch first overruns the CPU's outstanding
 * misses; a pipeline keeps the right number in flight. Measured with a
 * 125 MB filter, where every key misses every cache: blocked 52-60 ns
 * one by one, 23 ns at 16 ahead (26 at 8, 36 at 32); classic 55 ns one
 * by one, 28 ns at 12 ahead (63 at 2, 46 at 4).
 *
 * The hints are written out with __builtin_prefetch here rather than
 * through bloom_prefetch(): GCC infers that bloom_prefetch() has no side
 * effect and deletes calls to it within this file.
 */
#define BLOOM_AHEAD_BLOCKED	16
#define BLOOM_AHEAD_FUSE	8	/* three lines each */
#define BLOOM_AHEAD_CLASSIC	12	/* k lines each */
#define BLOOM_RING		16	/* > BLOOM_AHEAD_CLASSIC, power of 2 */

/* A classic key's first probe and step, and hints for its k lines. */
static inline void
bloom_classic_start(const struct bloom *b, const struct bloom_hash *h,
    unsigned __int128 mm, uint64_t *pos, uint64_t *step)
{
	uint64_t p, st;
	uint32_t t;

	p = bloom_fastmod(h->h1, mm, b->m);
	st = bloom_fastmod(h->h2, mm, b->m);
	if (st == 0)
		st = 1;
	*pos = p;
	*step = st;
	for (t = 0; t < b->k; t++) {
		__builtin_prefetch(b->bits + (p >> 3));
		p = p >= b->m - st ? p - (b->m - st) : p + st;
	}
}

/*
 * BLOOM_FUSE batches: each key's three cells are computed once, as bit
 * positions kept in a ring with its fingerprint until the key is read
 * BLOOM_AHEAD_FUSE keys later, their lines hinted meanwhile. The keys'
 * hashes come from h (bloom_query_many) or are made on the way from key
 * and len (bloom_query_keys: one key's hashing overlaps another's
 * loads); each caller passes constants, so each gets its own loop. The
 * filter's fields are read into locals once: stores to out could alias
 * them for all the compiler knows, and reloading them per key cost as
 * much as the loads themselves.
 *
 * The cells are hinted only when the filter is over BLOOM_HINT_MIN_BYTES:
 * below that its lines are in a core's L2 cache on current servers (1-2
 * MiB) and the three hints only cost issue slots (a 10^6-key filter of
 * 4-bit cells, 565 KB: 7.4-7.5 ns a key without them, 7.6-8.0 with,
 * Intel Xeon). The keys themselves are hinted BLOOM_AHEAD_KEYS ahead: a
 * batch's keys may be anywhere (a benchmark's array of 10^6 keys is 32
 * MB); a key already in cache costs one instruction.
 */
#define BLOOM_AHEAD_KEYS	32

/* The ring's slot for key i: its three cells' bit positions, its fingerprint. */
struct fuse_slot {
	uint64_t	 bit[3];
	uint64_t	 fp;
};

static inline __attribute__((always_inline)) bool
fuse_slot_read(const unsigned char *bits, const struct fuse_slot *sl,
    uint64_t fmask)
{
	uint64_t v;

	v = (bloom_load64(bits + (sl->bit[0] >> 3)) >> (sl->bit[0] & 7)) ^
	    (bloom_load64(bits + (sl->bit[1] >> 3)) >> (sl->bit[1] & 7)) ^
	    (bloom_load64(bits + (sl->bit[2] >> 3)) >> (sl->bit[2] & 7));
	return (v & fmask) == sl->fp;
}

static inline __attribute__((always_inline)) void
fuse_pipeline(const struct bloom *b, const struct bloom_hash *h,
    const unsigned char *const *key, const size_t *len, size_t n, bool *out,
    bool hint)
{
	const unsigned char *bits = b->bits;
	const uint64_t span = b->span, seglen = b->seglen, mask = seglen - 1;
	const uint64_t fmask = b->fmask, w = b->width;
	const unsigned fshift = 64 - b->width;
	struct fuse_slot ring[BLOOM_AHEAD_FUSE], *sl;
	struct bloom_hash k;
	uint64_t c0;
	size_t i;

	for (i = 0; i < n; i++) {
		/* Read key i - AHEAD first: key i takes over its slot. */
		sl = &ring[i % BLOOM_AHEAD_FUSE];
		if (i >= BLOOM_AHEAD_FUSE)
			out[i - BLOOM_AHEAD_FUSE] = fuse_slot_read(bits, sl,
			    fmask);
		if (h == NULL && i + BLOOM_AHEAD_KEYS < n)
			__builtin_prefetch(key[i + BLOOM_AHEAD_KEYS]);
		k = h != NULL ? h[i] : bloom_hash_fuse(b, key[i], len[i]);
		c0 = (uint64_t)(((unsigned __int128)k.h1 * span) >> 64);
		sl->bit[0] = c0 * w;
		sl->bit[1] = ((c0 + seglen) ^ ((k.h2 >> 1) & mask)) * w;
		sl->bit[2] = ((c0 + 2 * seglen) ^ ((k.h2 >> 21) & mask)) * w;
		sl->fp = k.h2 >> fshift;
		if (hint) {
			__builtin_prefetch(bits + (sl->bit[0] >> 3));
			__builtin_prefetch(bits + (sl->bit[1] >> 3));
			__builtin_prefetch(bits + (sl->bit[2] >> 3));
		}
	}
	/* The last AHEAD keys (or all n, if fewer) are still in the ring. */
	for (i = n > BLOOM_AHEAD_FUSE ? n - BLOOM_AHEAD_FUSE : 0; i < n; i++)
		out[i] = fuse_slot_read(bits, &ring[i % BLOOM_AHEAD_FUSE],
		    fmask);
}

static void
fuse_query_many(const struct bloom *b, const struct bloom_hash *h, size_t n,
    bool *out)
{
	if (b->nbytes > BLOOM_HINT_MIN_BYTES)
		fuse_pipeline(b, h, NULL, NULL, n, out, true);
	else
		fuse_pipeline(b, h, NULL, NULL, n, out, false);
}

void
bloom_query_many(const struct bloom *b, const struct bloom_hash *h, size_t n,
    bool *out)
{
	uint64_t pos[BLOOM_RING], step[BLOOM_RING], p, st, acc;
	unsigned __int128 mm;
	size_t i, r;
	uint32_t t;

	if (b->layout == BLOOM_BLOCKED) {
		for (i = 0; i < n && i < BLOOM_AHEAD_BLOCKED; i++)
			__builtin_prefetch(b->bits + bloom_block(b, &h[i]) *
			    (BLOOM_BLOCK_BITS / 8));
		for (i = 0; i < n; i++) {
			if (i + BLOOM_AHEAD_BLOCKED < n)
				__builtin_prefetch(b->bits + bloom_block(b,
				    &h[i + BLOOM_AHEAD_BLOCKED]) *
				    (BLOOM_BLOCK_BITS / 8));
			out[i] = bloom_query_blocked(b, &h[i]);
		}
		return;
	}
	if (bloom_fuse_packed(b->layout)) {
		fuse_query_many(b, h, n, out);
		return;
	}
	if (b->layout == BLOOM_FUSE8) {
		uint64_t c[3];

		for (i = 0; i < n + BLOOM_AHEAD_FUSE; i++) {
			if (i < n) {
				bloom_fuse_cells(b, &h[i], c);
				__builtin_prefetch(b->bits + c[0]);
				__builtin_prefetch(b->bits + c[1]);
				__builtin_prefetch(b->bits + c[2]);
			}
			if (i >= BLOOM_AHEAD_FUSE)
				out[i - BLOOM_AHEAD_FUSE] = bloom_query_fuse8(b,
				    &h[i - BLOOM_AHEAD_FUSE]);
		}
		return;
	}
	/*
	 * Classic: h1 mod m and h2 mod m by multiplication, each key's k
	 * lines hinted BLOOM_AHEAD_CLASSIC keys ahead, its first probe and
	 * step kept in a ring until it is read, without early exit.
	 */
	mm = (~(unsigned __int128)0) / b->m + 1;
	for (i = 0; i < n && i < BLOOM_AHEAD_CLASSIC; i++)
		bloom_classic_start(b, &h[i], mm, &pos[i], &step[i]);
	for (i = 0; i < n; i++) {
		if (i + BLOOM_AHEAD_CLASSIC < n) {
			r = (i + BLOOM_AHEAD_CLASSIC) & (BLOOM_RING - 1);
			bloom_classic_start(b, &h[i + BLOOM_AHEAD_CLASSIC], mm,
			    &pos[r], &step[r]);
		}
		r = i & (BLOOM_RING - 1);
		p = pos[r];
		st = step[r];
		acc = 1;
		for (t = 0; t < b->k; t++) {
			acc &= (uint64_t)(b->bits[p >> 3] >> (p & 7));
			p = p >= b->m - st ? p - (b->m - st) : p + st;
		}
		out[i] = (acc & 1) != 0;
	}
}

/* BLOOM_FUSE keys, hashed on the way (bloom_query_keys). */
static void
fuse_query_keys(const struct bloom *b, const unsigned char *const *key,
    const size_t *len, size_t n, bool *out)
{
	if (b->nbytes > BLOOM_HINT_MIN_BYTES)
		fuse_pipeline(b, NULL, key, len, n, out, true);
	else
		fuse_pipeline(b, NULL, key, len, n, out, false);
}

/* Keys of bloom_query_keys() hashed at a time for bloom_query_many(). */
#define BLOOM_KEYS_CHUNK	64

void
bloom_query_keys(const struct bloom *b, const unsigned char *const *key,
    const size_t *len, size_t n, bool *out)
{
	struct bloom_hash h[BLOOM_KEYS_CHUNK];
	size_t i, j, m;

	if (b->layout == BLOOM_FUSE) {
		fuse_query_keys(b, key, len, n, out);
		return;
	}
	for (i = 0; i < n; i += m) {
		m = n - i < BLOOM_KEYS_CHUNK ? n - i : BLOOM_KEYS_CHUNK;
		for (j = 0; j < m; j++)
			h[j] = bloom_hash_inline(b, key[i + j], len[i + j]);
		bloom_query_many(b, h, m, out + i);
	}
}

__attribute__((flatten)) void
bloom_add(struct bloom *b, const void *key, size_t len)
{
	struct bloom_hash h = bloom_hash(b, key, len);

	bloom_add_hash(b, &h);
}

/* Every other case, out of bloom_query()'s way. */
static __attribute__((noinline, flatten)) bool
bloom_query_other(const struct bloom *b, const void *key, size_t len)
{
	struct bloom_hash h = bloom_hash(b, key, len);

	return bloom_query_hash(b, &h);
}

/*
 * bloomhash.h's bloom_query_inline(), out of line: the layout filterbuild
 * writes, BLOOM_FUSE, with a key of at most 128 bytes (every revcheck key
 * but the longest scopes and ids) first and alone, its hash and three
 * cell reads in one straight path (inlining every layout's query and
 * XXH3's long-input calls cost it about a tenth at 10^6 keys, where
 * lookups overlap as far as their instructions allow).
 */
__attribute__((flatten)) bool
bloom_query(const struct bloom *b, const void *key, size_t len)
{
	if (b->layout != BLOOM_FUSE || len > BLOOM_QUERY_INLINE_MAX)
		return bloom_query_other(b, key, len);
	return bloom_query_fuse_key(b, key, len);
}

uint64_t
bloom_popcount(const struct bloom *b)
{
	uint64_t n = 0, w;
	size_t i = 0;

	for (; i + 8 <= b->nbytes; i += 8) {
		memcpy(&w, b->bits + i, 8);
		n += (uint64_t)__builtin_popcountll(w);
	}
	for (; i < b->nbytes; i++)
		n += (uint64_t)__builtin_popcount(b->bits[i]);
	return n;
}

double
bloom_fill_ratio(const struct bloom *b)
{
	if (b->m == 0)
		return 0.0;
	return (double)bloom_popcount(b) / (double)b->m;
}

double
bloom_estimated_fp(const struct bloom *b)
{
	/* An absent key matches a random w-bit fingerprint: 2^-w. */
	if (fuse_layout(b->layout))
		return ldexp(1.0, -(int)b->width);
	return pow(bloom_fill_ratio(b), (double)b->k);
}

/*
 * Fuse construction by peeling, in the order Graf and Lemire describe.
 * Every cell keeps four times the number of keys that use it plus the XOR
 * of the positions (0, 1 or 2) it has among those keys' three cells, and
 * the XOR of their hashes: a cell with one key holds that key's hash and
 * its place in it, so the key's other two cells follow from the cell
 * alone, with no look-up of the key. Taking the key out of them
 * ("peeling") may leave one of them with one key; cells with one key are
 * kept on a stack, so that cell is peeled next, while its lines are still
 * in cache (a queue worked through the whole array before coming back, and
 * the construction at 10^7 keys took three times as long). A cell is
 * pushed at most once: when it is found with one key at the start, or
 * when its count falls from two to one; counts never rise again, so the
 * stack needs one slot a cell. When every key is peeled, the keys are
 * assigned in the reverse order: each key's peeled cell is still zero
 * then, and is set so that its three cells XOR to its fingerprint. A
 * later key never touches an earlier key's cells again, so every key's
 * equation holds at the end. Whether the keys peel does not depend on
 * the order they are taken in (the set left when none can be is the
 * same), only which of the solutions is found.
 *
 * BLOOM_FUSE derives h2 from h1 (bloom_fuse_h2), so only h1 is kept; the
 * XXH3-128 layouts keep h2 beside it.
 */
struct fuse_work {
	uint64_t	*h1;	/* n hashes in bucket order; then the peel order */
	uint64_t	*h2;	/* the same for h2; NULL for BLOOM_FUSE */
	uint8_t		*count;	/* per cell: 4 * keys | XOR of their positions */
	uint64_t	*x1;	/* per cell: XOR of the keys' h1 ... */
	uint64_t	*x2;	/* ... and h2 (NULL for BLOOM_FUSE) */
	uint32_t	*stack;	/* cells with one key, one slot a cell */
	uint8_t		*pos;	/* n: the peeled cell's place in its key */
};

/* The 4 * keys a count holds at most: 63 keys, else the attempt fails. */
#define FUSE_COUNT_MAX	0xfcu

static void
fuse_work_free(struct fuse_work *w)
{
	free(w->h1);
	free(w->h2);
	free(w->count);
	free(w->x1);
	free(w->x2);
	free(w->stack);
	free(w->pos);
	memset(w, 0, sizeof(*w));
}

/* Key i's hash from w (h1[i], and h2[i] or derived). */
static inline struct bloom_hash
fuse_work_hash(const struct fuse_work *w, size_t i)
{
	struct bloom_hash h;

	h.h1 = w->h1[i];
	h.h2 = w->h2 != NULL ? w->h2[i] : bloom_fuse_h2(h.h1);
	return h;
}

/*
 * Hashes the n keys into w ordered by the top FUSE_SORT_BITS bits of h1,
 * which orders them by their first cell: the keys of one bucket then
 * touch cells in a window of about three segments, so the counts and the
 * XORs are read and written in cache instead of at random over the whole
 * filter. A counting sort that hashes twice, once to count and once to
 * place, rather than keep a second array of hashes. Below FUSE_SORT_MIN
 * keys the arrays fit in cache and the keys keep their order.
 */
#define FUSE_SORT_BITS	12
#define FUSE_SORT_MIN	(1u << 16)

static int
fuse_hash_keys(const struct bloom *b, struct fuse_work *w, size_t n,
    bloom_key_fn key, void *arg)
{
	size_t pos[1u << FUSE_SORT_BITS], end[1u << FUSE_SORT_BITS];
	size_t i, s, klen, at;
	const unsigned shift = 64 - FUSE_SORT_BITS;
	struct bloom_hash x;
	const void *kb;
	unsigned v;

	if (n < FUSE_SORT_MIN) {
		for (i = 0; i < n; i++) {
			kb = key(arg, i, &klen);
			x = bloom_hash(b, kb, klen);
			w->h1[i] = x.h1;
			if (w->h2 != NULL)
				w->h2[i] = x.h2;
		}
		return 0;
	}
	memset(end, 0, sizeof(end));
	for (i = 0; i < n; i++) {
		kb = key(arg, i, &klen);
		end[bloom_hash(b, kb, klen).h1 >> shift]++;
	}
	for (s = 0, v = 0; v < (1u << FUSE_SORT_BITS); v++) {
		pos[v] = s;
		s += end[v];
		end[v] = s;
	}
	for (i = 0; i < n; i++) {
		kb = key(arg, i, &klen);
		x = bloom_hash(b, kb, klen);
		v = (unsigned)(x.h1 >> shift);
		/* A key source that changed between the passes would lose
		 * a key here: refused instead. */
		if (pos[v] == end[v])
			return -1;
		at = pos[v]++;
		w->h1[at] = x.h1;
		if (w->h2 != NULL)
			w->h2[at] = x.h2;
	}
	return 0;
}

/* XORs key h, at place t of its cells, into cell c: adds it or takes it out. */
static inline void
fuse_touch(struct fuse_work *w, uint64_t c, unsigned t,
    const struct bloom_hash *h)
{
	w->count[c] ^= (uint8_t)t;
	w->x1[c] ^= h->h1;
	if (w->x2 != NULL)
		w->x2[c] ^= h->h2;
}

/*
 * One attempt with b's seed and shape: 0 when every key peeled, with the
 * keys' hashes in peel order in w->h1 (and w->h2) and their peeled cells'
 * places in w->pos.
 */
static int
fuse_peel(const struct bloom *b, struct fuse_work *w, size_t n)
{
	uint64_t cells = fuse_ncells(b), c[3], o;
	size_t i, top = 0, npeeled = 0;
	struct bloom_hash h;
	uint32_t cell;
	unsigned j, t;

	memset(w->count, 0, (size_t)cells);
	memset(w->x1, 0, (size_t)cells * sizeof(*w->x1));
	if (w->x2 != NULL)
		memset(w->x2, 0, (size_t)cells * sizeof(*w->x2));
	for (i = 0; i < n; i++) {
		h = fuse_work_hash(w, i);
		bloom_fuse_cells(b, &h, c);
		for (t = 0; t < 3; t++) {
			if (w->count[c[t]] >= FUSE_COUNT_MAX)
				return -1;
			w->count[c[t]] += 4;
			fuse_touch(w, c[t], t, &h);
		}
	}
	for (i = 0; i < (size_t)cells; i++)
		if (w->count[i] >> 2 == 1)
			w->stack[top++] = (uint32_t)i;
	/* w->h1 and w->h2 are free now: the peel order goes there. */
	while (top > 0) {
		cell = w->stack[--top];
		if (w->count[cell] >> 2 != 1)
			continue;	/* emptied since it was pushed */
		j = w->count[cell] & 3;
		h.h1 = w->x1[cell];
		h.h2 = w->x2 != NULL ? w->x2[cell] : bloom_fuse_h2(h.h1);
		bloom_fuse_cells(b, &h, c);
		if (j > 2 || c[j] != cell)
			return -1;	/* cannot be: refuse, never guess */
		w->h1[npeeled] = h.h1;
		if (w->h2 != NULL)
			w->h2[npeeled] = h.h2;
		w->pos[npeeled++] = (uint8_t)j;
		w->count[cell] = 0;
		for (t = 0; t < 3; t++) {
			if (t == j)
				continue;
			o = c[t];
			w->count[o] -= 4;
			fuse_touch(w, o, t, &h);
			if (w->count[o] >> 2 == 1)
				w->stack[top++] = (uint32_t)o;
		}
	}
	return npeeled == n ? 0 : -1;
}

static uint64_t
fuse_next_seed(uint64_t x)
{
	/* splitmix64: a bijection, so successive seeds never repeat early. */
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

#define FUSE_ATTEMPTS 40

/* Sets cell c of an owned BLOOM_FUSE array to v (below 2^w). */
static void
fuse_set(struct bloom *b, uint64_t c, uint32_t v)
{
	uint64_t bit = c * b->width, word;
	unsigned char *p = b->bits + (bit >> 3);

	word = bloom_load64(p);
	word &= ~((uint64_t)b->fmask << (bit & 7));
	word |= (uint64_t)v << (bit & 7);
	bloom_store64(p, word);
}

/*
 * Both fuse layouts: width 8 of BLOOM_FUSE8 is byte cells, any width of
 * BLOOM_FUSE packed cells.
 */
static int
fuse_build(struct bloom *b, enum bloom_layout layout, uint32_t width,
    size_t n, uint64_t seed, bloom_key_fn key, void *arg)
{
	struct fuse_work w;
	struct bloom_hash h;
	uint64_t cells, maxcells, c[3];
	uint32_t seglog, wbits, v;
	unsigned attempt;
	size_t j;
	bool wide = layout != BLOOM_FUSE;

	memset(b, 0, sizeof(*b));
	memset(&w, 0, sizeof(w));
	wbits = layout == BLOOM_FUSE8 ? 8 : width;
	if (n > BLOOM_FUSE_MAX_KEYS)
		return -1;
	/* The largest shape any attempt asks for: the work arrays' size. */
	fuse_shape(n, FUSE_ATTEMPTS - 1, &seglog, &maxcells);
	if (maxcells > UINT32_MAX || maxcells * wbits > BLOOM_MAX_BITS)
		return -1;
	if ((n > 0 && (w.h1 = malloc(n * sizeof(*w.h1))) == NULL) ||
	    (wide && n > 0 && (w.h2 = malloc(n * sizeof(*w.h2))) == NULL) ||
	    (n > 0 && (w.pos = malloc(n)) == NULL) ||
	    (w.count = malloc((size_t)maxcells)) == NULL ||
	    (w.x1 = malloc((size_t)maxcells * sizeof(*w.x1))) == NULL ||
	    (wide && (w.x2 = malloc((size_t)maxcells *
	    sizeof(*w.x2))) == NULL) ||
	    (w.stack = malloc((size_t)maxcells * sizeof(*w.stack))) == NULL)
		goto fail;
	/*
	 * What is written through next is mapped in a batch, not a fault a
	 * page (util_populate): the keys' arrays now, the cells' as far as
	 * an attempt's shape reaches (a later one's larger shape is not
	 * resident until it is tried).
	 */
	util_populate(w.h1, n * sizeof(*w.h1));
	if (w.h2 != NULL)
		util_populate(w.h2, n * sizeof(*w.h2));
	util_populate(w.pos, n);

	for (attempt = 0; attempt < FUSE_ATTEMPTS; attempt++) {
		fuse_shape(n, attempt, &seglog, &cells);
		util_populate(w.count, (size_t)cells);
		util_populate(w.x1, (size_t)cells * sizeof(*w.x1));
		if (w.x2 != NULL)
			util_populate(w.x2, (size_t)cells * sizeof(*w.x2));
		util_populate(w.stack, (size_t)cells * sizeof(*w.stack));
		bloom_set_params(b, layout, cells * wbits, BLOOM_FUSE_ARITY,
		    seglog, width, seed);
		if (fuse_hash_keys(b, &w, n, key, arg) != 0)
			goto fail;
		if (fuse_peel(b, &w, n) == 0)
			break;
		seed = fuse_next_seed(seed);
	}
	if (attempt == FUSE_ATTEMPTS)
		goto fail;

	if ((b->bits = calloc(1, b->nbytes)) == NULL)
		goto fail;
	util_populate(b->bits, b->nbytes);
	b->owned = true;
	for (j = n; j-- > 0;) {
		h = fuse_work_hash(&w, j);
		bloom_fuse_cells(b, &h, c);
		/* The peeled cell is still 0: XORing it in changes nothing. */
		if (layout == BLOOM_FUSE8) {
			b->bits[c[w.pos[j]]] = (unsigned char)(
			    bloom_fuse_fingerprint(b, &h) ^ b->bits[c[0]] ^
			    b->bits[c[1]] ^ b->bits[c[2]]);
			continue;
		}
		v = bloom_fuse_fingerprint(b, &h) ^ bloom_fuse_get(b, c[0]) ^
		    bloom_fuse_get(b, c[1]) ^ bloom_fuse_get(b, c[2]);
		fuse_set(b, c[w.pos[j]], v);
	}
	fuse_work_free(&w);
	return 0;
fail:
	fuse_work_free(&w);
	memset(b, 0, sizeof(*b));
	return -1;
}

/* The packed layouts: a width in 4..16. */
static int
fuse_build_packed(struct bloom *b, enum bloom_layout layout, uint32_t width,
    size_t n, uint64_t seed, bloom_key_fn key, void *arg)
{
	if (width < BLOOM_FUSE_MIN_WIDTH || width > BLOOM_FUSE_MAX_WIDTH) {
		memset(b, 0, sizeof(*b));
		return -1;
	}
	return fuse_build(b, layout, width, n, seed, key, arg);
}

int
bloom_build_fuse(struct bloom *b, uint32_t width, size_t n, uint64_t seed,
    bloom_key_fn key, void *arg)
{
	return fuse_build_packed(b, BLOOM_FUSE, width, n, seed, key, arg);
}

int
bloom_build_fuse128(struct bloom *b, uint32_t width, size_t n, uint64_t seed,
    bloom_key_fn key, void *arg)
{
	return fuse_build_packed(b, BLOOM_FUSE128, width, n, seed, key, arg);
}

int
bloom_build_fuse8(struct bloom *b, size_t n, uint64_t seed, bloom_key_fn key,
    void *arg)
{
	return fuse_build(b, BLOOM_FUSE8, 0, n, seed, key, arg);
}

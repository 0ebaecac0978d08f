/* exact_int.h - the exact layout's query arithmetic, shared by exact.c's build and its lookups */
#ifndef REVCHECK_EXACT_INT_H
#define REVCHECK_EXACT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/*
 * Private to lib/exact.c (split off to keep it under the size limit).
 * Every constant and step here shapes an answer: docs/FORMAT.md section
 * 7.3 is the definition, and a change is a new layout version.
 */
#define EX_BAND			128	/* coefficient bits per key */
#define EX_TAB_ENT		8	/* u32 first block, u8 seed, 3 zero */

/* Per-stage salts of the in-shard mix; the seed byte's multiplier. */
#define EX_SALT1		UINT64_C(0x243f6a8885a308d3)
#define EX_SALT2		UINT64_C(0x13198a2e03707344)
#define EX_SEEDMUL		UINT64_C(0x9e3779b97f4a7c15)
#define EX_SEED_MIX		UINT64_C(0xbf58476d1ce4e5b9)
#define EX_COEF_LO		UINT64_C(0xd6e8feb86659fd93)
#define EX_COEF_HI		UINT64_C(0xa0761d6478bd642f)
#define EX_FP_MUL		UINT64_C(0xe7037ed1a0b428db)

static inline uint64_t
ex_get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint32_t
ex_get32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* murmur3's fmix64: a bijection, every output bit on every input bit. */
static inline uint64_t
ex_fmix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

static inline uint64_t
ex_range(uint64_t x, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

/*
 * One key's equation in a shard of m = 64 * nb rows: start row s in
 * 0..m-128, coefficient c (bit 0 always set), and for stage 1 its w-bit
 * fingerprint.
 */
struct ex_eq {
	uint64_t	s;
	uint64_t	clo, chi;
	uint32_t	fp;
};

static inline __attribute__((always_inline)) void
ex_equation(uint64_t h, uint64_t salt, uint32_t seed, uint64_t nb,
    uint32_t w, struct ex_eq *q)
{
	/*
	 * The mix of h does not wait for the shard's seed (a load). The seed
	 * is XORed in, then mixed again: an XOR alone keeps the differences
	 * between the keys' values, and with them the dependencies that made
	 * the last seed fail.
	 */
	uint64_t t = ex_fmix(h + salt) ^ (seed * EX_SEEDMUL), a;

	t = (t ^ (t >> 32)) * EX_SEED_MIX;
	t ^= t >> 29;
	a = t * EX_COEF_LO;

	q->s = ex_range(t, nb * 64 - (EX_BAND - 1));
	q->clo = a | 1;
	q->chi = (a ^ (a >> 29)) * EX_COEF_HI;
	q->fp = (uint32_t)((t * EX_FP_MUL) >> (64 - w));
}

/*
 * Equation q's coefficient shifted to its start within the three blocks
 * of 64 rows that hold rows s..s+127.
 */
static inline __attribute__((always_inline)) void
ex_coefs(const struct ex_eq *q, uint64_t c[3])
{
	unsigned o = (unsigned)(q->s & 63);

	c[0] = q->clo << o;
	c[1] = o ? (q->chi << o) | (q->clo >> (64 - o)) : q->chi;
	c[2] = o ? q->chi >> (64 - o) : 0;
}

/*
 * The r-bit row of solution sol (blocks of r little-endian words) that
 * equation q selects: bit j is the parity of the coefficient ANDed with
 * column j of rows s..s+127, which lie in blocks s/64 .. s/64+2.
 */
static inline __attribute__((always_inline)) uint32_t
ex_row(const unsigned char *sol, uint32_t r, const struct ex_eq *q)
{
	const unsigned char *b = sol + (q->s >> 6) * r * 8;
	uint64_t c[3], t;
	uint32_t j, out = 0;

	ex_coefs(q, c);
	for (j = 0; j < r; j++) {
		t = (c[0] & ex_get64(b + 8 * j)) ^
		    (c[1] & ex_get64(b + 8 * (r + j))) ^
		    (c[2] & ex_get64(b + 8 * (2 * r + j)));
		out |= (uint32_t)__builtin_parityll(t) << j;
	}
	return out;
}

#if defined(__x86_64__) && defined(__GNUC__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define EX_HAVE_AVX2	1
#define EX_AVX2		__attribute__((always_inline, target("avx2,popcnt")))

/*
 * The parity of each 64-bit lane of x, lane i as bit i: folded to 4
 * bits, then looked up in 0x6996 (bit n is the parity of n).
 */
static inline EX_AVX2 uint32_t
ex_par4(__m256i x)
{
	x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 32));
	x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 16));
	x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 8));
	x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 4));
	x = _mm256_srlv_epi64(_mm256_set1_epi64x(0x6996),
	    _mm256_and_si256(x, _mm256_set1_epi64x(15)));
	return (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(
	    _mm256_slli_epi64(x, 63)));
}

static inline EX_AVX2 uint32_t
ex_par2(__m128i x)
{
	x = _mm_xor_si128(x, _mm_srli_epi64(x, 32));
	x = _mm_xor_si128(x, _mm_srli_epi64(x, 16));
	x = _mm_xor_si128(x, _mm_srli_epi64(x, 8));
	x = _mm_xor_si128(x, _mm_srli_epi64(x, 4));
	x = _mm_srlv_epi64(_mm_set1_epi64x(0x6996),
	    _mm_and_si128(x, _mm_set1_epi64x(15)));
	return (uint32_t)_mm_movemask_pd(_mm_castsi128_pd(
	    _mm_slli_epi64(x, 63)));
}

/* Columns j..j+3 of block word p (the words of rows of one block). */
static inline EX_AVX2 __m256i
ex_load4(const unsigned char *p, __m256i c)
{
	return _mm256_and_si256(c, _mm256_loadu_si256((const void *)p));
}

static inline EX_AVX2 __m128i
ex_load2(const unsigned char *p, __m256i c)
{
	return _mm_and_si128(_mm256_castsi256_si128(c),
	    _mm_loadu_si128((const void *)p));
}

/*
 * ex_row, four columns at a time (then two, then one): the same words
 * read, never a word outside the three blocks, the same bits out. The
 * scalar loop spent three quarters of stage 1 on the columns.
 */
static inline EX_AVX2 uint32_t
ex_row_avx2(const unsigned char *sol, uint32_t r, const struct ex_eq *q)
{
	const unsigned char *b = sol + (q->s >> 6) * r * 8;
	uint64_t c[3], t;
	uint32_t j = 0, out = 0;
	__m256i y0, y1, y2;

	ex_coefs(q, c);
	y0 = _mm256_set1_epi64x((long long)c[0]);
	y1 = _mm256_set1_epi64x((long long)c[1]);
	y2 = _mm256_set1_epi64x((long long)c[2]);
	for (; j + 4 <= r; j += 4)
		out |= ex_par4(_mm256_xor_si256(_mm256_xor_si256(
		    ex_load4(b + 8 * j, y0), ex_load4(b + 8 * (r + j), y1)),
		    ex_load4(b + 8 * (2 * r + j), y2))) << j;
	if (j + 2 <= r) {
		out |= ex_par2(_mm_xor_si128(_mm_xor_si128(
		    ex_load2(b + 8 * j, y0), ex_load2(b + 8 * (r + j), y1)),
		    ex_load2(b + 8 * (2 * r + j), y2))) << j;
		j += 2;
	}
	if (j < r) {
		t = (c[0] & ex_get64(b + 8 * j)) ^
		    (c[1] & ex_get64(b + 8 * (r + j))) ^
		    (c[2] & ex_get64(b + 8 * (2 * r + j)));
		out |= (uint32_t)__builtin_parityll(t) << j;
	}
	return out;
}

#define EX_AVX512	__attribute__((always_inline, \
    target("avx512f,avx512vl,avx512vpopcntdq,avx2,popcnt")))

/*
 * ex_row with AVX-512, eight columns at a time: loads masked to the
 * row's r columns (a masked-off word is neither read nor faulted on),
 * one popcount per column, bit 0 of each to the mask.
 */
static inline EX_AVX512 uint32_t
ex_row_avx512(const unsigned char *sol, uint32_t r, const struct ex_eq *q)
{
	const unsigned char *b = sol + (q->s >> 6) * r * 8;
	uint64_t c[3];
	uint32_t j, out = 0;
	__m512i y0, y1, y2, x;
	__mmask8 m;

	ex_coefs(q, c);
	y0 = _mm512_set1_epi64((long long)c[0]);
	y1 = _mm512_set1_epi64((long long)c[1]);
	y2 = _mm512_set1_epi64((long long)c[2]);
	for (j = 0; j < r; j += 8) {
		m = r - j >= 8 ? 0xff : (__mmask8)((1u << (r - j)) - 1);
		x = _mm512_xor_si512(_mm512_xor_si512(
		    _mm512_maskz_and_epi64(m, y0, _mm512_maskz_loadu_epi64(m,
		    b + 8 * j)),
		    _mm512_maskz_and_epi64(m, y1, _mm512_maskz_loadu_epi64(m,
		    b + 8 * (r + j)))),
		    _mm512_maskz_and_epi64(m, y2, _mm512_maskz_loadu_epi64(m,
		    b + 8 * (2 * r + j))));
		out |= (uint32_t)_mm512_test_epi64_mask(_mm512_popcnt_epi64(x),
		    _mm512_set1_epi64(1)) << j;
	}
	return out;
}
#endif

/*
 * A stage as queried: nsh shards, table tab of nsh + 1 entries (the last
 * one's first block is the total), solution sol with one block of
 * padding after the last (read, masked off, by a start in the last
 * shard's last possible row).
 */
struct ex_stage_view {
	const unsigned char	*tab;
	const unsigned char	*sol;
	uint64_t		 nsh;
	uint32_t		 r;
	uint32_t		 w;	/* fingerprint bits (stage 1) */
	uint64_t		 salt;
};

/*
 * Key hash h's equation in the stage: its shard's table entry, then
 * q; returns the shard's solution (blocks of r words).
 */
static inline __attribute__((always_inline)) const unsigned char *
ex_hit_eq(const struct ex_stage_view *v, uint32_t r, uint64_t h,
    struct ex_eq *q)
{
	const unsigned char *e = v->tab + ex_range(h, v->nsh) * EX_TAB_ENT;
	uint32_t off = ex_get32(e), nb = ex_get32(e + EX_TAB_ENT) - off;

	ex_equation(h, v->salt, e[4], nb, v->w, q);
	return v->sol + (size_t)off * r * 8;
}

/*
 * Whether key hash h passes the stage: its row equals its fingerprint
 * (stage 1, r = w columns) or 1 (stage 2, one column). Inline with r a
 * constant, the column loop unrolls.
 */
static inline __attribute__((always_inline)) bool
ex_hit_r(const struct ex_stage_view *v, uint32_t r, uint64_t h)
{
	struct ex_eq q;
	const unsigned char *sol = ex_hit_eq(v, r, h, &q);

	return ex_row(sol, r, &q) == (r == 1 ? 1u : q.fp);
}

static inline __attribute__((always_inline)) bool
ex_stage_hit_inline(const struct ex_stage_view *v, uint64_t h)
{
	switch (v->r) {
	case 1:
		return ex_hit_r(v, 1, h);
	case 2:
		return ex_hit_r(v, 2, h);
	case 3:
		return ex_hit_r(v, 3, h);
	case 4:
		return ex_hit_r(v, 4, h);
	case 5:
		return ex_hit_r(v, 5, h);
	case 6:
		return ex_hit_r(v, 6, h);
	case 7:
		return ex_hit_r(v, 7, h);
	case 8:
		return ex_hit_r(v, 8, h);
	case 9:
		return ex_hit_r(v, 9, h);
	case 10:
		return ex_hit_r(v, 10, h);
	default:
		return ex_hit_r(v, v->r, h);
	}
}

#ifdef EX_HAVE_AVX2
/* ex_hit_r for r >= 2 with the columns four at a time. */
static inline EX_AVX2 bool
ex_hit_avx2(const struct ex_stage_view *v, uint32_t r, uint64_t h)
{
	struct ex_eq q;
	const unsigned char *sol = ex_hit_eq(v, r, h, &q);

	return ex_row_avx2(sol, r, &q) == q.fp;
}

static inline EX_AVX512 bool
ex_hit_avx512(const struct ex_stage_view *v, uint32_t r, uint64_t h)
{
	struct ex_eq q;
	const unsigned char *sol = ex_hit_eq(v, r, h, &q);

	return ex_row_avx512(sol, r, &q) == q.fp;
}

static inline EX_AVX512 bool
ex_stage_hit_avx512(const struct ex_stage_view *v, uint64_t h)
{
	switch (v->r) {
	case 1:
		return ex_hit_r(v, 1, h);
	case 2:
		return ex_hit_avx512(v, 2, h);
	case 3:
		return ex_hit_avx512(v, 3, h);
	case 4:
		return ex_hit_avx512(v, 4, h);
	case 5:
		return ex_hit_avx512(v, 5, h);
	case 6:
		return ex_hit_avx512(v, 6, h);
	case 7:
		return ex_hit_avx512(v, 7, h);
	case 8:
		return ex_hit_avx512(v, 8, h);
	case 9:
		return ex_hit_avx512(v, 9, h);
	case 10:
		return ex_hit_avx512(v, 10, h);
	default:
		return ex_hit_avx512(v, v->r, h);
	}
}

/* ex_stage_hit_inline for stage 1 (r = w). */
static inline EX_AVX2 bool
ex_stage_hit_avx2(const struct ex_stage_view *v, uint64_t h)
{
	switch (v->r) {
	case 1:
		return ex_hit_r(v, 1, h);
	case 2:
		return ex_hit_avx2(v, 2, h);
	case 3:
		return ex_hit_avx2(v, 3, h);
	case 4:
		return ex_hit_avx2(v, 4, h);
	case 5:
		return ex_hit_avx2(v, 5, h);
	case 6:
		return ex_hit_avx2(v, 6, h);
	case 7:
		return ex_hit_avx2(v, 7, h);
	case 8:
		return ex_hit_avx2(v, 8, h);
	case 9:
		return ex_hit_avx2(v, 9, h);
	case 10:
		return ex_hit_avx2(v, 10, h);
	default:
		return ex_hit_avx2(v, v->r, h);
	}
}
#endif

#endif

/* test_exact.c - the exact two-stage structure: every answer over U, edge shapes, refused blobs, the byte layout */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exact.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define KEY_MAX	48

static uint64_t
mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* Key i of a domain: the revkey bytes "tenant" 0x00 PREFIX-i. */
static size_t
mkkey(unsigned char *out, const char *prefix, uint64_t i)
{
	int n;

	memcpy(out, "tenant", 7);
	n = snprintf((char *)out + 7, KEY_MAX - 7, "%s-%" PRIu64, prefix, i);
	cr_assert(n > 0 && n < KEY_MAX - 7);
	return 7 + (size_t)n;
}

/*
 * A generated stream: keys prefix-i for i in [0, n) that pass keep (or
 * all when keep is NULL), each repeated dup times; fail_at > 0 makes the
 * fail_at-th next() an error (of read fail_rewind only, when set); grow adds that many keys from the second
 * rewind on (a set that changes between reads).
 */
struct gen {
	const char	*prefix;
	uint64_t	 n, i, emitted, rewinds;
	unsigned	 dup, rep;
	bool		(*keep)(uint64_t i);
	uint64_t	 fail_at;
	uint64_t	 fail_rewind;	/* fail only on that read (0: any) */
	uint64_t	 grow;
	unsigned char	 key[KEY_MAX];
};

static int
gen_rewind(void *arg, char *err, size_t errlen)
{
	struct gen *g = arg;

	(void)err;
	(void)errlen;
	g->i = 0;
	g->rep = 0;
	g->emitted = 0;
	g->rewinds++;
	return 0;
}

static int
gen_next(void *arg, const unsigned char **key, size_t *len, char *err,
    size_t errlen)
{
	struct gen *g = arg;
	uint64_t n = g->n + (g->rewinds > 1 ? g->grow : 0);

	if (g->fail_at > 0 && ++g->emitted == g->fail_at &&
	    (g->fail_rewind == 0 || g->fail_rewind == g->rewinds)) {
		snprintf(err, errlen, "test stream failed");
		return -1;
	}
	while (g->i < n && g->keep != NULL && !g->keep(g->i))
		g->i++;
	if (g->i >= n)
		return 0;
	*len = mkkey(g->key, g->prefix, g->i);
	*key = g->key;
	if (++g->rep >= (g->dup ? g->dup : 1)) {
		g->rep = 0;
		g->i++;
	}
	return 1;
}

static struct exact_src
src(struct gen *g)
{
	struct exact_src s = { g, gen_rewind, gen_next };

	return s;
}

static bool
one_in_100(uint64_t i)
{
	return mix(i) % 100 == 0;
}

static bool
one_in_10(uint64_t i)
{
	return mix(i ^ 77) % 10 == 0;
}

static bool
one_in_7(uint64_t i)
{
	return i % 7 == 0;
}

/* Builds R (rev) over U (iss) and attaches; the caller frees *blob. */
static void
build(struct gen *rev, struct gen *iss, uint64_t seed, unsigned char **blob,
    size_t *len, struct exact_stats *st, struct exact *e)
{
	struct exact_src r = src(rev), u = src(iss);
	char err[256];

	cr_assert_eq(exact_build(&r, &u, seed, blob, len, st, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(exact_attach(e, *blob, *len, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(st->bits, (uint64_t)*len * 8);
}

/* Every key prefix-i, i < n, answered as keep(i) says. */
static void
check_all(const struct exact *e, const char *prefix, uint64_t n,
    bool (*keep)(uint64_t))
{
	unsigned char k[KEY_MAX];
	uint64_t i, wrong = 0, first = UINT64_MAX;
	size_t len;
	enum exact_answer want, got;

	for (i = 0; i < n; i++) {
		len = mkkey(k, prefix, i);
		want = keep == NULL || keep(i) ? EXACT_REVOKED : EXACT_NOT_REVOKED;
		got = exact_query(e, k, len);
		if (got != want) {
			wrong++;
			if (first == UINT64_MAX)
				first = i;
		}
	}
	cr_assert_eq(wrong, 0, "%" PRIu64 " of %" PRIu64 " answered wrongly "
	    "(first %s-%" PRIu64 ")", wrong, n, prefix, first);
}

static void
exhaustive(bool (*keep)(uint64_t), uint64_t n, uint32_t want_w,
    bool retried)
{
	struct gen rev = { .prefix = "id", .n = n, .keep = keep };
	struct gen iss = { .prefix = "id", .n = n };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob, k[KEY_MAX];
	uint64_t i, pos = 0;
	size_t len;

	build(&rev, &iss, 1, &blob, &len, &st, &e);
	cr_assert_eq(st.issued, n);
	cr_assert_eq(st.revoked_not_issued, 0);
	cr_assert_eq(st.w, want_w);
	cr_assert_eq(e.w, want_w);
	cr_assert_eq(e.issued, n);
	cr_assert_eq(e.revoked, st.revoked);
	cr_assert_gt(st.stage2_keys, st.revoked);
	/*
	 * Shards that needed another seed byte (each about 2 in 3 at 1.5 %
	 * over the keys) answer as right as the others.
	 */
	if (retried)
		cr_assert_gt(st.seed_retries, 0);
	/* Every id of U, revoked and not. */
	for (i = 0; i < n; i++)
		if (keep(i))
			pos++;
	cr_assert_eq(st.revoked, pos);
	check_all(&e, "id", n, keep);
	/*
	 * Keys outside U are never revoked here; a revoked answer for one
	 * is a stage-1-and-2 false positive, rare (a key of U \ R is never
	 * one, so the rate is about 2^-w times stage 2's 1/2).
	 */
	for (i = 0, pos = 0; i < n; i++) {
		len = mkkey(k, "other", i);
		pos += exact_query(&e, k, len) == EXACT_REVOKED;
	}
	cr_assert_lt((double)pos, 3.0 * (double)n / (double)(1u << want_w),
	    "%" PRIu64 " revoked answers outside U", pos);
	free(blob);
}

Test(exact, every_id_of_a_million_answered_right_at_1_percent, .timeout = 120)
{
	exhaustive(one_in_100, 1000000, 6, false);
}

Test(exact, every_id_of_a_million_answered_right_at_10_percent, .timeout = 120)
{
	exhaustive(one_in_10, 1000000, 3, true);
}

/* 1 in width_mod revoked: |U \ R| / |R| = width_mod - 1. */
static uint64_t width_mod;

static bool
one_in_width_mod(uint64_t i)
{
	return i % width_mod == 0;
}

/*
 * Every fingerprint width through 13, 40 revoked ids each, with every
 * query this CPU runs (REVCHECK_EXACT_ISA caps it at attach): stage 1's
 * columns eight at a time under a mask (AVX-512), four, two and one at
 * a time (AVX2) or one by one, unrolled for w up to 10 and looped
 * beyond; every way answers as the build solved.
 */
Test(exact, every_width_answered_right, .timeout = 240)
{
	static const char *const isa[] = { "plain", "popcnt", "avx2", NULL };
	uint32_t w;
	size_t i;

	for (i = 0; i < sizeof(isa) / sizeof(isa[0]); i++) {
		if (isa[i] != NULL)
			cr_assert_eq(setenv("REVCHECK_EXACT_ISA", isa[i], 1), 0);
		else
			cr_assert_eq(unsetenv("REVCHECK_EXACT_ISA"), 0);
		for (w = 1; w <= 13; w++) {
			width_mod = (UINT64_C(3) << w) / 2;
			exhaustive(one_in_width_mod, 40 * width_mod, w, false);
		}
	}
}

static bool
none(uint64_t i)
{
	(void)i;
	return false;
}

Test(exact, empty_revoked_set_answers_not_revoked)
{
	struct gen rev = { .prefix = "id", .n = 0 };
	struct gen iss = { .prefix = "id", .n = 1000 };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob;
	size_t len;

	build(&rev, &iss, 3, &blob, &len, &st, &e);
	cr_assert_eq(st.revoked, 0);
	cr_assert_eq(st.issued, 1000);
	cr_assert_eq(st.stage2_keys, 0);
	cr_assert_lt(len, 200);
	check_all(&e, "id", 1000, none);
	free(blob);
}

Test(exact, empty_sets_both)
{
	struct gen rev = { .prefix = "id", .n = 0 };
	struct gen iss = { .prefix = "id", .n = 0 };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob;
	size_t len;

	build(&rev, &iss, 3, &blob, &len, &st, &e);
	cr_assert_eq(st.issued, 0);
	check_all(&e, "id", 100, none);
	free(blob);
}

Test(exact, revoked_equal_to_issued_answers_revoked)
{
	struct gen rev = { .prefix = "id", .n = 5000 };
	struct gen iss = { .prefix = "id", .n = 5000 };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob;
	size_t len;

	build(&rev, &iss, 4, &blob, &len, &st, &e);
	cr_assert_eq(st.revoked, 5000);
	cr_assert_eq(st.issued, 5000);
	cr_assert_eq(st.w, 1);
	check_all(&e, "id", 5000, NULL);
	free(blob);
}

static bool
only_42(uint64_t i)
{
	return i == 42;
}

Test(exact, one_revoked_key)
{
	struct gen rev = { .prefix = "id", .n = 100000, .keep = only_42 };
	struct gen iss = { .prefix = "id", .n = 100000 };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob;
	size_t len;

	build(&rev, &iss, 5, &blob, &len, &st, &e);
	cr_assert_eq(st.revoked, 1);
	cr_assert_eq(st.w, 16);		/* floor(log2(99999)) */
	check_all(&e, "id", 100000, only_42);
	free(blob);
}

Test(exact, duplicates_counted_once_and_answered_right)
{
	struct gen rev = { .prefix = "id", .n = 20000, .keep = one_in_10,
	    .dup = 3 };
	struct gen iss = { .prefix = "id", .n = 20000, .dup = 2 };
	struct gen rev1 = { .prefix = "id", .n = 20000, .keep = one_in_10 };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob;
	uint64_t nr = 0, i;
	size_t len;

	for (i = 0; i < 20000; i++)
		nr += one_in_10(i);
	build(&rev, &iss, 6, &blob, &len, &st, &e);
	cr_assert_eq(st.revoked, nr);
	/*
	 * Keys of R are counted once in U too; a key of U \ R listed twice
	 * counts twice (U is never held whole to tell).
	 */
	cr_assert_eq(st.issued, nr + 2 * (20000 - nr));
	check_all(&e, "id", 20000, one_in_10);
	free(blob);
	build(&rev1, &iss, 6, &blob, &len, &st, &e);
	check_all(&e, "id", 20000, one_in_10);
	free(blob);
}

Test(exact, revoked_not_issued_counted_and_answered_revoked)
{
	struct gen rev = { .prefix = "id", .n = 30000, .keep = one_in_10 };
	struct gen iss = { .prefix = "id", .n = 20000 };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob;
	uint64_t out = 0, in = 0, i;
	size_t len;

	for (i = 0; i < 30000; i++) {
		if (one_in_10(i))
			*(i < 20000 ? &in : &out) += 1;
	}
	build(&rev, &iss, 7, &blob, &len, &st, &e);
	cr_assert_eq(st.revoked, in + out);
	cr_assert_eq(st.revoked_not_issued, out);
	cr_assert_eq(st.issued, 20000 + out);
	cr_assert_eq(st.w, exact_width(20000 + out, in + out));
	/* Every key of R, in U or not, revoked; all of U right. */
	check_all(&e, "id", 20000, one_in_10);
	for (i = 20000; i < 30000; i++) {
		unsigned char k[KEY_MAX];
		size_t kl = mkkey(k, "id", i);

		if (one_in_10(i))
			cr_assert_eq(exact_query(&e, k, kl), EXACT_REVOKED,
			    "id-%" PRIu64, i);
	}
	free(blob);
}

Test(exact, stream_errors_and_changes_fail_the_build)
{
	struct gen rev = { .prefix = "id", .n = 1000, .keep = one_in_10 };
	struct gen iss = { .prefix = "id", .n = 1000, .fail_at = 500 };
	struct exact_src r, u;
	struct exact_stats st;
	unsigned char *blob = NULL;
	size_t len;
	char err[256] = "";

	r = src(&rev);
	u = src(&iss);
	cr_assert_eq(exact_build(&r, &u, 1, &blob, &len, &st, err,
	    sizeof(err)), -1);
	cr_assert_str_eq(err, "test stream failed");
	iss.fail_at = 0;
	iss.grow = 10;
	iss.rewinds = 0;
	cr_assert_eq(exact_build(&r, &u, 1, &blob, &len, &st, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "changed between") != NULL, "%s", err);
	rev.fail_at = 3;
	iss.grow = 0;
	cr_assert_eq(exact_build(&r, &u, 1, &blob, &len, &st, err,
	    sizeof(err)), -1);
	cr_assert_null(blob);
}

/* U large enough to be read on two threads: errors and changes still fail it. */
Test(exact, large_issued_stream_errors_fail_the_build, .timeout = 60)
{
	struct gen rev = { .prefix = "id", .n = 200000, .keep = one_in_10 };
	struct gen iss = { .prefix = "id", .n = 200000, .fail_at = 150000,
	    .fail_rewind = 2 };
	struct exact_src r = src(&rev), u = src(&iss);
	struct exact_stats st;
	unsigned char *blob = NULL;
	size_t len;
	char err[256] = "";

	cr_assert_eq(exact_build(&r, &u, 1, &blob, &len, &st, err,
	    sizeof(err)), -1);
	cr_assert_str_eq(err, "test stream failed");
	cr_assert_null(blob);
	iss.fail_at = 0;
	iss.rewinds = 0;
	iss.grow = 1;
	cr_assert_eq(exact_build(&r, &u, 1, &blob, &len, &st, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "changed between") != NULL, "%s", err);
	cr_assert_null(blob);
}

/* ------------------------------------------------------------ refused blobs */

/* A small valid blob: R = ids i % 7 == 0 of 3000. */
static unsigned char *
small_blob(size_t *len)
{
	struct gen rev = { .prefix = "id", .n = 3000, .keep = one_in_7 };
	struct gen iss = { .prefix = "id", .n = 3000 };
	struct exact_stats st;
	struct exact e;
	unsigned char *blob;

	build(&rev, &iss, 9, &blob, len, &st, &e);
	return blob;
}

static void
put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The checksum made right again, so that the field checks are what refuses. */
static void
resum(unsigned char *p, size_t len)
{
	put64(p + len - 8, XXH3_64bits(p, len - 8));
}

static void
refused(unsigned char *p, size_t len, const char *what, const char *errpart)
{
	struct exact e;
	char err[256] = "";

	cr_assert_eq(exact_attach(&e, p, len, err, sizeof(err)), -1,
	    "%s accepted", what);
	if (errpart != NULL)
		cr_assert(strstr(err, errpart) != NULL, "%s: \"%s\"", what, err);
	/* A refused view answers revoked: fail closed. */
	cr_assert_eq(exact_query(&e, "x", 1), EXACT_REVOKED);
}

Test(exact, truncated_blobs_refused)
{
	unsigned char *blob, *c;
	size_t len, n;

	blob = small_blob(&len);
	for (n = 0; n < len; n++) {
		cr_assert_not_null(c = malloc(n ? n : 1));
		memcpy(c, blob, n);
		refused(c, n, "truncated", NULL);
		free(c);
	}
	cr_assert_not_null(c = malloc(len + 8));
	memcpy(c, blob, len);
	memset(c + len, 0, 8);
	refused(c, len + 8, "lengthened", NULL);
	free(c);
	free(blob);
}

Test(exact, every_flipped_bit_refused)
{
	unsigned char *blob;
	size_t len, i;
	int bit;

	blob = small_blob(&len);
	for (i = 0; i < len; i++)
		for (bit = 0; bit < 8; bit++) {
			blob[i] ^= (unsigned char)(1u << bit);
			refused(blob, len, "flipped", NULL);
			blob[i] ^= (unsigned char)(1u << bit);
		}
	free(blob);
}

/* Header fields changed with the checksum recomputed: the field checks refuse. */
Test(exact, flipped_counts_refused_by_the_field_checks)
{
	static const struct {
		size_t		 off;
		uint64_t	 delta;
		const char	*err;
	} cases[] = {
		{ 16, 1000000, "width" },		/* issued: w changes */
		{ 16, UINT64_C(1) << 40, "counts" },	/* issued over the cap */
		{ 24, 1, "stage 1 keys" },		/* revoked */
		{ 24, UINT64_C(0) - 429, "width" },	/* revoked -> 0 */
		{ 32, 1, "stage 1 keys" },
		{ 40, 1, "bytes where" },		/* stage 1 blocks */
		{ 44, 1, "shard count" },		/* stage 1 shards */
		{ 48, 5000, "stage 2 keys" },
		{ 56, 1, "bytes where" },
		{ 56, UINT64_C(0) - 1, "block count" },
		{ 60, 1, "shard count" },
		{ 64, 100, "shard size" },
		{ 66, 1, "reserved" },
		{ 0, 1, "magic" },
		{ 4, 1, "version" },
		{ 6, 1, "width" },
		{ 7, 1, "band" },
		{ 72, 1, "first block" },		/* stage 1 shard 0 */
		{ 77, 1, "reserved" },
	};
	unsigned char *blob, *c;
	size_t len, i;
	uint64_t v;

	blob = small_blob(&len);
	cr_assert_not_null(c = malloc(len));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(c, blob, len);
		v = get64(c + cases[i].off) + cases[i].delta;
		if (cases[i].off == 40 || cases[i].off == 56 ||
		    cases[i].off == 44 || cases[i].off == 60 ||
		    cases[i].off == 72) {
			/* 32-bit fields: leave the next one alone. */
			v = (get64(c + cases[i].off) & ~UINT64_C(0xffffffff)) |
			    (uint32_t)(get64(c + cases[i].off) + cases[i].delta);
		} else if (cases[i].off == 64 || cases[i].off == 66 ||
		    cases[i].off == 0 || cases[i].off == 4 ||
		    cases[i].off == 6 || cases[i].off == 7 ||
		    cases[i].off == 77) {
			v = (get64(c + cases[i].off) & ~UINT64_C(0xff)) |
			    (uint8_t)(get64(c + cases[i].off) + cases[i].delta);
		}
		put64(c + cases[i].off, v);
		resum(c, len);
		refused(c, len, cases[i].err, cases[i].err);
	}
	free(c);
	free(blob);
}

Test(exact, unattached_view_answers_revoked)
{
	struct exact e;

	memset(&e, 0, sizeof(e));
	cr_assert_eq(exact_query(&e, "id-1", 4), EXACT_REVOKED);
	cr_assert_eq(exact_query_hash(&e, 1), EXACT_REVOKED);
}

/* ------------------------------------------------------------ the byte layout */

static bool
tiny_keep(uint64_t i)
{
	return i % 5 == 0;
}

/*
 * tests/data/exact-tiny.rcx is the blob of a fixed input: the bytes may
 * not change without a new version (docs/FORMAT.md section 7). After a
 * deliberate change, REVCHECK_GOLDEN_WRITE=1 rewrites it.
 */
Test(exact, golden_blob_of_a_tiny_input)
{
	struct gen rev = { .prefix = "tok", .n = 300, .keep = tiny_keep };
	struct gen iss = { .prefix = "tok", .n = 250 };
	const char *srcdir = getenv("REVCHECK_SRC");
	struct exact_stats st;
	struct exact e;
	unsigned char *blob, *want;
	char path[1024];
	size_t len, n;
	long sz;
	FILE *f;

	build(&rev, &iss, UINT64_C(0x0123456789abcdef), &blob, &len, &st, &e);
	cr_assert_eq(st.revoked, 60);
	cr_assert_eq(st.revoked_not_issued, 10);
	cr_assert_eq(st.issued, 260);
	cr_assert_eq(st.w, 1);		/* floor(log2(200 / 60)) */
	cr_assert(snprintf(path, sizeof(path), "%s/tests/data/exact-tiny.rcx",
	    srcdir ? srcdir : ".") > 0);
	if (getenv("REVCHECK_GOLDEN_WRITE") != NULL) {
		cr_assert_not_null(f = fopen(path, "wb"));
		cr_assert_eq(fwrite(blob, 1, len, f), len);
		cr_assert_eq(fclose(f), 0);
	}
	cr_assert_not_null(f = fopen(path, "rb"), "%s", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	sz = ftell(f);
	rewind(f);
	cr_assert_eq((size_t)sz, len, "golden %ld bytes, built %zu", sz, len);
	cr_assert_not_null(want = malloc(len));
	n = fread(want, 1, len, f);
	fclose(f);
	cr_assert_eq(n, len);
	cr_assert(memcmp(want, blob, len) == 0, "the byte layout changed");
	/* The committed bytes answer: all of U, and R minus U revoked. */
	cr_assert_eq(exact_attach(&e, want, len, NULL, 0), 0);
	check_all(&e, "tok", 250, tiny_keep);
	for (n = 250; n < 300; n += 5) {
		unsigned char k[KEY_MAX];
		size_t kl = mkkey(k, "tok", n);

		cr_assert_eq(exact_query(&e, k, kl), EXACT_REVOKED);
	}
	free(want);
	free(blob);
}

Test(exact, widths_and_bound)
{
	cr_assert_eq(exact_width(100, 1), 6);		/* log2(99) = 6.63 */
	cr_assert_eq(exact_width(1000, 10), 6);
	cr_assert_eq(exact_width(1000, 100), 3);	/* log2(9) */
	cr_assert_eq(exact_width(1001, 1), 9);		/* log2(1000) = 9.97 */
	cr_assert_eq(exact_width(1025, 1), 10);
	cr_assert_eq(exact_width(1026, 1), 10);
	cr_assert_eq(exact_width(10, 10), 1);
	cr_assert_eq(exact_width(10, 0), 1);
	cr_assert_eq(exact_width(5, 9), 1);
	cr_assert_eq(exact_width(EXACT_MAX_KEYS, 1), EXACT_MAX_W);
	/* 10^6 of 10^8: about 8.08 bits per revoked id; 10^5 of 10^6, 4.69. */
	cr_assert(fabs(exact_bound_bits(100000000, 1000000) / 1e6 - 8.08) <
	    0.01);
	cr_assert(fabs(exact_bound_bits(1000000, 100000) / 1e5 - 4.69) < 0.01);
	cr_assert_eq(exact_bound_bits(10, 0), 0.0);
	cr_assert_eq(exact_bound_bits(10, 10), 0.0);
}

/* exact.c - the exact layout's size against the bound, its build time and memory, and its lookups against the fuse layout */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bloom.h"
#include "bloomhash.h"
#include "exact.h"
#include "pair.h"

/*
 * Usage: exact N RATIO [QUERIES]
 *
 * Builds the exact structure for the issued set U of N keys and the
 * revoked set R of its first round(N * RATIO), U streamed (each key made
 * when read, never a list of N), then, unless QUERIES is 0, times
 * QUERIES (default 10^6; at most |R| and |U \ R|) lookups one at a time
 * of keys of R (present) and as many of U \ R (absent) through exact_query, and the same keys
 * through the fuse layout built over R at p = 0.001 (today's layout for
 * the scope, bloom_query_inline as ffile_query calls it). Prints one line:
 *
 *   exact n=N revoked=K ratio=RATIO w=W bytes=B bits_per_revoked=X
 *     bound_per_revoked=Y to_bound=Z stage1_bits=.. stage2_bits=..
 *     stage2_keys=.. seed_retries=.. build_s=S cpu_s=C maxrss_kb=M
 *     [absent_ns=.. present_ns=.. fuse_absent_ns=.. fuse_present_ns=..
 *     fuse_bits_per_revoked=.. wrong=..]
 *
 * build_s is the build's wall time, cpu_s the CPU time it took (user and
 * system: on a shared machine the wall time also counts the time other
 * processes had the CPU); maxrss_kb is the process's peak RSS right after
 * the build (before any query key exists). The *_ns are the best of
 * 2 x REPS passes, interleaved, in wall ns per lookup. Keys are what a real check hashes: "default" 0x00
 * "tok-" and 16 hex digits. wrong counts lookups answered wrongly (a key
 * of R not revoked or a key of U \ R revoked): always 0.
 */

#define KEY_LEN		28
#define KEY_SLOT	32
#define REPS		5

static uint64_t
splitmix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static void
make_key(unsigned char *out, uint64_t i)
{
	static const char hexd[] = "0123456789abcdef";
	uint64_t v = splitmix64(i);
	int j;

	memcpy(out, "default", 8);
	memcpy(out + 8, "tok-", 4);
	for (j = 15; j >= 0; j--) {
		out[12 + j] = (unsigned char)hexd[v & 15];
		v >>= 4;
	}
}

struct gen {
	uint64_t	 i, n;
	unsigned char	 key[KEY_SLOT];
};

static int
gen_rewind(void *arg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	((struct gen *)arg)->i = 0;
	return 0;
}

static int
gen_next(void *arg, const unsigned char **key, size_t *len, char *err,
    size_t errlen)
{
	struct gen *g = arg;

	(void)err;
	(void)errlen;
	if (g->i == g->n)
		return 0;
	make_key(g->key, g->i++);
	*key = g->key;
	*len = KEY_LEN;
	return 1;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned char *
make_keys(uint64_t from, uint64_t n)
{
	unsigned char *buf = calloc(n ? n : 1, KEY_SLOT);
	uint64_t i;

	if (buf == NULL) {
		fprintf(stderr, "exact: out of memory for %" PRIu64 " keys\n", n);
		exit(1);
	}
	for (i = 0; i < n; i++)
		make_key(buf + i * KEY_SLOT, from + i);
	return buf;
}

static volatile size_t key_len = KEY_LEN;

static __attribute__((noinline)) uint64_t
run_exact(const struct exact *e, const unsigned char *keys, uint64_t q)
{
	uint64_t i, hits = 0;
	size_t len = key_len;

	for (i = 0; i < q; i++) {
		if (i + 32 < q)
			__builtin_prefetch(keys + (i + 32) * KEY_SLOT);
		hits += exact_query(e, keys + i * KEY_SLOT, len) ==
		    EXACT_REVOKED;
	}
	return hits;
}

static __attribute__((noinline)) uint64_t
run_fuse(const struct bloom *b, const unsigned char *keys, uint64_t q)
{
	uint64_t i, hits = 0;
	size_t len = key_len;

	for (i = 0; i < q; i++) {
		if (i + 32 < q)
			__builtin_prefetch(keys + (i + 32) * KEY_SLOT);
		hits += bloom_query_inline(b, keys + i * KEY_SLOT, len);
	}
	return hits;
}

static const unsigned char *fuse_keys;

static const void *
fuse_key(void *arg, size_t i, size_t *len)
{
	(void)arg;
	*len = KEY_LEN;
	return fuse_keys + i * KEY_SLOT;
}

/* Best of REPS passes, in ns per lookup; *hits from the first. */
static double
time_exact(const struct exact *e, const unsigned char *keys, uint64_t q,
    uint64_t *hits)
{
	double best = 0, t0, ns;
	uint64_t h;
	int rep;

	for (rep = 0; rep < REPS; rep++) {
		t0 = now_s();
		h = run_exact(e, keys, q);
		ns = (now_s() - t0) * 1e9 / (double)q;
		if (rep == 0) {
			*hits = h;
			best = ns;
		} else if (ns < best) {
			best = ns;
		}
	}
	return best;
}

static volatile uint64_t sink;

static double
time_fuse(const struct bloom *b, const unsigned char *keys, uint64_t q)
{
	double best = 0, t0, ns;
	int rep;

	for (rep = 0; rep < REPS; rep++) {
		t0 = now_s();
		sink += run_fuse(b, keys, q);
		ns = (now_s() - t0) * 1e9 / (double)q;
		if (rep == 0 || ns < best)
			best = ns;
	}
	return best;
}

/* The lookup fields: exact and fuse over the same keys, interleaved. */
static int
lookups(const struct exact *e, uint64_t n, uint64_t nr, uint64_t q)
{
	unsigned char *present, *absent;
	double ans = 0, pns = 0, fa = 0, fpres = 0, t;
	uint64_t qp = q < nr ? q : nr, qa, h;
	uint64_t wrong = 0;
	struct bloom b;
	char err[256];
	int round;

	/* As many absent keys as present ones: the same walk over memory. */
	qa = qp < n - nr ? qp : n - nr;
	if (qp == 0 || qa == 0)
		return 0;
	present = make_keys(0, qp);
	absent = make_keys(nr, qa);
	fuse_keys = make_keys(0, nr);
	if (pair_filter(&b, BLOOM_FUSE, (size_t)nr, 0, bloom_fuse_width(0.001),
	    UINT64_C(0x5eed), fuse_key, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "exact: fuse: %s\n", err);
		return -1;
	}
	free((void *)fuse_keys);
	for (round = 0; round < 2; round++) {
		t = time_exact(e, absent, qa, &h);
		ans = round == 0 || t < ans ? t : ans;
		wrong += round == 0 ? h : 0;
		t = time_exact(e, present, qp, &h);
		pns = round == 0 || t < pns ? t : pns;
		wrong += round == 0 ? qp - h : 0;
		t = time_fuse(&b, absent, qa);
		fa = round == 0 || t < fa ? t : fa;
		t = time_fuse(&b, present, qp);
		fpres = round == 0 || t < fpres ? t : fpres;
	}
	printf(" absent_ns=%.2f present_ns=%.2f fuse_absent_ns=%.2f "
	    "fuse_present_ns=%.2f fuse_bits_per_revoked=%.3f wrong=%" PRIu64,
	    ans, pns, fa, fpres, (double)b.nbytes * 8.0 / (double)nr, wrong);
	bloom_free(&b);
	free(present);
	free(absent);
	return 0;
}

int
main(int argc, char **argv)
{
	struct gen gu, gr;
	struct exact_src su, sr;
	struct exact_stats st;
	struct exact e;
	struct rusage ru;
	unsigned char *blob;
	uint64_t n, nr, q = 1000000;
	double ratio, t0, build_s;
	size_t len;
	char err[256], *end;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: exact N RATIO [QUERIES]\n");
		return 2;
	}
	n = strtoull(argv[1], &end, 10);
	ratio = strtod(argv[2], NULL);
	if (*end != '\0' || n == 0 || !(ratio >= 0 && ratio <= 1) ||
	    (argc == 4 && (q = strtoull(argv[3], &end, 10), *end != '\0'))) {
		fprintf(stderr, "usage: exact N RATIO [QUERIES]\n");
		return 2;
	}
	nr = (uint64_t)llround((double)n * ratio);
	memset(&gu, 0, sizeof(gu));
	memset(&gr, 0, sizeof(gr));
	gu.n = n;
	gr.n = nr;
	su.arg = &gu;
	su.rewind = gen_rewind;
	su.next = gen_next;
	sr = su;
	sr.arg = &gr;
	t0 = now_s();
	if (exact_build(&sr, &su, UINT64_C(0x5eed), &blob, &len, &st, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "exact: build: %s\n", err);
		return 1;
	}
	build_s = now_s() - t0;
	getrusage(RUSAGE_SELF, &ru);
	if (exact_attach(&e, blob, len, err, sizeof(err)) != 0) {
		fprintf(stderr, "exact: attach: %s\n", err);
		return 1;
	}
	printf("exact n=%" PRIu64 " revoked=%" PRIu64 " ratio=%g w=%u "
	    "bytes=%zu bits_per_revoked=%.3f bound_per_revoked=%.3f "
	    "to_bound=%.4f stage1_bits=%" PRIu64 " stage2_bits=%" PRIu64
	    " stage2_keys=%" PRIu64 " seed_retries=%" PRIu64 " build_s=%.3f "
	    "cpu_s=%.3f maxrss_kb=%ld bits=%" PRIu64 " bound_bits=%.0f", n,
	    st.revoked, ratio, st.w, len,
	    (double)st.bits / (double)(st.revoked ? st.revoked : 1),
	    st.bound_bits / (double)(st.revoked ? st.revoked : 1),
	    st.bound_bits > 0 ? (double)st.bits / st.bound_bits : 0.0,
	    st.stage1_bits, st.stage2_bits, st.stage2_keys, st.seed_retries,
	    build_s, (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	    ru.ru_maxrss, st.bits, st.bound_bits);
	if (q > 0 && lookups(&e, n, nr, q) != 0)
		return 1;
	printf("\n");
	free(blob);
	return 0;
}

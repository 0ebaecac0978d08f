/* lookup.c - in-process filter lookups: revcheck's bloom (classic, blocked, fuse) against libbloom */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloom.h"
#include "bloomhash.h"
#include "lbshim.h"
#include "pair.h"

/*
 * Usage: lookup [N [QUERIES [P]]]
 *
 * Builds each filter from the same N keys, then times QUERIES lookups of
 * absent keys and of present keys (keys generated once, before any timing,
 * the same bytes for every filter). Each key is what a real check hashes:
 * the encoded revkey "default" || 0x00 || id, with a 20-byte token id.
 * Prints one line per variant:
 *
 *   lookup n=N variant=V bytes=B k=K build_s=S absent_ns=A present_ns=P fp=F
 *
 * absent_ns and present_ns are the best of LOOKUP_REPS passes, in ns per
 * lookup; fp is the measured false-positive rate over the absent keys.
 * Variants: libbloom (bloom_check), classic, blocked and fuse
 * (bloomhash.h's bloom_query_inline, as ffile_query() calls it: hash plus
 * query, one key at a time; for classic and blocked it is the call
 * bloom_query), classic-batch, blocked-batch and
 * fuse-batch (the library's batch call bloom_query_keys over BATCH keys,
 * as revcheckd's POST /v1/check batches make it: each key hashed and its
 * cache lines hinted a few keys before they are read, see
 * docs/BENCHMARKS.md). build_s of fuse is the whole construction (hashing and
 * peeling); of the others the adds. The fuse filter has ceil(log2(1/P))-bit
 * fingerprints (7 at the default P = 0.01).
 *
 * Usage: lookup --widths [N [QUERIES]]
 *
 * The fuse layout at every fingerprint width w = 4..16 (target p = 2^-w),
 * and at p = 0.001 (the default --fp-rate: w = 10), against libbloom built
 * for the same p. Prints one line per target:
 *
 *   fusew n=N w=W p=P bytes=B bits_per_key=X ratio=R fp=F fp_queries=Q
 *     fp_rel=E fuse_ns=A fuse_batch_ns=C lb_ns=L fuse_present_ns=..
 *     fuse_batch_present_ns=.. lb_present_ns=.. fuse_call_ns=..
 *     fuse_call_present_ns=.. lb_bytes=.. build_s=S
 *
 * bytes is the whole array (cells and padding); ratio is bits_per_key /
 * log2(1/p); fp is measured over fp_queries absent keys, at least 10^6
 * and 2000 x 2^w (so the count has about 2000 hits: 1 sigma = 2.2 %);
 * fp_rel is fp / 2^-w - 1, the filter's own rate. The *_ns are the best
 * of WIDTH_REPS passes over QUERIES (default 10^6) absent keys, and as
 * many present ones; passes interleave the eight timings of a width.
 * fuse_ns is bloom_query_inline, one key at a time; fuse_call_ns the
 * same lookup through the call bloom_query, for comparison.
 */

#define KEY_LEN		28	/* "default\0" + "tok-" + 16 hex digits */
#define KEY_SLOT	32
#define LOOKUP_REPS	5
#define BATCH		1000

static const char bench_scope[] = "default";

static uint64_t
splitmix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/*
 * Key i of a domain. splitmix64 is a bijection, so present (domain 0) and
 * absent (domain 1) keys never coincide.
 */
static void
make_key(unsigned char *out, uint64_t i, int domain)
{
	static const char hexd[] = "0123456789abcdef";
	uint64_t v = splitmix64(i | ((uint64_t)domain << 63));
	int j;

	memcpy(out, bench_scope, sizeof(bench_scope));	/* with its NUL */
	memcpy(out + 8, "tok-", 4);
	for (j = 15; j >= 0; j--) {
		out[12 + j] = (unsigned char)hexd[v & 15];
		v >>= 4;
	}
}

static unsigned char *
make_keys(uint64_t n, int domain)
{
	unsigned char *buf;
	uint64_t i;

	if ((buf = calloc(n, KEY_SLOT)) == NULL) {
		fprintf(stderr, "lookup: out of memory for %" PRIu64 " keys\n",
		    n);
		exit(1);
	}
	for (i = 0; i < n; i++)
		make_key(buf + i * KEY_SLOT, i, domain);
	return buf;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum variant {
	V_LIBBLOOM,
	V_SINGLE,
	V_CALL,
	V_BATCH,
};

struct target {
	enum variant	 v;
	struct lbshim	*lb;
	struct bloom	*b;
};

/*
 * Each variant's loop is its own function, so that none shares a frame,
 * registers or spills with another's. The key length is read at run time
 * (key_len), as the daemon's is: a constant would let the compiler drop
 * XXH3's length tests from the inline paths, which no real caller can.
 */
static volatile size_t key_len = KEY_LEN;

/*
 * Every one-at-a-time loop, libbloom's too, hints the key KEY_AHEAD
 * places on: a caller looks up a key it has just read or encoded (the
 * daemon's ffile_query), in cache, while this harness walks an array of
 * 10^6-10^7 keys (32-320 MB) that streams from memory, and that walk,
 * not the filter, took up to a third of a fuse lookup of a cached filter
 * (w = 4: 7.9 ns a key without the hint, 6.3-7.2 with; libbloom 24.8
 * and 21.8-23.6). The batch loop needs none: bloom_query_keys hints the
 * keys it is given itself.
 */
#define KEY_AHEAD	32

static inline void
key_ahead(const unsigned char *keys, uint64_t i, uint64_t q)
{
	if (i + KEY_AHEAD < q)
		__builtin_prefetch(keys + (i + KEY_AHEAD) * KEY_SLOT);
}

static __attribute__((noinline)) uint64_t
run_libbloom(struct lbshim *lb, const unsigned char *keys, uint64_t q)
{
	uint64_t i, hits = 0;

	for (i = 0; i < q; i++)
	{
		key_ahead(keys, i, q);
		hits += lbshim_check(lb, keys + i * KEY_SLOT, KEY_LEN) == 1;
	}
	return hits;
}

static __attribute__((noinline)) uint64_t
run_single(const struct bloom *b, const unsigned char *keys, uint64_t q)
{
	uint64_t i, hits = 0;
	size_t len = key_len;

	for (i = 0; i < q; i++) {
		key_ahead(keys, i, q);
		hits += bloom_query_inline(b, keys + i * KEY_SLOT, len);
	}
	return hits;
}

static __attribute__((noinline)) uint64_t
run_call(const struct bloom *b, const unsigned char *keys, uint64_t q)
{
	uint64_t i, hits = 0;
	size_t len = key_len;

	for (i = 0; i < q; i++) {
		key_ahead(keys, i, q);
		hits += bloom_query(b, keys + i * KEY_SLOT, len);
	}
	return hits;
}

static __attribute__((noinline)) uint64_t
run_batch(const struct bloom *b, const unsigned char *keys, uint64_t q)
{
	const unsigned char *kp[BATCH];
	size_t kl[BATCH];
	bool res[BATCH];
	uint64_t i, hits = 0;
	size_t j, nb, len = key_len;

	for (i = 0; i < q; i += nb) {
		nb = q - i < BATCH ? (size_t)(q - i) : BATCH;
		for (j = 0; j < nb; j++) {
			kp[j] = keys + (i + j) * KEY_SLOT;
			kl[j] = len;
		}
		bloom_query_keys(b, kp, kl, nb, res);
		for (j = 0; j < nb; j++)
			hits += res[j];
	}
	return hits;
}

/* Looks up q keys; returns how many answered "possibly present". */
static uint64_t
run_queries(const struct target *t, const unsigned char *keys, uint64_t q)
{
	switch (t->v) {
	case V_LIBBLOOM:
		return run_libbloom(t->lb, keys, q);
	case V_SINGLE:
		return run_single(t->b, keys, q);
	case V_CALL:
		return run_call(t->b, keys, q);
	case V_BATCH:
		return run_batch(t->b, keys, q);
	}
	return 0;
}

static int
parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0)
		return -1;
	*out = v;
	return 0;
}

/* The k with the lowest expected FP rate for n keys in m bits. */
static uint32_t
best_k(enum bloom_layout layout, uint64_t n, uint64_t m)
{
	uint32_t k, best = 1;
	double fp, lowest = 2.0;

	for (k = 1; k <= 24; k++) {
		fp = bloom_expected_fp(layout, n, m, k);
		if (fp < lowest) {
			lowest = fp;
			best = k;
		}
	}
	return best;
}

#define MAX_ROWS 10
#define WIDTH_REPS 15	/* best of 15 passes: the shared host comes in bursts */

struct row {
	const char	*name;
	struct target	 t;
	size_t		 bytes;
	unsigned	 k;
	double		 build_s;
	double		 absent_ns;
	double		 present_ns;
	uint64_t	 fp;
	uint64_t	 tp;
};

static const unsigned char *bench_keys;

/* pair_filter()'s key source: the present keys. */
static const void *
bench_key(void *arg, size_t i, size_t *len)
{
	(void)arg;
	*len = KEY_LEN;
	return bench_keys + i * KEY_SLOT;
}

/*
 * Builds one of our filters from the n present keys with pair_filter(),
 * the step filterbuild uses. fixed_m 0: sized.
 */
static int
build_ours(struct bloom *b, enum bloom_layout layout, uint64_t n, double p,
    uint64_t fixed_m, const unsigned char *present, double *build_s)
{
	uint64_t m = 0;
	uint32_t k = 0;
	char err[256];
	double t0;

	if (layout != BLOOM_FUSE && fixed_m != 0) {
		m = fixed_m;
		k = best_k(layout, n, m);
	} else if (layout != BLOOM_FUSE && bloom_size(layout, n, p, &m,
	    &k) != 0) {
		return -1;
	}
	if (layout == BLOOM_FUSE)
		k = bloom_fuse_width(p);	/* pair_filter's width */
	bench_keys = present;
	t0 = now_s();
	if (pair_filter(b, layout, (size_t)n, m, k, UINT64_C(0x5eed),
	    bench_key, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "lookup: %s\n", err);
		return -1;
	}
	*build_s = now_s() - t0;
	return 0;
}

static void
add_ours(struct row *rows, size_t *nrows, const char *name,
    const char *bname, struct bloom *b, double build_s)
{
	struct row *r;
	int i;

	for (i = 0; i < 2; i++) {
		r = &rows[(*nrows)++];
		memset(r, 0, sizeof(*r));
		r->name = i == 0 ? name : bname;
		r->t.v = i == 0 ? V_SINGLE : V_BATCH;
		r->t.b = b;
		r->bytes = b->nbytes;
		r->k = b->k;
		r->build_s = build_s;
	}
}

#define WIDTH_TARGETS 4

/*
 * The eight timings of one width: fuse one at a time (inline), fuse
 * batched, libbloom and fuse one at a time through the call, over absent
 * then present keys. Passes interleave them, so that a burst of noise
 * from the rest of the machine hits them alike; each keeps its best, in
 * ns per lookup. hits[i] is what pass 0 found.
 */
static void
time_width(const struct target t[WIDTH_TARGETS], const unsigned char *absent,
    uint64_t q, const unsigned char *present, uint64_t qp,
    double best[2 * WIDTH_TARGETS], uint64_t hits[2 * WIDTH_TARGETS])
{
	const unsigned char *keys;
	double t0, ns;
	uint64_t nq, h;
	int rep, i;

	for (rep = 0; rep < WIDTH_REPS; rep++) {
		for (i = 0; i < 2 * WIDTH_TARGETS; i++) {
			keys = i < WIDTH_TARGETS ? absent : present;
			nq = i < WIDTH_TARGETS ? q : qp;
			t0 = now_s();
			h = run_queries(&t[i % WIDTH_TARGETS], keys, nq);
			ns = (now_s() - t0) * 1e9 / (double)nq;
			if (rep == 0) {
				hits[i] = h;
				best[i] = ns;
			} else if (ns < best[i]) {
				best[i] = ns;
			}
		}
	}
}

/*
 * Absent keys of domain 2 that match, out of q, made and hashed BATCH at
 * a time (no array of q keys: at w = 16 q is 1.3 x 10^8).
 */
static uint64_t
count_fp(const struct bloom *b, uint64_t q)
{
	unsigned char kb[BATCH][KEY_SLOT];
	struct bloom_hash h[BATCH];
	bool res[BATCH];
	uint64_t i, fp = 0;
	size_t j, nb;

	for (i = 0; i < q; i += nb) {
		nb = q - i < BATCH ? (size_t)(q - i) : BATCH;
		for (j = 0; j < nb; j++) {
			make_key(kb[j], i + j, 0);
			kb[j][8] = 'f';		/* "fok-": never a present key */
			h[j] = bloom_hash(b, kb[j], KEY_LEN);
		}
		bloom_query_many(b, h, nb, res);
		for (j = 0; j < nb; j++)
			fp += res[j];
	}
	return fp;
}

static int
widths(uint64_t n, uint64_t q)
{
	unsigned char *present, *absent;
	struct target t[WIDTH_TARGETS];
	struct lbshim *lb;
	struct bloom b;
	uint64_t qp = q < n ? q : n, i, hits[2 * WIDTH_TARGETS], fpq, fp;
	double p, t0, build_s, bpk, ns[2 * WIDTH_TARGETS], target;
	char err[256];
	uint32_t w, wi;
	int rc = 0;

	present = make_keys(n, 0);
	absent = make_keys(q, 1);
	bench_keys = present;
	/* w = 4..16 at p = 2^-w, then w = 10 at p = 0.001. */
	for (wi = 4; wi <= 17; wi++) {
		p = wi <= 16 ? ldexp(1.0, -(int)wi) : 0.001;
		w = bloom_fuse_width(p);
		target = ldexp(1.0, -(int)w);
		t0 = now_s();
		if (pair_filter(&b, BLOOM_FUSE, (size_t)n, 0, w,
		    UINT64_C(0x5eed), bench_key, NULL, err, sizeof(err)) != 0) {
			fprintf(stderr, "lookup: fuse w=%u: %s\n", w, err);
			rc = 1;
			continue;
		}
		build_s = now_s() - t0;
		if ((lb = lbshim_new((int)n, p, err, sizeof(err))) == NULL) {
			fprintf(stderr, "lookup: libbloom p=%g: %s\n", p, err);
			bloom_free(&b);
			rc = 1;
			continue;
		}
		for (i = 0; i < n; i++)
			lbshim_add(lb, present + i * KEY_SLOT, KEY_LEN);
		t[0].v = V_SINGLE;
		t[0].b = &b;
		t[0].lb = NULL;
		t[1] = t[0];
		t[1].v = V_BATCH;
		t[2].v = V_LIBBLOOM;
		t[2].lb = lb;
		t[2].b = NULL;
		t[3] = t[0];
		t[3].v = V_CALL;
		time_width(t, absent, q, present, qp, ns, hits);
		if (hits[4] != qp || hits[5] != qp || hits[7] != qp) {
			fprintf(stderr, "lookup: fuse w=%u: %" PRIu64 ", %"
			    PRIu64 " and %" PRIu64 " false negatives\n", w,
			    qp - hits[4], qp - hits[5], qp - hits[7]);
			rc = 1;
		}
		fpq = (uint64_t)(2000.0 / target);
		if (fpq < 1000000)
			fpq = 1000000;
		fp = count_fp(&b, fpq);
		bpk = (double)b.nbytes * 8.0 / (double)n;
		printf("fusew n=%" PRIu64 " w=%u p=%.10g bytes=%zu "
		    "bits_per_key=%.3f ratio=%.4f fp=%.4e fp_queries=%" PRIu64
		    " fp_rel=%+.4f fuse_ns=%.2f fuse_batch_ns=%.2f lb_ns=%.2f "
		    "fuse_present_ns=%.2f fuse_batch_present_ns=%.2f "
		    "lb_present_ns=%.2f fuse_call_ns=%.2f "
		    "fuse_call_present_ns=%.2f lb_bytes=%zu lb_k=%d "
		    "build_s=%.3f\n",
		    n, w, p, b.nbytes, bpk, bpk / -log2(p),
		    (double)fp / (double)fpq, fpq,
		    (double)fp / (double)fpq / target - 1.0, ns[0], ns[1],
		    ns[2], ns[4], ns[5], ns[6], ns[3], ns[7],
		    lbshim_bytes(lb),
		    lbshim_hashes(lb),
		    build_s);
		fflush(stdout);
		lbshim_free(lb);
		bloom_free(&b);
	}
	free(present);
	free(absent);
	return rc;
}

int
main(int argc, char **argv)
{
	uint64_t n = 10000000, q = 0, qp, i, hits;
	double p = 0.01, t0, build_s, ns;
	unsigned char *present, *absent;
	struct bloom bc, bb, bs, bf;
	struct row rows[MAX_ROWS];
	size_t nrows = 0, j;
	struct lbshim *lb;
	char err[256];
	long lb_bits = 0;
	int rc = 0, rep;

	if (argc > 1 && strcmp(argv[1], "--widths") == 0) {
		n = 1000000;
		q = 1000000;
		if ((argc > 2 && parse_u64(argv[2], &n) != 0) ||
		    (argc > 3 && parse_u64(argv[3], &q) != 0) || argc > 4 ||
		    n > INT32_MAX) {
			fprintf(stderr, "usage: lookup --widths [N [QUERIES]]\n");
			return 2;
		}
		return widths(n, q);
	}
	if ((argc > 1 && parse_u64(argv[1], &n) != 0) ||
	    (argc > 2 && parse_u64(argv[2], &q) != 0) ||
	    (argc > 3 && (p = strtod(argv[3], NULL), !(p > 0 && p < 1))) ||
	    argc > 4 || n > INT32_MAX) {
		fprintf(stderr, "usage: lookup [N [QUERIES [P]]]\n");
		return 2;
	}
	if (q == 0)
		q = n < 10000000 ? (n < 2000000 ? 2000000 : n) : 10000000;
	qp = q < n ? q : n;

	present = make_keys(n, 0);
	absent = make_keys(q, 1);
	memset(&bc, 0, sizeof(bc));
	memset(&bb, 0, sizeof(bb));
	memset(&bs, 0, sizeof(bs));
	memset(&bf, 0, sizeof(bf));

	if ((lb = lbshim_new((int)n, p, err, sizeof(err))) == NULL) {
		fprintf(stderr, "lookup: %s (libbloom skipped)\n", err);
		rc = 1;
	} else {
		t0 = now_s();
		for (i = 0; i < n; i++)
			lbshim_add(lb, present + i * KEY_SLOT, KEY_LEN);
		memset(&rows[nrows], 0, sizeof(rows[0]));
		rows[nrows].name = "libbloom";
		rows[nrows].t.v = V_LIBBLOOM;
		rows[nrows].t.lb = lb;
		rows[nrows].bytes = lbshim_bytes(lb);
		rows[nrows].k = (unsigned)lbshim_hashes(lb);
		rows[nrows].build_s = now_s() - t0;
		nrows++;
		lb_bits = lbshim_bits(lb);
	}
	if (build_ours(&bc, BLOOM_CLASSIC, n, p, 0, present, &build_s) == 0)
		add_ours(rows, &nrows, "classic", "classic-batch", &bc,
		    build_s);
	else
		rc = 1;
	if (build_ours(&bb, BLOOM_BLOCKED, n, p, 0, present, &build_s) == 0)
		add_ours(rows, &nrows, "blocked", "blocked-batch", &bb,
		    build_s);
	else
		rc = 1;
	if (build_ours(&bf, BLOOM_FUSE, n, p, 0, present, &build_s) == 0)
		add_ours(rows, &nrows, "fuse", "fuse-batch", &bf, build_s);
	else
		rc = 1;
	/*
	 * The blocked layout again, squeezed into libbloom's memory (whole
	 * blocks, rounded down): its FP rate at equal memory.
	 */
	if (lb_bits >= (long)BLOOM_BLOCK_BITS && build_ours(&bs,
	    BLOOM_BLOCKED, n, p, (uint64_t)lb_bits / BLOOM_BLOCK_BITS *
	    BLOOM_BLOCK_BITS, present, &build_s) == 0)
		add_ours(rows, &nrows, "blocked-samemem",
		    "blocked-samemem-batch", &bs, build_s);

	/*
	 * Passes interleave the variants, so that a burst of noise from
	 * the rest of the machine hits them alike; each keeps its best.
	 */
	for (rep = 0; rep < LOOKUP_REPS; rep++) {
		for (j = 0; j < nrows; j++) {
			t0 = now_s();
			hits = run_queries(&rows[j].t, absent, q);
			ns = (now_s() - t0) * 1e9 / (double)q;
			if (rep == 0 || ns < rows[j].absent_ns)
				rows[j].absent_ns = ns;
			rows[j].fp = hits;
			t0 = now_s();
			hits = run_queries(&rows[j].t, present, qp);
			ns = (now_s() - t0) * 1e9 / (double)qp;
			if (rep == 0 || ns < rows[j].present_ns)
				rows[j].present_ns = ns;
			rows[j].tp = hits;
		}
	}
	for (j = 0; j < nrows; j++) {
		if (rows[j].tp != qp) {
			fprintf(stderr, "lookup: %s: %" PRIu64
			    " false negatives\n", rows[j].name, qp - rows[j].tp);
			rc = 1;
		}
		printf("lookup n=%" PRIu64 " variant=%s bytes=%zu k=%u "
		    "build_s=%.3f absent_ns=%.2f present_ns=%.2f fp=%.6f\n",
		    n, rows[j].name, rows[j].bytes, rows[j].k,
		    rows[j].build_s, rows[j].absent_ns, rows[j].present_ns,
		    (double)rows[j].fp / (double)q);
	}
	lbshim_free(lb);
	bloom_free(&bc);
	bloom_free(&bb);
	bloom_free(&bs);
	bloom_free(&bf);
	free(present);
	free(absent);
	return rc;
}

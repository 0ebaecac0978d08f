/* exact.c - exact answers over a known issued set: two ribbon retrieval stages, sharded, over a fixed byte layout */
#include "exact.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "exact_int.h"

/*
 * Both stages are standard ribbon retrievals (Dillinger and Walzer 2021),
 * 128-bit rows, the solution interleaved in blocks of 64 rows by r
 * columns: a query is r parities over three words. Shards of about
 * 2^EX_SHARD_LOG2 keys are solved alone, each retried with its next seed
 * byte when it does not solve. docs/FORMAT.md section 7 is the layout;
 * every constant below that shapes an answer is part of it.
 */

#define EX_MAGIC		"RCEX"
#define EX_VERSION		2
#define EX_HDR_LEN		72
#define EX_SUM_LEN		8
#define EX_SHARD_LOG2		16
#define EX_SHARD_LOG2_MIN	6
#define EX_SHARD_LOG2_MAX	24
#define EX_BUMP_EVERY		16
#define EX_SEEDS		256
#define EX_HASH_TRIES		4
#define EX_ATTACHED		UINT64_C(0x5243455841435421)	/* priv[15] */

/* Slots per key are 1 + EX_EPS_NUM / EX_EPS_DEN (docs/BENCHMARKS.md). */
#define EX_EPS_NUM		15
#define EX_EPS_DEN		1000

#define EX_VERIFY_SEED		UINT64_C(0x8ebc6af09c88c6e3)

/* priv[] slots of struct exact. */
enum { P_SEED, P_NSH1, P_NSH2, P_TAB1, P_TAB2, P_SOL1, P_SOL2, P_W, P_ISA };

/* priv[P_ISA]: which compiled query the CPU runs (exact_attach asks). */
enum { EX_ISA_PLAIN, EX_ISA_POPCNT, EX_ISA_AVX2, EX_ISA_AVX512 };

static void
ex_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static inline void
ex_put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void
ex_put32(unsigned char *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t
exact_key_hash(uint64_t seed, const void *key, size_t len)
{
	return XXH3_64bits_withSeed(key, len, seed);
}

/*
 * w = floor(log2(notrev / revoked)) clamped to 1..EXACT_MAX_W: the largest
 * w with revoked * 2^w <= notrev.
 */
uint32_t
exact_width(uint64_t issued, uint64_t revoked)
{
	uint64_t notrev;
	uint32_t w = 1;

	if (revoked == 0 || issued <= revoked)
		return 1;
	notrev = issued - revoked;
	while (w < EXACT_MAX_W && (notrev >> (w + 1)) >= revoked)
		w++;
	return w;
}

static uint64_t
ex_nshards(uint64_t keys, uint32_t shard_log2)
{
	return (keys + (UINT64_C(1) << shard_log2) - 1) >> shard_log2;
}

/* ------------------------------------------------------------ solving */

/* One shard's rows during elimination. */
struct ex_solver {
	uint64_t	*clo, *chi;
	uint32_t	*res;
	uint64_t	 cap;	/* rows allocated */
};

static int
ex_solver_reserve(struct ex_solver *sv, uint64_t m)
{
	uint64_t *a, *b;
	uint32_t *c;

	if (m <= sv->cap)
		return 0;
	if ((a = realloc(sv->clo, m * 8)) == NULL)
		return -1;
	sv->clo = a;
	if ((b = realloc(sv->chi, m * 8)) == NULL)
		return -1;
	sv->chi = b;
	if ((c = realloc(sv->res, m * 4)) == NULL)
		return -1;
	sv->res = c;
	sv->cap = m;
	return 0;
}

static void
ex_solver_free(struct ex_solver *sv)
{
	free(sv->clo);
	free(sv->chi);
	free(sv->res);
	memset(sv, 0, sizeof(*sv));
}

/*
 * On-the-fly Gaussian elimination: the row is reduced by the stored rows
 * at its leading position until it lands on a free one. 0 stored or
 * redundant (the same equation again), -1 when it contradicts the rows
 * stored (the shard needs another seed).
 */
static int
ex_insert(struct ex_solver *sv, uint64_t s, uint64_t lo, uint64_t hi,
    uint32_t res)
{
	unsigned tz;

	for (;;) {
		/* A stored row's bit 0 is always set: 0 is a free row. */
		if (sv->clo[s] == 0) {
			sv->clo[s] = lo;
			sv->chi[s] = hi;
			sv->res[s] = res;
			return 0;
		}
		lo ^= sv->clo[s];
		hi ^= sv->chi[s];
		res ^= sv->res[s];
		if (lo == 0) {
			if (hi == 0)
				return res == 0 ? 0 : -1;
			tz = 64 + (unsigned)__builtin_ctzll(hi);
			lo = hi >> (tz - 64);
			hi = 0;
		} else {
			tz = (unsigned)__builtin_ctzll(lo);
			if (tz != 0) {
				lo = (lo >> tz) | (hi << (64 - tz));
				hi >>= tz;
			}
		}
		s += tz;
	}
}

/*
 * Back-substitution from the last row up into the interleaved layout:
 * st[j] holds column j's solution bits of rows i..i+127 (bit k is row
 * i + k); a free row's bit is 0. Block i/64 is written when i reaches a
 * multiple of 64.
 */
static void
ex_backsub(const struct ex_solver *sv, uint64_t m, uint32_t r,
    unsigned char *out)
{
	unsigned __int128 st[EXACT_MAX_W], c;
	uint64_t i, t;
	uint32_t j, bit;

	memset(st, 0, sizeof(st));
	for (i = m; i-- > 0;) {
		c = (unsigned __int128)sv->chi[i] << 64 | sv->clo[i];
		for (j = 0; j < r; j++) {
			st[j] <<= 1;
			if (c == 0)
				continue;
			t = (uint64_t)(c & st[j]) ^
			    (uint64_t)((c & st[j]) >> 64);
			bit = (uint32_t)__builtin_parityll(t) ^
			    ((sv->res[i] >> j) & 1);
			st[j] |= bit;
		}
		if ((i & 63) == 0)
			for (j = 0; j < r; j++)
				ex_put64(out + ((i >> 6) * r + j) * 8,
				    (uint64_t)st[j]);
	}
}

/* A stage being built: its table and solution grow shard by shard. */
struct ex_stage_build {
	uint32_t	 r, w, shard_log2;
	uint64_t	 salt;
	uint64_t	 nkeys, nsh;
	unsigned char	*tab;		/* (nsh + 1) entries */
	unsigned char	*sol;		/* (nblocks + 1) * r words */
	uint64_t	 nblocks;	/* blocks so far */
	uint64_t	 solcap;	/* blocks allocated, padding included */
	uint64_t	 retries;	/* seeds past the first, all shards */
};

static void
ex_stage_free(struct ex_stage_build *b)
{
	free(b->tab);
	free(b->sol);
	b->tab = NULL;
	b->sol = NULL;
}

static uint64_t
ex_blocks_for(uint64_t n)
{
	uint64_t slots = n + (n * EX_EPS_NUM + EX_EPS_DEN - 1) / EX_EPS_DEN;
	uint64_t nb = (slots + 63) / 64;

	return nb < 2 ? 2 : nb;
}

static int
ex_sol_reserve(struct ex_stage_build *b, uint64_t blocks)
{
	uint64_t cap = b->solcap;
	unsigned char *p;

	if (blocks <= cap)
		return 0;
	while (cap < blocks)
		cap = cap < 64 ? 64 : cap + cap / 2;
	if (cap > SIZE_MAX / 8 / b->r)
		return -1;
	if ((p = realloc(b->sol, (size_t)(cap * b->r * 8))) == NULL)
		return -1;
	b->sol = p;
	b->solcap = cap;
	return 0;
}

/* Loads the shard's equations for one seed; -1 when they contradict. */
static int
ex_try_seed(const struct ex_stage_build *b, struct ex_solver *sv, uint64_t nb,
    uint32_t seed, const uint64_t *h1, size_t n1, const uint64_t *h0,
    size_t n0)
{
	struct ex_eq q;
	size_t i;

	memset(sv->clo, 0, nb * 64 * 8);
	memset(sv->chi, 0, nb * 64 * 8);
	for (i = 0; i < n1; i++) {
		ex_equation(h1[i], b->salt, seed, nb, b->w, &q);
		if (ex_insert(sv, q.s, q.clo, q.chi, b->r == 1 ? 1 : q.fp) != 0)
			return -1;
	}
	for (i = 0; i < n0; i++) {
		ex_equation(h0[i], b->salt, seed, nb, b->w, &q);
		if (ex_insert(sv, q.s, q.clo, q.chi, 0) != 0)
			return -1;
	}
	return 0;
}

/* One shard solved: its nb * r words, its seed, seeds that failed. */
struct ex_shard_res {
	unsigned char	*sol;
	uint64_t	 nb, retries;
	uint32_t	 seed;
};

/*
 * Solves one shard: keys h1 answer their fingerprint (stage 1) or 1
 * (stage 2), keys h0 answer 0. 0, -1 out of memory, -2 when no seed
 * solves it. Reads only b's r, w and salt: shards solve on two threads.
 */
static int
ex_solve_one(const struct ex_stage_build *b, struct ex_solver *sv,
    const uint64_t *h1, size_t n1, const uint64_t *h0, size_t n0,
    struct ex_shard_res *res)
{
	uint64_t nb = ex_blocks_for(n1 + n0);
	uint32_t seed;

	for (seed = 0; seed < EX_SEEDS; seed++) {
		if (seed != 0 && seed % EX_BUMP_EVERY == 0)
			nb++;
		if (ex_solver_reserve(sv, nb * 64) != 0)
			return -1;
		if (ex_try_seed(b, sv, nb, seed, h1, n1, h0, n0) == 0)
			break;
		res->retries++;
	}
	if (seed == EX_SEEDS)
		return -2;
	if ((res->sol = malloc((size_t)(nb * b->r * 8))) == NULL)
		return -1;
	ex_backsub(sv, nb * 64, b->r, res->sol);
	res->nb = nb;
	res->seed = seed;
	return 0;
}

/*
 * The shards of a stage, handed out one at a time to two threads; a
 * shard's result depends on its keys alone, so the bytes do not depend
 * on which thread solved it.
 */
struct ex_solve_job {
	const struct ex_stage_build	*b;
	const uint64_t			*h1, *h0;
	const size_t			*a1, *a0;	/* nsh + 1 run bounds */
	struct ex_shard_res		*res;
	pthread_mutex_t			 mu;
	uint64_t			 next;
	int				 rc;	/* -1 memory, -2 a shard */
	uint64_t			 bad;	/* the shard that failed */
};

static void *
ex_solve_work(void *arg)
{
	struct ex_solve_job *j = arg;
	struct ex_solver sv;
	uint64_t sh;
	int rc;

	memset(&sv, 0, sizeof(sv));
	for (;;) {
		pthread_mutex_lock(&j->mu);
		sh = j->next++;
		rc = j->rc;
		pthread_mutex_unlock(&j->mu);
		if (rc != 0 || sh >= j->b->nsh)
			break;
		rc = ex_solve_one(j->b, &sv, j->h1 + j->a1[sh],
		    j->a1[sh + 1] - j->a1[sh], j->h0 + j->a0[sh],
		    j->a0[sh + 1] - j->a0[sh], &j->res[sh]);
		if (rc != 0) {
			pthread_mutex_lock(&j->mu);
			if (j->rc == 0) {
				j->rc = rc;
				j->bad = sh;
			}
			pthread_mutex_unlock(&j->mu);
			break;
		}
	}
	ex_solver_free(&sv);
	return NULL;
}

/* The solved shards, in order, into the stage's table and solution. */
static int
ex_assemble(struct ex_stage_build *b, const struct ex_shard_res *res)
{
	uint64_t sh, total = 0;

	for (sh = 0; sh < b->nsh; sh++)
		total += res[sh].nb;
	if (total > UINT32_MAX - 1 || ex_sol_reserve(b, total + 1) != 0)
		return -1;
	b->nblocks = 0;
	for (sh = 0; sh < b->nsh; sh++) {
		ex_put32(b->tab + sh * EX_TAB_ENT, (uint32_t)b->nblocks);
		b->tab[sh * EX_TAB_ENT + 4] = (unsigned char)res[sh].seed;
		memcpy(b->sol + b->nblocks * b->r * 8, res[sh].sol,
		    (size_t)(res[sh].nb * b->r * 8));
		b->nblocks += res[sh].nb;
		b->retries += res[sh].retries;
	}
	ex_put32(b->tab + b->nsh * EX_TAB_ENT, (uint32_t)b->nblocks);
	/* The block of padding. */
	memset(b->sol + b->nblocks * b->r * 8, 0, (size_t)b->r * 8);
	return 0;
}

/*
 * Builds a stage over sorted hashes: h1 (n1 of them) answer their
 * fingerprint or 1, h0 (n0, stage 2 only) answer 0. A shard's keys are
 * a run of each array (the shard is a monotone function of the hash).
 */
static int
ex_stage_make(struct ex_stage_build *b, const uint64_t *h1, size_t n1,
    const uint64_t *h0, size_t n0, char *err, size_t errlen)
{
	struct ex_solve_job j;
	size_t *a1 = NULL, *a0 = NULL;
	uint64_t sh;
	pthread_t th;
	bool two = false;
	int rc = -1;

	memset(&j, 0, sizeof(j));
	b->nkeys = n1 + n0;
	b->nsh = ex_nshards(b->nkeys, b->shard_log2);
	b->nblocks = 0;
	b->retries = 0;
	if ((b->tab = calloc(b->nsh + 1, EX_TAB_ENT)) == NULL ||
	    (a1 = calloc(b->nsh + 1, sizeof(*a1))) == NULL ||
	    (a0 = calloc(b->nsh + 1, sizeof(*a0))) == NULL ||
	    (j.res = calloc(b->nsh + 1, sizeof(*j.res))) == NULL)
		goto oom;
	for (sh = 0; sh < b->nsh; sh++) {
		for (a1[sh + 1] = a1[sh]; a1[sh + 1] < n1 &&
		    ex_range(h1[a1[sh + 1]], b->nsh) == sh; a1[sh + 1]++)
			;
		for (a0[sh + 1] = a0[sh]; a0[sh + 1] < n0 &&
		    ex_range(h0[a0[sh + 1]], b->nsh) == sh; a0[sh + 1]++)
			;
	}
	j.b = b;
	j.h1 = h1;
	j.h0 = h0;
	j.a1 = a1;
	j.a0 = a0;
	if (pthread_mutex_init(&j.mu, NULL) != 0)
		goto oom;
	two = b->nsh > 1 && pthread_create(&th, NULL, ex_solve_work, &j) == 0;
	(void)ex_solve_work(&j);
	if (two)
		pthread_join(th, NULL);
	pthread_mutex_destroy(&j.mu);
	if (j.rc == -2) {
		ex_err(err, errlen, "exact: shard %" PRIu64 " (%zu keys) did "
		    "not solve with any of %d seeds", j.bad,
		    (a1[j.bad + 1] - a1[j.bad]) + (a0[j.bad + 1] - a0[j.bad]),
		    EX_SEEDS);
		goto out;
	}
	if (j.rc != 0 || ex_assemble(b, j.res) != 0)
		goto oom;
	rc = 0;
	goto out;
oom:
	ex_err(err, errlen, "exact: out of memory solving a stage");
out:
	for (sh = 0; j.res != NULL && sh < b->nsh; sh++)
		free(j.res[sh].sol);
	free(j.res);
	free(a1);
	free(a0);
	return rc;
}

/* ------------------------------------------------------------ sorting */

/*
 * LSD radix sort of n pairs of 64-bit words by the first, 16 bits a pass
 * (four passes: the result is back in a). 0, or -1 out of memory.
 */
static int
ex_sort_pairs(uint64_t *a, size_t n)
{
	uint64_t *tmp, *src = a, *dst, *t;
	size_t *cnt, i, sum, c, d;
	unsigned pass, sh;

	if (n < 2)
		return 0;
	if (n > SIZE_MAX / 16 || (tmp = malloc(n * 16)) == NULL)
		return -1;
	if ((cnt = malloc(65536 * sizeof(*cnt))) == NULL) {
		free(tmp);
		return -1;
	}
	dst = tmp;
	for (pass = 0; pass < 4; pass++) {
		sh = 16 * pass;
		memset(cnt, 0, 65536 * sizeof(*cnt));
		for (i = 0; i < n; i++)
			cnt[(src[2 * i] >> sh) & 0xffff]++;
		for (i = 0, sum = 0; i < 65536; i++) {
			c = cnt[i];
			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++) {
			d = cnt[(src[2 * i] >> sh) & 0xffff]++;
			dst[2 * d] = src[2 * i];
			dst[2 * d + 1] = src[2 * i + 1];
		}
		t = src;
		src = dst;
		dst = t;
	}
	free(cnt);
	free(tmp);
	return 0;
}

/* A growing array of (hash, second hash) pairs. */
struct ex_pairs {
	uint64_t	*p;
	size_t		 n, cap;
};

static int
ex_pairs_push(struct ex_pairs *v, uint64_t h, uint64_t x)
{
	uint64_t *p;
	size_t cap;

	if (v->n == v->cap) {
		cap = v->cap < 1024 ? 1024 : v->cap + v->cap / 2;
		if (cap > SIZE_MAX / 16 ||
		    (p = realloc(v->p, cap * 16)) == NULL)
			return -1;
		v->p = p;
		v->cap = cap;
	}
	v->p[2 * v->n] = h;
	v->p[2 * v->n + 1] = x;
	v->n++;
	return 0;
}

static void
ex_pairs_free(struct ex_pairs *v)
{
	free(v->p);
	memset(v, 0, sizeof(*v));
}

/*
 * A second hash of a key, independent of the first: two keys with the
 * same first hash are told apart by it (a key of U \ R with a revoked
 * key's first hash would make stage 2 contradict itself).
 */
static uint64_t
ex_verify_hash(uint64_t seed, const unsigned char *key, size_t len)
{
	return XXH3_64bits_withSeed(key, len, seed ^ EX_VERIFY_SEED);
}

/* ------------------------------------------------------------ building */

struct ex_build {
	const struct exact_src	*rev, *iss;
	uint64_t		 seed;
	struct ex_pairs		 r;		/* R's pairs, sorted */
	struct ex_pairs		 cand;		/* U's stage-1 positives */
	uint64_t		*rh;		/* R's hashes, sorted */
	uint64_t		*fp;		/* stage-1 positives in U \ R */
	size_t			 nfp;
	uint64_t		 n_raw;		/* keys of U as streamed */
	uint64_t		 occ;		/* of them, keys of R */
	uint64_t		 inter;		/* keys of R seen in U */
	uint32_t		 w;
	struct ex_stage_build	 s1, s2;
};

static void
ex_build_reset(struct ex_build *b)
{
	ex_pairs_free(&b->r);
	ex_pairs_free(&b->cand);
	free(b->rh);
	free(b->fp);
	b->rh = NULL;
	b->fp = NULL;
	b->nfp = 0;
	ex_stage_free(&b->s1);
	ex_stage_free(&b->s2);
}

/* Pass 1 over U: how many keys it streams (nothing else is kept). */
static int
ex_count_issued(struct ex_build *b, char *err, size_t errlen)
{
	const unsigned char *key;
	size_t len;
	int rc;

	if (b->iss->rewind(b->iss->arg, err, errlen) != 0)
		return -1;
	b->n_raw = 0;
	while ((rc = b->iss->next(b->iss->arg, &key, &len, err, errlen)) == 1)
		if (++b->n_raw > EXACT_MAX_KEYS) {
			ex_err(err, errlen, "exact: the issued set has more "
			    "than %" PRIu64 " keys", EXACT_MAX_KEYS);
			return -1;
		}
	return rc;
}

/*
 * R's pairs, sorted and made distinct, and its sorted hashes. 1 when two
 * keys of R share a hash (another hash seed is needed).
 */
static int
ex_read_revoked(struct ex_build *b, char *err, size_t errlen)
{
	const unsigned char *key;
	uint64_t *p;
	size_t len, i, k;
	int rc;

	if (b->rev->rewind(b->rev->arg, err, errlen) != 0)
		return -1;
	while ((rc = b->rev->next(b->rev->arg, &key, &len, err, errlen)) == 1) {
		if (b->r.n >= EXACT_MAX_KEYS) {
			ex_err(err, errlen, "exact: too many revoked keys");
			return -1;
		}
		if (ex_pairs_push(&b->r, exact_key_hash(b->seed, key, len),
		    ex_verify_hash(b->seed, key, len)) != 0)
			goto oom;
	}
	if (rc != 0)
		return -1;
	if (ex_sort_pairs(b->r.p, b->r.n) != 0)
		goto oom;
	p = b->r.p;
	for (i = 0, k = 0; i < b->r.n; i++) {
		if (k > 0 && p[2 * (k - 1)] == p[2 * i]) {
			if (p[2 * (k - 1) + 1] != p[2 * i + 1])
				return 1;
			continue;	/* the same key again */
		}
		p[2 * k] = p[2 * i];
		p[2 * k + 1] = p[2 * i + 1];
		k++;
	}
	b->r.n = k;
	if ((b->rh = malloc((k + 1) * 8)) == NULL)
		goto oom;
	for (i = 0; i < k; i++)
		b->rh[i] = p[2 * i];
	return 0;
oom:
	ex_err(err, errlen, "exact: out of memory for the revoked set");
	return -1;
}

static void
ex_stage_init(struct ex_stage_build *s, uint32_t r, uint32_t w,
    uint64_t salt)
{
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->w = w;
	s->salt = salt;
	s->shard_log2 = EX_SHARD_LOG2;
}

/* Pass 2, one key: its pair kept if stage 1 passes it (-1: no memory). */
static int
ex_scan_key(struct ex_build *b, const struct ex_stage_view *v1,
    const unsigned char *key, size_t len)
{
	uint64_t h = exact_key_hash(b->seed, key, len);

	if (!ex_stage_hit_inline(v1, h))
		return 0;
	return ex_pairs_push(&b->cand, h, ex_verify_hash(b->seed, key, len));
}

/*
 * Pass 2 on two threads: the caller's thread reads the stream (next() is
 * only ever called from it) and copies keys into one of two batches; a
 * worker hashes and tests the other. A batch belongs to the reader while
 * it is not full and to the worker while it is; the flag changes under
 * the mutex. Used when U is large enough to pay for the thread.
 */
#define EX_PIPE_MIN		(UINT64_C(1) << 16)
#define EX_BATCH_KEYS		8192
#define EX_BATCH_BYTES		(1u << 19)

struct ex_batch {
	unsigned char	*buf;
	size_t		 cap, used, n;
	size_t		 off[EX_BATCH_KEYS + 1];
	bool		 full;
};

struct ex_pipe {
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	struct ex_batch		 bt[2];
	bool			 done;	/* every key handed over */
	int			 rc;	/* the worker's: -1 out of memory */
	struct ex_build		*b;
	struct ex_stage_view	 v1;
};

static void *
ex_pipe_work(void *arg)
{
	struct ex_pipe *p = arg;
	struct ex_batch *bt;
	unsigned k = 0;
	size_t i;

	for (;; k ^= 1) {
		bt = &p->bt[k];
		pthread_mutex_lock(&p->mu);
		while (!bt->full && !p->done)
			pthread_cond_wait(&p->cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
		if (!bt->full)
			return NULL;	/* done, and every batch tested */
		for (i = 0; i < bt->n && p->rc == 0; i++)
			if (ex_scan_key(p->b, &p->v1, bt->buf + bt->off[i],
			    bt->off[i + 1] - bt->off[i]) != 0)
				p->rc = -1;
		pthread_mutex_lock(&p->mu);
		bt->n = bt->used = 0;
		bt->full = false;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

/* Hands batch *k to the worker and waits until the other one is free. */
static void
ex_pipe_hand(struct ex_pipe *p, unsigned *k)
{
	pthread_mutex_lock(&p->mu);
	p->bt[*k].full = true;
	pthread_cond_broadcast(&p->cv);
	*k ^= 1;
	while (p->bt[*k].full)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* Copies one key into the reader's batch. 0, or -1 out of memory. */
static int
ex_pipe_put(struct ex_pipe *p, unsigned *k, const unsigned char *key,
    size_t len)
{
	struct ex_batch *bt = &p->bt[*k];
	unsigned char *nb;

	if (bt->n == EX_BATCH_KEYS || len > bt->cap - bt->used) {
		if (bt->n > 0)
			ex_pipe_hand(p, k);
		bt = &p->bt[*k];
		if (len > bt->cap) {
			if ((nb = realloc(bt->buf, len)) == NULL)
				return -1;
			bt->buf = nb;
			bt->cap = len;
		}
	}
	memcpy(bt->buf + bt->used, key, len);
	bt->off[bt->n] = bt->used;
	bt->used += len;
	bt->off[++bt->n] = bt->used;
	return 0;
}

/* The reader's side: every key into the batches, the last one handed over. */
static int
ex_pipe_read(struct ex_pipe *p, uint64_t *n, char *err, size_t errlen)
{
	const unsigned char *key;
	struct ex_build *b = p->b;
	unsigned k = 0;
	size_t len;
	int rc;

	while ((rc = b->iss->next(b->iss->arg, &key, &len, err, errlen)) == 1) {
		(*n)++;
		if (ex_pipe_put(p, &k, key, len) != 0) {
			ex_err(err, errlen, "exact: out of memory for a batch");
			rc = -1;
			break;
		}
	}
	pthread_mutex_lock(&p->mu);
	if (p->bt[k].n > 0)
		p->bt[k].full = true;
	p->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* Pass 2 on two threads; 1 when the worker thread could not start. */
static int
ex_scan_pipe(struct ex_build *b, const struct ex_stage_view *v1, uint64_t *n,
    char *err, size_t errlen)
{
	struct ex_pipe p;
	pthread_t th;
	int rc = 1, i;

	memset(&p, 0, sizeof(p));
	p.b = b;
	p.v1 = *v1;
	for (i = 0; i < 2; i++) {
		if ((p.bt[i].buf = malloc(EX_BATCH_BYTES)) == NULL)
			goto out;
		p.bt[i].cap = EX_BATCH_BYTES;
	}
	if (pthread_mutex_init(&p.mu, NULL) != 0)
		goto out;
	if (pthread_cond_init(&p.cv, NULL) != 0)
		goto out_mutex;
	if (pthread_create(&th, NULL, ex_pipe_work, &p) != 0)
		goto out_cond;
	rc = ex_pipe_read(&p, n, err, errlen);
	pthread_join(th, NULL);
	if (rc == 0 && p.rc != 0) {
		ex_err(err, errlen, "exact: out of memory for stage-1 "
		    "positives");
		rc = -1;
	}
out_cond:
	pthread_cond_destroy(&p.cv);
out_mutex:
	pthread_mutex_destroy(&p.mu);
out:
	free(p.bt[0].buf);
	free(p.bt[1].buf);
	return rc;
}

/*
 * Pass 2 over U: the pairs of every key that passes stage 1 (a key of R,
 * or a false positive), kept for ex_resolve. On two threads when U is
 * large, else (or when no thread starts) on this one.
 */
static int
ex_scan_issued(struct ex_build *b, char *err, size_t errlen)
{
	struct ex_stage_view v1;
	const unsigned char *key;
	uint64_t n = 0;
	size_t len;
	int rc = 1;

	v1 = (struct ex_stage_view){ b->s1.tab, b->s1.sol, b->s1.nsh, b->s1.r,
	    b->s1.w, b->s1.salt };
	b->cand.n = 0;
	if (b->iss->rewind(b->iss->arg, err, errlen) != 0)
		return -1;
	if (b->r.n > 0 && b->n_raw >= EX_PIPE_MIN)
		rc = ex_scan_pipe(b, &v1, &n, err, errlen);
	if (rc == 1) {
		while ((rc = b->iss->next(b->iss->arg, &key, &len, err,
		    errlen)) == 1) {
			n++;
			if (b->r.n > 0 && ex_scan_key(b, &v1, key, len) != 0) {
				ex_err(err, errlen, "exact: out of memory for "
				    "stage-1 positives");
				return -1;
			}
		}
	}
	if (rc != 0)
		return -1;
	if (n != b->n_raw) {
		ex_err(err, errlen, "exact: the issued set changed between "
		    "two reads (%" PRIu64 " keys, then %" PRIu64 ")",
		    b->n_raw, n);
		return -1;
	}
	return 0;
}

/*
 * The positives, sorted, against R's sorted pairs in one merge: a key of
 * R (counted; a key listed twice in U counts once in inter) or a false
 * positive (its hash kept once for stage 2). 1 when a key of U \ R has a
 * revoked key's hash.
 */
static int
ex_resolve(struct ex_build *b, char *err, size_t errlen)
{
	const uint64_t *c = b->cand.p, *r = b->r.p;
	uint64_t h, *fp;
	size_t i, j = 0;

	if (ex_sort_pairs(b->cand.p, b->cand.n) != 0 ||
	    (fp = realloc(b->fp, (b->cand.n + 1) * 8)) == NULL) {
		ex_err(err, errlen, "exact: out of memory sorting");
		return -1;
	}
	b->fp = fp;
	b->occ = b->inter = 0;
	b->nfp = 0;
	for (i = 0; i < b->cand.n; i++) {
		h = c[2 * i];
		while (j < b->r.n && r[2 * j] < h)
			j++;
		if (j < b->r.n && r[2 * j] == h) {
			if (r[2 * j + 1] != c[2 * i + 1])
				return 1;
			b->occ++;
			if (i == 0 || c[2 * (i - 1)] != h)
				b->inter++;
		} else if (b->nfp == 0 || b->fp[b->nfp - 1] != h) {
			b->fp[b->nfp++] = h;
		}
	}
	return 0;
}

/* Stage 1 at width w, then the scan of U. 0, -1, or 1 to reseed. */
static int
ex_stage1_and_scan(struct ex_build *b, char *err, size_t errlen)
{
	int rc;

	ex_stage_free(&b->s1);
	ex_stage_init(&b->s1, b->w, b->w, EX_SALT1);
	if (b->r.n > 0 && ex_stage_make(&b->s1, b->rh, b->r.n, NULL, 0, err,
	    errlen) != 0)
		return -1;
	if ((rc = ex_scan_issued(b, err, errlen)) != 0)
		return rc;
	return ex_resolve(b, err, errlen);
}

/*
 * One try with hash seed b->seed: R, stage 1 at the width U's count
 * gives (again at the right width if keys of R were missing from U or
 * listed twice), the scan, stage 2. 0, -1, or 1 to reseed.
 */
static int
ex_build_once(struct ex_build *b, char *err, size_t errlen)
{
	uint64_t nr, issued;
	uint32_t w;
	int rc;

	if ((rc = ex_read_revoked(b, err, errlen)) != 0)
		return rc;
	nr = b->r.n;
	b->w = exact_width(b->n_raw > nr ? b->n_raw : nr, nr);
	if ((rc = ex_stage1_and_scan(b, err, errlen)) != 0)
		return rc;
	issued = b->n_raw - b->occ + nr;
	if ((w = exact_width(issued, nr)) != b->w) {
		b->w = w;
		if ((rc = ex_stage1_and_scan(b, err, errlen)) != 0)
			return rc;
	}
	ex_pairs_free(&b->cand);
	ex_stage_init(&b->s2, 1, b->w, EX_SALT2);
	if (nr > 0 && ex_stage_make(&b->s2, b->rh, nr, b->fp, b->nfp, err,
	    errlen) != 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------ the byte layout */

static size_t
ex_stage_bytes(const struct ex_stage_build *s, uint32_t r)
{
	return (size_t)(s->nsh + 1) * EX_TAB_ENT +
	    (size_t)(s->nblocks + 1) * r * 8;
}

static void
ex_put_stage_hdr(unsigned char *p, const struct ex_stage_build *s)
{
	ex_put64(p, s->nkeys);
	ex_put32(p + 8, (uint32_t)s->nblocks);
	ex_put32(p + 12, (uint32_t)s->nsh);
}

/* Writes the table, then returns where the solution goes. */
static unsigned char *
ex_put_tab(unsigned char *p, const struct ex_stage_build *s)
{
	if (s->tab != NULL)
		memcpy(p, s->tab, (size_t)(s->nsh + 1) * EX_TAB_ENT);
	return p + (s->nsh + 1) * EX_TAB_ENT;
}

static int
ex_serialize(const struct ex_build *b, unsigned char **out, size_t *outlen,
    char *err, size_t errlen)
{
	const struct ex_stage_build *s1 = &b->s1, *s2 = &b->s2;
	size_t len, n1, n2;
	unsigned char *p, *q;

	n1 = (size_t)(s1->nblocks + 1) * b->w * 8;
	n2 = (size_t)(s2->nblocks + 1) * 8;
	len = EX_HDR_LEN + ex_stage_bytes(s1, b->w) + ex_stage_bytes(s2, 1) +
	    EX_SUM_LEN;
	if ((p = calloc(1, len)) == NULL) {
		ex_err(err, errlen, "exact: out of memory for %zu bytes", len);
		return -1;
	}
	memcpy(p, EX_MAGIC, 4);
	p[4] = EX_VERSION;
	p[6] = (unsigned char)b->w;
	p[7] = EX_BAND;
	ex_put64(p + 8, b->seed);
	ex_put64(p + 16, b->n_raw - b->occ + b->r.n);
	ex_put64(p + 24, b->r.n);
	ex_put_stage_hdr(p + 32, s1);
	ex_put_stage_hdr(p + 48, s2);
	p[64] = EX_SHARD_LOG2;
	q = ex_put_tab(p + EX_HDR_LEN, s1);
	q = ex_put_tab(q, s2);
	if (s1->sol != NULL)
		memcpy(q, s1->sol, n1);
	q += n1;
	if (s2->sol != NULL)
		memcpy(q, s2->sol, n2);
	q += n2;
	ex_put64(q, XXH3_64bits(p, len - EX_SUM_LEN));
	*out = p;
	*outlen = len;
	return 0;
}

int
exact_build(const struct exact_src *revoked, const struct exact_src *issued,
    uint64_t seed, unsigned char **out, size_t *outlen,
    struct exact_stats *st, char *err, size_t errlen)
{
	struct ex_build b;
	int rc = -1, tries;

	assert(revoked != NULL && issued != NULL && out != NULL &&
	    outlen != NULL && st != NULL);
	memset(&b, 0, sizeof(b));
	b.rev = revoked;
	b.iss = issued;
	if (ex_count_issued(&b, err, errlen) != 0)
		return -1;
	for (tries = 0; tries < EX_HASH_TRIES; tries++) {
		b.seed = seed + (uint64_t)tries * EX_SEEDMUL;
		if ((rc = ex_build_once(&b, err, errlen)) != 1)
			break;
		ex_build_reset(&b);
	}
	if (rc == 1)
		ex_err(err, errlen, "exact: keys collide under %d hash seeds",
		    EX_HASH_TRIES);
	if (rc != 0 || ex_serialize(&b, out, outlen, err, errlen) != 0) {
		rc = -1;
		goto out;
	}
	memset(st, 0, sizeof(*st));
	st->revoked = b.r.n;
	st->issued = b.n_raw - b.occ + b.r.n;
	st->revoked_not_issued = b.r.n - b.inter;
	st->w = b.w;
	st->stage2_keys = b.s2.nkeys;
	st->stage1_bits = (uint64_t)ex_stage_bytes(&b.s1, b.w) * 8;
	st->stage2_bits = (uint64_t)ex_stage_bytes(&b.s2, 1) * 8;
	st->seed_retries = b.s1.retries + b.s2.retries;
	st->hash_seed = b.seed;
	st->bits = (uint64_t)*outlen * 8;
	st->bound_bits = exact_bound_bits(st->issued, st->revoked);
out:
	ex_build_reset(&b);
	return rc;
}

double
exact_bound_bits(uint64_t n, uint64_t k)
{
	if (k == 0 || k >= n)
		return 0.0;
	return (lgamma((double)n + 1) - lgamma((double)k + 1) -
	    lgamma((double)(n - k) + 1)) / log(2.0);
}

/* ------------------------------------------------------------ reading */

/* One stage's header fields, checked against the counts. */
static int
ex_check_stage_hdr(const unsigned char *p, uint64_t want_min,
    uint64_t want_max, uint32_t shard_log2, uint64_t *nkeys, uint64_t *nb,
    uint64_t *nsh, const char *name, char *err, size_t errlen)
{
	*nkeys = ex_get64(p);
	*nb = ex_get32(p + 8);
	*nsh = ex_get32(p + 12);
	if (*nkeys < want_min || *nkeys > want_max) {
		ex_err(err, errlen, "exact: %s keys %" PRIu64 " out of range",
		    name, *nkeys);
		return -1;
	}
	if (*nsh != ex_nshards(*nkeys, shard_log2)) {
		ex_err(err, errlen, "exact: %s shard count %" PRIu64 " does "
		    "not match its %" PRIu64 " keys", name, *nsh, *nkeys);
		return -1;
	}
	/* Every shard at least two blocks, and at least a row per key. */
	if (*nb < 2 * *nsh || *nb * 64 < *nkeys || *nb > UINT32_MAX - 1) {
		ex_err(err, errlen, "exact: %s block count %" PRIu64 " does "
		    "not fit its keys", name, *nb);
		return -1;
	}
	return 0;
}

/* A stage's shard table: first blocks from 0 up by at least 2, ending at nb. */
static int
ex_check_tab(const unsigned char *tab, uint64_t nsh, uint64_t nb,
    const char *name, char *err, size_t errlen)
{
	uint64_t i, prev = 0, off;
	const unsigned char *e;

	for (i = 0; i <= nsh; i++) {
		e = tab + i * EX_TAB_ENT;
		off = ex_get32(e);
		if (e[5] != 0 || e[6] != 0 || e[7] != 0 ||
		    (i == nsh && e[4] != 0)) {
			ex_err(err, errlen, "exact: %s shard %" PRIu64 ": "
			    "reserved bytes not zero", name, i);
			return -1;
		}
		if ((i == 0 && off != 0) || (i > 0 && off < prev + 2) ||
		    (i == nsh && off != nb)) {
			ex_err(err, errlen, "exact: %s shard %" PRIu64 ": first "
			    "block %" PRIu64 " out of order", name, i, off);
			return -1;
		}
		prev = off;
	}
	return 0;
}

/*
 * The best compiled query this CPU runs, capped by REVCHECK_EXACT_ISA
 * (plain, popcnt or avx2) so that tests can run every one of them.
 */
static uint64_t
ex_isa(void)
{
	static const char *const names[] = { "plain", "popcnt", "avx2" };
	const char *cap = getenv("REVCHECK_EXACT_ISA");
	uint64_t isa = EX_ISA_PLAIN, i;

#ifdef EX_HAVE_AVX2
	if (__builtin_cpu_supports("popcnt"))
		isa = !__builtin_cpu_supports("avx2") ? EX_ISA_POPCNT :
		    !__builtin_cpu_supports("avx512f") ||
		    !__builtin_cpu_supports("avx512vl") ||
		    !__builtin_cpu_supports("avx512vpopcntdq") ?
		    EX_ISA_AVX2 : EX_ISA_AVX512;
#endif
	for (i = 0; cap != NULL && i < 3; i++)
		if (strcmp(cap, names[i]) == 0 && isa > i)
			isa = i;
	return isa;
}

/* The fixed header: magic, version, widths, counts. */
static int
ex_check_hdr(const unsigned char *p, size_t len, char *err, size_t errlen)
{
	uint64_t issued, revoked;
	int i;

	if (len < EX_HDR_LEN + 2 * EX_TAB_ENT + 2 * 8 + EX_SUM_LEN) {
		ex_err(err, errlen, "exact: %zu bytes is too short", len);
		return -1;
	}
	if (memcmp(p, EX_MAGIC, 4) != 0 || p[4] != EX_VERSION || p[5] != 0) {
		ex_err(err, errlen, "exact: bad magic or version");
		return -1;
	}
	if (XXH3_64bits(p, len - EX_SUM_LEN) !=
	    ex_get64(p + len - EX_SUM_LEN)) {
		ex_err(err, errlen, "exact: checksum mismatch");
		return -1;
	}
	issued = ex_get64(p + 16);
	revoked = ex_get64(p + 24);
	if (issued > EXACT_MAX_KEYS || revoked > issued) {
		ex_err(err, errlen, "exact: counts out of range (issued %"
		    PRIu64 ", revoked %" PRIu64 ")", issued, revoked);
		return -1;
	}
	if (p[6] != exact_width(issued, revoked) || p[7] != EX_BAND) {
		ex_err(err, errlen, "exact: width %u does not match the counts "
		    "(or band %u is not %d)", p[6], p[7], EX_BAND);
		return -1;
	}
	if (p[64] < EX_SHARD_LOG2_MIN || p[64] > EX_SHARD_LOG2_MAX) {
		ex_err(err, errlen, "exact: shard size 2^%u out of range",
		    p[64]);
		return -1;
	}
	for (i = 65; i < EX_HDR_LEN; i++)
		if (p[i] != 0) {
			ex_err(err, errlen, "exact: reserved header byte %d not "
			    "zero", i);
			return -1;
		}
	return 0;
}

int
exact_attach(struct exact *e, const void *bytes, size_t len, char *err,
    size_t errlen)
{
	const unsigned char *p = bytes;
	uint64_t revoked, issued, k1, k2, nb1, nb2, nsh1, nsh2, w, need;

	assert(e != NULL);
	memset(e, 0, sizeof(*e));
	if (p == NULL || ex_check_hdr(p, len, err, errlen) != 0)
		return -1;
	w = p[6];
	issued = ex_get64(p + 16);
	revoked = ex_get64(p + 24);
	if (ex_check_stage_hdr(p + 32, revoked, revoked, p[64], &k1, &nb1,
	    &nsh1, "stage 1", err, errlen) != 0 ||
	    ex_check_stage_hdr(p + 48, revoked, issued, p[64], &k2, &nb2,
	    &nsh2, "stage 2", err, errlen) != 0)
		return -1;
	if ((revoked == 0) != (k2 == 0)) {
		ex_err(err, errlen, "exact: stage 2 has keys without stage 1");
		return -1;
	}
	/* Every term is below 2^32 * 33 * 8: no overflow in 64 bits. */
	need = EX_HDR_LEN + (nsh1 + 1 + nsh2 + 1) * EX_TAB_ENT +
	    (nb1 + 1) * w * 8 + (nb2 + 1) * 8 + EX_SUM_LEN;
	if (need != len) {
		ex_err(err, errlen, "exact: %zu bytes where the counts make %"
		    PRIu64, len, need);
		return -1;
	}
	e->priv[P_TAB1] = EX_HDR_LEN;
	e->priv[P_TAB2] = e->priv[P_TAB1] + (nsh1 + 1) * EX_TAB_ENT;
	e->priv[P_SOL1] = e->priv[P_TAB2] + (nsh2 + 1) * EX_TAB_ENT;
	e->priv[P_SOL2] = e->priv[P_SOL1] + (nb1 + 1) * w * 8;
	if (ex_check_tab(p + e->priv[P_TAB1], nsh1, nb1, "stage 1", err,
	    errlen) != 0 || ex_check_tab(p + e->priv[P_TAB2], nsh2, nb2,
	    "stage 2", err, errlen) != 0)
		return -1;
	e->bytes = p;
	e->len = len;
	e->w = (uint32_t)w;
	e->issued = issued;
	e->revoked = revoked;
	e->priv[P_SEED] = ex_get64(p + 8);
	e->priv[P_NSH1] = nsh1;
	e->priv[P_NSH2] = nsh2;
	e->priv[P_W] = w;
	e->priv[P_ISA] = ex_isa();
	e->priv[15] = EX_ATTACHED;
	return 0;
}

/* The stage views of an attached view with revoked keys. */
static inline __attribute__((always_inline)) void
ex_views(const struct exact *e, struct ex_stage_view *v1,
    struct ex_stage_view *v2)
{
	v1->tab = e->bytes + e->priv[P_TAB1];
	v1->sol = e->bytes + e->priv[P_SOL1];
	v1->nsh = e->priv[P_NSH1];
	v1->w = (uint32_t)e->priv[P_W];
	v1->r = v1->w;
	v1->salt = EX_SALT1;
	*v2 = *v1;
	v2->tab = e->bytes + e->priv[P_TAB2];
	v2->sol = e->bytes + e->priv[P_SOL2];
	v2->nsh = e->priv[P_NSH2];
	v2->r = 1;
	v2->salt = EX_SALT2;
}

/* Both stages for an attached view with revoked keys. */
static inline __attribute__((always_inline)) enum exact_answer
ex_query(const struct exact *e, uint64_t h)
{
	struct ex_stage_view v1, v2;

	ex_views(e, &v1, &v2);
	if (!ex_stage_hit_inline(&v1, h))
		return EXACT_NOT_REVOKED;
	return ex_hit_r(&v2, 1, h) ? EXACT_REVOKED : EXACT_NOT_REVOKED;
}

static enum exact_answer
ex_query_plain(const struct exact *e, uint64_t h)
{
	return ex_query(e, h);
}

#ifdef EX_HAVE_AVX2
/*
 * The same compiled for POPCNT, when the CPU has it (exact_attach asks):
 * a parity is then two instructions instead of seven, a sixth of a
 * lookup.
 */
__attribute__((target("popcnt"))) static enum exact_answer
ex_query_popcnt(const struct exact *e, uint64_t h)
{
	return ex_query(e, h);
}

/*
 * With AVX2 too, stage 1's columns four at a time: at 10^7 ids, 0.01
 * revoked, 22 ns a lookup of an absent key became 16 (AMD EPYC).
 */
__attribute__((target("avx2,popcnt"))) static enum exact_answer
ex_query_avx2(const struct exact *e, uint64_t h)
{
	struct ex_stage_view v1, v2;

	ex_views(e, &v1, &v2);
	if (!ex_stage_hit_avx2(&v1, h))
		return EXACT_NOT_REVOKED;
	return ex_hit_r(&v2, 1, h) ? EXACT_REVOKED : EXACT_NOT_REVOKED;
}

__attribute__((target("avx512f,avx512vl,avx512vpopcntdq,avx2,popcnt")))
static enum exact_answer
ex_query_avx512(const struct exact *e, uint64_t h)
{
	struct ex_stage_view v1, v2;

	ex_views(e, &v1, &v2);
	if (!ex_stage_hit_avx512(&v1, h))
		return EXACT_NOT_REVOKED;
	return ex_hit_r(&v2, 1, h) ? EXACT_REVOKED : EXACT_NOT_REVOKED;
}
#endif

/* The query of an attached view with revoked keys, for key hash h. */
static inline enum exact_answer
ex_dispatch(const struct exact *e, uint64_t h)
{
#ifdef EX_HAVE_AVX2
	if (e->priv[P_ISA] == EX_ISA_AVX512)
		return ex_query_avx512(e, h);
	if (e->priv[P_ISA] == EX_ISA_AVX2)
		return ex_query_avx2(e, h);
	if (e->priv[P_ISA] == EX_ISA_POPCNT)
		return ex_query_popcnt(e, h);
#endif
	return ex_query_plain(e, h);
}

enum exact_answer
exact_query_hash(const struct exact *e, uint64_t h)
{
	/* Not attached: fail closed. */
	if (e == NULL || e->priv[15] != EX_ATTACHED)
		return EXACT_REVOKED;
	if (e->priv[P_NSH1] == 0)
		return EXACT_NOT_REVOKED;
	return ex_dispatch(e, h);
}

enum exact_answer
exact_query(const struct exact *e, const void *key, size_t len)
{
	if (e == NULL || e->priv[15] != EX_ATTACHED)
		return EXACT_REVOKED;
	if (e->priv[P_NSH1] == 0)
		return EXACT_NOT_REVOKED;
	return ex_dispatch(e, XXH3_64bits_withSeed(key, len, e->priv[P_SEED]));
}

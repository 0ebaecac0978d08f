/* checkmt.c - the daemon's check path in-process at 1, 2, ... threads: does it scale with cores? */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "ffile.h"
#include "metrics.h"
#include "publish.h"
#include "snapshot.h"
#include "table.h"
#include "util.h"

/*
 * Usage: checkmt DIR [SECONDS [THREADS...]]
 *
 * DIR is a filterbuild output directory (DIR/current/filter.rcf and
 * table.rct). Each thread runs what a worker thread runs for one GET
 * /v1/check, without HTTP: check_begin (the snapshot in service, its
 * freshness), check_key (scope, filter, counters) and check_end, over
 * KEYS absent ids of its own, derived before timing. Each thread count
 * (default 1 and 2) is run ROUNDS times, interleaved, for SECONDS each
 * (default 2), and keeps its best round. Prints
 *
 *   checkmt variant=V threads=T checks_per_s=C per_thread=P
 *
 * for variant "epoch" (the daemon's path), "refcount" (the same check
 * with snapshot_acquire/snapshot_release around it: one shared reference
 * count written by every check, the design the epochs replaced) and
 * "spin" (a loop of arithmetic that shares nothing: how far this machine
 * lets T threads scale at all right now; its "checks" are iterations),
 * then
 *
 *   checkmt scaling variant=V threads=T vs_1=R cpu_vs_1=C
 *
 * R being checks/s at T threads over checks/s at 1 (the figure that
 * shows scaling, on a machine with T idle cores), C the checks per CPU
 * second of the threads at T over that at 1 (1.0 when threads on other
 * cores cost a check nothing; below 1 when they fight over cache lines;
 * less disturbed by other work on a loaded machine, which takes cores
 * away but does not make a check cost more CPU). A check that does
 * not answer not_revoked from the filter stops the run (exit 1): the ids
 * are absent, and a refusal would mean the benchmark measures nothing.
 */

#define KEYS		1024
#define ROUNDS		5
#define MAX_THREADS	64

enum variant { V_EPOCH = 0, V_REFCOUNT, V_SPIN, V_COUNT };
static const char *const variant_name[V_COUNT] = { "epoch", "refcount",
    "spin" };

static struct snapshot_slot slot;
static struct stale_policy policy;

struct worker {
	pthread_t	 th;
	unsigned	 id;
	enum variant	 v;
	double		 seconds;
	_Atomic bool	*go;
	struct revkey	*keys;
	uint64_t	 checks;
	double		 cpu;		/* this thread's CPU seconds */
	bool		 failed;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
worker_main(void *p)
{
	struct worker *w = p;
	struct check_result r;
	const struct snapshot *cs;
	struct snapshot *s;
	enum stale_reason why;
	int64_t now = util_now();
	double end, c0;
	volatile uint64_t spin = w->id;
	uint64_t n = 0;
	size_t i;

	while (!atomic_load(w->go))
		;
	c0 = cpu_s();
	end = now_s() + w->seconds;
	for (;;) {
		for (i = 0; i < KEYS; i++) {
			if (w->v == V_EPOCH) {
				if (check_begin(&slot, &policy, now, &cs,
				    &why) != CHECK_GATE_OK) {
					w->failed = true;
					return NULL;
				}
				if (check_key(cs, &w->keys[i], &r) != 0 ||
				    r.status != CHECK_NOT_REVOKED)
					w->failed = true;
				check_end(cs);
			} else if (w->v == V_SPIN) {
				/* Arithmetic only: what the machine gives. */
				spin = spin * 6364136223846793005ULL + i;
			} else {
				if ((s = snapshot_acquire(&slot)) == NULL) {
					w->failed = true;
					return NULL;
				}
				if (check_key(s, &w->keys[i], &r) != 0 ||
				    r.status != CHECK_NOT_REVOKED)
					w->failed = true;
				snapshot_release(s);
			}
		}
		n += KEYS;
		if (w->failed || now_s() >= end)
			break;
	}
	w->checks = n;
	w->cpu = cpu_s() - c0;
	return NULL;
}

/*
 * Checks per second of one round at t threads, and per CPU second of its
 * threads in *per_cpu; -1 when a check failed.
 */
static double
run(enum variant v, unsigned t, double seconds, struct revkey *keys,
    double *per_cpu)
{
	struct worker w[MAX_THREADS];
	_Atomic bool go = false;
	double t0, el, cpu = 0;
	uint64_t total = 0;
	unsigned i;
	bool failed = false;

	for (i = 0; i < t; i++) {
		w[i] = (struct worker){ .id = i, .v = v, .seconds = seconds,
		    .go = &go, .keys = keys + (size_t)i * KEYS };
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "checkmt: cannot start thread %u\n", i);
			exit(1);
		}
	}
	t0 = now_s();
	atomic_store(&go, true);
	for (i = 0; i < t; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].checks;
		cpu += w[i].cpu;
		failed |= w[i].failed;
	}
	el = now_s() - t0;
	*per_cpu = cpu > 0 ? (double)total / cpu : 0;
	return failed ? -1 : (double)total / el;
}

/* Absent ids, KEYS per thread: "abs-mt-<thread>-<n>", never in a build. */
static struct revkey *
make_keys(unsigned threads)
{
	struct revkey *k;
	char id[48], err[128];
	size_t i, n = (size_t)threads * KEYS;
	int len;

	if ((k = calloc(n, sizeof(*k))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		len = snprintf(id, sizeof(id), "abs-mt-%zu-%zu", i / KEYS,
		    i % KEYS);
		if (len < 0 || (size_t)len >= sizeof(id) ||
		    revkey_from_text(&k[i], REVKEY_DEFAULT_SCOPE, id,
		    (size_t)len, err, sizeof(err)) == -1) {
			free(k);
			return NULL;
		}
	}
	return k;
}

int
main(int argc, char **argv)
{
	unsigned threads[MAX_THREADS], nt = 0, maxt = 1, i, round, v;
	double seconds = 2, best[V_COUNT][MAX_THREADS], cps, pc;
	double best_cpu[V_COUNT][MAX_THREADS];
	char fpath[4096], tpath[4096], err[512];
	struct revkey *keys;
	struct ffile *ff;
	struct table *tab;
	struct snapshot *s;
	uint64_t u;
	int a;

	if (argc < 2) {
		fprintf(stderr, "usage: checkmt DIR [SECONDS [THREADS...]]\n");
		return 2;
	}
	if (argc > 2 && (seconds = strtod(argv[2], NULL)) <= 0)
		seconds = 2;
	for (a = 3; a < argc && nt < MAX_THREADS; a++) {
		if (util_parse_u64(argv[a], MAX_THREADS, &u) == -1 || u == 0) {
			fprintf(stderr, "checkmt: bad thread count %s\n",
			    argv[a]);
			return 2;
		}
		threads[nt++] = (unsigned)u;
	}
	if (nt == 0) {
		threads[nt++] = 1;
		threads[nt++] = 2;
	}
	for (i = 0; i < nt; i++)
		if (threads[i] > maxt)
			maxt = threads[i];
	if (snprintf(fpath, sizeof(fpath), "%s/current/%s", argv[1],
	    PUBLISH_FILTER_NAME) >= (int)sizeof(fpath) ||
	    snprintf(tpath, sizeof(tpath), "%s/current/%s", argv[1],
	    PUBLISH_TABLE_NAME) >= (int)sizeof(tpath)) {
		fprintf(stderr, "checkmt: path too long\n");
		return 2;
	}
	if ((ff = ffile_open(fpath, err, sizeof(err))) == NULL ||
	    (tab = table_open(tpath, err, sizeof(err))) == NULL) {
		fprintf(stderr, "checkmt: %s\n", err);
		return 1;
	}
	if ((s = snapshot_new(ff, tab, util_now())) == NULL ||
	    (keys = make_keys(maxt)) == NULL) {
		fprintf(stderr, "checkmt: out of memory\n");
		return 1;
	}
	snapshot_slot_init(&slot);
	snapshot_swap(&slot, s);
	for (v = 0; v < V_COUNT; v++)
		for (i = 0; i < nt; i++)
			best[v][i] = best_cpu[v][i] = 0;
	/* Interleaved, so a burst of noise on the machine hits all alike. */
	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < nt; i++) {
			for (v = 0; v < V_COUNT; v++) {
				cps = run((enum variant)v, threads[i], seconds,
				    keys, &pc);
				if (cps < 0) {
					fprintf(stderr, "checkmt: a check did "
					    "not answer not_revoked from the "
					    "filter\n");
					return 1;
				}
				if (cps > best[v][i])
					best[v][i] = cps;
				if (pc > best_cpu[v][i])
					best_cpu[v][i] = pc;
			}
		}
	}
	for (v = 0; v < V_COUNT; v++)
		for (i = 0; i < nt; i++)
			printf("checkmt variant=%s threads=%u checks_per_s=%.0f "
			    "per_thread=%.0f per_cpu_s=%.0f\n",
			    variant_name[v], threads[i], best[v][i],
			    best[v][i] / threads[i], best_cpu[v][i]);
	for (v = 0; v < V_COUNT; v++)
		for (i = 0; i < nt; i++)
			if (threads[i] > 1 && threads[0] == 1)
				printf("checkmt scaling variant=%s threads=%u "
				    "vs_1=%.3f cpu_vs_1=%.3f\n",
				    variant_name[v], threads[i],
				    best[v][i] / best[v][0],
				    best_cpu[v][i] / best_cpu[v][0]);
	snapshot_slot_free(&slot);
	free(keys);
	return 0;
}

/* test_metrics.c - counters per thread summed exactly, latency histograms: buckets, sums, rendering */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../svc/metrics.h"
#include "../svc/sbuf.h"

static char *
render(void)
{
	struct sbuf b;
	size_t len;
	char *s;

	sbuf_init(&b, 4096, 0);
	metrics_render_histograms(&b);
	s = sbuf_take(&b, &len);
	cr_assert_not_null(s);
	return s;
}

static bool
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
		p += n;
	}
	return false;
}

Test(metrics, request_histogram_buckets_are_cumulative)
{
	char *s;

	metrics_reset();
	metrics_observe_request(EP_CHECK, 0.00005);	/* <= 100 us */
	metrics_observe_request(EP_CHECK, 0.0003);	/* <= 500 us */
	metrics_observe_request(EP_CHECK, 0.003);	/* <= 5 ms */
	metrics_observe_request(EP_CHECK, 42.0);	/* +Inf only */
	metrics_observe_request(EP_CHECK, -1.0);	/* counts as 0 */
	s = render();
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_bucket"
	    "{endpoint=\"check\",le=\"0.0001\"} 2"), "%s", s);
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_bucket"
	    "{endpoint=\"check\",le=\"0.00025\"} 2"), "%s", s);
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_bucket"
	    "{endpoint=\"check\",le=\"0.0005\"} 3"), "%s", s);
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_bucket"
	    "{endpoint=\"check\",le=\"0.005\"} 4"), "%s", s);
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_bucket"
	    "{endpoint=\"check\",le=\"10\"} 4"), "%s", s);
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_bucket"
	    "{endpoint=\"check\",le=\"+Inf\"} 5"), "%s", s);
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_count"
	    "{endpoint=\"check\"} 5"), "%s", s);
	cr_assert(has_line(s, "revcheckd_http_request_duration_seconds_sum"
	    "{endpoint=\"check\"} 42.003350000"), "%s", s);
	/* Endpoints never requested are left out. */
	cr_assert_null(strstr(s, "endpoint=\"authz\""), "%s", s);
	free(s);
}

Test(metrics, authority_histogram_and_reset)
{
	char *s;

	metrics_reset();
	s = render();
	cr_assert(has_line(s, "revcheckd_authority_request_duration_seconds_"
	    "count 0"), "%s", s);
	free(s);
	metrics_observe_authority(0.2);
	metrics_observe_authority(3.0);
	s = render();
	cr_assert(has_line(s, "revcheckd_authority_request_duration_seconds_"
	    "bucket{le=\"0.25\"} 1"), "%s", s);
	cr_assert(has_line(s, "revcheckd_authority_request_duration_seconds_"
	    "bucket{le=\"5\"} 2"), "%s", s);
	cr_assert(has_line(s, "revcheckd_authority_request_duration_seconds_"
	    "count 2"), "%s", s);
	cr_assert(has_line(s, "# TYPE revcheckd_authority_request_duration_"
	    "seconds histogram"), "%s", s);
	free(s);
	metrics_reset();
	s = render();
	cr_assert(has_line(s, "revcheckd_authority_request_duration_seconds_"
	    "count 0"), "%s", s);
	free(s);
}

/*
 * Counts made on many threads at once, each in its own slab, add up
 * exactly when read; a thread that exits leaves its counts in the sum,
 * and a thread started later adds to it.
 */
#define COUNTERS_THREADS	8
#define COUNTERS_EACH		20000

static void *
count_main(void *p)
{
	int i;

	(void)p;
	for (i = 0; i < COUNTERS_EACH; i++) {
		metrics_inc(MET_CHECKS);
		metrics_add(MET_FILTER_NEGATIVE, 2);
		metrics_request(EP_CHECK, 200);
		metrics_observe_request(EP_CHECK, 0.0003);
	}
	return NULL;
}

static void
run_counters(int n)
{
	pthread_t th[COUNTERS_THREADS];
	int i;

	for (i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, count_main, NULL),
		    0);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

Test(metrics, per_thread_counts_sum_exactly_and_survive_their_thread)
{
	const uint64_t all = (uint64_t)COUNTERS_THREADS * COUNTERS_EACH;
	char line[160], *s;
	struct sbuf b;
	size_t len;

	metrics_reset();
	run_counters(COUNTERS_THREADS);
	cr_assert_eq(metrics_get(MET_CHECKS), all);
	cr_assert_eq(metrics_get(MET_FILTER_NEGATIVE), 2 * all);
	/* Two more threads reuse the records of exited ones: the sum grows. */
	run_counters(2);
	cr_assert_eq(metrics_get(MET_CHECKS), all + 2 * COUNTERS_EACH);
	metrics_inc(MET_CHECKS);
	cr_assert_eq(metrics_get(MET_CHECKS), all + 2 * COUNTERS_EACH + 1);
	sbuf_init(&b, 4096, 0);
	metrics_render_requests(&b);
	metrics_render_histograms(&b);
	s = sbuf_take(&b, &len);
	cr_assert_not_null(s);
	snprintf(line, sizeof(line), "revcheckd_http_requests_total{endpoint="
	    "\"check\",code=\"200\"} %llu",
	    (unsigned long long)(all + 2 * COUNTERS_EACH));
	cr_assert(has_line(s, line), "%s", s);
	snprintf(line, sizeof(line), "revcheckd_http_request_duration_seconds_"
	    "bucket{endpoint=\"check\",le=\"0.0005\"} %llu",
	    (unsigned long long)(all + 2 * COUNTERS_EACH));
	cr_assert(has_line(s, line), "%s", s);
	snprintf(line, sizeof(line), "revcheckd_http_request_duration_seconds_"
	    "bucket{endpoint=\"check\",le=\"0.00025\"} 0");
	cr_assert(has_line(s, line), "%s", s);
	free(s);
	metrics_reset();
	cr_assert_eq(metrics_get(MET_CHECKS), 0);
}

/*
 * Every counter has its own name: the names array is sized by MET_COUNT_,
 * so a counter added without one would be NULL (the delta counters had
 * none for a while), and /v1/status prints counters by name.
 */
Test(metrics, every_counter_has_a_distinct_name)
{
	unsigned i, j;

	for (i = 0; i < MET_COUNT_; i++) {
		const char *a = metrics_name((enum metric)i);

		cr_assert(a != NULL && a[0] != '\0' && strcmp(a, "unknown") != 0,
		    "metric %u has no name", i);
		for (j = 0; j < i; j++)
			cr_assert_str_neq(a, metrics_name((enum metric)j),
			    "metrics %u and %u share the name %s", j, i, a);
	}
	cr_assert_str_eq(metrics_name(MET_COUNT_), "unknown");
}

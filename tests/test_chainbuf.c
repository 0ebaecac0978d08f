/* test_chainbuf.c - the shared chain served by /v1/delta: ranges, sharing, the bound, the memory count */
#include <criterion/criterion.h>
#include <string.h>

#include "../svc/chainbuf.h"

/* Reads the range for after into out (cap bytes); returns its length. */
static size_t
range(const struct chainbuf *cb, uint64_t after, char *out, size_t cap)
{
	size_t off, len, got = 0, n;

	chainbuf_range(cb, after, &off, &len);
	cr_assert_leq(len, cap);
	/* Small reads cross the files' edges. */
	while (got < len && (n = chainbuf_read(cb, off + got, out + got,
	    3)) > 0)
		got += n;
	cr_assert_eq(got, len);
	cr_assert_eq(chainbuf_read(cb, off + len, out, 1), 0);
	return len;
}

Test(chainbuf, ranges_are_the_files_after_a_delta_then_the_head)
{
	struct chainbuf *a, *b;
	uint64_t live0 = chainbuf_live_bytes();
	char out[64];
	size_t n;

	cr_assert_not_null(a = chainbuf_begin(NULL));
	cr_assert_eq(chainbuf_add(a, (const unsigned char *)"d1-", 3, 100), 0);
	cr_assert_eq(chainbuf_add(a, (const unsigned char *)"delta2-", 7,
	    100), 0);
	cr_assert_eq(chainbuf_set_head(a, (const unsigned char *)"H1", 2,
	    100), 0);
	n = range(a, 0, out, sizeof(out));
	cr_assert_eq(n, 12);
	cr_assert(memcmp(out, "d1-delta2-H1", n) == 0);
	n = range(a, 1, out, sizeof(out));
	cr_assert(n == 9 && memcmp(out, "delta2-H1", n) == 0);
	n = range(a, 7, out, sizeof(out));
	cr_assert(n == 2 && memcmp(out, "H1", n) == 0, "past the end: head");
	/* The next chain shares the deltas, adds one, has its own head. */
	cr_assert_not_null(b = chainbuf_begin(a));
	cr_assert_eq(chainbuf_add(b, (const unsigned char *)"d3", 2, 100), 0);
	cr_assert_eq(chainbuf_set_head(b, (const unsigned char *)"H2", 2,
	    100), 0);
	cr_assert_eq(chainbuf_deltas(b), 3);
	chainbuf_release(a);
	n = range(b, 0, out, sizeof(out));
	cr_assert(n == 14 && memcmp(out, "d1-delta2-d3H2", n) == 0);
	/* Each file is held once: 3 + 7 + 2 + 2, and b's index. */
	cr_assert_geq(chainbuf_live_bytes() - live0, 14);
	cr_assert_lt(chainbuf_live_bytes() - live0, 14 + 1024);
	chainbuf_ref(b);
	chainbuf_release(b);
	chainbuf_release(b);
	cr_assert_eq(chainbuf_live_bytes(), live0, "everything given back");
}

Test(chainbuf, a_chain_over_the_bound_is_refused)
{
	struct chainbuf *a;
	uint64_t live0 = chainbuf_live_bytes();

	cr_assert_not_null(a = chainbuf_begin(NULL));
	cr_assert_eq(chainbuf_add(a, (const unsigned char *)"12345", 5, 8), 0);
	cr_assert_eq(chainbuf_add(a, (const unsigned char *)"6789", 4, 8), -1);
	chainbuf_release(a);
	cr_assert_not_null(a = chainbuf_begin(NULL));
	cr_assert_eq(chainbuf_add(a, (const unsigned char *)"12345", 5, 8), 0);
	cr_assert_eq(chainbuf_set_head(a, (const unsigned char *)"6789", 4,
	    8), -1);
	chainbuf_release(a);
	cr_assert_eq(chainbuf_live_bytes(), live0);
}

/* test_stale.c - the staleness rule at its boundaries */
#include <criterion/criterion.h>

#include "stale.h"

static struct ffile_info
info(int64_t issued, int64_t expires)
{
	struct ffile_info fi;

	memset(&fi, 0, sizeof(fi));
	fi.issued_at = issued;
	fi.expires_at = expires;
	return fi;
}

Test(stale, fresh_until_the_second_of_expiry)
{
	struct stale_policy p = { 0, 300, 0 };
	struct ffile_info fi = info(1000, 2000);

	cr_assert_eq(stale_check(&fi, &p, 1999, 0), STALE_FRESH);
	cr_assert_eq(stale_check(&fi, &p, 2000, 0), STALE_EXPIRED);
	cr_assert_eq(stale_check(&fi, &p, 2001, 0), STALE_EXPIRED);
}

Test(stale, older_than_max_age)
{
	struct stale_policy p = { 100, 300, 0 };
	struct ffile_info fi = info(1000, 5000);

	cr_assert_eq(stale_check(&fi, &p, 1100, 0), STALE_FRESH);
	cr_assert_eq(stale_check(&fi, &p, 1101, 0), STALE_MAX_AGE);
	p.max_age = 0;
	cr_assert_eq(stale_check(&fi, &p, 4000, 0), STALE_FRESH);
}

Test(stale, issued_in_the_future_beyond_skew)
{
	struct stale_policy p = { 0, 300, 0 };
	struct ffile_info fi = info(10000, 20000);

	cr_assert_eq(stale_check(&fi, &p, 9700, 0), STALE_FRESH);
	cr_assert_eq(stale_check(&fi, &p, 9699, 0), STALE_FUTURE);
	p.clock_skew = 0;
	cr_assert_eq(stale_check(&fi, &p, 9999, 0), STALE_FUTURE);
	cr_assert_eq(stale_check(&fi, &p, 10000, 0), STALE_FRESH);
}

Test(stale, expiry_wins_over_other_reasons)
{
	struct stale_policy p = { 10, 0, 0 };
	struct ffile_info fi = info(1000, 1005);

	cr_assert_eq(stale_check(&fi, &p, 1100, 0), STALE_EXPIRED);
}

Test(stale, version_lag_only_after_max_lag)
{
	struct stale_policy p = { 0, 300, 60 };
	struct ffile_info fi = info(1000, 9000);

	cr_assert_eq(stale_check(&fi, &p, 2000, 0), STALE_FRESH);
	cr_assert_eq(stale_check(&fi, &p, 2000, 1950), STALE_FRESH);
	cr_assert_eq(stale_check(&fi, &p, 2010, 1950), STALE_LAG);
	p.max_lag = 0;
	cr_assert_eq(stale_check(&fi, &p, 8000, 1), STALE_FRESH);
}

Test(stale, extreme_times_do_not_wrap)
{
	struct stale_policy p = { 100, 300, 0 };
	struct ffile_info fi = info(INT64_MIN, INT64_MAX);

	cr_assert_eq(stale_check(&fi, &p, 0, 0), STALE_MAX_AGE);
	fi = info(INT64_MAX - 1, INT64_MAX);
	cr_assert_eq(stale_check(&fi, &p, INT64_MIN + 1, 0), STALE_FUTURE);
}

Test(stale, reason_names_are_stable)
{
	cr_assert_str_eq(stale_reason_str(STALE_FRESH), "fresh");
	cr_assert_str_eq(stale_reason_str(STALE_EXPIRED), "expired");
	cr_assert_str_eq(stale_reason_str(STALE_MAX_AGE), "max_age");
	cr_assert_str_eq(stale_reason_str(STALE_FUTURE), "issued_in_future");
	cr_assert_str_eq(stale_reason_str(STALE_LAG), "version_lag");
	cr_assert_str_eq(stale_reason_str(STALE_CHAIN_BEHIND), "chain_behind");
	cr_assert_str_eq(stale_reason_str(STALE_CHAIN_LAG), "chain_lag");
}

Test(stale, remaining_seconds)
{
	struct stale_policy p = { 0, 300, 0 };
	struct ffile_info fi = info(1000, 2000);

	cr_assert_eq(stale_remaining(&fi, &p, 1500), 500);
	cr_assert_eq(stale_remaining(&fi, &p, 2500), 0);
	p.max_age = 100;
	cr_assert_eq(stale_remaining(&fi, &p, 1050), 51);
}

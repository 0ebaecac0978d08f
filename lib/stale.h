/* stale.h - the staleness rule: refuse, never guess */
#ifndef REVCHECK_STALE_H
#define REVCHECK_STALE_H

#include <stdint.h>

#include "ffile.h"

enum stale_reason {
	STALE_FRESH = 0,
	STALE_EXPIRED,		/* now >= signed expires_at */
	STALE_MAX_AGE,		/* now - issued_at > local max_age */
	STALE_FUTURE,		/* issued_at > now + clock_skew */
	STALE_LAG,		/* edge: a newer version seen, not loaded in max_lag */
	STALE_CHAIN_BEHIND,	/* fewer deltas than were once served on this base */
	STALE_CHAIN_LAG,	/* edge: a later delta seen, not applied in max_lag */
};

/*
 * revcheckd's defaults for max_age and clock_skew (its option table says
 * "2h" and "300"), which `filterbuild verify --fresh` applies too: the
 * pre-flight check refuses what a daemon with default settings would.
 */
#define STALE_DEFAULT_MAX_AGE		7200
#define STALE_DEFAULT_CLOCK_SKEW	300

struct stale_policy {
	int64_t	max_age;	/* seconds; 0: no local limit */
	int64_t	clock_skew;	/* seconds */
	int64_t	max_lag;	/* seconds; 0: off (edge only) */
};

/*
 * Decides whether a filter may answer at time now. newer_seen_at is when
 * a newer version than this one was first seen upstream (edge sync), 0
 * when none. The first rule that applies wins, in the order of the enum.
 * This function can't fail.
 */
enum stale_reason stale_check(const struct ffile_info *fi,
    const struct stale_policy *p, int64_t now, int64_t newer_seen_at);

/* Stable text for a reason: "fresh", "expired", "max_age", ... */
const char *stale_reason_str(enum stale_reason r);

/*
 * Seconds until this filter turns stale by its own fields (expiry or
 * max_age), at least 0; INT64_MAX when nothing bounds it.
 */
int64_t stale_remaining(const struct ffile_info *fi,
    const struct stale_policy *p, int64_t now);

#endif

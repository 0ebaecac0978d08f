/* stale.c - the staleness rule: refuse, never guess */
#include "stale.h"

enum stale_reason
stale_check(const struct ffile_info *fi, const struct stale_policy *p,
    int64_t now, int64_t newer_seen_at)
{
	if (now >= fi->expires_at)
		return STALE_EXPIRED;
	/* issued_at may lie in the future; the subtraction must not wrap. */
	if (p->max_age > 0 && fi->issued_at < now &&
	    (uint64_t)now - (uint64_t)fi->issued_at > (uint64_t)p->max_age)
		return STALE_MAX_AGE;
	if (fi->issued_at > now &&
	    (uint64_t)fi->issued_at - (uint64_t)now > (uint64_t)p->clock_skew)
		return STALE_FUTURE;
	if (p->max_lag > 0 && newer_seen_at > 0 && now >= newer_seen_at &&
	    now - newer_seen_at >= p->max_lag)
		return STALE_LAG;
	return STALE_FRESH;
}

const char *
stale_reason_str(enum stale_reason r)
{
	switch (r) {
	case STALE_FRESH:
		return "fresh";
	case STALE_EXPIRED:
		return "expired";
	case STALE_MAX_AGE:
		return "max_age";
	case STALE_FUTURE:
		return "issued_in_future";
	case STALE_LAG:
		return "version_lag";
	case STALE_CHAIN_BEHIND:
		return "chain_behind";
	case STALE_CHAIN_LAG:
		return "chain_lag";
	}
	return "unknown";
}

int64_t
stale_remaining(const struct ffile_info *fi, const struct stale_policy *p,
    int64_t now)
{
	int64_t end = fi->expires_at;

	if (p->max_age > 0 && fi->issued_at <= INT64_MAX - p->max_age &&
	    fi->issued_at + p->max_age + 1 < end)
		end = fi->issued_at + p->max_age + 1;
	if (end <= now)
		return 0;
	return end - now;
}

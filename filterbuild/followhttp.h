/* followhttp.h - filterbuild follow's own /metrics, /healthz, /livez and /readyz on an optional listen address */
#ifndef REVCHECK_FOLLOWHTTP_H
#define REVCHECK_FOLLOWHTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the follower last reported of its chain and its source. */
struct followhttp_state {
	bool		 have;		/* a base with a readable chain */
	bool		 connected;	/* the source answers */
	uint64_t	 base_version;
	uint64_t	 seq;		/* deltas over the base */
	uint64_t	 chain_entries;
	uint64_t	 cursor;	/* the source's change cursor */
	uint64_t	 quarantined;	/* source rows left out */
	int64_t		 base_at;	/* the base's issued_at */
	int64_t		 head_at;	/* the newest head's issued_at (0: none) */
	int64_t		 head_every;	/* --head-every, seconds */
	bool		 leader;	/* this process writes (leader.h) */
	struct leader	*ld;		/* asked live while not leader */
	uint64_t	 handovers;	/* DIR/follow-leader.json's count */
};

/*
 * Serves GET /metrics (Prometheus text: filterbuild_build_info,
 * filterbuild_follow_* and process_*), /healthz and /livez (200 while
 * the process runs) and /readyz (200 while the follower has a chain, its
 * source answers and its head is younger than 2 x head_every + 10 s; 503
 * with the reason otherwise) on listen (netaddr_parse_listen's forms),
 * from a thread of its own. One server per process. Returns 0, or -1
 * with err (a bad address, or the port taken).
 */
int followhttp_start(const char *listen, char *err, size_t errlen);

/* Replaces the state the server reports. Safe from any thread; can't fail. */
void followhttp_set(const struct followhttp_state *s);

/* Stops the server, if one runs. Can't fail. */
void followhttp_stop(void);

#endif

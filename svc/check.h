/* check.h - the check logic: filter, fall-through to the authority, fail closed */
#ifndef REVCHECK_SVC_CHECK_H
#define REVCHECK_SVC_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "metrics.h"
#include "revkey.h"
#include "sbuf.h"
#include "snapshot.h"
#include "stale.h"
#include "table.h"

enum check_status {
	CHECK_NOT_REVOKED = 0,
	CHECK_REVOKED,
	CHECK_NOT_COVERED,
};

enum check_source {
	CHECK_SRC_FILTER = 0,
	CHECK_SRC_AUTHORITATIVE,
};

/* Why a positive was left unsettled (check_key returned -1). */
enum check_fail {
	CHECK_FAIL_UNAVAILABLE = 0,	/* 503 authority_unavailable */
	CHECK_FAIL_BEHIND,		/* 503 authority_behind */
};

struct check_result {
	enum check_status status;
	enum check_fail	 fail;		/* set when check_key returns -1 */
	enum check_source source;
	int64_t		 revoked_at;	/* 0 when unknown */
	char		 reason[TABLE_REASON_MAX];
};

/* Why a request gets no answer at all. */
enum check_gate {
	CHECK_GATE_OK = 0,
	CHECK_GATE_NO_FILTER,	/* 503 no_filter */
	CHECK_GATE_STALE,	/* 503 filter_stale */
};

/*
 * The authority settles filter positives when the snapshot has no table
 * (an edge node). It fills r (status and source; revoked_at and reason
 * when known) and returns 0, or returns -1 with r->fail set when it
 * cannot answer. The
 * default is none, so positives without a table are unavailable: the
 * edge engineer plugs the upstream call in here (svc/upstream.c).
 * Called from many threads at once.
 */
typedef int (*check_authority_fn)(void *arg, const struct snapshot *s,
    const struct revkey *k, struct check_result *r);

void check_set_authority(check_authority_fn fn, void *arg);

/*
 * Takes a reference to the current snapshot and checks it is fresh at
 * now. Returns CHECK_GATE_OK with *out set (release it with
 * snapshot_release), or the refusal with *out NULL and *why set for
 * CHECK_GATE_STALE. Counts refusals.
 */
enum check_gate check_begin(struct snapshot_slot *sl,
    const struct stale_policy *p, int64_t now, struct snapshot **out,
    enum stale_reason *why);

/*
 * Answers one key from a fresh snapshot: not_covered when the scope is
 * not in the filter; not_revoked from the filter on a zero bit; otherwise
 * the table's answer, or the authority's. Returns 0 with r filled, or -1
 * when the positive could not be settled, r->fail saying why: the caller
 * must answer 503 (authority_unavailable or authority_behind), never
 * not_revoked.
 * Updates the counters.
 */
int check_key(const struct snapshot *s, const struct revkey *k,
    struct check_result *r);

/* The same, counting in t (flushed by the caller), NULL as check_key(). */
int check_key_tally(const struct snapshot *s, const struct revkey *k,
    struct check_result *r, struct metrics_tally *t);

/*
 * Parses a POST /v1/check body: valid UTF-8, exactly one JSON value with
 * nothing but whitespace after it, and that value an object. Returns the
 * root, which the caller deletes, or NULL with *why set to a static
 * message (safe to show: it never contains the input).
 */
cJSON *check_parse_body(const char *body, size_t len, const char **why);

/*
 * Derives the key of one check object: {"id", "scope"?}, {"cert"} or
 * {"token"}; exactly one of id, cert and token. Returns 0, or -1 with err
 * (safe to show: it never contains the input).
 */
int check_key_from_json(const cJSON *obj, struct revkey *k, char *err,
    size_t errlen);

/* Appends the answer object for one key (see docs/API.md). */
void check_render(struct sbuf *b, const struct snapshot *s,
    const struct revkey *k, const struct check_result *r);

/* Appends {"error": code, "message": msg} with both strings escaped. */
void check_render_error(struct sbuf *b, const char *code, const char *msg);

const char *check_status_str(enum check_status st);
/* "authority_unavailable" or "authority_behind". */
const char *check_fail_str(enum check_fail f);
const char *check_source_str(enum check_source src);

#endif

/* srcq.h - the source quarantine report filterbuild writes beside the filters */
#ifndef REVCHECK_SRCQ_H
#define REVCHECK_SRCQ_H

#include <cjson/cJSON.h>

#include "sbuf.h"

/* The report's name in the filter directory (filterbuild's fb.h). */
#define SRCQ_NAME	"quarantine.json"
/* Larger reports are not read. */
#define SRCQ_MAX_BYTES	65536

/*
 * Adds "source_quarantine" to a /v1/status root when filter_dir is not
 * NULL (an origin): null without a readable report in it, else
 *     {"rows":N,"version":V,"updated_at":T,"sample":[{"scope":S,"id":I,
 *      "why":W},...]}
 * as `filterbuild build --source` or `follow` last wrote it: the rows of
 * the source left out because no check can name them. The file is read
 * on every call (a status or metrics request), never trusted beyond its
 * numbers and up to PGSRC_QSAMPLE short strings. This function can't
 * fail: what cannot be read is left out.
 */
void srcq_status_json(cJSON *root, const char *filter_dir);

/*
 * Appends the gauge revcheckd_source_quarantined_rows (the report's
 * "rows", 0 without one) to a /metrics body when filter_dir is not NULL.
 * This function can't fail.
 */
void srcq_metrics(struct sbuf *b, const char *filter_dir);

#endif

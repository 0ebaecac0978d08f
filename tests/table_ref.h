/* table_ref.h - a plain reference for the table builder: sort, merge and encode arrays of records */
/*
 * The builder (lib/table_sort.c, lib/table.c) sorts 16-byte entries by key prefixes and
 * scope ranks and writes the file in chunks; this restates what it must
 * produce in the simplest terms, for the tests and fuzzers to compare
 * byte for byte. Not linked into any program.
 */
#ifndef REVCHECK_TESTS_TABLE_REF_H
#define REVCHECK_TESTS_TABLE_REF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "util.h"

static inline int
ref_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct table_rec *recs = arg;
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	int r = revkey_cmp(&recs[ia].key, &recs[ib].key);

	if (r != 0)
		return r;
	return (ia > ib) - (ia < ib);	/* stable: insertion order */
}

/*
 * Sorts recs by key and collapses duplicates: revoked_at merged by
 * table_merge_revoked, the first non-empty reason in insertion order
 * wins. Returns the new count, or (size_t)-1 when memory runs out.
 */
static inline size_t
ref_sort_unique(struct table_rec *recs, size_t n)
{
	struct table_rec *out;
	size_t *idx, i, w = 0;

	if (n < 2)
		return n;
	idx = malloc(n * sizeof(*idx));
	out = malloc(n * sizeof(*out));
	if (idx == NULL || out == NULL) {
		free(idx);
		free(out);
		return (size_t)-1;
	}
	for (i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), ref_idx_cmp, recs);
	for (i = 0; i < n; i++) {
		const struct table_rec *r = &recs[idx[i]];

		if (w > 0 && revkey_cmp(&out[w - 1].key, &r->key) == 0) {
			out[w - 1].revoked_at = table_merge_revoked(
			    r->key.scope, out[w - 1].revoked_at, r->revoked_at);
			if (out[w - 1].reason[0] == '\0')
				memcpy(out[w - 1].reason, r->reason,
				    sizeof(r->reason));
			continue;
		}
		out[w++] = *r;
	}
	memcpy(recs, out, w * sizeof(*out));
	free(out);
	free(idx);
	return w;
}

/*
 * The table file of sorted, unique records as docs/FORMAT.md lays it out,
 * into a malloc'ed buffer the caller owns. Returns 0, or -1 with err when
 * the records are not in strictly ascending key order or memory runs out.
 */
static inline int
ref_encode(const struct table_rec *recs, size_t n, unsigned char **out,
    size_t *outlen, char *err, size_t errlen)
{
	unsigned char *buf, *idx, *p;
	size_t i, rlen = 0, rl;

	*out = NULL;
	*outlen = 0;
	for (i = 0; i < n; i++) {
		if (i > 0 && revkey_cmp(&recs[i - 1].key, &recs[i].key) >= 0) {
			snprintf(err, errlen, "table: record %zu not in strictly "
			    "ascending order", i);
			return -1;
		}
		rlen += TABLE_REC_HDR_LEN + recs[i].key.scope_len + 1 +
		    recs[i].key.id_len + strlen(recs[i].reason);
	}
	if ((buf = calloc(1, TABLE_HDR_LEN + 8 * n + rlen)) == NULL) {
		snprintf(err, errlen, "table: out of memory");
		return -1;
	}
	memcpy(buf, TABLE_MAGIC, 8);
	util_put_le16(buf + 8, TABLE_FORMAT);	/* flags, reserved: 0 */
	util_put_le64(buf + 16, (uint64_t)n);
	util_put_le64(buf + 24, (uint64_t)rlen);
	idx = buf + TABLE_HDR_LEN;
	p = idx + 8 * n;
	for (i = 0; i < n; i++) {
		const struct table_rec *r = &recs[i];

		util_put_le64(idx + 8 * i, (uint64_t)(p - (idx + 8 * n)));
		rl = strlen(r->reason);
		p[0] = (unsigned char)r->key.scope_len;
		p[1] = (unsigned char)rl;
		util_put_le16(p + 2, (uint16_t)r->key.id_len);
		util_put_le64(p + 4, (uint64_t)r->revoked_at);
		p += TABLE_REC_HDR_LEN;
		memcpy(p, r->key.scope, r->key.scope_len);
		p += r->key.scope_len;
		*p++ = 0;
		memcpy(p, r->key.id, r->key.id_len);
		p += r->key.id_len;
		memcpy(p, r->reason, rl);
		p += rl;
	}
	*out = buf;
	*outlen = TABLE_HDR_LEN + 8 * n + rlen;
	return 0;
}

#endif

/* table_int.h - the table's private parts: record views, builder offsets */
#ifndef REVCHECK_TABLE_INT_H
#define REVCHECK_TABLE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "table.h"
#include "util.h"

/* Offsets inside the builder's arena use the low 48 bits of an entry. */
#define TB_OFF_BITS	48
#define TB_OFF_MASK	((UINT64_C(1) << TB_OFF_BITS) - 1)
#define TB_MAX_RANKS	65536u
/*
 * Sorted records lie scattered through the arena: loops over them hint
 * the record this many places ahead (see table_builder_prefetch).
 */
#define TB_AHEAD	16

static inline size_t
tb_rec_size(size_t scope_len, size_t id_len, size_t reason_len)
{
	return TABLE_REC_HDR_LEN + scope_len + 1 + id_len + reason_len;
}

/* Views of a record in the table encoding. */
static inline size_t rec_scope_len(const unsigned char *r) { return r[0]; }
static inline size_t rec_reason_len(const unsigned char *r) { return r[1]; }
static inline size_t rec_id_len(const unsigned char *r)
{
	return util_get_le16(r + 2);
}
static inline int64_t rec_revoked(const unsigned char *r)
{
	return (int64_t)util_get_le64(r + 4);
}
static inline const unsigned char *rec_key(const unsigned char *r)
{
	return r + TABLE_REC_HDR_LEN;
}
static inline size_t rec_key_len(const unsigned char *r)
{
	return rec_scope_len(r) + 1 + rec_id_len(r);
}
static inline size_t rec_size(const unsigned char *r)
{
	return tb_rec_size(rec_scope_len(r), rec_id_len(r), rec_reason_len(r));
}

/* The i-th entry's arena offset and scope rank (packed or not). */
static inline uint64_t
tb_ent_off(const struct table_builder *b, size_t i)
{
	return b->offs != NULL ? b->offs[i] : b->ents[i].off;
}

static inline const unsigned char *
tb_rec(const struct table_builder *b, size_t i)
{
	return b->arena + (tb_ent_off(b, i) & TB_OFF_MASK);
}

/* The sorted record i's offset in the record area; rlen for i == n. */
static inline uint64_t
tb_out_off(const struct table_builder *b, size_t i)
{
	uint64_t o;

	if (i >= b->n)
		return b->rlen;
	if (b->offs == NULL)
		return b->ents[i].pfx;
	o = b->offs[i] & TB_OFF_MASK;
	return o < b->gap_at ? o : o - b->gap_len;
}

/* Byte-wise order of two encoded keys, a shorter prefix first. */
int tb_keycmp(const unsigned char *a, size_t alen, const unsigned char *b,
    size_t blen);
/* Whether a reason holds no control characters. */
bool tb_reason_ok(const char *r, size_t len);
/* Whether a key fits the table encoding. */
bool tb_key_ok(const struct revkey *k);
/*
 * Copies a record out. Every length is checked against what out can hold
 * and against avail, the bytes from r to the end of its area, before any
 * copy: 0, or -1 (out zeroed) for a record that does not fit.
 */
int rec_to_table_rec(const unsigned char *r, size_t avail,
    struct table_rec *out);
/* Stops the prefault threads (their memory stays as it is). */
void tb_prefault_stop(struct table_builder *b);

#endif

/* table.h - the authoritative table: sorted records searchable in place */
#ifndef REVCHECK_TABLE_H
#define REVCHECK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "revkey.h"

#define TABLE_MAGIC	"RCTABLE1"
#define TABLE_REASON_MAX 64
#define TABLE_MAX_RECORDS (UINT64_C(1) << 32)

/* One revocation record as the builder collects it. */
struct table_rec {
	struct revkey	key;
	int64_t		revoked_at;	/* 0 when unknown */
	char		reason[TABLE_REASON_MAX];	/* "" when unknown */
};

/*
 * The revocation time of two records of one key in scope: the earliest
 * known one (0 is unknown), except for a subject or session cutoff, whose
 * time is "every token issued before": there the latest wins, since it
 * revokes more. Keeping the earlier cutoff would un-revoke the tokens
 * issued between the two.
 */
int64_t table_merge_revoked(const char *scope, int64_t have, int64_t t);

/*
 * File layout (docs/FORMAT.md), all integers little-endian:
 *   header   magic[8] format:u16 flags:u16 reserved:u32 count:u64
 *            records_len:u64                               (32 bytes)
 *   index    count x u64: offset of each record inside the record area
 *   records  scope_len:u8 reason_len:u8 id_len:u16 revoked_at:i64, then
 *            scope, 0x00, id, reason. The bytes scope||0x00||id are the
 *            encoded key (revkey_encode), so a lookup compares in place.
 * Records are contiguous, in strictly ascending key order, and fill the
 * record area exactly, so a table has one valid encoding.
 */
#define TABLE_FORMAT		2	/* 1: issuer scopes over the DER Name */
#define TABLE_HDR_LEN		32
#define TABLE_REC_HDR_LEN	12

/*
 * A compact, arena-based collection of records for builds of millions of
 * ids: each record is stored once, in its table encoding, in one growing
 * arena, plus a 16-byte sort entry. About 30 bytes plus the id per record
 * instead of sizeof(struct table_rec).
 */
struct table_ent {
	/*
	 * While sorting, the sort prefix; once sorted and unique, the
	 * record's offset inside the table's record area (so the index and
	 * every record's size are known without reading the record).
	 */
	uint64_t	 pfx;
	uint64_t	 off;	/* record offset in the arena (low 48 bits) */
};

struct util_prefault;

struct table_builder {
	unsigned char	*arena;
	size_t		 len;
	size_t		 cap;
	struct table_ent *ents;
	size_t		 n;
	size_t		 ncap;
	/*
	 * Once sorted and unique, the builder packs itself when memory
	 * allows: the records are moved into a new arena in key order, which
	 * is then exactly the table's record area (rlen bytes), ents is
	 * NULL and offs holds each record's offset (low 48 bits; the scope
	 * rank above), so later passes read memory in order. An add unpacks.
	 */
	uint64_t	*offs;
	/*
	 * Packed, the arena holds the record area in two parts with an
	 * unused gap of gap_len bytes at offset gap_at between them (the
	 * two halves are moved by two threads); an offset past the gap is
	 * gap_len beyond the record's place in the table file.
	 */
	uint64_t	 gap_at;
	uint64_t	 gap_len;
	uint64_t	 rlen;		/* record area length, once sorted */
	/*
	 * Arena bytes and entry bytes ready ahead of the writer: populated
	 * (util_populate), or handed over by a prefault thread started by
	 * table_builder_reserve at arena offset abase and entry byte ebase.
	 */
	size_t		 apop;
	size_t		 epop;
	struct util_prefault *apf;
	struct util_prefault *epf;
	size_t		 abase;
	size_t		 ebase;
	bool		 sorted;	/* sorted and unique since the last add */
	bool		 ranked;	/* sorted with a scope rank per entry */
};

void table_builder_init(struct table_builder *b);
/* Frees everything and leaves b initialized and empty. */
void table_builder_free(struct table_builder *b);

/*
 * Makes room for nrecs more records of bytes more encoded bytes in all
 * (TABLE_REC_HDR_LEN + scope length + 1 + id length + reason length
 * each; an estimate from above), and for large amounts starts threads
 * that prepare that memory ahead of the adds (util_prefault_start),
 * until the builder is sorted, freed or grown past it. 0, or -1 (no thread
 * started, the records unchanged; the adds grow the builder as they go).
 */
int table_builder_reserve(struct table_builder *b, size_t nrecs,
    size_t bytes);

/*
 * Appends a record. reason may be NULL or "" when unknown; it must be
 * shorter than TABLE_REASON_MAX and free of control characters. Returns 0,
 * or -1 (b unchanged) when the key is invalid, the reason is bad, the
 * record cap is reached or memory runs out; errno is EINVAL or ENOMEM.
 */
int table_builder_add(struct table_builder *b, const struct revkey *k,
    int64_t revoked_at, const char *reason);
int table_builder_add_rec(struct table_builder *b, const struct table_rec *r);

/* Number of records (after table_builder_sort_unique: unique keys). */
size_t table_builder_count(const struct table_builder *b);

/*
 * Drops records added after the count was n (n <= count), so that a reader
 * that fails halfway can leave the builder as it was. Only valid before
 * table_builder_sort_unique. This function can't fail.
 */
void table_builder_truncate(struct table_builder *b, size_t n);

/*
 * Drops every record i whose keep[i] is false (keep has one entry per
 * record). Only before table_builder_sort_unique, and no
 * table_builder_truncate after it (the arena keeps the dropped bytes).
 * This function can't fail.
 */
void table_builder_drop(struct table_builder *b, const bool *keep);

/*
 * Sorts by encoded key and collapses duplicates: revoked_at merged by
 * table_merge_revoked, the first non-empty reason in insertion order wins
 * (tests/table_ref.h restates this plainly and the tests compare the two).
 * This function can't fail.
 */
void table_builder_sort_unique(struct table_builder *b);

/* The i-th record's encoded key (scope||0x00||id), its length in *len. */
const unsigned char *table_builder_key(const struct table_builder *b,
    size_t i, size_t *len);

/*
 * Hints the cache line of the i-th record: a loop over the sorted records
 * reads them in key order, which is scattered through the builder's
 * memory, and can hide the misses by hinting a few records ahead.
 */
void table_builder_prefetch(const struct table_builder *b, size_t i);

/* The i-th record's scope (not NUL-terminated) and its length. */
const char *table_builder_scope(const struct table_builder *b, size_t i,
    size_t *len);

/*
 * After sorting, records of one scope are adjacent: returns the index one
 * past the last record that shares record i's scope.
 */
size_t table_builder_scope_end(const struct table_builder *b, size_t i);

/* Copies the i-th record out. 0, or -1 when i is out of range. */
int table_builder_get(const struct table_builder *b, size_t i,
    struct table_rec *out);

/*
 * Size, SHA-256 and bytes of the table file of a sorted builder.
 * table_builder_digest makes one pass without building the file.
 * table_builder_encode gives a malloc'ed buffer the caller owns.
 * table_builder_write streams the file to fd (a new, empty file) with
 * the direct writer (util_dw_open: O_DIRECT where the file system takes
 * it), and when sha is not NULL hashes the same bytes on the way (*len
 * then the size), so that one pass both writes and binds the table.
 * Each returns 0, or -1 with err.
 */
int table_builder_digest(const struct table_builder *b,
    unsigned char sha[32], uint64_t *len, char *err, size_t errlen);
int table_builder_encode(const struct table_builder *b, unsigned char **out,
    size_t *outlen, char *err, size_t errlen);
int table_builder_write(const struct table_builder *b, int fd,
    unsigned char sha[32], uint64_t *len, char *err, size_t errlen);

struct table;	/* opaque: a mapped, validated table */

/*
 * Copies a table file into private read-only memory (util_copy_fd) and
 * validates it as untrusted bytes: header, every index offset and record
 * in bounds, strictly sorted. Nothing done to the file afterwards changes
 * the table. NULL with err.
 */
struct table *table_open(const char *path, char *err, size_t errlen);
/* The same from a descriptor the caller opened (and closes); name for messages. */
struct table *table_open_fd(int fd, const char *name, char *err,
    size_t errlen);
/*
 * table_open_fd for a table whose length is known (want, from a verified
 * filter header; 0: any): a file of another size is refused before any
 * byte is copied. NULL with err.
 */
struct table *table_open_fd_len(int fd, const char *name, uint64_t want,
    char *err, size_t errlen);

/*
 * Hashes the table's bytes again and compares them with the SHA-256
 * taken when it was opened (table_sha256). True when they match.
 */
bool table_intact(const struct table *t);
/* Same over a buffer; with take the table owns buf (free()). */
struct table *table_parse(const unsigned char *buf, size_t len, bool take,
    char *err, size_t errlen);

/* Checks that the table's SHA-256 and length are those expected. 0 or -1. */
int table_check_binding(const struct table *t, const unsigned char sha[32],
    uint64_t len, char *err, size_t errlen);

uint64_t table_count(const struct table *t);
const unsigned char *table_sha256(const struct table *t);
uint64_t table_size(const struct table *t);

/*
 * Binary search for a key. Returns 1 and fills *out (when non-NULL) when
 * the key is revoked, 0 when it is absent, -1 when a record on the way
 * cannot be read within bounds (never "absent": the caller fails closed).
 * Every index entry and record field is bounds-checked where it is read.
 */
int table_lookup(const struct table *t, const struct revkey *k,
    struct table_rec *out);

/*
 * The i-th record in key order; for tests and tools. 0, or -1 when i is
 * out of range or the record cannot be read within bounds.
 */
int table_get(const struct table *t, uint64_t i, struct table_rec *out);

void table_close(struct table *t);

#endif

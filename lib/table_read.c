/* table_read.c - a table file opened, validated and searched in place */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "table.h"
#include "table_int.h"
#include "util.h"

struct table {
	const unsigned char *buf;
	size_t		 len;
	bool		 mapped;	/* util_copy_free() on close */
	bool		 owned;		/* free() on close */
	uint64_t	 count;
	const unsigned char *idx;
	const unsigned char *recs;
	uint64_t	 recs_len;
	unsigned char	 sha[32];
};

/*
 * The header: magic, format, reserved bytes, and a count and records
 * length that fit the file. Sets t's count, idx, recs and recs_len.
 */
static int
tb_validate_header(struct table *t, char *err, size_t errlen)
{
	const unsigned char *h = t->buf;
	uint64_t count, rlen;

	if (t->len < TABLE_HDR_LEN) {
		util_errf(err, errlen, "offset 0: truncated header (%zu bytes)",
		    t->len);
		return -1;
	}
	if (memcmp(h, TABLE_MAGIC, 8) != 0) {
		util_errf(err, errlen, "offset 0: bad magic (not a table file)");
		return -1;
	}
	if (util_get_le16(h + 8) != TABLE_FORMAT) {
		if (util_get_le16(h + 8) < TABLE_FORMAT)
			util_errf(err, errlen, "offset 8: format %u is from an "
			    "older filterbuild (X.509 scopes were not over the "
			    "canonical issuer Name); rebuild with this "
			    "filterbuild", (unsigned)util_get_le16(h + 8));
		else
			util_errf(err, errlen, "offset 8: unsupported format %u",
			    (unsigned)util_get_le16(h + 8));
		return -1;
	}
	if (util_get_le16(h + 10) != 0 || util_get_le32(h + 12) != 0) {
		util_errf(err, errlen, "offset 10: reserved bytes not zero");
		return -1;
	}
	count = util_get_le64(h + 16);
	rlen = util_get_le64(h + 24);
	if (count > TABLE_MAX_RECORDS ||
	    count > (t->len - TABLE_HDR_LEN) / 8) {
		util_errf(err, errlen, "offset 16: record count %" PRIu64
		    " does not fit the file", count);
		return -1;
	}
	if (rlen != t->len - TABLE_HDR_LEN - 8 * count) {
		util_errf(err, errlen, "offset 24: records length %" PRIu64
		    " does not match the file size %zu", rlen, t->len);
		return -1;
	}
	t->count = count;
	t->idx = h + TABLE_HDR_LEN;
	t->recs = t->idx + 8 * count;
	t->recs_len = rlen;
	return 0;
}

static int
tb_validate(struct table *t, char *err, size_t errlen)
{
	const unsigned char *prev = NULL;
	uint64_t count, rlen, pos, i;
	const unsigned char *last_scope = NULL;
	size_t last_scope_len = 0;

	if (tb_validate_header(t, err, errlen) != 0)
		return -1;
	count = t->count;
	rlen = t->recs_len;
	pos = 0;
	for (i = 0; i < count; i++) {
		uint64_t off = util_get_le64(t->idx + 8 * i);
		uint64_t at = TABLE_HDR_LEN + 8 * count + pos;
		const unsigned char *r;
		size_t sl, il, rl, sz;

		if (off != pos) {
			util_errf(err, errlen, "offset %" PRIu64 ": index entry %"
			    PRIu64 " is %" PRIu64 ", expected %" PRIu64,
			    TABLE_HDR_LEN + 8 * i, i, off, pos);
			return -1;
		}
		if (rlen - pos < TABLE_REC_HDR_LEN) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " truncated", at, i);
			return -1;
		}
		r = t->recs + pos;
		sl = rec_scope_len(r);
		il = rec_id_len(r);
		rl = rec_reason_len(r);
		if (sl == 0 || il == 0 || il > REVKEY_ID_MAX ||
		    rl >= TABLE_REASON_MAX) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " has bad lengths (scope %zu, id %zu, reason %zu)",
			    at, i, sl, il, rl);
			return -1;
		}
		sz = tb_rec_size(sl, il, rl);
		if (rlen - pos < sz) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " runs past the end of the file", at, i);
			return -1;
		}
		if (r[TABLE_REC_HDR_LEN + sl] != 0) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " has no key separator", at, i);
			return -1;
		}
		if (last_scope == NULL || last_scope_len != sl ||
		    memcmp(last_scope, rec_key(r), sl) != 0) {
			if (!revkey_scope_valid((const char *)rec_key(r), sl)) {
				util_errf(err, errlen, "offset %" PRIu64
				    ": record %" PRIu64 " has an invalid scope",
				    at, i);
				return -1;
			}
			last_scope = rec_key(r);
			last_scope_len = sl;
		}
		if (!tb_reason_ok((const char *)r + sz - rl, rl)) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " has control characters in its reason", at, i);
			return -1;
		}
		if (prev != NULL && tb_keycmp(rec_key(prev), rec_key_len(prev),
		    rec_key(r), rec_key_len(r)) >= 0) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " is not in strictly ascending key order", at, i);
			return -1;
		}
		prev = r;
		pos += sz;
		util_give_way_point(sz + 8);
	}
	if (pos != rlen) {
		util_errf(err, errlen, "offset %" PRIu64 ": %" PRIu64
		    " trailing bytes after the last record",
		    TABLE_HDR_LEN + 8 * count + pos, rlen - pos);
		return -1;
	}
	if (util_sha256(t->sha, t->buf, t->len) != 0) {
		util_errf(err, errlen, "SHA-256 failed");
		return -1;
	}
	return 0;
}

struct table *
table_parse(const unsigned char *buf, size_t len, bool take, char *err,
    size_t errlen)
{
	struct table *t;
	char why[256];

	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		util_errf(err, errlen, "table: out of memory");
		if (take)
			free((void *)(uintptr_t)buf);
		return NULL;
	}
	t->buf = buf;
	t->len = len;
	t->owned = take;
	if (buf == NULL) {
		util_errf(err, errlen, "table: no data");
		table_close(t);
		return NULL;
	}
	if (tb_validate(t, why, sizeof(why)) != 0) {
		util_errf(err, errlen, "table: %s", why);
		table_close(t);
		return NULL;
	}
	return t;
}

struct table *
table_open_fd(int fd, const char *name, char *err, size_t errlen)
{
	return table_open_fd_len(fd, name, 0, err, errlen);
}

struct table *
table_open_fd_len(int fd, const char *name, uint64_t want, char *err,
    size_t errlen)
{
	struct table *t;
	void *map;
	size_t len;
	char why[256];

	assert(name != NULL);
	/*
	 * A private copy, not a shared mapping: a table mapped from its file
	 * changes with the file, so an edit in place after the SHA-256 check
	 * would change answers (docs/BENCHMARKS.md has the memory it costs).
	 * With want, a file of another size is refused by util_copy_fd's
	 * fstat before a byte of it is copied.
	 */
	if (util_copy_fd(fd, name, want != 0 ? want : TABLE_HDR_LEN,
	    want != 0 ? want : UINT64_MAX, &map, &len, err, errlen) != 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		util_errf(err, errlen, "%s: out of memory", name);
		util_copy_free(map, len);
		return NULL;
	}
	t->buf = map;
	t->len = len;
	t->mapped = true;
	if (tb_validate(t, why, sizeof(why)) != 0) {
		util_errf(err, errlen, "%s: %s", name, why);
		table_close(t);
		return NULL;
	}
	return t;
}

struct table *
table_open(const char *path, char *err, size_t errlen)
{
	struct table *t;
	int fd;

	assert(path != NULL);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		util_errf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	t = table_open_fd(fd, path, err, errlen);
	close(fd);
	return t;
}

bool
table_intact(const struct table *t)
{
	unsigned char sha[32];

	assert(t != NULL);
	return util_sha256(sha, t->buf, t->len) == 0 &&
	    CRYPTO_memcmp(sha, t->sha, 32) == 0;
}

int
table_check_binding(const struct table *t, const unsigned char sha[32],
    uint64_t len, char *err, size_t errlen)
{
	assert(t != NULL && sha != NULL);
	if ((uint64_t)t->len != len) {
		util_errf(err, errlen, "table length %zu does not match the "
		    "filter's %" PRIu64, t->len, len);
		return -1;
	}
	if (CRYPTO_memcmp(t->sha, sha, 32) != 0) {
		util_errf(err, errlen,
		    "table SHA-256 does not match the filter's");
		return -1;
	}
	return 0;
}

uint64_t
table_count(const struct table *t)
{
	assert(t != NULL);
	return t->count;
}

const unsigned char *
table_sha256(const struct table *t)
{
	assert(t != NULL);
	return t->sha;
}

uint64_t
table_size(const struct table *t)
{
	assert(t != NULL);
	return t->len;
}

/*
 * The i-th record (i < count), its index entry and its key checked to lie
 * inside the record area; *avail gets the bytes from it to the area's end.
 * NULL when they do not.
 */
static const unsigned char *
tb_record(const struct table *t, uint64_t i, size_t *avail)
{
	uint64_t off = util_get_le64(t->idx + 8 * i);
	const unsigned char *r;

	if (off > t->recs_len || t->recs_len - off < TABLE_REC_HDR_LEN)
		return NULL;
	r = t->recs + off;
	if (rec_key_len(r) > t->recs_len - off - TABLE_REC_HDR_LEN)
		return NULL;
	*avail = (size_t)(t->recs_len - off);
	return r;
}

int
table_lookup(const struct table *t, const struct revkey *k,
    struct table_rec *out)
{
	unsigned char key[REVKEY_ENC_MAX];
	size_t klen, avail;
	uint64_t lo, hi;

	assert(t != NULL && k != NULL);
	if (!tb_key_ok(k))
		return 0;
	klen = revkey_encode(k, key);
	lo = 0;
	hi = t->count;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const unsigned char *r = tb_record(t, mid, &avail);
		int c;

		if (r == NULL)
			return -1;
		c = tb_keycmp(rec_key(r), rec_key_len(r), key, klen);
		if (c == 0) {
			if (out != NULL &&
			    rec_to_table_rec(r, avail, out) == -1)
				return -1;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int
table_get(const struct table *t, uint64_t i, struct table_rec *out)
{
	const unsigned char *r;
	size_t avail;

	assert(t != NULL && out != NULL);
	if (i >= t->count || (r = tb_record(t, i, &avail)) == NULL)
		return -1;
	return rec_to_table_rec(r, avail, out);
}

void
table_close(struct table *t)
{
	if (t == NULL)
		return;
	if (t->mapped)
		util_copy_free((void *)(uintptr_t)t->buf, t->len);
	else if (t->owned)
		free((void *)(uintptr_t)t->buf);
	free(t);
}

/* delta.c - signed delta chains: the revocations added and removed since a base filter */
/*
 * A delta is parsed as hostile bytes: every length is checked against the
 * bytes that are there before it is used, the caps bound the work, and a
 * file has exactly one valid encoding (scopes and entries strictly
 * ascending, reserved fields zero, the size exact), so two different files
 * never mean the same thing.
 */
#include "delta.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Header offsets (docs/FORMAT.md section 6.1). */
#define OFF_MAGIC	0
#define OFF_FORMAT	8
#define OFF_KIND	10
#define OFF_FLAGS	11
#define OFF_RSV1	12
#define OFF_BASEVER	16
#define OFF_BASESHA	24
#define OFF_SEQ		56
#define OFF_PREVSHA	64
#define OFF_ISSUED	96
#define OFF_EXPIRES	104
#define OFF_CURSOR	112
#define OFF_CHANGED	120
#define OFF_NSCOPES	128
#define OFF_RSV2	132
#define OFF_NENTRIES	136
#define OFF_BODYLEN	144
#define OFF_SIGNER	152

struct delta {
	unsigned char	*buf;
	size_t		 len;
	struct delta_info info;
	unsigned char	 sha[32];
	const unsigned char **scopes;	/* nscopes pointers to (len, bytes) */
	uint64_t	*offs;		/* nentries entry offsets in buf */
};

static bool
dl_zero(const unsigned char *p, size_t n)
{
	while (n-- > 0)
		if (*p++ != 0)
			return false;
	return true;
}

static bool
dl_reason_valid(const char *s, size_t n)
{
	size_t i;

	if (n >= TABLE_REASON_MAX)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

void
delta_file_name(char out[DELTA_NAME_LEN + 1], uint64_t seq)
{
	(void)snprintf(out, DELTA_NAME_LEN + 1, "%020" PRIu64 ".rcd", seq);
}

/* ---- encoding ----------------------------------------------------------- */

struct enc_ord {
	const struct delta_entry *e;
	size_t		 i;	/* input position: the later one wins */
};

static int
enc_cmp(const void *a, const void *b)
{
	const struct enc_ord *x = a, *y = b;
	int c = revkey_cmp(&x->e->rec.key, &y->e->rec.key);

	if (c != 0)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Checks one entry before it is encoded. 0, or -1 with err. */
static int
enc_check(const struct delta_entry *e, size_t i, char *err, size_t errlen)
{
	const struct revkey *k = &e->rec.key;

	if (e->op != DELTA_ADD && e->op != DELTA_REMOVE) {
		util_errf(err, errlen, "delta entry %zu: unknown op %d", i,
		    (int)e->op);
		return -1;
	}
	if (!revkey_scope_valid(k->scope, k->scope_len) || k->id_len == 0 ||
	    k->id_len > REVKEY_ID_MAX) {
		util_errf(err, errlen, "delta entry %zu: invalid key", i);
		return -1;
	}
	if (e->op == DELTA_ADD && (e->rec.revoked_at < 0 ||
	    !dl_reason_valid(e->rec.reason, strnlen(e->rec.reason,
	    TABLE_REASON_MAX)))) {
		util_errf(err, errlen, "delta entry %zu: revoked_at before 1970 "
		    "or an invalid reason", i);
		return -1;
	}
	return 0;
}

/*
 * The scopes and the body's length of the m kept entries, in key order:
 * *nsc and *body grow.
 */
static void
enc_measure(const struct enc_ord *ord, size_t m, size_t *nsc, size_t *body)
{
	const struct revkey *prev = NULL;
	size_t i, rlen;

	for (i = 0; i < m; i++) {
		const struct delta_entry *x = ord[i].e;

		if (prev == NULL || prev->scope_len != x->rec.key.scope_len ||
		    memcmp(prev->scope, x->rec.key.scope, x->rec.key.scope_len)
		    != 0) {
			(*nsc)++;
			*body += 1 + x->rec.key.scope_len;
		}
		prev = &x->rec.key;
		rlen = x->op == DELTA_ADD ? strnlen(x->rec.reason,
		    TABLE_REASON_MAX) : 0;
		*body += DELTA_ENTRY_HDR_LEN + x->rec.key.id_len + rlen;
	}
}

/* The body of the m kept entries at p; returns the end of what it wrote. */
static unsigned char *
enc_put_body(unsigned char *p, const struct enc_ord *ord, size_t m)
{
	const struct revkey *prev = NULL;
	size_t i, j, rlen;

	/* Scopes, in order. */
	for (i = 0; i < m; i++) {
		const struct revkey *k = &ord[i].e->rec.key;

		if (prev == NULL || prev->scope_len != k->scope_len ||
		    memcmp(prev->scope, k->scope, k->scope_len) != 0) {
			*p++ = (unsigned char)k->scope_len;
			memcpy(p, k->scope, k->scope_len);
			p += k->scope_len;
		}
		prev = k;
	}
	/* Entries, in key order, each naming its scope by index. */
	prev = NULL;
	for (i = 0, j = 0; i < m; i++) {
		const struct delta_entry *x = ord[i].e;
		const struct revkey *k = &x->rec.key;

		if (prev != NULL && (prev->scope_len != k->scope_len ||
		    memcmp(prev->scope, k->scope, k->scope_len) != 0))
			j++;
		prev = k;
		rlen = x->op == DELTA_ADD ? strnlen(x->rec.reason,
		    TABLE_REASON_MAX) : 0;
		p[0] = (unsigned char)x->op;
		util_put_le16(p + 1, (uint16_t)j);
		util_put_le16(p + 3, (uint16_t)k->id_len);
		p[5] = (unsigned char)rlen;
		util_put_le64(p + 6, x->op == DELTA_ADD ?
		    (uint64_t)x->rec.revoked_at : 0);
		p += DELTA_ENTRY_HDR_LEN;
		memcpy(p, k->id, k->id_len);
		p += k->id_len;
		memcpy(p, x->rec.reason, rlen);
		p += rlen;
	}
	return p;
}

int
delta_encode(const struct delta_info *info, const struct delta_entry *e,
    size_t n, EVP_PKEY *key, unsigned char **out, size_t *outlen, char *err,
    size_t errlen)
{
	struct enc_ord *ord = NULL;
	unsigned char *buf = NULL, *p;
	size_t i, m = 0, nsc = 0, body = 0, total;
	int rc = -1;

	assert(info != NULL && key != NULL && out != NULL && outlen != NULL);
	if (info->kind != DELTA_KIND_DELTA && info->kind != DELTA_KIND_HEAD) {
		util_errf(err, errlen, "delta: unknown kind %d", (int)info->kind);
		return -1;
	}
	if (info->kind == DELTA_KIND_HEAD ? n != 0 : info->seq == 0) {
		util_errf(err, errlen, "delta: a head has no entries and a delta "
		    "a sequence number of at least 1");
		return -1;
	}
	if (n > DELTA_MAX_ENTRIES) {
		util_errf(err, errlen, "delta: %zu entries, over the cap of %"
		    PRIu64, n, DELTA_MAX_ENTRIES);
		return -1;
	}
	if (n > 0 && (ord = calloc(n, sizeof(*ord))) == NULL) {
		util_errf(err, errlen, "delta: out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (enc_check(&e[i], i, err, errlen) != 0)
			goto out;
		ord[i].e = &e[i];
		ord[i].i = i;
	}
	if (n > 0)
		qsort(ord, n, sizeof(*ord), enc_cmp);
	/* Keep the last entry of each key; count scopes and bytes. */
	for (i = 0; i < n; i++) {
		if (i + 1 < n && revkey_cmp(&ord[i].e->rec.key,
		    &ord[i + 1].e->rec.key) == 0)
			continue;
		ord[m++] = ord[i];
	}
	enc_measure(ord, m, &nsc, &body);
	if (nsc > DELTA_MAX_SCOPES) {
		util_errf(err, errlen, "delta: %zu scopes, over the cap of %d",
		    nsc, DELTA_MAX_SCOPES);
		goto out;
	}
	total = DELTA_HDR_LEN + body + SIGN_SIG_LEN;
	if ((uint64_t)total > DELTA_MAX_SIZE) {
		util_errf(err, errlen, "delta: %zu bytes, over the cap", total);
		goto out;
	}
	if ((buf = calloc(1, total)) == NULL) {
		util_errf(err, errlen, "delta: out of memory");
		goto out;
	}
	memcpy(buf + OFF_MAGIC, DELTA_MAGIC, 8);
	util_put_le16(buf + OFF_FORMAT, DELTA_FORMAT);
	buf[OFF_KIND] = (unsigned char)info->kind;
	util_put_le64(buf + OFF_BASEVER, info->base_version);
	memcpy(buf + OFF_BASESHA, info->base_sha256, 32);
	util_put_le64(buf + OFF_SEQ, info->seq);
	memcpy(buf + OFF_PREVSHA, info->prev_sha256, 32);
	util_put_le64(buf + OFF_ISSUED, (uint64_t)info->issued_at);
	util_put_le64(buf + OFF_EXPIRES, (uint64_t)info->expires_at);
	util_put_le64(buf + OFF_CURSOR, info->cursor);
	util_put_le64(buf + OFF_CHANGED, (uint64_t)info->changed_at);
	util_put_le32(buf + OFF_NSCOPES, (uint32_t)nsc);
	util_put_le64(buf + OFF_NENTRIES, (uint64_t)m);
	util_put_le64(buf + OFF_BODYLEN, (uint64_t)body);
	if (sign_key_id(key, buf + OFF_SIGNER) != 0) {
		util_errf(err, errlen, "delta: cannot compute the key id");
		goto out;
	}
	p = enc_put_body(buf + DELTA_HDR_LEN, ord, m);
	assert((size_t)(p - buf) == DELTA_HDR_LEN + body);
	if (sign_sign(key, buf, total - SIGN_SIG_LEN, p) != 0) {
		util_errf(err, errlen, "delta: signing failed");
		goto out;
	}
	*out = buf;
	*outlen = total;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	free(ord);
	return rc;
}

/* ---- parsing ------------------------------------------------------------ */

/* Validates the body: scopes, then entries. 0, or -1 with err. */
static int
dl_body(struct delta *d, char *err, size_t errlen)
{
	const unsigned char *b = d->buf;
	size_t end = DELTA_HDR_LEN + (size_t)util_get_le64(b + OFF_BODYLEN);
	size_t pos = DELTA_HDR_LEN, slen, idlen, rlen, prev_slen = 0;
	const unsigned char *prev_scope = NULL, *prev_id = NULL;
	size_t prev_idlen = 0, prev_sidx = 0;
	uint64_t i, sidx;
	int c;

	for (i = 0; i < d->info.nscopes; i++) {
		if (pos >= end) {
			util_errf(err, errlen, "offset %zu: scope %" PRIu64 " runs "
			    "past the body", pos, i);
			return -1;
		}
		slen = b[pos];
		if (slen > end - pos - 1 ||
		    !revkey_scope_valid((const char *)b + pos + 1, slen) ||
		    memchr(b + pos + 1, '\0', slen) != NULL) {
			util_errf(err, errlen, "offset %zu: scope %" PRIu64 " is "
			    "cut or invalid", pos, i);
			return -1;
		}
		if (prev_scope != NULL) {
			c = memcmp(prev_scope + 1, b + pos + 1, slen < prev_slen ?
			    slen : prev_slen);
			if (c > 0 || (c == 0 && prev_slen >= slen)) {
				util_errf(err, errlen, "offset %zu: scope %" PRIu64
				    " is not above the one before", pos, i);
				return -1;
			}
		}
		d->scopes[i] = b + pos;
		prev_scope = b + pos;
		prev_slen = slen;
		pos += 1 + slen;
	}
	for (i = 0; i < d->info.nentries; i++) {
		if (end - pos < DELTA_ENTRY_HDR_LEN) {
			util_errf(err, errlen, "offset %zu: entry %" PRIu64 " is cut",
			    pos, i);
			return -1;
		}
		sidx = util_get_le16(b + pos + 1);
		idlen = util_get_le16(b + pos + 3);
		rlen = b[pos + 5];
		if (b[pos] != DELTA_ADD && b[pos] != DELTA_REMOVE) {
			util_errf(err, errlen, "offset %zu: entry %" PRIu64 ": "
			    "unknown op %u", pos, i, b[pos]);
			return -1;
		}
		if (sidx >= d->info.nscopes || sidx < prev_sidx) {
			util_errf(err, errlen, "offset %zu: entry %" PRIu64 ": scope "
			    "index %" PRIu64 " out of range or out of order",
			    pos, i, sidx);
			return -1;
		}
		if (idlen == 0 || idlen > REVKEY_ID_MAX ||
		    idlen + rlen > end - pos - DELTA_ENTRY_HDR_LEN) {
			util_errf(err, errlen, "offset %zu: entry %" PRIu64 ": id "
			    "length %zu invalid or past the body", pos, i,
			    idlen);
			return -1;
		}
		if ((int64_t)util_get_le64(b + pos + 6) < 0 ||
		    !dl_reason_valid((const char *)b + pos +
		    DELTA_ENTRY_HDR_LEN + idlen, rlen) ||
		    (b[pos] == DELTA_REMOVE && (rlen != 0 ||
		    util_get_le64(b + pos + 6) != 0))) {
			util_errf(err, errlen, "offset %zu: entry %" PRIu64 ": bad "
			    "revoked_at or reason", pos, i);
			return -1;
		}
		/* Strictly ascending keys: by scope index, then id bytes. */
		if (prev_id != NULL && sidx == prev_sidx) {
			c = memcmp(prev_id, b + pos + DELTA_ENTRY_HDR_LEN,
			    idlen < prev_idlen ? idlen : prev_idlen);
			if (c > 0 || (c == 0 && prev_idlen >= idlen)) {
				util_errf(err, errlen, "offset %zu: entry %" PRIu64
				    " is not above the one before", pos, i);
				return -1;
			}
		}
		/* A scope listed must be used: one encoding per content. */
		if (i == 0 ? sidx != 0 : sidx > prev_sidx + 1) {
			util_errf(err, errlen, "offset %zu: entry %" PRIu64 ": a "
			    "scope is listed but has no entry", pos, i);
			return -1;
		}
		d->offs[i] = pos;
		prev_sidx = (size_t)sidx;
		prev_id = b + pos + DELTA_ENTRY_HDR_LEN;
		prev_idlen = idlen;
		pos += DELTA_ENTRY_HDR_LEN + idlen + rlen;
	}
	if (d->info.nentries > 0 && prev_sidx + 1 != d->info.nscopes) {
		util_errf(err, errlen, "offset %zu: a scope is listed but has no "
		    "entry", pos);
		return -1;
	}
	if (pos != end) {
		util_errf(err, errlen, "offset %zu: %zu bytes after the last entry",
		    pos, end - pos);
		return -1;
	}
	return 0;
}

static int
dl_validate(struct delta *d, char *err, size_t errlen)
{
	const unsigned char *b = d->buf;
	struct delta_info *in = &d->info;
	uint64_t body;

	if (d->len < DELTA_HDR_LEN + SIGN_SIG_LEN) {
		util_errf(err, errlen, "offset 0: file too short (%zu bytes)",
		    d->len);
		return -1;
	}
	if ((uint64_t)d->len > DELTA_MAX_SIZE) {
		util_errf(err, errlen, "offset 0: file too large (%zu bytes)",
		    d->len);
		return -1;
	}
	if (memcmp(b + OFF_MAGIC, DELTA_MAGIC, 8) != 0) {
		util_errf(err, errlen, "offset 0: bad magic (not a delta file)");
		return -1;
	}
	if (util_get_le16(b + OFF_FORMAT) != DELTA_FORMAT) {
		util_errf(err, errlen, "offset %d: unsupported format %u",
		    OFF_FORMAT, (unsigned)util_get_le16(b + OFF_FORMAT));
		return -1;
	}
	if (b[OFF_KIND] != DELTA_KIND_DELTA && b[OFF_KIND] != DELTA_KIND_HEAD) {
		util_errf(err, errlen, "offset %d: unknown kind %u", OFF_KIND,
		    b[OFF_KIND]);
		return -1;
	}
	if (b[OFF_FLAGS] != 0 || !dl_zero(b + OFF_RSV1, 4) ||
	    !dl_zero(b + OFF_RSV2, 4)) {
		util_errf(err, errlen, "offset %d: reserved bytes are not zero",
		    OFF_FLAGS);
		return -1;
	}
	in->kind = (enum delta_kind)b[OFF_KIND];
	in->base_version = util_get_le64(b + OFF_BASEVER);
	memcpy(in->base_sha256, b + OFF_BASESHA, 32);
	in->seq = util_get_le64(b + OFF_SEQ);
	memcpy(in->prev_sha256, b + OFF_PREVSHA, 32);
	in->issued_at = (int64_t)util_get_le64(b + OFF_ISSUED);
	in->expires_at = (int64_t)util_get_le64(b + OFF_EXPIRES);
	in->cursor = util_get_le64(b + OFF_CURSOR);
	in->changed_at = (int64_t)util_get_le64(b + OFF_CHANGED);
	in->nscopes = util_get_le32(b + OFF_NSCOPES);
	in->nentries = util_get_le64(b + OFF_NENTRIES);
	memcpy(in->signer, b + OFF_SIGNER, SIGN_KEYID_LEN);
	body = util_get_le64(b + OFF_BODYLEN);
	if (in->base_version == 0 || in->issued_at <= 0 ||
	    in->expires_at <= in->issued_at || in->changed_at < 0) {
		util_errf(err, errlen, "offset %d: base version 0, or times out of "
		    "order", OFF_BASEVER);
		return -1;
	}
	if (in->kind == DELTA_KIND_DELTA ? in->seq == 0 :
	    (in->nentries != 0 || in->nscopes != 0)) {
		util_errf(err, errlen, "offset %d: a delta of sequence 0, or a head "
		    "with entries", OFF_SEQ);
		return -1;
	}
	if (in->nentries > DELTA_MAX_ENTRIES || in->nscopes > DELTA_MAX_SCOPES ||
	    in->nscopes > in->nentries) {
		util_errf(err, errlen, "offset %d: %" PRIu64 " entries in %u scopes "
		    "is over the caps or inconsistent", OFF_NSCOPES,
		    in->nentries, in->nscopes);
		return -1;
	}
	if (body != d->len - DELTA_HDR_LEN - SIGN_SIG_LEN) {
		util_errf(err, errlen, "offset %d: body length %" PRIu64 " does not "
		    "match the file size %zu", OFF_BODYLEN, body, d->len);
		return -1;
	}
	/* Each entry takes at least its header and one id byte. */
	if (in->nentries > body / (DELTA_ENTRY_HDR_LEN + 1)) {
		util_errf(err, errlen, "offset %d: %" PRIu64 " entries cannot fit "
		    "in %" PRIu64 " bytes", OFF_NENTRIES, in->nentries, body);
		return -1;
	}
	if ((in->nscopes > 0 && (d->scopes = calloc(in->nscopes,
	    sizeof(*d->scopes))) == NULL) || (in->nentries > 0 &&
	    (d->offs = calloc((size_t)in->nentries, sizeof(*d->offs))) ==
	    NULL)) {
		util_errf(err, errlen, "out of memory");
		return -1;
	}
	return dl_body(d, err, errlen);
}

struct delta *
delta_parse(const unsigned char *buf, size_t len, char *err, size_t errlen)
{
	struct delta *d;

	assert(buf != NULL || len == 0);
	if ((d = calloc(1, sizeof(*d))) == NULL ||
	    (d->buf = malloc(len > 0 ? len : 1)) == NULL) {
		util_errf(err, errlen, "out of memory");
		free(d);
		return NULL;
	}
	if (len > 0)
		memcpy(d->buf, buf, len);
	d->len = len;
	if (dl_validate(d, err, errlen) != 0 ||
	    util_sha256(d->sha, d->buf, d->len) != 0) {
		delta_free(d);
		return NULL;
	}
	return d;
}

struct delta *
delta_open(const char *path, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	struct delta *d;
	size_t len = 0;
	char e2[512];

	if (util_read_file(path, (size_t)DELTA_MAX_SIZE, &buf, &len, err,
	    errlen) != 0)
		return NULL;
	d = delta_parse(buf, len, e2, sizeof(e2));
	if (d == NULL)
		util_errf(err, errlen, "%s: %s", path, e2);
	free(buf);
	return d;
}

int
delta_verify(const struct delta *d, const struct sign_ring *ring, char *err,
    size_t errlen)
{
	EVP_PKEY *key;

	key = sign_ring_find(ring, d->info.signer);
	if (key == NULL) {
		sign_ring_untrusted(ring, d->info.signer, err, errlen);
		return -1;
	}
	if (!sign_verify(key, d->buf, d->len - SIGN_SIG_LEN,
	    d->buf + d->len - SIGN_SIG_LEN)) {
		util_errf(err, errlen, "bad signature");
		return -1;
	}
	return 0;
}

const struct delta_info *
delta_info(const struct delta *d)
{
	return &d->info;
}

const unsigned char *
delta_sha256(const struct delta *d)
{
	return d->sha;
}

const unsigned char *
delta_bytes(const struct delta *d, size_t *len)
{
	*len = d->len;
	return d->buf;
}

int
delta_get(const struct delta *d, uint64_t i, struct delta_entry *out)
{
	const unsigned char *p, *sc;
	size_t idlen, rlen;

	if (i >= d->info.nentries)
		return -1;
	p = d->buf + d->offs[i];
	sc = d->scopes[util_get_le16(p + 1)];
	idlen = util_get_le16(p + 3);
	rlen = p[5];
	memset(out, 0, sizeof(*out));
	out->op = (enum delta_op)p[0];
	memcpy(out->rec.key.scope, sc + 1, sc[0]);
	out->rec.key.scope_len = sc[0];
	memcpy(out->rec.key.id, p + DELTA_ENTRY_HDR_LEN, idlen);
	out->rec.key.id_len = idlen;
	out->rec.revoked_at = (int64_t)util_get_le64(p + 6);
	memcpy(out->rec.reason, p + DELTA_ENTRY_HDR_LEN + idlen, rlen);
	return 0;
}

void
delta_free(struct delta *d)
{
	if (d == NULL)
		return;
	free(d->buf);
	free(d->scopes);
	free(d->offs);
	free(d);
}

enum delta_link
delta_link(const struct delta *d, const struct delta_pos *pos, char *err,
    size_t errlen)
{
	const struct delta_info *in = &d->info;

	if (in->base_version != pos->base_version ||
	    memcmp(in->base_sha256, pos->base_sha256, 32) != 0) {
		util_errf(err, errlen, "made for base version %" PRIu64 ", not the "
		    "base %" PRIu64 " in service", in->base_version,
		    pos->base_version);
		return DELTA_LINK_OTHER_BASE;
	}
	if (in->kind == DELTA_KIND_HEAD) {
		if (in->seq < pos->seq) {
			util_errf(err, errlen, "a head for delta %" PRIu64 ", older "
			    "than delta %" PRIu64 " in service", in->seq,
			    pos->seq);
			return DELTA_LINK_OLD;
		}
		if (in->seq > pos->seq) {
			util_errf(err, errlen, "a head for delta %" PRIu64 ", but "
			    "only %" PRIu64 " are in service: deltas missing",
			    in->seq, pos->seq);
			return DELTA_LINK_GAP;
		}
		if (memcmp(in->prev_sha256, pos->last_sha256, 32) != 0) {
			util_errf(err, errlen, "a head for delta %" PRIu64 " names "
			    "another delta of that number (a fork)", in->seq);
			return DELTA_LINK_FORK;
		}
		return DELTA_LINK_HEAD;
	}
	if (in->seq <= pos->seq) {
		util_errf(err, errlen, "delta %" PRIu64 " is a replay: %" PRIu64
		    " is in service", in->seq, pos->seq);
		return DELTA_LINK_OLD;
	}
	if (in->seq != pos->seq + 1) {
		util_errf(err, errlen, "delta %" PRIu64 " after %" PRIu64 ": deltas "
		    "missing (a gap is never crossed)", in->seq, pos->seq);
		return DELTA_LINK_GAP;
	}
	if (memcmp(in->prev_sha256, pos->last_sha256, 32) != 0) {
		util_errf(err, errlen, "delta %" PRIu64 " does not chain to the "
		    "delta %" PRIu64 " in service (a fork)", in->seq, pos->seq);
		return DELTA_LINK_FORK;
	}
	return DELTA_LINK_NEXT;
}

int
delta_src_dir(void *arg, uint64_t seq, unsigned char **buf, size_t *len, char *err,
    size_t errlen)
{
	const char *ddir = arg;
	char path[4200], name[DELTA_NAME_LEN + 1];

	if (seq != DELTA_SEQ_HEAD)
		delta_file_name(name, seq);
	if (util_path_join(path, sizeof(path), ddir, seq == DELTA_SEQ_HEAD ?
	    DELTA_HEAD_NAME : name) != 0) {
		util_errf(err, errlen, "%s: path too long", ddir);
		return -1;
	}
	if (access(path, F_OK) != 0)
		return 0;
	if (util_read_file(path, (size_t)DELTA_MAX_SIZE, buf, len, err,
	    errlen) != 0)
		return -1;
	return 1;
}

int
delta_chain_walk(const char *ddir, const struct sign_ring *ring,
    struct delta_pos *pos, int (*fn)(void *arg, const struct delta *d),
    void *arg, struct delta **head, uint64_t *head_seq, char *err,
    size_t errlen)
{
	return delta_chain_walk_src(delta_src_dir, (void *)ddir, ddir, ring, pos,
	    fn, arg, head, head_seq, err, errlen);
}

/* Reads and parses one file of a source: 1, 0 (absent) or -1 with err. */
static int
src_delta(delta_src_fn src, void *src_arg, const char *where, uint64_t seq,
    struct delta **out, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char e2[512];
	int rc;

	*out = NULL;
	rc = src(src_arg, seq, &buf, &len, e2, sizeof(e2));
	if (rc <= 0) {
		if (rc < 0)
			util_errf(err, errlen, "%s: %s", where, e2);
		free(buf);
		return rc;
	}
	*out = delta_parse(buf, len, e2, sizeof(e2));
	free(buf);
	if (*out == NULL) {
		if (seq == DELTA_SEQ_HEAD)
			util_errf(err, errlen, "%s: head: %s", where, e2);
		else
			util_errf(err, errlen, "%s: delta %" PRIu64 ": %s", where,
			    seq, e2);
		return -1;
	}
	return 1;
}

int
delta_chain_walk_src(delta_src_fn src, void *src_arg, const char *where,
    const struct sign_ring *ring, struct delta_pos *pos,
    int (*fn)(void *arg, const struct delta *d), void *arg,
    struct delta **head, uint64_t *head_seq, char *err, size_t errlen)
{
	char e2[512];
	struct delta *d;
	int rc;

	*head = NULL;
	*head_seq = UINT64_MAX;
	for (;;) {
		rc = src_delta(src, src_arg, where, pos->seq + 1, &d, err,
		    errlen);
		if (rc < 0)
			return -1;
		if (rc == 0)
			break;
		if (delta_verify(d, ring, e2, sizeof(e2)) != 0 ||
		    delta_link(d, pos, e2, sizeof(e2)) != DELTA_LINK_NEXT ||
		    (fn != NULL && fn(arg, d) != 0 &&
		    snprintf(e2, sizeof(e2), "not applied") > 0)) {
			util_errf(err, errlen, "%s: delta %" PRIu64 ": %s", where,
			    pos->seq + 1, e2);
			delta_free(d);
			return -1;
		}
		pos->seq = delta_info(d)->seq;
		memcpy(pos->last_sha256, delta_sha256(d), 32);
		delta_free(d);
	}
	rc = src_delta(src, src_arg, where, DELTA_SEQ_HEAD, &d, err, errlen);
	if (rc <= 0)
		return rc;
	if (delta_info(d)->kind != DELTA_KIND_HEAD ||
	    delta_verify(d, ring, e2, sizeof(e2)) != 0) {
		util_errf(err, errlen, "%s: head: %s", where,
		    delta_info(d)->kind != DELTA_KIND_HEAD ? "not a head" : e2);
		delta_free(d);
		return -1;
	}
	*head_seq = delta_info(d)->seq;
	if (delta_link(d, pos, e2, sizeof(e2)) != DELTA_LINK_HEAD) {
		if (*head_seq == pos->seq) {
			/* Same seq, other predecessor: a fork. */
			util_errf(err, errlen, "%s: head: %s", where, e2);
			delta_free(d);
			return -1;
		}
		delta_free(d);
		return 0;
	}
	*head = d;
	return 0;
}

int
delta_bundle_split(const unsigned char *buf, size_t len, size_t *offs,
    size_t *lens, size_t max, char *err, size_t errlen)
{
	size_t pos = 0, n = 0;
	uint64_t body;

	while (pos < len) {
		if (len - pos < DELTA_HDR_LEN + SIGN_SIG_LEN) {
			util_errf(err, errlen, "offset %zu: piece %zu is cut", pos,
			    n);
			return -1;
		}
		body = util_get_le64(buf + pos + OFF_BODYLEN);
		if (body > DELTA_MAX_SIZE ||
		    body > len - pos - DELTA_HDR_LEN - SIGN_SIG_LEN) {
			util_errf(err, errlen, "offset %zu: piece %zu declares %"
			    PRIu64 " body bytes, more than are there", pos, n,
			    body);
			return -1;
		}
		if (n == max) {
			util_errf(err, errlen, "more than %zu pieces", max);
			return -1;
		}
		offs[n] = pos;
		lens[n] = DELTA_HDR_LEN + (size_t)body + SIGN_SIG_LEN;
		pos += lens[n++];
	}
	return (int)n;
}

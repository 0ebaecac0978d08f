/* ffile.c - the signed filter file: header, scopes, bit array, signature */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "bloomhash.h"
#include "ffile.h"
#include "util.h"

struct ffile {
	_Atomic unsigned long refs;	/* ffile_ref; the last close frees */
	const unsigned char *buf;
	size_t		 len;
	bool		 mapped;	/* util_copy_free() on close */
	bool		 owned;		/* free() on close */
	struct ffile_info info;
	struct bloom	 bloom;
	unsigned char	 sha[32];
};

/* Header offsets; docs/FORMAT.md has the same table. */
enum {
	OFF_MAGIC = 0, OFF_FORMAT = 8, OFF_LAYOUT = 10, OFF_SEGLOG = 11,
	OFF_NSCOPES = 12, OFF_VERSION = 16, OFF_ISSUED = 24, OFF_EXPIRES = 32,
	OFF_KEYS = 40, OFF_M = 48, OFF_K = 56, OFF_WIDTH = 60, OFF_RSV2 = 61, OFF_SEED = 64,
	OFF_FPRATE = 72, OFF_SIGNER = 80, OFF_TSHA = 112, OFF_TLEN = 144,
	OFF_BITSOFF = 152, OFF_BITSLEN = 160,
};

static uint64_t
ff_double_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static double
ff_bits_double(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static size_t
ff_scope_len(const struct ffile_scope *s)
{
	size_t n = FFILE_SCOPE_MIN_LEN + strlen(s->name) + strlen(s->issuer) +
	    strlen(s->crl_number), i;

	for (i = 0; i < s->npart; i++)
		n += FFILE_PART_MIN_LEN + strlen(s->part[i].crl_number);
	return n;
}

/* A format-5 scope entry's tail: the exact byte and, if set, its fields. */
static size_t
ff_scope_exact_len(const struct ffile_scope *s)
{
	return 1 + (s->exact ? FFILE_EXACT_LEN : 0);
}

static uint64_t
ff_align8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

static bool
ff_is_hex(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (util_hexval((unsigned char)s[i]) < 0)
			return false;
	return true;
}

static bool
ff_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

static int
ff_scope_name_cmp(const void *a, const void *b)
{
	const struct ffile_scope *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* ---------------------------------------------------------------------- */
/* Parsing. */

/*
 * Parses one scope entry at *pos (an offset into buf, below end). On
 * success advances *pos. On failure fills err with the offset.
 */
static int
ff_parse_scope(const unsigned char *buf, size_t end, size_t *pos,
    struct ffile_scope *s, uint32_t idx, uint16_t format, char *err,
    size_t errlen)
{
	size_t p = *pos, start = *pos, nl, il, cl;
	unsigned i;

#define NEED(n, what) do {						\
	if (end - p < (n)) {						\
		util_errf(err, errlen, "offset %zu: scope %u: truncated %s", \
		    p, idx, what);					\
		return -1;						\
	}								\
} while (0)

	memset(s, 0, sizeof(*s));
	NEED(2, "name length");
	nl = util_get_le16(buf + p);
	p += 2;
	if (nl == 0 || nl > REVKEY_SCOPE_MAX) {
		util_errf(err, errlen, "offset %zu: scope %u: name length %zu out "
		    "of range 1..%d", p - 2, idx, nl, REVKEY_SCOPE_MAX);
		return -1;
	}
	NEED(nl, "name");
	if (!revkey_scope_valid((const char *)buf + p, nl)) {
		util_errf(err, errlen, "offset %zu: scope %u: invalid scope name",
		    p, idx);
		return -1;
	}
	memcpy(s->name, buf + p, nl);
	s->name[nl] = '\0';
	p += nl;
	NEED(8 + 1 + 1 + 2, "key count, source, flags or issuer length");
	s->keys = util_get_le64(buf + p);
	p += 8;
	if (buf[p] != FFILE_SRC_LIST && buf[p] != FFILE_SRC_CRL) {
		util_errf(err, errlen, "offset %zu: scope %u: unknown source kind "
		    "%u", p, idx, buf[p]);
		return -1;
	}
	s->source = (enum ffile_source)buf[p];
	p += 1;
	s->flags = buf[p];
	if ((s->flags & ~FFILE_SCOPE_FLAGS_KNOWN) != 0 ||
	    (s->source == FFILE_SRC_LIST && s->flags != 0)) {
		util_errf(err, errlen, "offset %zu: scope %u: unknown flags 0x%02x "
		    "for its source", p, idx, s->flags);
		return -1;
	}
	p += 1;
	il = util_get_le16(buf + p);
	p += 2;
	if (il > FFILE_ISSUER_MAX) {
		util_errf(err, errlen, "offset %zu: scope %u: issuer length %zu "
		    "over %d", p - 2, idx, il, FFILE_ISSUER_MAX);
		return -1;
	}
	NEED(il, "issuer");
	if (memchr(buf + p, 0, il) != NULL) {
		util_errf(err, errlen, "offset %zu: scope %u: NUL byte in issuer",
		    p, idx);
		return -1;
	}
	memcpy(s->issuer, buf + p, il);
	s->issuer[il] = '\0';
	p += il;
	NEED(1, "CRL number length");
	cl = buf[p];
	p += 1;
	if (cl > FFILE_CRLNUM_MAX) {
		util_errf(err, errlen, "offset %zu: scope %u: CRL number length "
		    "%zu over %d", p - 1, idx, cl, FFILE_CRLNUM_MAX);
		return -1;
	}
	NEED(cl, "CRL number");
	if (!ff_is_hex((const char *)buf + p, cl)) {
		util_errf(err, errlen, "offset %zu: scope %u: CRL number is not "
		    "hex", p, idx);
		return -1;
	}
	memcpy(s->crl_number, buf + p, cl);
	s->crl_number[cl] = '\0';
	p += cl;
	NEED(8 + 8 + 32 + 1, "CRL times, hash or part count");
	s->this_update = (int64_t)util_get_le64(buf + p);
	s->next_update = (int64_t)util_get_le64(buf + p + 8);
	memcpy(s->crl_sha256, buf + p + 16, 32);
	p += 48;
	s->npart = buf[p];
	if (s->npart > FFILE_PART_MAX || (s->npart > 0 &&
	    s->source != FFILE_SRC_CRL)) {
		util_errf(err, errlen, "offset %zu: scope %u: %u coverage parts "
		    "(at most %d, and only for a CRL)", p, idx, s->npart,
		    FFILE_PART_MAX);
		return -1;
	}
	p += 1;
	for (i = 0; i < s->npart; i++) {
		struct ffile_part *pt = &s->part[i];
		size_t pl;

		NEED(FFILE_PART_MIN_LEN, "coverage part");
		pt->kind = buf[p];
		pt->reasons = util_get_le16(buf + p + 1);
		memcpy(pt->dp, buf + p + 3, 32);
		pt->flags = buf[p + 35];
		memcpy(pt->crl_issuer, buf + p + 36, 32);
		pt->this_update = (int64_t)util_get_le64(buf + p + 68);
		pl = buf[p + 76];
		if (pt->kind > FFILE_PART_CA || pt->reasons == 0 ||
		    (pt->reasons & ~FFILE_REASONS_ALL) != 0 ||
		    (pt->flags & ~FFILE_PART_FLAGS_KNOWN) != 0 ||
		    pl > FFILE_PART_CRLNUM_MAX) {
			util_errf(err, errlen, "offset %zu: scope %u: coverage part "
			    "%u: invalid kind, reasons, flags or CRL number "
			    "length", p, idx, i);
			return -1;
		}
		p += FFILE_PART_MIN_LEN;
		NEED(pl, "coverage part CRL number");
		if (!ff_is_hex((const char *)buf + p, pl)) {
			util_errf(err, errlen, "offset %zu: scope %u: coverage part "
			    "%u: CRL number is not hex", p, idx, i);
			return -1;
		}
		memcpy(pt->crl_number, buf + p, pl);
		pt->crl_number[pl] = '\0';
		p += pl;
	}
	if (format >= FFILE_FORMAT) {
		NEED(1, "exact kind");
		if (buf[p] > 1) {
			util_errf(err, errlen, "offset %zu: scope %u: unknown "
			    "exact kind %u", p, idx, buf[p]);
			return -1;
		}
		s->exact = buf[p] == 1;
		p += 1;
	}
	if (s->exact) {
		NEED(FFILE_EXACT_LEN, "exact fields");
		s->ex.cutoff = (int64_t)util_get_le64(buf + p);
		s->ex.issued = util_get_le64(buf + p + 8);
		if (util_get_le64(buf + p + 16) != s->keys ||
		    s->ex.issued < s->keys || s->ex.cutoff <= 0) {
			util_errf(err, errlen, "offset %zu: scope %u: exact "
			    "counts (|R| not its key count, |U| below |R|) or "
			    "cutoff not positive", p, idx);
			return -1;
		}
		s->ex.blob_off = util_get_le64(buf + p + 24);
		s->ex.blob_len = (size_t)util_get_le64(buf + p + 32);
		p += FFILE_EXACT_LEN;
	}
#undef NEED
	if (s->source == FFILE_SRC_LIST && (il != 0 || cl != 0 ||
	    s->this_update != 0 || s->next_update != 0 ||
	    !ff_zero(s->crl_sha256, 32))) {
		util_errf(err, errlen, "offset %zu: scope %u: list source with CRL "
		    "metadata", start, idx);
		return -1;
	}
	*pos = p;
	return 0;
}

/* The header's identity: size, magic, format, layout, segments, width. */
static int
ff_validate_kind(struct ffile *f, char *err, size_t errlen)
{
	const unsigned char *h = f->buf;
	struct ffile_info *in = &f->info;
	uint8_t layout;
	bool fuse;

	if (f->len < FFILE_HDR_LEN + SIGN_SIG_LEN) {
		util_errf(err, errlen, "offset 0: file too short (%zu bytes)",
		    f->len);
		return -1;
	}
	if ((uint64_t)f->len > FFILE_MAX_SIZE) {
		util_errf(err, errlen, "offset 0: file too large (%zu bytes)",
		    f->len);
		return -1;
	}
	if (memcmp(h + OFF_MAGIC, FFILE_MAGIC, 8) != 0) {
		util_errf(err, errlen, "offset 0: bad magic (not a filter file)");
		return -1;
	}
	in->format = util_get_le16(h + OFF_FORMAT);
	if (in->format != FFILE_FORMAT && in->format != FFILE_FORMAT_PLAIN) {
		if (in->format < FFILE_FORMAT_PLAIN)
			util_errf(err, errlen, "offset %d: format %u is from an "
			    "older filterbuild (this one reads format %d: X.509 "
			    "scopes over the canonical issuer Name, signed CRL "
			    "flags per scope, coverage parts naming their CRL); "
			    "rebuild the filter with this filterbuild",
			    OFF_FORMAT, (unsigned)in->format,
			    FFILE_FORMAT_PLAIN);
		else
			util_errf(err, errlen, "offset %d: unsupported format %u",
			    OFF_FORMAT, (unsigned)in->format);
		return -1;
	}
	layout = h[OFF_LAYOUT];
	if (layout != BLOOM_CLASSIC && layout != BLOOM_BLOCKED &&
	    layout != BLOOM_FUSE8 && layout != BLOOM_FUSE128 &&
	    layout != BLOOM_FUSE) {
		util_errf(err, errlen, "offset %d: unknown layout %u (this reader "
		    "knows 1 classic, 2 blocked, 3 fuse8, 4 fuse128, 5 fuse; a "
		    "newer filterbuild may have written it)", OFF_LAYOUT, layout);
		return -1;
	}
	in->layout = (enum bloom_layout)layout;
	in->seglog = h[OFF_SEGLOG];
	fuse = bloom_fuse_packed(in->layout) || layout == BLOOM_FUSE8;
	if (fuse ? in->seglog < 1 || in->seglog > BLOOM_FUSE_MAX_SEGLOG :
	    in->seglog != 0) {
		util_errf(err, errlen, "offset %d: segment length log %u is not %s",
		    OFF_SEGLOG, in->seglog, fuse ? "in 1..18 (fuse layouts)" :
		    "0 (no segments in this layout)");
		return -1;
	}
	in->width = h[OFF_WIDTH];
	if (bloom_fuse_packed(in->layout) ? in->width < BLOOM_FUSE_MIN_WIDTH ||
	    in->width > BLOOM_FUSE_MAX_WIDTH : in->width != 0) {
		util_errf(err, errlen, "offset %d: fingerprint width %u is not %s",
		    OFF_WIDTH, in->width, bloom_fuse_packed(in->layout) ?
		    "in 4..16 (packed fuse layouts)" :
		    "0 (no packed fingerprints in this layout)");
		return -1;
	}
	if (h[OFF_RSV2] != 0 || h[OFF_RSV2 + 1] != 0 || h[OFF_RSV2 + 2] != 0) {
		util_errf(err, errlen, "offset %d: reserved bytes not zero",
		    OFF_RSV2);
		return -1;
	}
	return 0;
}

/*
 * The header's numbers: times, rate, bit and hash counts, and a scope
 * count and bit array that fit the file.
 */
static int
ff_validate_fields(struct ffile *f, uint64_t *nscopesp, uint64_t *bits_offp,
    uint64_t *bits_lenp, char *err, size_t errlen)
{
	const unsigned char *h = f->buf;
	struct ffile_info *in = &f->info;
	uint64_t bits_off, bits_len, nscopes;
	double fp;

	nscopes = util_get_le32(h + OFF_NSCOPES);
	in->version = util_get_le64(h + OFF_VERSION);
	in->issued_at = (int64_t)util_get_le64(h + OFF_ISSUED);
	in->expires_at = (int64_t)util_get_le64(h + OFF_EXPIRES);
	in->keys = util_get_le64(h + OFF_KEYS);
	in->m = util_get_le64(h + OFF_M);
	in->k = util_get_le32(h + OFF_K);
	in->seed = util_get_le64(h + OFF_SEED);
	in->fp_rate_target = ff_bits_double(util_get_le64(h + OFF_FPRATE));
	memcpy(in->signer, h + OFF_SIGNER, SIGN_KEYID_LEN);
	memcpy(in->table_sha256, h + OFF_TSHA, 32);
	in->table_len = util_get_le64(h + OFF_TLEN);
	bits_off = util_get_le64(h + OFF_BITSOFF);
	bits_len = util_get_le64(h + OFF_BITSLEN);

	if (in->expires_at <= in->issued_at) {
		util_errf(err, errlen, "offset %d: expires_at is not after "
		    "issued_at", OFF_EXPIRES);
		return -1;
	}
	fp = in->fp_rate_target;
	if (!isfinite(fp) || !(fp > 0.0 && fp < 1.0)) {
		util_errf(err, errlen, "offset %d: fp_rate_target not in (0, 1)",
		    OFF_FPRATE);
		return -1;
	}
	if (in->m == 0 || in->m > BLOOM_MAX_BITS) {
		util_errf(err, errlen, "offset %d: bit count %" PRIu64 " out of "
		    "range", OFF_M, in->m);
		return -1;
	}
	if (in->k == 0 || in->k > BLOOM_MAX_K) {
		util_errf(err, errlen, "offset %d: hash count %" PRIu32 " out of "
		    "range 1..%u", OFF_K, in->k, BLOOM_MAX_K);
		return -1;
	}
	if (nscopes > FFILE_MAX_SCOPES ||
	    nscopes > (f->len - FFILE_HDR_LEN) / FFILE_SCOPE_MIN_LEN) {
		util_errf(err, errlen, "offset %d: scope count %" PRIu64 " does "
		    "not fit the file", OFF_NSCOPES, nscopes);
		return -1;
	}
	if (bits_len != (uint64_t)bloom_array_len(in->layout, in->m)) {
		util_errf(err, errlen, "offset %d: bit array length %" PRIu64
		    " is not %s = %zu", OFF_BITSLEN, bits_len,
		    bloom_fuse_packed(in->layout) ? "ceil(m/8) + 8 (padding)" :
		    "ceil(m/8)", bloom_array_len(in->layout, in->m));
		return -1;
	}
	/* Format 5: the exact structures may lie between the two. */
	if (bits_off > f->len || bits_len > f->len - bits_off ||
	    f->len - bits_off - bits_len < SIGN_SIG_LEN ||
	    (in->format == FFILE_FORMAT_PLAIN &&
	    f->len - bits_off - bits_len != SIGN_SIG_LEN)) {
		util_errf(err, errlen, "offset %d: bit array at %" PRIu64 " of %"
		    PRIu64 " bytes plus signature does not end the %zu-byte "
		    "file", OFF_BITSOFF, bits_off, bits_len, f->len);
		return -1;
	}
	*nscopesp = nscopes;
	*bits_offp = bits_off;
	*bits_lenp = bits_len;
	return 0;
}

/*
 * The scopes, in strictly ascending order, their key counts summing to
 * the header's, then zero padding up to the 8-aligned bit array.
 */
static int
ff_validate_scopes(struct ffile *f, uint64_t nscopes, uint64_t bits_off,
    char *err, size_t errlen)
{
	const unsigned char *h = f->buf;
	struct ffile_info *in = &f->info;
	uint64_t sum = 0;
	size_t pos, aligned;
	uint32_t i;

	in->nscopes = (uint32_t)nscopes;
	if (nscopes > 0) {
		in->scopes = calloc((size_t)nscopes, sizeof(*in->scopes));
		if (in->scopes == NULL) {
			util_errf(err, errlen, "out of memory");
			return -1;
		}
	}
	pos = FFILE_HDR_LEN;
	for (i = 0; i < in->nscopes; i++) {
		struct ffile_scope *s = &in->scopes[i];

		if (ff_parse_scope(h, (size_t)bits_off, &pos, s, i, in->format,
		    err, errlen) != 0)
			return -1;
		if (i > 0 && strcmp(in->scopes[i - 1].name, s->name) >= 0) {
			util_errf(err, errlen, "offset %zu: scope %u (%s) is not in "
			    "strictly ascending order", pos, i, s->name);
			return -1;
		}
		if (s->keys > UINT64_MAX - sum) {
			util_errf(err, errlen, "offset %zu: scope %u key count "
			    "overflows", pos, i);
			return -1;
		}
		sum += s->keys;
		if (s->exact)
			in->nexact++;
		else
			in->filter_keys += s->keys;
	}
	aligned = (pos + 7) & ~(size_t)7;
	if (bits_off != aligned) {
		util_errf(err, errlen, "offset %d: bit array offset %" PRIu64
		    " is not %zu, the 8-aligned end of the scopes",
		    OFF_BITSOFF, bits_off, aligned);
		return -1;
	}
	if (!ff_zero(h + pos, aligned - pos)) {
		util_errf(err, errlen, "offset %zu: padding not zero", pos);
		return -1;
	}
	if (sum != in->keys) {
		util_errf(err, errlen, "offset %d: key count %" PRIu64 " is not the "
		    "sum of the scopes' %" PRIu64, OFF_KEYS, in->keys, sum);
		return -1;
	}
	return 0;
}

/* The bit array: nothing past m, zero padding, parameters bloom accepts. */
static int
ff_validate_bits(struct ffile *f, uint64_t bits_off, uint64_t bits_len,
    char *err, size_t errlen)
{
	const struct ffile_info *in = &f->info;
	const unsigned char *h = f->buf;

	if (in->m % 8 != 0) {
		uint64_t lastoff = bits_off + bloom_nbytes(in->m) - 1;

		if ((h[lastoff] >> (in->m % 8)) != 0) {
			util_errf(err, errlen, "offset %" PRIu64 ": bits set past m",
			    lastoff);
			return -1;
		}
	}
	/* The packed layouts' padding: zero, so a file has one encoding. */
	if (!ff_zero(h + bits_off + bloom_nbytes(in->m), (size_t)bits_len -
	    bloom_nbytes(in->m))) {
		util_errf(err, errlen, "offset %" PRIu64 ": padding after the "
		    "cells not zero", bits_off + bloom_nbytes(in->m));
		return -1;
	}
	if (bloom_attach(&f->bloom, in->layout, in->m, in->k, in->seglog,
	    in->width, in->seed, h + bits_off, (size_t)bits_len) != 0) {
		util_errf(err, errlen, "offset %d: invalid filter parameters for "
		    "layout %u (m %" PRIu64 ", k %" PRIu32 ", segment length "
		    "log %" PRIu32 ", fingerprint width %" PRIu32 ")",
		    OFF_LAYOUT, (unsigned)in->layout, in->m, in->k, in->seglog,
		    in->width);
		return -1;
	}
	return 0;
}

/*
 * Format 5: the exact structures, in scope order from the 8-aligned end
 * of the bit array, each 8-aligned with zero padding, the last padded to
 * the signature; each attached (exact_attach refuses a shape that could
 * answer wrongly) and its counts those of its scope entry.
 */
static int
ff_validate_exact(struct ffile *f, uint64_t end_bits, char *err,
    size_t errlen)
{
	struct ffile_info *in = &f->info;
	uint64_t want = ff_align8(end_bits), sig = f->len - SIGN_SIG_LEN;
	char why[200];
	uint32_t i;

	if (in->format == FFILE_FORMAT_PLAIN)
		return 0;	/* ff_validate_fields: the bits end the file */
	if (want > sig || !ff_zero(f->buf + end_bits, (size_t)(want -
	    end_bits))) {
		util_errf(err, errlen, "offset %" PRIu64 ": padding after the "
		    "bit array not zero or past the signature", end_bits);
		return -1;
	}
	for (i = 0; i < in->nscopes; i++) {
		struct ffile_scope *s = &in->scopes[i];

		if (!s->exact)
			continue;
		if (s->ex.blob_off != want || s->ex.blob_len == 0 ||
		    s->ex.blob_len > sig - want) {
			util_errf(err, errlen, "offset %" PRIu64 ": scope %s: "
			    "exact structure at %" PRIu64 " of %zu bytes is not "
			    "the next one before the signature", want, s->name,
			    s->ex.blob_off, s->ex.blob_len);
			return -1;
		}
		s->ex.blob = f->buf + want;
		if (exact_attach(&s->ex.view, s->ex.blob, s->ex.blob_len, why,
		    sizeof(why)) != 0 || s->ex.view.revoked != s->keys ||
		    s->ex.view.issued != s->ex.issued) {
			util_errf(err, errlen, "offset %" PRIu64 ": scope %s: "
			    "exact structure refused: %s", want, s->name,
			    s->ex.view.revoked != s->keys ? "counts differ from "
			    "the scope's" : why);
			return -1;
		}
		end_bits = want + s->ex.blob_len;
		want = ff_align8(end_bits);
		if (want > sig || !ff_zero(f->buf + end_bits, (size_t)(want -
		    end_bits))) {
			util_errf(err, errlen, "offset %" PRIu64 ": padding "
			    "after an exact structure not zero", end_bits);
			return -1;
		}
	}
	if (want != sig) {
		util_errf(err, errlen, "offset %" PRIu64 ": %" PRIu64 " bytes "
		    "before the signature belong to nothing", want, sig - want);
		return -1;
	}
	return 0;
}

static int
ff_validate(struct ffile *f, char *err, size_t errlen)
{
	uint64_t nscopes, bits_off, bits_len;

	if (ff_validate_kind(f, err, errlen) != 0 ||
	    ff_validate_fields(f, &nscopes, &bits_off, &bits_len, err,
	    errlen) != 0 ||
	    ff_validate_scopes(f, nscopes, bits_off, err, errlen) != 0 ||
	    ff_validate_bits(f, bits_off, bits_len, err, errlen) != 0 ||
	    ff_validate_exact(f, bits_off + bits_len, err, errlen) != 0)
		return -1;

	if (util_sha256(f->sha, f->buf, f->len) != 0) {
		util_errf(err, errlen, "SHA-256 failed");
		return -1;
	}
	return 0;
}

struct ffile *
ffile_parse(const unsigned char *buf, size_t len, bool take, char *err,
    size_t errlen)
{
	struct ffile *f;
	char why[256];

	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		util_errf(err, errlen, "filter: out of memory");
		if (take)
			free((void *)(uintptr_t)buf);
		return NULL;
	}
	atomic_init(&f->refs, 1);
	f->buf = buf;
	f->len = len;
	f->owned = take;
	if (buf == NULL) {
		util_errf(err, errlen, "filter: no data");
		ffile_close(f);
		return NULL;
	}
	if (ff_validate(f, why, sizeof(why)) != 0) {
		util_errf(err, errlen, "filter: %s", why);
		ffile_close(f);
		return NULL;
	}
	return f;
}

struct ffile *
ffile_open(const char *path, char *err, size_t errlen)
{
	struct ffile *f;
	void *map;
	size_t len;
	char why[256];

	int fd, rc;

	assert(path != NULL);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		util_errf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	rc = util_copy_fd(fd, path, FFILE_HDR_LEN + SIGN_SIG_LEN,
	    FFILE_MAX_SIZE, &map, &len, err, errlen);
	close(fd);
	if (rc != 0)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		util_errf(err, errlen, "%s: out of memory", path);
		util_copy_free(map, len);
		return NULL;
	}
	atomic_init(&f->refs, 1);
	f->buf = map;
	f->len = len;
	f->mapped = true;
	if (ff_validate(f, why, sizeof(why)) != 0) {
		util_errf(err, errlen, "%s: %s", path, why);
		ffile_close(f);
		return NULL;
	}
	return f;
}

/* ---------------------------------------------------------------------- */
/* Encoding. */

static unsigned char *
ff_put_scope(unsigned char *p, const struct ffile_scope *s, bool v5,
    uint64_t *blob_off)
{
	size_t nl = strlen(s->name), il = strlen(s->issuer),
	    cl = strlen(s->crl_number), i;

	util_put_le16(p, (uint16_t)nl);
	memcpy(p + 2, s->name, nl);
	p += 2 + nl;
	util_put_le64(p, s->keys);
	p[8] = (unsigned char)s->source;
	p[9] = s->flags;
	util_put_le16(p + 10, (uint16_t)il);
	p += 12;
	memcpy(p, s->issuer, il);
	p += il;
	*p++ = (unsigned char)cl;
	memcpy(p, s->crl_number, cl);
	p += cl;
	util_put_le64(p, (uint64_t)s->this_update);
	util_put_le64(p + 8, (uint64_t)s->next_update);
	memcpy(p + 16, s->crl_sha256, 32);
	p += 48;
	*p++ = s->npart;
	for (i = 0; i < s->npart; i++) {
		cl = strlen(s->part[i].crl_number);
		p[0] = s->part[i].kind;
		util_put_le16(p + 1, s->part[i].reasons);
		memcpy(p + 3, s->part[i].dp, 32);
		p[35] = s->part[i].flags;
		memcpy(p + 36, s->part[i].crl_issuer, 32);
		util_put_le64(p + 68, (uint64_t)s->part[i].this_update);
		p[76] = (unsigned char)cl;
		memcpy(p + FFILE_PART_MIN_LEN, s->part[i].crl_number, cl);
		p += FFILE_PART_MIN_LEN + cl;
	}
	if (!v5)
		return p;
	*p++ = s->exact ? 1 : 0;
	if (s->exact) {
		util_put_le64(p, (uint64_t)s->ex.cutoff);
		util_put_le64(p + 8, s->ex.issued);
		util_put_le64(p + 16, s->keys);
		util_put_le64(p + 24, *blob_off);
		util_put_le64(p + 32, s->ex.blob_len);
		p += FFILE_EXACT_LEN;
		*blob_off = ff_align8(*blob_off + s->ex.blob_len);
	}
	return p;
}

/*
 * The sorted scopes checked before any is written: strings terminated,
 * coverage parts within bounds, no name twice; *hdr grows by each
 * scope's encoded length. 0, or -1 with err filled.
 */
static int
ff_encode_check_scopes(const struct ffile_scope *sc, uint32_t n,
    size_t *hdr, size_t *blobs, char *err, size_t errlen)
{
	size_t i, j;
	bool v5 = false;

	*blobs = 0;
	for (i = 0; i < n; i++)
		if (sc[i].exact) {
			if (sc[i].ex.blob == NULL || sc[i].ex.blob_len == 0 ||
			    sc[i].ex.blob_len > SIZE_MAX / 2 - *blobs ||
			    sc[i].ex.issued < sc[i].keys) {
				util_errf(err, errlen, "filter: scope %zu: exact "
				    "structure missing or counts wrong", i);
				return -1;
			}
			*blobs += (size_t)ff_align8(sc[i].ex.blob_len);
			v5 = true;
		}

	for (i = 0; i < n; i++) {
		if (memchr(sc[i].name, 0, sizeof(sc[i].name)) == NULL ||
		    memchr(sc[i].issuer, 0, sizeof(sc[i].issuer)) == NULL ||
		    memchr(sc[i].crl_number, 0,
		    sizeof(sc[i].crl_number)) == NULL) {
			util_errf(err, errlen, "filter: scope %zu: unterminated "
			    "string", i);
			return -1;
		}
		if (sc[i].npart > FFILE_PART_MAX) {
			util_errf(err, errlen, "filter: scope %s: too many coverage "
			    "parts", sc[i].name);
			return -1;
		}
		for (j = 0; j < sc[i].npart; j++)
			if (strnlen(sc[i].part[j].crl_number,
			    sizeof(sc[i].part[j].crl_number)) >
			    FFILE_PART_CRLNUM_MAX) {
				util_errf(err, errlen, "filter: scope %s: coverage "
				    "part %zu: unterminated CRL number",
				    sc[i].name, j);
				return -1;
			}
		if (i > 0 && strcmp(sc[i - 1].name, sc[i].name) == 0) {
			util_errf(err, errlen, "filter: scope %s listed twice",
			    sc[i].name);
			return -1;
		}
		*hdr += ff_scope_len(&sc[i]) + (v5 ? ff_scope_exact_len(&sc[i]) :
		    0);
	}
	return v5 ? 1 : 0;
}

/* The fixed header into buf; -1 (err filled) for a key not Ed25519. */
static int
ff_encode_header(unsigned char *buf, const struct ffile_info *info,
    const struct bloom *b, EVP_PKEY *key, size_t bits_off, bool v5,
    char *err, size_t errlen)
{
	memcpy(buf + OFF_MAGIC, FFILE_MAGIC, 8);
	util_put_le16(buf + OFF_FORMAT, v5 ? FFILE_FORMAT : FFILE_FORMAT_PLAIN);
	buf[OFF_LAYOUT] = (unsigned char)b->layout;
	buf[OFF_SEGLOG] = (unsigned char)b->seglog;
	buf[OFF_WIDTH] = bloom_fuse_packed(b->layout) ? (unsigned char)b->width :
	    0;
	util_put_le32(buf + OFF_NSCOPES, info->nscopes);
	util_put_le64(buf + OFF_VERSION, info->version);
	util_put_le64(buf + OFF_ISSUED, (uint64_t)info->issued_at);
	util_put_le64(buf + OFF_EXPIRES, (uint64_t)info->expires_at);
	util_put_le64(buf + OFF_KEYS, info->keys);
	util_put_le64(buf + OFF_M, b->m);
	util_put_le32(buf + OFF_K, b->k);
	util_put_le64(buf + OFF_SEED, b->seed);
	util_put_le64(buf + OFF_FPRATE, ff_double_bits(info->fp_rate_target));
	if (sign_key_id(key, buf + OFF_SIGNER) != 0) {
		util_errf(err, errlen, "filter: signing key is not Ed25519");
		return -1;
	}
	memcpy(buf + OFF_TSHA, info->table_sha256, 32);
	util_put_le64(buf + OFF_TLEN, info->table_len);
	util_put_le64(buf + OFF_BITSOFF, bits_off);
	util_put_le64(buf + OFF_BITSLEN, b->nbytes);
	return 0;
}

int
ffile_encode(const struct ffile_info *info, const struct bloom *b,
    EVP_PKEY *key, unsigned char **out, size_t *outlen, char *err,
    size_t errlen)
{
	struct ffile_scope *sc = NULL;
	unsigned char *buf = NULL, *p;
	size_t hdr, bits_off, total, i, blobs, bits_end;
	uint64_t blob_off;
	struct ffile *chk;
	char why[256];
	int rc = -1, v5;

	assert(info != NULL && b != NULL && key != NULL && out != NULL &&
	    outlen != NULL);
	*out = NULL;
	*outlen = 0;
	if (info->nscopes > FFILE_MAX_SCOPES) {
		util_errf(err, errlen, "filter: too many scopes (%" PRIu32 ")",
		    info->nscopes);
		return -1;
	}
	if (b->bits == NULL || b->nbytes != bloom_array_len(b->layout, b->m)) {
		util_errf(err, errlen, "filter: bloom has no bit array");
		return -1;
	}
	hdr = FFILE_HDR_LEN;
	if (info->nscopes > 0) {
		sc = malloc(info->nscopes * sizeof(*sc));
		if (sc == NULL) {
			util_errf(err, errlen, "filter: out of memory");
			return -1;
		}
		memcpy(sc, info->scopes, info->nscopes * sizeof(*sc));
		qsort(sc, info->nscopes, sizeof(*sc), ff_scope_name_cmp);
	}
	if ((v5 = ff_encode_check_scopes(sc, info->nscopes, &hdr, &blobs, err,
	    errlen)) < 0)
		goto out;
	bits_off = (hdr + 7) & ~(size_t)7;
	if (b->nbytes > SIZE_MAX / 2 - bits_off - SIGN_SIG_LEN ||
	    blobs > SIZE_MAX / 2 - bits_off - b->nbytes) {
		util_errf(err, errlen, "filter: too large");
		goto out;
	}
	bits_end = bits_off + b->nbytes;
	/* Format 5: the exact structures after the bits, 8-aligned. */
	total = (v5 ? (size_t)ff_align8(bits_end) + blobs : bits_end) +
	    SIGN_SIG_LEN;
	buf = calloc(1, total);
	if (buf == NULL) {
		util_errf(err, errlen, "filter: out of memory (%zu bytes)", total);
		goto out;
	}
	if (ff_encode_header(buf, info, b, key, bits_off, v5 == 1, err,
	    errlen) != 0)
		goto out;
	p = buf + FFILE_HDR_LEN;
	blob_off = ff_align8(bits_end);
	for (i = 0; i < info->nscopes; i++) {
		if (sc[i].exact)
			memcpy(buf + blob_off, sc[i].ex.blob, sc[i].ex.blob_len);
		p = ff_put_scope(p, &sc[i], v5 == 1, &blob_off);
	}
	memcpy(buf + bits_off, b->bits, b->nbytes);

	/* Never sign what we could not read back. */
	chk = ffile_parse(buf, total, false, why, sizeof(why));
	if (chk == NULL) {
		util_errf(err, errlen, "%s", why);
		goto out;
	}
	ffile_close(chk);
	if (sign_sign(key, buf, total - SIGN_SIG_LEN,
	    buf + total - SIGN_SIG_LEN) != 0) {
		util_errf(err, errlen, "filter: signing failed");
		goto out;
	}
	*out = buf;
	*outlen = total;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	free(sc);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Verification and queries. */

int
ffile_verify_key(const struct ffile *f, EVP_PKEY *pub, char *err,
    size_t errlen)
{
	unsigned char id[SIGN_KEYID_LEN];
	char want[2 * SIGN_KEYID_LEN + 1], got[2 * SIGN_KEYID_LEN + 1];

	assert(f != NULL && pub != NULL);
	if (sign_key_id(pub, id) != 0) {
		util_errf(err, errlen, "public key is not Ed25519");
		return -1;
	}
	if (memcmp(id, f->info.signer, SIGN_KEYID_LEN) != 0) {
		util_hex(got, f->info.signer, SIGN_KEYID_LEN);
		util_hex(want, id, SIGN_KEYID_LEN);
		util_errf(err, errlen, "signer %s not trusted (key is %s)", got,
		    want);
		return -1;
	}
	if (!sign_verify(pub, f->buf, f->len - SIGN_SIG_LEN,
	    f->buf + f->len - SIGN_SIG_LEN)) {
		util_errf(err, errlen, "bad signature");
		return -1;
	}
	return 0;
}

int
ffile_verify(const struct ffile *f, const struct sign_ring *ring, char *err,
    size_t errlen)
{
	EVP_PKEY *key;

	assert(f != NULL && ring != NULL);
	key = sign_ring_find(ring, f->info.signer);
	if (key == NULL) {
		sign_ring_untrusted(ring, f->info.signer, err, errlen);
		return -1;
	}
	return ffile_verify_key(f, key, err, errlen);
}

const struct ffile_info *
ffile_info(const struct ffile *f)
{
	assert(f != NULL);
	return &f->info;
}

const struct bloom *
ffile_bloom(const struct ffile *f)
{
	assert(f != NULL);
	return &f->bloom;
}

const unsigned char *
ffile_bytes(const struct ffile *f, size_t *len)
{
	assert(f != NULL && len != NULL);
	*len = f->len;
	return f->buf;
}

const unsigned char *
ffile_sha256(const struct ffile *f)
{
	assert(f != NULL);
	return f->sha;
}

bool
ffile_intact(const struct ffile *f)
{
	unsigned char sha[32];

	assert(f != NULL);
	return util_sha256(sha, f->buf, f->len) == 0 &&
	    CRYPTO_memcmp(sha, f->sha, 32) == 0;
}

const struct ffile_scope *
ffile_scope(const struct ffile *f, const char *name)
{
	struct ffile_scope key;
	size_t len;

	assert(f != NULL && name != NULL);
	len = strlen(name);
	if (len > REVKEY_SCOPE_MAX || f->info.nscopes == 0)
		return NULL;
	memcpy(key.name, name, len + 1);
	return bsearch(&key, f->info.scopes, f->info.nscopes,
	    sizeof(*f->info.scopes), ff_scope_name_cmp);
}

bool
ffile_query(const struct ffile *f, const struct revkey *k)
{
	const struct ffile_scope *sc;
	unsigned char key[REVKEY_ENC_MAX];
	size_t len;

	assert(f != NULL && k != NULL);
	/* An exact scope's keys are not in the bit array. */
	if (f->info.nexact > 0 && (sc = ffile_scope(f, k->scope)) != NULL &&
	    sc->exact)
		return ffile_exact_query(sc, k) == EXACT_REVOKED;
	len = revkey_encode(k, key);
	return bloom_query_inline(&f->bloom, key, len);
}

enum exact_answer
ffile_exact_query(const struct ffile_scope *sc, const struct revkey *k)
{
	unsigned char key[REVKEY_ENC_MAX];

	assert(sc != NULL && sc->exact && k != NULL);
	return exact_query(&sc->ex.view, key, revkey_encode(k, key));
}

bool
ffile_expired(const struct ffile *f, int64_t now)
{
	assert(f != NULL);
	return now >= f->info.expires_at;
}

struct ffile *
ffile_ref(struct ffile *f)
{
	assert(f != NULL);
	atomic_fetch_add(&f->refs, 1);
	return f;
}

void
ffile_close(struct ffile *f)
{
	if (f == NULL || atomic_fetch_sub(&f->refs, 1) != 1)
		return;
	free(f->info.scopes);
	if (f->mapped)
		util_copy_free((void *)(uintptr_t)f->buf, f->len);
	else if (f->owned)
		free((void *)(uintptr_t)f->buf);
	free(f);
}

/* test_ffile.c - the signed filter file: encode, parse, verify, hostile bytes */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ffile.h"
#include "table.h"
#include "util.h"

#define NIDS 300
#define NABSENT 4000

struct fx {
	EVP_PKEY	*key;
	unsigned char	*buf;
	size_t		 len;
	struct ffile_scope scopes[2];
	struct bloom	 b;	/* the filter that was encoded, kept to compare */
};

/* bloom_build_fuse()'s key source: NIDS encoded keys. */
struct fuse_src {
	unsigned char	 enc[NIDS][REVKEY_ENC_MAX];
	size_t		 len[NIDS];
};

static const void *
fuse_src_key(void *arg, size_t i, size_t *len)
{
	struct fuse_src *fs = arg;

	*len = fs->len[i];
	return fs->enc[i];
}

static void
mkkey(struct revkey *k, const char *scope, int i)
{
	char id[32];

	cr_assert(snprintf(id, sizeof(id), "token-%d", i) > 0);
	cr_assert_eq(revkey_set(k, scope, id, strlen(id)), 0);
}

static void
make_filter(struct fx *fx, enum bloom_layout layout)
{
	struct ffile_info info;
	struct bloom *b = &fx->b;
	struct revkey k;
	unsigned char enc[REVKEY_ENC_MAX];
	uint64_t m;
	uint32_t kk;
	char err[256];
	int i;

	memset(fx, 0, sizeof(*fx));
	fx->key = sign_keygen();
	cr_assert_not_null(fx->key);
	cr_assert_eq(bloom_size(layout, NIDS, 0.01, &m, &kk), 0);
	if (bloom_fuse_packed(layout) || layout == BLOOM_FUSE8) {
		struct fuse_src *fs = calloc(1, sizeof(*fs));

		cr_assert_not_null(fs);
		for (i = 0; i < NIDS; i++) {
			mkkey(&k, i % 2 ? "default" : "tenant-a", i);
			fs->len[i] = revkey_encode(&k, fs->enc[i]);
		}
		/* The packed layouts at 0.01: 7-bit cells, not byte-aligned. */
		cr_assert_eq(layout == BLOOM_FUSE8 ? bloom_build_fuse8(b, NIDS,
		    0x1234567890abcdefULL, fuse_src_key, fs) :
		    layout == BLOOM_FUSE128 ? bloom_build_fuse128(b,
		    bloom_fuse_width(0.01), NIDS, 0x1234567890abcdefULL,
		    fuse_src_key, fs) :
		    bloom_build_fuse(b, bloom_fuse_width(0.01), NIDS,
		    0x1234567890abcdefULL, fuse_src_key, fs), 0);
		free(fs);
		cr_assert_eq(b->k, 3);
		cr_assert_eq(b->layout, layout);
		cr_assert_eq(b->width, layout == BLOOM_FUSE8 ? 8 : 7);
		cr_assert_eq(b->m % (b->width * b->seglen), 0);
	} else {
		cr_assert_eq(bloom_init(b, layout, m, kk,
		    0x1234567890abcdefULL), 0);
		for (i = 0; i < NIDS; i++) {
			mkkey(&k, i % 2 ? "default" : "tenant-a", i);
			bloom_add(b, enc, revkey_encode(&k, enc));
		}
	}
	memset(&info, 0, sizeof(info));
	info.version = 42;
	info.issued_at = 1700000000;
	info.expires_at = 1700003600;
	info.keys = NIDS;
	info.fp_rate_target = 0.01;
	memset(info.table_sha256, 0xab, 32);
	info.table_len = 1234;
	/* Given out of order: the encoder sorts scopes by name. */
	cr_assert(snprintf(fx->scopes[0].name, sizeof(fx->scopes[0].name),
	    "tenant-a") > 0);
	fx->scopes[0].keys = NIDS / 2;
	fx->scopes[0].source = FFILE_SRC_CRL;
	cr_assert(snprintf(fx->scopes[0].issuer, sizeof(fx->scopes[0].issuer),
	    "CN=Test CA,O=revcheck") > 0);
	cr_assert(snprintf(fx->scopes[0].crl_number,
	    sizeof(fx->scopes[0].crl_number), "0a1b") > 0);
	fx->scopes[0].this_update = 1699990000;
	fx->scopes[0].next_update = 1700990000;
	memset(fx->scopes[0].crl_sha256, 0x5c, 32);
	/* Two coverage parts, each naming its CRL (format 4). */
	fx->scopes[0].npart = 2;
	fx->scopes[0].part[0].kind = FFILE_PART_USER;
	fx->scopes[0].part[0].reasons = FFILE_REASONS_ALL;
	fx->scopes[0].part[0].flags = FFILE_PART_INDIRECT;
	memset(fx->scopes[0].part[0].crl_issuer, 0x11, 32);
	fx->scopes[0].part[0].this_update = 1699990000;
	memcpy(fx->scopes[0].part[0].crl_number, "0a1b", 5);
	fx->scopes[0].part[1].kind = FFILE_PART_CA;
	fx->scopes[0].part[1].reasons = 1u << 1;
	memset(fx->scopes[0].part[1].dp, 0x22, 32);
	fx->scopes[0].part[1].flags = FFILE_PART_DELEGATED;
	memset(fx->scopes[0].part[1].crl_issuer, 0x33, 32);
	fx->scopes[0].part[1].this_update = 1699980000;
	memcpy(fx->scopes[0].part[1].crl_number,
	    "0123456789abcdef0123456789abcdef01234567", 41);
	cr_assert(snprintf(fx->scopes[1].name, sizeof(fx->scopes[1].name),
	    "default") > 0);
	fx->scopes[1].keys = NIDS / 2;
	info.scopes = fx->scopes;
	info.nscopes = 2;
	cr_assert_eq(ffile_encode(&info, b, fx->key, &fx->buf, &fx->len, err,
	    sizeof(err)), 0, "%s", err);
}

static void
fx_free(struct fx *fx)
{
	EVP_PKEY_free(fx->key);
	free(fx->buf);
	bloom_free(&fx->b);
}

static void
round_trip(enum bloom_layout layout)
{
	struct fx fx;
	struct ffile *f;
	const struct ffile_info *in;
	const struct ffile_scope *s;
	struct revkey k;
	char err[256];
	unsigned char sha[32], id[32], enc[REVKEY_ENC_MAX];
	size_t len;
	int i, nfp = 0;
	bool want;

	make_filter(&fx, layout);
	f = ffile_parse(fx.buf, fx.len, false, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	in = ffile_info(f);
	cr_assert_eq(in->format, FFILE_FORMAT_PLAIN);	/* no exact scope */
	cr_assert_eq(in->layout, layout);
	cr_assert_eq(in->version, 42);
	cr_assert_eq(in->issued_at, 1700000000);
	cr_assert_eq(in->expires_at, 1700003600);
	cr_assert_eq(in->keys, NIDS);
	/* A fuse build may have moved on to a derived seed: the one used. */
	cr_assert_eq(in->seed, fx.b.seed);
	if (!bloom_fuse_packed(layout) && layout != BLOOM_FUSE8)
		cr_assert_eq(in->seed, 0x1234567890abcdefULL);
	cr_assert_eq(in->m, fx.b.m);
	cr_assert_eq(in->k, fx.b.k);
	cr_assert_eq(in->seglog, fx.b.seglog);
	cr_assert_eq(in->seglog, bloom_fuse_packed(layout) ||
	    layout == BLOOM_FUSE8 ? fx.b.seglog : 0);
	cr_assert_eq(in->width, bloom_fuse_packed(layout) ? fx.b.width : 0);
	cr_assert_eq(ffile_bloom(f)->layout, layout);
	cr_assert_eq(ffile_bloom(f)->seglen, fx.b.seglen);
	cr_assert_eq(ffile_bloom(f)->width, fx.b.width);
	cr_assert_eq(ffile_bloom(f)->nbytes, fx.b.nbytes);
	cr_assert_eq(fx.buf[11], in->seglog, "header byte 11");
	cr_assert_eq(fx.buf[60], in->width, "header byte 60");
	cr_assert_eq(util_get_le64(fx.buf + 160), fx.b.nbytes);
	cr_assert_eq(in->fp_rate_target, 0.01);
	cr_assert_eq(in->table_len, 1234);
	cr_assert_eq(in->nscopes, 2);
	cr_assert_str_eq(in->scopes[0].name, "default");
	cr_assert_eq(in->scopes[0].source, FFILE_SRC_LIST);
	cr_assert_eq(sign_key_id(fx.key, id), 0);
	cr_assert_eq(memcmp(in->signer, id, 32), 0);
	s = ffile_scope(f, "tenant-a");
	cr_assert_not_null(s);
	cr_assert_eq(s->source, FFILE_SRC_CRL);
	cr_assert_str_eq(s->issuer, "CN=Test CA,O=revcheck");
	cr_assert_str_eq(s->crl_number, "0a1b");
	cr_assert_eq(s->this_update, 1699990000);
	cr_assert_eq(s->next_update, 1700990000);
	cr_assert_eq(s->crl_sha256[31], 0x5c);
	cr_assert_eq(s->npart, 2);
	cr_assert_eq(s->part[0].kind, FFILE_PART_USER);
	cr_assert_eq(s->part[0].reasons, FFILE_REASONS_ALL);
	cr_assert_eq(s->part[0].flags, FFILE_PART_INDIRECT);
	cr_assert_eq(s->part[0].crl_issuer[31], 0x11);
	cr_assert_eq(s->part[0].dp[0], 0);
	cr_assert_eq(s->part[0].this_update, 1699990000);
	cr_assert_str_eq(s->part[0].crl_number, "0a1b");
	cr_assert_eq(s->part[1].kind, FFILE_PART_CA);
	cr_assert_eq(s->part[1].reasons, 1u << 1);
	cr_assert_eq(s->part[1].dp[31], 0x22);
	cr_assert_eq(s->part[1].flags, FFILE_PART_DELEGATED);
	cr_assert_eq(s->part[1].crl_issuer[0], 0x33);
	cr_assert_eq(s->part[1].this_update, 1699980000);
	cr_assert_str_eq(s->part[1].crl_number,
	    "0123456789abcdef0123456789abcdef01234567");
	cr_assert_null(ffile_scope(f, "tenant-b"));
	cr_assert_eq(ffile_verify_key(f, fx.key, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(util_sha256(sha, fx.buf, fx.len), 0);
	cr_assert_eq(memcmp(sha, ffile_sha256(f), 32), 0);
	cr_assert_eq(ffile_bytes(f, &len), fx.buf);
	cr_assert_eq(len, fx.len);
	/* The bit array is 8-aligned inside the file. */
	cr_assert_eq((ffile_bloom(f)->bits - fx.buf) % 8, 0);
	for (i = 0; i < NIDS; i++) {
		mkkey(&k, i % 2 ? "default" : "tenant-a", i);
		cr_assert(ffile_query(f, &k), "false negative %d", i);
	}
	/*
	 * Absent keys: the parsed file answers exactly as the filter that
	 * was encoded, false positives included, and those stay near the
	 * target (1% here, 2^-7 for fuse, 1/256 for fuse8; 40 of 4000
	 * expected at most).
	 */
	for (i = NIDS; i < NIDS + NABSENT; i++) {
		mkkey(&k, i % 2 ? "default" : "tenant-a", i);
		want = bloom_query(&fx.b, enc, revkey_encode(&k, enc));
		cr_assert_eq(ffile_query(f, &k), want, "absent key %d", i);
		nfp += want;
	}
	cr_assert(nfp > 0 && nfp < NABSENT / 40, "%s: %d false positives in "
	    "%d absent keys", bloom_layout_name(layout), nfp, NABSENT);
	cr_assert_not(ffile_expired(f, 1700003599));
	cr_assert(ffile_expired(f, 1700003600));
	ffile_close(f);
	fx_free(&fx);
}

Test(ffile, round_trip_classic) { round_trip(BLOOM_CLASSIC); }
Test(ffile, round_trip_blocked) { round_trip(BLOOM_BLOCKED); }
Test(ffile, round_trip_fuse) { round_trip(BLOOM_FUSE); }
Test(ffile, round_trip_fuse128) { round_trip(BLOOM_FUSE128); }
Test(ffile, round_trip_fuse8) { round_trip(BLOOM_FUSE8); }

static void
flip_any_byte(enum bloom_layout layout)
{
	struct fx fx;
	unsigned char *copy;
	struct ffile *f;
	char err[256];
	size_t i;

	make_filter(&fx, layout);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < fx.len; i++) {
		memcpy(copy, fx.buf, fx.len);
		copy[i] ^= 0x01;
		f = ffile_parse(copy, fx.len, false, err, sizeof(err));
		if (f == NULL)
			continue;
		cr_assert_eq(ffile_verify_key(f, fx.key, err, sizeof(err)), -1,
		    "flipping byte %zu went unnoticed", i);
		ffile_close(f);
	}
	free(copy);
	fx_free(&fx);
}

Test(ffile, flip_any_byte_fails_parse_or_verify)
{
	flip_any_byte(BLOOM_CLASSIC);
}

Test(ffile, flip_any_byte_fails_parse_or_verify_fuse)
{
	flip_any_byte(BLOOM_FUSE);
}

Test(ffile, flip_any_byte_fails_parse_or_verify_fuse128)
{
	flip_any_byte(BLOOM_FUSE128);
}

Test(ffile, flip_any_byte_fails_parse_or_verify_fuse8)
{
	flip_any_byte(BLOOM_FUSE8);
}

static void
truncations_and_trailing_bytes(enum bloom_layout layout)
{
	struct fx fx;
	unsigned char *copy;
	char err[256];
	size_t i;

	make_filter(&fx, layout);
	for (i = 0; i < fx.len; i++)
		cr_assert_null(ffile_parse(fx.buf, i, false, err, sizeof(err)),
		    "truncated to %zu accepted", i);
	copy = calloc(1, fx.len + 8);
	cr_assert_not_null(copy);
	memcpy(copy, fx.buf, fx.len);
	cr_assert_null(ffile_parse(copy, fx.len + 1, false, err, sizeof(err)));
	cr_assert(strstr(err, "offset") != NULL, "%s", err);
	free(copy);
	fx_free(&fx);
}

Test(ffile, truncations_and_trailing_bytes_rejected)
{
	truncations_and_trailing_bytes(BLOOM_CLASSIC);
}

Test(ffile, truncations_and_trailing_bytes_rejected_fuse)
{
	truncations_and_trailing_bytes(BLOOM_FUSE);
	truncations_and_trailing_bytes(BLOOM_FUSE8);
}

static void
hostile_header_fields(enum bloom_layout layout)
{
	struct fx fx;
	unsigned char *copy;
	char err[256];
	static const struct { size_t off; size_t len; } fields[] = {
		{ 0, 8 }, { 8, 2 }, { 10, 1 }, { 11, 1 }, { 12, 4 }, { 40, 8 },
		{ 48, 8 }, { 56, 4 }, { 60, 4 }, { 72, 8 }, { 152, 8 },
		{ 160, 8 },
	};
	size_t i, j;

	make_filter(&fx, layout);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		memcpy(copy, fx.buf, fx.len);
		for (j = 0; j < fields[i].len; j++)
			copy[fields[i].off + j] = 0xff;
		cr_assert_null(ffile_parse(copy, fx.len, false, err, sizeof(err)),
		    "all-ones field at %zu accepted", fields[i].off);
		cr_assert(strstr(err, "offset") != NULL, "%s", err);
	}
	free(copy);
	fx_free(&fx);
}

Test(ffile, hostile_header_fields_rejected)
{
	hostile_header_fields(BLOOM_CLASSIC);
}

Test(ffile, hostile_header_fields_rejected_fuse)
{
	hostile_header_fields(BLOOM_FUSE);
	hostile_header_fields(BLOOM_FUSE128);
	hostile_header_fields(BLOOM_FUSE8);
}

/*
 * Header byte 11: log2 of the fuse segment length, 1..18 for the fuse
 * layout and 0 for the others. Each tampered copy is signed again with
 * the filter's own key, so nothing but the field itself is wrong: the
 * parse has to refuse it, and say it is offset 11.
 */
static void
resign(const struct fx *fx, unsigned char *buf, size_t len)
{
	cr_assert_eq(sign_sign(fx->key, buf, len - SIGN_SIG_LEN,
	    buf + len - SIGN_SIG_LEN), 0);
}

/* The parse refuses buf; err names what (needle). */
static void
expect_refused(const unsigned char *buf, size_t len, const char *needle,
    const char *what)
{
	struct ffile *f;
	char err[256];

	err[0] = '\0';
	f = ffile_parse(buf, len, false, err, sizeof(err));
	if (f != NULL)
		ffile_close(f);
	cr_assert_null(f, "%s accepted", what);
	cr_assert(strstr(err, needle) != NULL, "%s: error '%s' lacks '%s'",
	    what, err, needle);
}

/* The parse and the signature check both accept buf. */
static void
expect_accepted(const struct fx *fx, const unsigned char *buf, size_t len,
    const char *what)
{
	struct ffile *f;
	char err[256];

	f = ffile_parse(buf, len, false, err, sizeof(err));
	cr_assert_not_null(f, "%s: %s", what, err);
	cr_assert_eq(ffile_verify_key(f, fx->key, err, sizeof(err)), 0,
	    "%s: %s", what, err);
	ffile_close(f);
}

static void
seglog_byte_nonzero_refused(enum bloom_layout layout)
{
	static const unsigned char vals[] = { 1, 2, 6, 18, 19, 128, 255 };
	struct fx fx;
	unsigned char *copy;
	char what[64];
	size_t i;

	make_filter(&fx, layout);
	cr_assert_eq(fx.buf[11], 0);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	memcpy(copy, fx.buf, fx.len);
	resign(&fx, copy, fx.len);
	expect_accepted(&fx, copy, fx.len, "byte 11 = 0, signed again");
	for (i = 0; i < sizeof(vals); i++) {
		memcpy(copy, fx.buf, fx.len);
		copy[11] = vals[i];
		resign(&fx, copy, fx.len);
		cr_assert(snprintf(what, sizeof(what), "%s file with byte 11 = "
		    "%u", bloom_layout_name(layout), vals[i]) > 0);
		expect_refused(copy, fx.len, "offset 11", what);
	}
	free(copy);
	fx_free(&fx);
}

Test(ffile, seglog_byte_must_be_zero_classic)
{
	seglog_byte_nonzero_refused(BLOOM_CLASSIC);
}

Test(ffile, seglog_byte_must_be_zero_blocked)
{
	seglog_byte_nonzero_refused(BLOOM_BLOCKED);
}

static void
fuse_seglog_byte_outside_1_to_18_refused(enum bloom_layout layout)
{
	static const unsigned char vals[] = { 0, 19, 20, 64, 255 };
	struct fx fx;
	unsigned char *copy;
	char what[64];
	size_t i;

	make_filter(&fx, layout);
	cr_assert(fx.buf[11] >= 1 && fx.buf[11] <= 18, "byte 11 = %u",
	    fx.buf[11]);
	cr_assert_eq(fx.buf[11], fx.b.seglog);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < sizeof(vals); i++) {
		memcpy(copy, fx.buf, fx.len);
		copy[11] = vals[i];
		resign(&fx, copy, fx.len);
		cr_assert(snprintf(what, sizeof(what), "fuse file with byte 11 "
		    "= %u", vals[i]) > 0);
		expect_refused(copy, fx.len, "offset 11", what);
	}
	free(copy);
	fx_free(&fx);
}

Test(ffile, fuse_seglog_byte_outside_1_to_18_refused)
{
	fuse_seglog_byte_outside_1_to_18_refused(BLOOM_FUSE);
	fuse_seglog_byte_outside_1_to_18_refused(BLOOM_FUSE128);
	fuse_seglog_byte_outside_1_to_18_refused(BLOOM_FUSE8);
}

/*
 * A fuse file re-encoded with another m: the bit array cut or grown to
 * ceil(m/8) bytes, m and the bit array length rewritten, signed again.
 * The sizes then agree, so only the fuse shape rule can refuse it.
 */
static unsigned char *
fuse_with_m(const struct fx *fx, uint64_t m, size_t *len)
{
	uint64_t bits_off = util_get_le64(fx->buf + 152);
	uint64_t old_nbytes = util_get_le64(fx->buf + 160);
	size_t nbytes = bloom_array_len(fx->b.layout, m);
	unsigned char *buf;

	*len = (size_t)bits_off + nbytes + SIGN_SIG_LEN;
	buf = calloc(1, *len);
	cr_assert_not_null(buf);
	memcpy(buf, fx->buf, (size_t)bits_off + (nbytes < old_nbytes ?
	    nbytes : (size_t)old_nbytes));
	util_put_le64(buf + 48, m);
	util_put_le64(buf + 160, nbytes);
	/* No bits past m, zero padding: other checks' refusals. */
	memset(buf + bits_off + bloom_nbytes(m), 0, nbytes - bloom_nbytes(m));
	if (m % 8 != 0)
		buf[bits_off + bloom_nbytes(m) - 1] &=
		    (unsigned char)((1u << (m % 8)) - 1);
	resign(fx, buf, *len);
	return buf;
}

static void
fuse_m_not_whole_segments_refused(enum bloom_layout layout)
{
	struct fx fx;
	unsigned char *buf;
	uint64_t cells, seglen, w;
	size_t len;

	make_filter(&fx, layout);
	w = fx.b.width;
	cells = fx.b.m / w;
	seglen = fx.b.seglen;
	cr_assert(cells / seglen > 3, "%" PRIu64 " segments", cells / seglen);

	/* The unchanged shape, through the same path: accepted. */
	buf = fuse_with_m(&fx, fx.b.m, &len);
	cr_assert_eq(len, fx.len);
	expect_accepted(&fx, buf, len, "fuse file re-encoded unchanged");
	free(buf);

	buf = fuse_with_m(&fx, (cells - 1) * w, &len);
	expect_refused(buf, len, "invalid filter parameters",
	    "fuse file one cell short of whole segments");
	free(buf);
	buf = fuse_with_m(&fx, (cells + seglen / 2) * w, &len);
	expect_refused(buf, len, "invalid filter parameters",
	    "fuse file half a segment over");
	free(buf);
	buf = fuse_with_m(&fx, cells * w - 4, &len);
	expect_refused(buf, len, "invalid filter parameters",
	    "fuse file with m not whole cells");
	free(buf);
	buf = fuse_with_m(&fx, 2 * seglen * w, &len);
	expect_refused(buf, len, "invalid filter parameters",
	    "fuse file of two whole segments (three needed)");
	free(buf);
	fx_free(&fx);
}

Test(ffile, fuse_m_not_whole_segments_refused)
{
	fuse_m_not_whole_segments_refused(BLOOM_FUSE);
	fuse_m_not_whole_segments_refused(BLOOM_FUSE128);
	fuse_m_not_whole_segments_refused(BLOOM_FUSE8);
}

/*
 * Header byte 60, BLOOM_FUSE's fingerprint width: 4..16 there, 0 in every
 * other layout; bytes 61..63 reserved, 0. Each tampered copy is signed
 * again, so only the field is wrong.
 */
static void
width_byte_refused(enum bloom_layout layout, const unsigned char *vals,
    size_t nvals, size_t off)
{
	struct fx fx;
	unsigned char *copy;
	char what[80];
	size_t i;

	make_filter(&fx, layout);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < nvals; i++) {
		memcpy(copy, fx.buf, fx.len);
		copy[off] = vals[i];
		resign(&fx, copy, fx.len);
		cr_assert(snprintf(what, sizeof(what), "%s file with byte %zu "
		    "= %u", bloom_layout_name(layout), off, vals[i]) > 0);
		expect_refused(copy, fx.len, off == 60 ? "offset 60" :
		    "offset 61", what);
	}
	free(copy);
	fx_free(&fx);
}

Test(ffile, fuse_width_byte_outside_4_to_16_refused)
{
	static const unsigned char bad[] = { 0, 1, 3, 17, 32, 255 };
	static const unsigned char any[] = { 4, 8, 16 };
	static const unsigned char one[] = { 1 };

	width_byte_refused(BLOOM_FUSE, bad, sizeof(bad), 60);
	width_byte_refused(BLOOM_FUSE128, bad, sizeof(bad), 60);
	width_byte_refused(BLOOM_FUSE8, any, sizeof(any), 60);
	width_byte_refused(BLOOM_CLASSIC, any, sizeof(any), 60);
	width_byte_refused(BLOOM_BLOCKED, any, sizeof(any), 60);
	width_byte_refused(BLOOM_FUSE, one, 1, 61);
	width_byte_refused(BLOOM_FUSE, one, 1, 63);
}

/*
 * Another valid width with the same m: the parse takes it only when m is
 * then whole segments of whole cells, and a query then never reads past
 * the array (m bits, whatever the width): ASan checks the reads here.
 */
Test(ffile, fuse_other_width_same_m_stays_in_bounds)
{
	struct fx fx;
	unsigned char *copy;
	struct ffile *f;
	struct revkey k;
	char err[256];
	unsigned w;
	int i;

	make_filter(&fx, BLOOM_FUSE);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (w = 4; w <= 16; w++) {
		memcpy(copy, fx.buf, fx.len);
		copy[60] = (unsigned char)w;
		resign(&fx, copy, fx.len);
		f = ffile_parse(copy, fx.len, false, err, sizeof(err));
		if (f == NULL) {
			cr_assert(w != 7 && strstr(err, "invalid filter "
			    "parameters") != NULL, "w=%u: %s", w, err);
			continue;
		}
		for (i = 0; i < 2000; i++) {
			mkkey(&k, "default", i);
			(void)ffile_query(f, &k);
		}
		ffile_close(f);
	}
	free(copy);
	fx_free(&fx);
}

/* The padding after BLOOM_FUSE's cells: 8 bytes, all zero. */
Test(ffile, fuse_padding_nonzero_or_missing_refused)
{
	struct fx fx;
	unsigned char *copy, *buf;
	uint64_t bits_off, nbytes;
	size_t i, len;

	make_filter(&fx, BLOOM_FUSE);
	bits_off = util_get_le64(fx.buf + 152);
	nbytes = util_get_le64(fx.buf + 160);
	cr_assert_eq(nbytes, bloom_nbytes(fx.b.m) + BLOOM_FUSE_PAD);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < BLOOM_FUSE_PAD; i++) {
		memcpy(copy, fx.buf, fx.len);
		cr_assert_eq(copy[bits_off + nbytes - 1 - i], 0);
		copy[bits_off + nbytes - 1 - i] = 0x80;
		resign(&fx, copy, fx.len);
		expect_refused(copy, fx.len, "padding after the cells",
		    "fuse file with a padding byte set");
	}
	free(copy);
	/* The array without its padding: lengths no longer agree. */
	len = fx.len - BLOOM_FUSE_PAD;
	buf = calloc(1, len);
	cr_assert_not_null(buf);
	memcpy(buf, fx.buf, (size_t)(bits_off + nbytes - BLOOM_FUSE_PAD));
	util_put_le64(buf + 160, nbytes - BLOOM_FUSE_PAD);
	resign(&fx, buf, len);
	expect_refused(buf, len, "offset 160", "fuse file without padding");
	free(buf);
	fx_free(&fx);
}

Test(ffile, fuse_k_not_3_refused)
{
	static const uint32_t ks[] = { 1, 2, 4, 8, BLOOM_MAX_K };
	struct fx fx;
	unsigned char *copy;
	char what[64];
	size_t i;

	make_filter(&fx, BLOOM_FUSE);
	cr_assert_eq(util_get_le32(fx.buf + 56), 3);
	cr_assert_eq(fx.buf[60], 7);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		memcpy(copy, fx.buf, fx.len);
		util_put_le32(copy + 56, ks[i]);
		resign(&fx, copy, fx.len);
		cr_assert(snprintf(what, sizeof(what), "fuse file with k = %"
		    PRIu32, ks[i]) > 0);
		expect_refused(copy, fx.len, "invalid filter parameters", what);
	}
	free(copy);
	fx_free(&fx);
}

/* The encoder reads back what it wrote: it never signs a bad shape. */
Test(ffile, encode_refuses_inconsistent_segment_length)
{
	struct fx fx;
	struct ffile_info info;
	struct ffile_scope sc;
	struct bloom bad;
	unsigned char *out = NULL;
	size_t len = 0;
	char err[256];

	make_filter(&fx, BLOOM_FUSE);
	memset(&info, 0, sizeof(info));
	memset(&sc, 0, sizeof(sc));
	memcpy(sc.name, "default", 8);
	sc.keys = NIDS;
	info.issued_at = 1;
	info.expires_at = 2;
	info.keys = NIDS;
	info.fp_rate_target = 0.01;
	info.scopes = &sc;
	info.nscopes = 1;
	bad = fx.b;
	bad.seglog = 0;
	cr_assert_eq(ffile_encode(&info, &bad, fx.key, &out, &len, err,
	    sizeof(err)), -1, "fuse with segment length log 0 encoded");
	cr_assert_null(out);
	cr_assert(strstr(err, "offset 11") != NULL, "%s", err);
	bad.seglog = BLOOM_FUSE_MAX_SEGLOG + 1;
	cr_assert_eq(ffile_encode(&info, &bad, fx.key, &out, &len, err,
	    sizeof(err)), -1, "fuse with segment length log 19 encoded");
	cr_assert_null(out);
	/* Segments longer than the array holds: not whole segments. */
	bad.seglog = fx.b.seglog + 4;
	cr_assert_eq(ffile_encode(&info, &bad, fx.key, &out, &len, err,
	    sizeof(err)), -1, "fuse with too long segments encoded");
	cr_assert_null(out);
	bad = fx.b;
	cr_assert_eq(ffile_encode(&info, &bad, fx.key, &out, &len, err,
	    sizeof(err)), 0, "%s", err);
	free(out);
	fx_free(&fx);
}

Test(ffile, wrong_key_and_ring)
{
	struct fx fx;
	struct ffile *f;
	struct sign_ring ring;
	EVP_PKEY *other;
	char err[256], dir[] = "/tmp/test_ffile_XXXXXX", p1[64], p2[64];
	char k1[64], k2[64];

	make_filter(&fx, BLOOM_CLASSIC);
	f = ffile_parse(fx.buf, fx.len, false, err, sizeof(err));
	cr_assert_not_null(f);
	other = sign_keygen();
	cr_assert_eq(ffile_verify_key(f, other, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not trusted") != NULL, "%s", err);

	cr_assert_not_null(mkdtemp(dir));
	cr_assert(snprintf(p1, sizeof(p1), "%s/a.pem", dir) > 0);
	cr_assert(snprintf(p2, sizeof(p2), "%s/b.pem", dir) > 0);
	cr_assert(snprintf(k1, sizeof(k1), "%s/a.key", dir) > 0);
	cr_assert(snprintf(k2, sizeof(k2), "%s/b.key", dir) > 0);
	/* The ring takes public keys only (a private key is refused). */
	cr_assert_eq(sign_save(other, k1, p1, false, err, sizeof(err)), 0);
	cr_assert_eq(sign_save(fx.key, k2, p2, false, err, sizeof(err)), 0);
	sign_ring_init(&ring);
	cr_assert_eq(sign_ring_add(&ring, p1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ffile_verify(f, &ring, err, sizeof(err)), -1);
	cr_assert_eq(sign_ring_add(&ring, p2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ffile_verify(f, &ring, err, sizeof(err)), 0, "%s", err);
	sign_ring_free(&ring);
	unlink(p1);
	unlink(p2);
	unlink(k1);
	unlink(k2);
	rmdir(dir);
	EVP_PKEY_free(other);
	ffile_close(f);
	fx_free(&fx);
}

Test(ffile, open_maps_file)
{
	struct fx fx;
	struct ffile *f;
	char err[256], path[] = "/tmp/test_ffile_XXXXXX";
	int fd;

	make_filter(&fx, BLOOM_BLOCKED);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(util_write_all(fd, fx.buf, fx.len), 0);
	close(fd);
	f = ffile_open(path, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert_eq(ffile_verify_key(f, fx.key, err, sizeof(err)), 0);
	ffile_close(f);
	unlink(path);
	cr_assert_null(ffile_open(path, err, sizeof(err)));
	cr_assert(strstr(err, path) != NULL);
	fx_free(&fx);
}

Test(ffile, encode_refuses_duplicate_scope)
{
	struct ffile_info info;
	struct ffile_scope sc[2];
	struct bloom b;
	EVP_PKEY *key = sign_keygen();
	unsigned char *out;
	size_t len;
	char err[256];

	cr_assert_eq(bloom_init(&b, BLOOM_CLASSIC, 1024, 3, 1), 0);
	memset(&info, 0, sizeof(info));
	memset(sc, 0, sizeof(sc));
	memcpy(sc[0].name, "default", 8);
	memcpy(sc[1].name, "default", 8);
	info.issued_at = 1;
	info.expires_at = 2;
	info.fp_rate_target = 0.01;
	info.scopes = sc;
	info.nscopes = 2;
	cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err, sizeof(err)),
	    -1);
	/* Key count must be the sum of the scopes'. */
	info.nscopes = 1;
	info.keys = 5;
	cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "sum") != NULL, "%s", err);
	info.keys = 0;
	cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err, sizeof(err)),
	    0, "%s", err);
	free(out);
	bloom_free(&b);
	EVP_PKEY_free(key);
}

/* Every padding length (0..7) between the scopes and the bit array. */
Test(ffile, all_scope_lengths_round_trip)
{
	struct ffile_info info;
	struct ffile_scope sc;
	struct bloom b;
	struct ffile *f;
	EVP_PKEY *key = sign_keygen();
	unsigned char *out;
	size_t len, nl;
	char err[256];

	cr_assert_eq(bloom_init(&b, BLOOM_CLASSIC, 1000, 3, 9), 0);
	for (nl = 1; nl <= 24; nl++) {
		memset(&info, 0, sizeof(info));
		memset(&sc, 0, sizeof(sc));
		memset(sc.name, 'a', nl);
		info.issued_at = 1;
		info.expires_at = 2;
		info.fp_rate_target = 0.5;
		info.scopes = &sc;
		info.nscopes = 1;
		cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err,
		    sizeof(err)), 0, "name length %zu: %s", nl, err);
		f = ffile_parse(out, len, true, err, sizeof(err));
		cr_assert_not_null(f, "%s", err);
		cr_assert_eq(strlen(ffile_info(f)->scopes[0].name), nl);
		cr_assert_eq(ffile_verify_key(f, key, err, sizeof(err)), 0);
		ffile_close(f);
	}
	bloom_free(&b);
	EVP_PKEY_free(key);
}

/* tests/vectors: the committed filter, table and key agree with each other. */
Test(ffile, committed_vector_verifies)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[1024], err[512];
	struct ffile *f;
	struct table *t;
	struct sign_ring ring;
	struct table_rec r;
	struct revkey k;
	uint64_t i;

	if (src == NULL)
		src = ".";
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/filter.rcf",
	    src) > 0);
	f = ffile_open(path, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/pub.pem",
	    src) > 0);
	sign_ring_init(&ring);
	cr_assert_eq(sign_ring_add(&ring, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ffile_verify(f, &ring, err, sizeof(err)), 0, "%s", err);
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/table.rct",
	    src) > 0);
	t = table_open(path, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(table_check_binding(t, ffile_info(f)->table_sha256,
	    ffile_info(f)->table_len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(table_count(t), ffile_info(f)->keys);
	cr_assert_eq(ffile_info(f)->version, 1);
	cr_assert_eq(ffile_info(f)->nscopes, 3);
	for (i = 0; i < table_count(t); i++) {
		cr_assert_eq(table_get(t, i, &r), 0);
		cr_assert(ffile_query(f, &r.key), "record %" PRIu64
		    " missing from the filter", i);
	}
	cr_assert_eq(revkey_set(&k, "tenant-a", "tok-4", 5), 0);
	cr_assert_eq(table_lookup(t, &k, &r), 1);
	cr_assert_str_eq(r.reason, "keyCompromise");
	cr_assert_eq(r.revoked_at, 1767323045);	/* 2026-01-02T03:04:05Z */
	cr_assert_eq(revkey_set(&k, "default", "tok-5", 5), 0);
	cr_assert_eq(table_lookup(t, &k, NULL), 0);
	table_close(t);
	sign_ring_free(&ring);
	ffile_close(f);
}

/*
 * Older formats (3: parts without their CRL, 2: DER-name scopes, 1: no CRL
 * flags) are refused, saying what to do.
 */
Test(ffile, older_format_and_unknown_flags_refused)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[1024], err[512];
	unsigned char *buf, *copy;
	size_t len;

	if (src == NULL)
		src = ".";
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/filter.rcf",
	    src) > 0);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	copy = malloc(len);
	cr_assert_not_null(copy);
	memcpy(copy, buf, len);
	copy[8] = 3;
	cr_assert_null(ffile_parse(copy, len, false, err, sizeof(err)));
	cr_assert(strstr(err, "offset 8: format 3 is from an older "
	    "filterbuild") != NULL, "%s", err);
	cr_assert(strstr(err, "coverage parts naming their CRL") != NULL, "%s",
	    err);
	copy[8] = 2;
	cr_assert_null(ffile_parse(copy, len, false, err, sizeof(err)));
	cr_assert(strstr(err, "offset 8: format 2 is from an older "
	    "filterbuild") != NULL, "%s", err);
	cr_assert(strstr(err, "canonical issuer Name") != NULL, "%s", err);
	cr_assert(strstr(err, "rebuild") != NULL, "%s", err);
	/* The first scope ("default", a list) at 168: flags at 168+2+7+8+1. */
	memcpy(copy, buf, len);
	copy[168 + 2 + 7 + 8 + 1] = FFILE_SCOPE_UNVERIFIED;
	cr_assert_null(ffile_parse(copy, len, false, err, sizeof(err)));
	cr_assert(strstr(err, "unknown flags 0x01") != NULL, "%s", err);
	/* The CRL scope at 311: bits outside the known ones. */
	memcpy(copy, buf, len);
	cr_assert_eq(copy[311 + 2 + 69 + 8], FFILE_SRC_CRL);
	copy[311 + 2 + 69 + 8 + 1] = 0x80;
	cr_assert_null(ffile_parse(copy, len, false, err, sizeof(err)));
	cr_assert(strstr(err, "unknown flags 0x80") != NULL, "%s", err);
	free(copy);
	free(buf);

	/* The table of format 1 likewise. */
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/table.rct",
	    src) > 0);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	{
		char tmp[] = "/tmp/revcheck-oldtable-XXXXXX";
		int fd = mkstemp(tmp);
		struct table *t;

		cr_assert(fd >= 0);
		buf[8] = 1;
		cr_assert_eq(util_write_all(fd, buf, len), 0);
		close(fd);
		t = table_open(tmp, err, sizeof(err));
		unlink(tmp);
		cr_assert_null(t);
		cr_assert(strstr(err, "format 1 is from an older filterbuild") !=
		    NULL, "%s", err);
	}
	free(buf);
}

/*
 * Header byte 10 names the layout, and with it the hash (layouts 4 and 5
 * differ only there): a layout this reader does not know is refused by
 * number, signed or not, never read as another one.
 */
Test(ffile, unknown_layout_byte_refused)
{
	static const unsigned char bad[] = { 0, 6, 7, 128, 255 };
	struct fx fx;
	unsigned char *copy;
	struct ffile *f;
	char what[64], err[256];
	size_t i;

	make_filter(&fx, BLOOM_FUSE);
	cr_assert_eq(fx.buf[10], 5, "filterbuild's fuse is layout 5");
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < sizeof(bad); i++) {
		memcpy(copy, fx.buf, fx.len);
		copy[10] = bad[i];
		resign(&fx, copy, fx.len);
		cr_assert(snprintf(what, sizeof(what), "layout byte %u",
		    bad[i]) > 0);
		expect_refused(copy, fx.len, "unknown layout", what);
		err[0] = '\0';
		cr_assert_null(ffile_parse(copy, fx.len, false, err,
		    sizeof(err)));
		cr_assert(strstr(err, "offset 10") != NULL, "%s", err);
		cr_assert(strstr(err, "4 fuse128, 5 fuse") != NULL, "%s", err);
	}
	/*
	 * Layout 4 over layout 5's cells is well formed, so it parses; the
	 * signature is what keeps the builder's layout byte: not signed
	 * again, the copy fails verification.
	 */
	memcpy(copy, fx.buf, fx.len);
	copy[10] = 4;
	f = ffile_parse(copy, fx.len, false, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert_eq(ffile_info(f)->layout, BLOOM_FUSE128);
	cr_assert_eq(ffile_verify_key(f, fx.key, err, sizeof(err)), -1,
	    "a re-labelled file passed verification");
	ffile_close(f);
	free(copy);
	fx_free(&fx);
}

/*
 * A layout-4 file filterbuild wrote before layout 5 (tests/data/fuse128):
 * today's reader still takes its hash from its layout, so every one of its
 * 1000 ids is found, signature and all, and absent ids match at about
 * 2^-10.
 */
Test(ffile, layout_4_file_of_the_previous_builder_still_answers)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[1024], err[256], id[32];
	unsigned char *buf = NULL;
	const struct ffile_info *in;
	struct revkey k;
	struct ffile *f;
	EVP_PKEY *pub;
	size_t len;
	int i, fp = 0;

	if (src == NULL || *src == '\0')
		src = ".";
	cr_assert(snprintf(path, sizeof(path), "%s/tests/data/fuse128/"
	    "filter.rcf", src) < (int)sizeof(path));
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	f = ffile_parse(buf, len, true, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert(snprintf(path, sizeof(path), "%s/tests/data/fuse128/pub.pem",
	    src) < (int)sizeof(path));
	pub = sign_load_public(path, err, sizeof(err));
	cr_assert_not_null(pub, "%s", err);
	cr_assert_eq(ffile_verify_key(f, pub, err, sizeof(err)), 0, "%s", err);
	in = ffile_info(f);
	cr_assert_eq(in->layout, BLOOM_FUSE128);
	cr_assert_str_eq(bloom_layout_name(in->layout), "fuse128");
	cr_assert_eq(in->width, 10);
	cr_assert_eq(in->keys, 1000);
	for (i = 1; i <= 1000; i++) {
		snprintf(id, sizeof(id), "tok-f128-%d", i);
		cr_assert_eq(revkey_set(&k, "default", id, strlen(id)), 0);
		cr_assert(ffile_query(f, &k), "%s missed", id);
	}
	for (i = 1; i <= 100000; i++) {
		snprintf(id, sizeof(id), "tok-absent-%d", i);
		cr_assert_eq(revkey_set(&k, "default", id, strlen(id)), 0);
		fp += ffile_query(f, &k);
	}
	cr_assert_lt(fp, 2 * 100000 / 1024 + 30, "%d of 100000 absent ids "
	    "match", fp);
	EVP_PKEY_free(pub);
	ffile_close(f);
}

/*
 * A reference keeps the filter and its bytes (what /v1/filter sends) after
 * the owner closed it; the last close frees (ASan runs catch a double
 * free or a read after it).
 */
Test(ffile, a_reference_outlives_the_owner_close)
{
	struct fx fx;
	struct ffile *f, *g;
	unsigned char *copy;
	const unsigned char *p;
	char err[256];
	size_t len;

	make_filter(&fx, BLOOM_CLASSIC);
	cr_assert_not_null(copy = malloc(fx.len));
	memcpy(copy, fx.buf, fx.len);
	f = ffile_parse(copy, fx.len, true, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	g = ffile_ref(f);
	cr_assert_eq(g, f);
	ffile_close(f);
	p = ffile_bytes(g, &len);
	cr_assert_eq(len, fx.len);
	cr_assert(memcmp(p, fx.buf, len) == 0, "the bytes changed");
	cr_assert_eq(ffile_info(g)->version, 42);
	ffile_close(g);
	fx_free(&fx);
}

/* ---- exact scopes (format 5) ------------------------------------------ */

#define EX_U	2000	/* the exact scope's issued ids */
#define EX_R	40	/* the first EX_R of them revoked */

/* An exact_src over the encoded keys "x-<i>" of scope "issued", i < n. */
struct ex_src {
	size_t		 i, n;
	unsigned char	 enc[REVKEY_ENC_MAX];
};

static void
ex_key(struct revkey *k, size_t i)
{
	char id[32];

	cr_assert(snprintf(id, sizeof(id), "x-%zu", i) > 0);
	cr_assert_eq(revkey_set(k, "issued", id, strlen(id)), 0);
}

static int
ex_rewind(void *arg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	((struct ex_src *)arg)->i = 0;
	return 0;
}

static int
ex_next(void *arg, const unsigned char **key, size_t *len, char *err,
    size_t errlen)
{
	struct ex_src *s = arg;
	struct revkey k;

	(void)err;
	(void)errlen;
	if (s->i >= s->n)
		return 0;
	ex_key(&k, s->i++);
	*len = revkey_encode(&k, s->enc);
	*key = s->enc;
	return 1;
}

struct ex_fx {
	struct fx	 fx;
	unsigned char	*blob;
	size_t		 blob_len;
	size_t		 entry;		/* offset of the exact scope's entry */
};

/*
 * make_filter's two scopes plus "issued", exact over U = x-0..x-1999 with
 * R = x-0..x-39: its keys are not in the bit array.
 */
static void
make_exact_filter(struct ex_fx *e)
{
	struct ex_src rs = { 0, EX_R, { 0 } }, us = { 0, EX_U, { 0 } };
	struct exact_src r = { &rs, ex_rewind, ex_next };
	struct exact_src u = { &us, ex_rewind, ex_next };
	struct ffile_scope sc[3];
	struct exact_stats st;
	struct ffile_info info;
	struct ffile *f;
	char err[256];

	memset(e, 0, sizeof(*e));
	make_filter(&e->fx, BLOOM_FUSE);
	cr_assert_eq(exact_build(&r, &u, 7, &e->blob, &e->blob_len, &st, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(st.revoked, EX_R);
	cr_assert_eq(st.issued, EX_U);
	f = ffile_parse(e->fx.buf, e->fx.len, false, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	info = *ffile_info(f);
	memcpy(sc, e->fx.scopes, sizeof(e->fx.scopes));
	memset(&sc[2], 0, sizeof(sc[2]));
	cr_assert(snprintf(sc[2].name, sizeof(sc[2].name), "issued") > 0);
	sc[2].keys = EX_R;
	sc[2].exact = true;
	sc[2].ex.cutoff = 1699000000;
	sc[2].ex.issued = EX_U;
	sc[2].ex.blob = e->blob;
	sc[2].ex.blob_len = e->blob_len;
	info.scopes = sc;
	info.nscopes = 3;
	info.keys += EX_R;
	free(e->fx.buf);
	e->fx.buf = NULL;
	cr_assert_eq(ffile_encode(&info, &e->fx.b, e->fx.key, &e->fx.buf,
	    &e->fx.len, err, sizeof(err)), 0, "%s", err);
	ffile_close(f);
	/* "default" (71 bytes and the exact byte), then "issued". */
	e->entry = FFILE_HDR_LEN + FFILE_SCOPE_MIN_LEN + 7 + 1;
	cr_assert_eq(util_get_le16(e->fx.buf + e->entry), 6);
	cr_assert_eq(memcmp(e->fx.buf + e->entry + 2, "issued", 6), 0);
}

static void
ex_free(struct ex_fx *e)
{
	fx_free(&e->fx);
	free(e->blob);
}

/* The offset of the exact fields in the "issued" entry (no parts). */
static size_t
ex_fields(const struct ex_fx *e)
{
	return e->entry + FFILE_SCOPE_MIN_LEN + 6 + 1;
}

/* Signs copy again, as a builder would have: parse alone must refuse. */
static void
ex_resign(const struct ex_fx *e, unsigned char *copy, size_t len)
{
	cr_assert_eq(sign_sign(e->fx.key, copy, len - SIGN_SIG_LEN,
	    copy + len - SIGN_SIG_LEN), 0);
}

Test(ffile, exact_scope_round_trip_answers_every_issued_key)
{
	const struct ffile_info *in;
	const struct ffile_scope *s;
	struct ex_fx e;
	struct ffile *f;
	struct revkey k;
	char err[256];
	size_t i;

	make_exact_filter(&e);
	f = ffile_parse(e.fx.buf, e.fx.len, false, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert_eq(ffile_verify_key(f, e.fx.key, err, sizeof(err)), 0, "%s",
	    err);
	in = ffile_info(f);
	cr_assert_eq(in->format, FFILE_FORMAT);
	cr_assert_eq(in->nexact, 1);
	cr_assert_eq(in->keys, NIDS + EX_R);
	cr_assert_eq(in->filter_keys, NIDS);
	s = ffile_scope(f, "issued");
	cr_assert_not_null(s);
	cr_assert(s->exact);
	cr_assert_eq(s->keys, EX_R);
	cr_assert_eq(s->ex.cutoff, 1699000000);
	cr_assert_eq(s->ex.issued, EX_U);
	cr_assert_eq(s->ex.blob_len, e.blob_len);
	cr_assert_eq(memcmp(s->ex.blob, e.blob, e.blob_len), 0);
	cr_assert_eq(s->ex.blob_off % 8, 0);
	cr_assert_not(ffile_scope(f, "default")->exact);
	for (i = 0; i < EX_U; i++) {
		ex_key(&k, i);
		cr_assert_eq(ffile_exact_query(s, &k), i < EX_R ?
		    EXACT_REVOKED : EXACT_NOT_REVOKED, "x-%zu", i);
		cr_assert_eq(ffile_query(f, &k), i < EX_R, "x-%zu", i);
	}
	/* The other scopes still answer from the bit array. */
	for (i = 0; i < NIDS; i++) {
		mkkey(&k, i % 2 ? "default" : "tenant-a", (int)i);
		cr_assert(ffile_query(f, &k), "false negative %zu", i);
	}
	ffile_close(f);
	ex_free(&e);
}

Test(ffile, exact_scope_bad_shapes_refused)
{
	static const struct { size_t off; uint64_t v; const char *what; } bad[] = {
		{ 16, EX_R + 1, "|R| not the scope's key count" },
		{ 8, EX_R - 1, "|U| below |R|" },
		{ 0, 0, "cutoff 0" },
		{ 24, 8, "blob offset inside the bit array" },
		{ 32, 0, "blob length 0" },
	};
	struct ex_fx e;
	unsigned char *copy;
	char err[256];
	size_t i, fo;

	make_exact_filter(&e);
	copy = malloc(e.fx.len + 16);
	cr_assert_not_null(copy);
	fo = ex_fields(&e);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(copy, e.fx.buf, e.fx.len);
		util_put_le64(copy + fo + bad[i].off, bad[i].v);
		ex_resign(&e, copy, e.fx.len);
		cr_assert_null(ffile_parse(copy, e.fx.len, false, err,
		    sizeof(err)), "%s accepted", bad[i].what);
		cr_assert(strstr(err, "offset") != NULL, "%s", err);
	}
	/* The blob one byte longer or shorter than the file holds. */
	for (i = 0; i < 2; i++) {
		memcpy(copy, e.fx.buf, e.fx.len);
		util_put_le64(copy + fo + 32, e.blob_len + (i == 0 ? 9 : -1));
		ex_resign(&e, copy, e.fx.len);
		cr_assert_null(ffile_parse(copy, e.fx.len, false, err,
		    sizeof(err)), "blob length %s accepted", i ? "-1" : "+9");
	}
	/* An unknown exact kind. */
	memcpy(copy, e.fx.buf, e.fx.len);
	copy[fo - 1] = 2;
	ex_resign(&e, copy, e.fx.len);
	cr_assert_null(ffile_parse(copy, e.fx.len, false, err, sizeof(err)));
	cr_assert(strstr(err, "exact kind") != NULL, "%s", err);
	/* Eight bytes no structure owns before the signature. */
	memcpy(copy, e.fx.buf, e.fx.len - SIGN_SIG_LEN);
	memset(copy + e.fx.len - SIGN_SIG_LEN, 0, 8);
	ex_resign(&e, copy, e.fx.len + 8);
	cr_assert_null(ffile_parse(copy, e.fx.len + 8, false, err,
	    sizeof(err)));
	/* The format-4 number on a file with an exact scope. */
	memcpy(copy, e.fx.buf, e.fx.len);
	util_put_le16(copy + 8, FFILE_FORMAT_PLAIN);
	ex_resign(&e, copy, e.fx.len);
	cr_assert_null(ffile_parse(copy, e.fx.len, false, err, sizeof(err)));
	free(copy);
	ex_free(&e);
}

Test(ffile, exact_scope_with_a_bad_structure_is_refused)
{
	const struct ffile_scope *s;
	struct ex_fx e;
	struct ffile *f;
	unsigned char *copy;
	char err[256];
	size_t off;

	make_exact_filter(&e);
	f = ffile_parse(e.fx.buf, e.fx.len, false, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	s = ffile_scope(f, "issued");
	off = (size_t)s->ex.blob_off;
	ffile_close(f);
	copy = malloc(e.fx.len);
	cr_assert_not_null(copy);
	/* Signed, well placed, but not a structure exact_attach takes. */
	memcpy(copy, e.fx.buf, e.fx.len);
	memset(copy + off, 0xff, e.blob_len);
	ex_resign(&e, copy, e.fx.len);
	cr_assert_null(ffile_parse(copy, e.fx.len, false, err, sizeof(err)));
	cr_assert(strstr(err, "exact structure refused") != NULL, "%s", err);
	free(copy);
	ex_free(&e);
}

Test(ffile, exact_scope_every_byte_flip_fails_parse_or_verify)
{
	struct ex_fx e;
	unsigned char *copy;
	struct ffile *f;
	char err[256];
	size_t i;

	make_exact_filter(&e);
	copy = malloc(e.fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < e.fx.len; i++) {
		memcpy(copy, e.fx.buf, e.fx.len);
		copy[i] ^= 0x01;
		f = ffile_parse(copy, e.fx.len, false, err, sizeof(err));
		if (f != NULL) {
			cr_assert_neq(ffile_verify_key(f, e.fx.key, err,
			    sizeof(err)), 0, "flip at %zu verified", i);
			ffile_close(f);
		}
	}
	free(copy);
	ex_free(&e);
}

Test(ffile, encode_refuses_exact_scope_without_structure)
{
	struct fx fx;
	struct ffile_info info;
	unsigned char *out = NULL;
	size_t len;
	char err[256];

	make_filter(&fx, BLOOM_CLASSIC);
	memset(&info, 0, sizeof(info));
	info.version = 1;
	info.issued_at = 1;
	info.expires_at = 2;
	info.fp_rate_target = 0.01;
	info.keys = NIDS;
	fx.scopes[1].exact = true;
	fx.scopes[1].ex.issued = NIDS;
	info.scopes = fx.scopes;
	info.nscopes = 2;
	cr_assert_eq(ffile_encode(&info, &fx.b, fx.key, &out, &len, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "exact") != NULL, "%s", err);
	fx_free(&fx);
}

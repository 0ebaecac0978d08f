/* pair.h - sorted records to a signed filter and its table, published as one version */
#ifndef REVCHECK_PAIR_H
#define REVCHECK_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>

#include "bloom.h"
#include "ffile.h"
#include "table.h"

/*
 * The one way a pair is made, for filterbuild (build and follow's
 * re-bases), the test fixtures and the benchmarks: pair_build() signs a
 * filter over a sorted builder in memory, pair_publish() writes it and
 * the table into an output directory (publish_pair_stream).
 */
struct pair_opts {
	EVP_PKEY	*key;		/* signs the filter; not taken */
	uint64_t	 version;	/* at least 1 */
	int64_t		 issued_at;
	/*
	 * The validity asked for. The filter never claims freshness past a
	 * CRL's nextUpdate: expires_at is lowered to the earliest nextUpdate
	 * after issued_at of the CRL scopes.
	 */
	int64_t		 expires_at;
	double		 fp_rate;	/* target, also written in the header */
	enum bloom_layout layout;	/* 0: bloom_pick_layout(keys, fp_rate) */
	/*
	 * Classic and blocked only: the filter's bits and probes; m 0 sizes
	 * it for fp_rate (bloom_size). A test sets them to force false
	 * positives. A fuse filter always sizes itself.
	 */
	uint64_t	 m;
	uint32_t	 k;
	/* The hash seed when fixed_seed (tests); else drawn by RAND_bytes. */
	uint64_t	 seed;
	bool		 fixed_seed;
	/* Called with the step about to start, for progress; may be NULL. */
	void		(*phase)(void *arg, const char *step);
	void		*phase_arg;
	/*
	 * Records of the builder left out of the bit array: the keys of
	 * exact scopes (their scope entries carry the exact structure that
	 * answers them), as nskip ascending, disjoint [start, end) ranges
	 * of the builder's indexes. NULL: none.
	 */
	const struct pair_range *skip;
	size_t		 nskip;
};

struct pair_range {
	size_t		 start, end;
};

struct pair {
	struct bloom	 bloom;		/* the filter's bits, owned */
	struct ffile_info info;		/* as signed; scopes are the caller's */
	unsigned char	*filter;	/* the signed filter file, owned */
	size_t		 filter_len;
	const struct table_builder *tb;	/* its table, the caller's */
};

/*
 * Builds the filter over every key of tb but o->skip's (sorted and unique:
 * table_builder_sort_unique) with the scopes (their key counts set, as
 * input_count_scopes does), hashes the table and signs the filter header
 * (ffile_encode). The same records, options and seed give the same bytes.
 * Returns 0 with p filled (pair_free releases it; tb and scopes must
 * outlive p), or -1 with err (the fuse layout asked for below the FP
 * rates it reaches, a size over the caps, no randomness, out of memory)
 * and p
 * zeroed. A BLOOM_FUSE filter gets w = bloom_fuse_width(fp_rate); a
 * BLOOM_FUSE8 one (tests only) the fixed 8 bits.
 */
int pair_build(struct pair *p, const struct table_builder *tb,
    const struct ffile_scope *scopes, size_t nscopes,
    const struct pair_opts *o, char *err, size_t errlen);

/*
 * Publishes p as its version in dir and keeps the newest keep versions,
 * with the guarantees of publish_pair_stream (on any failure dir is as it
 * was). The table is streamed from p->tb. Returns 0, or -1 with err.
 */
int pair_publish(const struct pair *p, const char *dir, unsigned keep,
    char *err, size_t errlen);

/*
 * pair_build then pair_publish, with the table written while the filter
 * is built: a second thread streams the table into the new version's
 * temporary directory and hashes the same bytes on the way
 * (table_builder_write), so the table is read once and its write, fsync
 * and digest overlap the filter's construction; the filter is signed
 * with that digest once both are done and written beside it. The version
 * and dir are checked first (publish_txn_begin), before any work. Same
 * bytes and guarantees as pair_build + pair_publish (on any failure dir
 * is as it was). Returns 0 with p filled, or -1 with err and p zeroed.
 */
int pair_build_publish(struct pair *p, const struct table_builder *tb,
    const struct ffile_scope *scopes, size_t nscopes,
    const struct pair_opts *o, const char *dir, unsigned keep, char *err,
    size_t errlen);

/* Releases what pair_build made and zeroes p. Safe on a zeroed pair. */
void pair_free(struct pair *p);

/*
 * The layout of a pair of n keys at fp_rate: asked, or when asked is 0
 * bloom_pick_layout's choice. Returns 0 with *layout set, or -1 with err
 * when it is the fuse layout and fp_rate lies below 2^-16 (no width meets
 * it), or the fuse8 layout and fp_rate lies below its fixed 1/256.
 * pair_build decides so; a caller may ask first to refuse before other
 * work.
 */
int pair_layout(size_t n, double fp_rate, enum bloom_layout asked,
    enum bloom_layout *layout, char *err, size_t errlen);

/*
 * The filter step alone: a filter of layout over the n keys key(arg, 0..
 * n-1), with m bits and k probes (classic, blocked); for BLOOM_FUSE k is
 * the fingerprint width (4..16) and m is ignored, for BLOOM_FUSE8 both
 * are (the fuse layouts' keys must be distinct); seeded with seed. The
 * keys are hashed in order and each filter line is hinted a few keys
 * ahead, so a key source that hints its own records ahead
 * (table_builder_prefetch) hides both misses. Returns 0 with b filled (bloom_free), or -1 with err and b
 * zeroed.
 */
int pair_filter(struct bloom *b, enum bloom_layout layout, size_t n,
    uint64_t m, uint32_t k, uint64_t seed, bloom_key_fn key, void *arg,
    char *err, size_t errlen);

#endif

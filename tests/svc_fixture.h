/* svc_fixture.h - builds small signed filter/table pairs in memory for the svc unit tests */
#ifndef REVCHECK_TESTS_SVC_FIXTURE_H
#define REVCHECK_TESTS_SVC_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "ffile.h"
#include "revkey.h"
#include "sign.h"
#include "table.h"
#include "util.h"

struct fx_rec {
	const char	*scope;
	const char	*id;		/* text, as revkey_from_text takes it */
	const char	*reason;
	int64_t		 revoked_at;
};

struct fx_pair {
	unsigned char	*filter;
	size_t		 flen;
	unsigned char	*table;
	size_t		 tlen;
};

/* bloom_build_fuse()'s key source: the sorted, unique records, encoded. */
struct fx_fuse_key {
	size_t		 len;
	unsigned char	 enc[REVKEY_ENC_MAX];
};

static inline const void *
fx_fuse_key(void *arg, size_t i, size_t *len)
{
	const struct fx_fuse_key *fk = arg;

	*len = fk[i].len;
	return fk[i].enc;
}

/*
 * Builds a signed pair from records; extra_scopes names scopes covered
 * with no key. layout picks the filter layout; for classic and blocked, m
 * and k size the bloom (small m forces false positives), a fuse filter
 * sizes itself and ignores them. Returns 0, or -1.
 */
static inline int
fx_build_layout(enum bloom_layout layout, EVP_PKEY *key, uint64_t version,
    int64_t issued, int64_t expires, const struct fx_rec *recs, size_t n,
    const char **extra_scopes, size_t nextra, uint64_t m, uint32_t k,
    struct fx_pair *out);

/* fx_build_layout() with the classic layout. */
static inline int
fx_build(EVP_PKEY *key, uint64_t version, int64_t issued, int64_t expires,
    const struct fx_rec *recs, size_t n, const char **extra_scopes,
    size_t nextra, uint64_t m, uint32_t k, struct fx_pair *out)
{
	return fx_build_layout(BLOOM_CLASSIC, key, version, issued, expires,
	    recs, n, extra_scopes, nextra, m, k, out);
}

static inline int
fx_build_layout(enum bloom_layout layout, EVP_PKEY *key, uint64_t version,
    int64_t issued, int64_t expires, const struct fx_rec *recs, size_t n,
    const char **extra_scopes, size_t nextra, uint64_t m, uint32_t k,
    struct fx_pair *out)
{
	struct table_rec *tr = calloc(n + 1, sizeof(*tr));
	struct ffile_scope sc[32];
	struct ffile_info info;
	struct bloom b;
	unsigned char enc[REVKEY_ENC_MAX];
	char err[256];
	size_t i, j, ns = 0, el;

	if (tr == NULL)
		return -1;
	memset(out, 0, sizeof(*out));
	memset(sc, 0, sizeof(sc));
	for (i = 0; i < n; i++) {
		if (revkey_from_text(&tr[i].key, recs[i].scope, recs[i].id,
		    strlen(recs[i].id), err, sizeof(err)) != 0)
			goto fail;
		tr[i].revoked_at = recs[i].revoked_at;
		if (recs[i].reason != NULL)
			snprintf(tr[i].reason, sizeof(tr[i].reason), "%s",
			    recs[i].reason);
		for (j = 0; j < ns; j++)
			if (strcmp(sc[j].name, recs[i].scope) == 0)
				break;
		if (j == ns)
			snprintf(sc[ns++].name, sizeof(sc[0].name), "%s",
			    recs[i].scope);
		sc[j].keys++;
	}
	for (i = 0; i < nextra; i++)
		snprintf(sc[ns++].name, sizeof(sc[0].name), "%s",
		    extra_scopes[i]);
	n = table_sort_unique(tr, n);
	if (layout == BLOOM_FUSE) {
		struct fx_fuse_key *fk = calloc(n + 1, sizeof(*fk));
		int rc;

		if (fk == NULL)
			goto fail;
		for (i = 0; i < n; i++)
			fk[i].len = revkey_encode(&tr[i].key, fk[i].enc);
		rc = bloom_build_fuse(&b, n, 0x1234, fx_fuse_key, fk);
		free(fk);
		if (rc != 0)
			goto fail;
	} else {
		if (bloom_init(&b, layout, m, k, 0x1234) != 0)
			goto fail;
		for (i = 0; i < n; i++) {
			el = revkey_encode(&tr[i].key, enc);
			bloom_add(&b, enc, el);
		}
	}
	if (table_encode(tr, n, &out->table, &out->tlen, err,
	    sizeof(err)) != 0)
		goto fail_bloom;
	memset(&info, 0, sizeof(info));
	info.version = version;
	info.issued_at = issued;
	info.expires_at = expires;
	info.keys = n;
	info.fp_rate_target = 0.01;
	info.scopes = sc;
	info.nscopes = (uint32_t)ns;
	if (util_sha256(info.table_sha256, out->table, out->tlen) != 0)
		goto fail_bloom;
	info.table_len = out->tlen;
	if (ffile_encode(&info, &b, key, &out->filter, &out->flen, err,
	    sizeof(err)) != 0)
		goto fail_bloom;
	bloom_free(&b);
	free(tr);
	return 0;
fail_bloom:
	bloom_free(&b);
fail:
	free(out->table);
	out->table = NULL;
	free(tr);
	return -1;
}

static inline void
fx_free(struct fx_pair *p)
{
	free(p->filter);
	free(p->table);
	memset(p, 0, sizeof(*p));
}

#endif

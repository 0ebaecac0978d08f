/* input_resolve.c - CRLs taken together: signers, newest per issuer, deltas */
#include "input_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crl.h"
#include "log.h"

bool
input_part_same(const struct ffile_part *a, const struct ffile_part *b)
{
	return a->kind == b->kind && a->reasons == b->reasons &&
	    a->flags == b->flags && memcmp(a->dp, b->dp, 32) == 0 &&
	    memcmp(a->crl_issuer, b->crl_issuer, 32) == 0;
}

int
input_crlnum_cmp(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a, b);
}

int
input_crl_age_cmp(const char *na, int64_t ta, const char *nb, int64_t tb)
{
	int c = 0;

	if (na[0] != '\0' && nb[0] != '\0')
		c = input_crlnum_cmp(na, nb);
	if (c == 0)
		c = (ta > tb) - (ta < tb);
	return c;
}

/* input_crl_age_cmp of two scopes' CRLs. */
static int
crl_age_cmp(const struct ffile_scope *a, const struct ffile_scope *b)
{
	return input_crl_age_cmp(a->crl_number, a->this_update, b->crl_number,
	    b->this_update);
}

/* True when the set holds the key (after sorting). */
static bool
set_has_key(const struct input_set *s, const struct revkey *k)
{
	unsigned char enc[REVKEY_ENC_MAX];
	const unsigned char *kb;
	size_t lo = 0, hi, mid, elen, klen;
	int c;

	elen = revkey_encode(k, enc);
	hi = table_builder_count(&s->builder);
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		kb = table_builder_key(&s->builder, mid, &klen);
		c = memcmp(kb, enc, klen < elen ? klen : elen);
		if (c == 0)
			c = (klen > elen) - (klen < elen);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* What vouches for a separate CRL signer: crl_covered_in over the set. */
static const struct ffile_scope *
signer_scope(void *arg, const char *name)
{
	const struct ffile_scope *sc;

	sc = input_scope_named(arg, name);
	if (sc == NULL || sc->source != FFILE_SRC_CRL ||
	    (sc->flags & FFILE_SCOPE_UNVERIFIED) != 0)
		return NULL;
	return sc;
}

int
input_check_signers(const struct input_set *s, char *err, size_t errlen)
{
	const struct input_dep *d;
	size_t i;

	for (i = 0; i < s->ndeps; i++) {
		d = &s->deps[i];
		/*
		 * The CRL the signer signed may be among them (a self-issued
		 * CRL signing key, PKITS 4.5.6; a cRLIssuer naming itself,
		 * PKITS 4.14.30): its own key must then not be listed in it.
		 */
		if (!crl_covered_in(signer_scope, (void *)(uintptr_t)s,
		    &d->key)) {
			snprintf(err, errlen, "%s: no verified CRL of its "
			    "issuer among the inputs shows that it is not "
			    "revoked; give that CRL too", d->what);
			return -1;
		}
		if (set_has_key(s, &d->key)) {
			snprintf(err, errlen, "%s is itself revoked: its CRL "
			    "must not be used", d->what);
			return -1;
		}
	}
	return 0;
}

/* Two CRLs of one issuer that cover the same part of its certificates. */
static bool
same_group(const struct ffile_scope *a, const struct ffile_scope *b)
{
	unsigned i;

	if (strcmp(a->name, b->name) != 0 || a->npart != b->npart)
		return false;
	for (i = 0; i < a->npart; i++)
		if (!input_part_same(&a->part[i], &b->part[i]))
			return false;
	return true;
}

/*
 * Two CRLs that are versions of one another: of one issuer and coverage,
 * and signed with the same key. A CA renewed with a new key may sign a
 * CRL with each key, each listing what that key issued (AD CS does): the
 * newer one does not replace the other, both are used.
 */
static bool
same_series(const struct input_crl *a, const struct input_crl *b)
{
	return same_group(&a->sc, &b->sc) &&
	    memcmp(a->signer_key, b->signer_key, sizeof(a->signer_key)) == 0;
}

int
input_parts_union(struct ffile_scope *out, const struct ffile_part *p,
    const char *issuer, char *err, size_t errlen)
{
	struct ffile_part *q;
	unsigned k;

	for (k = 0; k < out->npart; k++) {
		q = &out->part[k];
		if (!input_part_same(q, p))
			continue;
		if (input_crlnum_cmp(p->crl_number, q->crl_number) > 0 ||
		    (input_crlnum_cmp(p->crl_number, q->crl_number) == 0 &&
		    p->this_update > q->this_update))
			*q = *p;
		return 0;
	}
	if (out->npart == FFILE_PART_MAX) {
		snprintf(err, errlen, "CRLs of \"%s\": more than %d coverage "
		    "parts together", issuer, FFILE_PART_MAX);
		return -1;
	}
	out->part[out->npart++] = *p;
	return 0;
}

/*
 * Whether c describes a scope rather than d (NULL: none yet): the later
 * thisUpdate, then the higher CRL number, then the SHA-256, so that the
 * same CRLs describe it whatever order they were read in (two keys of a
 * renewed CA sign theirs at the same instant, numbered apart: a choice by
 * reading order could flip from build to build and look like rollback).
 */
static bool
describes_over(const struct ffile_scope *c, const struct ffile_scope *d)
{
	int n;

	if (d == NULL || c->this_update != d->this_update)
		return d == NULL || c->this_update > d->this_update;
	if ((n = input_crlnum_cmp(c->crl_number, d->crl_number)) != 0)
		return n > 0;
	return memcmp(c->crl_sha256, d->crl_sha256, 32) > 0;
}

/*
 * Sets sc from the CRLs of its scope that are kept: its issuer's own CRLs
 * describe it (the newest one's metadata, of those covering it whole
 * when one does; the union of their coverage; the earliest nextUpdate);
 * an indirect CRL of another issuer that speaks for it adds its delegated
 * parts, and describes it only when no CRL of its own does (then flagged
 * attributed). 0, or -1 with err.
 */
static int
scope_from_kept(const struct input_set *s, const bool *keep,
    struct ffile_scope *sc, char *err, size_t errlen)
{
	const struct ffile_scope *c, *newest = NULL, *newest_via = NULL;
	const struct ffile_scope *newest_whole = NULL;
	struct ffile_scope *out;
	int64_t next = 0, next_via = 0, next_dg = 0;
	bool whole = false;
	uint8_t flags = 0, flags_via = 0;
	size_t i;
	unsigned j;
	int rc = -1;

	if ((out = calloc(1, sizeof(*out))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < s->ncrls; i++) {
		c = &s->crls[i].sc;
		if (!keep[i] || strcmp(c->name, sc->name) != 0)
			continue;
		if (s->crls[i].via != 0) {
			if (describes_over(c, newest_via))
				newest_via = c;
			if (next_via == 0 || c->next_update < next_via)
				next_via = c->next_update;
			/* Its parts are delegated ones (crl_via_scope). */
			if (c->npart > 0 && (next_dg == 0 ||
			    c->next_update < next_dg))
				next_dg = c->next_update;
			flags_via |= c->flags;
		} else {
			if (describes_over(c, newest))
				newest = c;
			if (next == 0 || c->next_update < next)
				next = c->next_update;
			flags |= c->flags;
			if (c->npart == 0) {
				whole = true;
				if (describes_over(c, newest_whole))
					newest_whole = c;
			}
		}
		for (j = 0; j < c->npart && !whole; j++)
			if (input_parts_union(out, &c->part[j], c->issuer, err,
			    errlen) != 0)
				goto done;
	}
	rc = 0;
	if (newest == NULL && newest_via == NULL)
		goto done;
	j = whole ? 0 : out->npart;
	/*
	 * Covered whole, the scope is described by its newest CRL that
	 * covers it whole, not by a partition given with it: the rollback
	 * check compares that CRL with the one the previous version used.
	 */
	if (whole)
		newest = newest_whole;
	if (newest == NULL) {
		newest = newest_via;
		next = next_via;
		flags = (uint8_t)(flags_via & (FFILE_SCOPE_UNVERIFIED |
		    FFILE_SCOPE_ASSUMED_NEXT | FFILE_SCOPE_ATTRIBUTED));
	} else {
		/* An unverified CRL that speaks for it marks it too. */
		flags = (uint8_t)((flags & ~FFILE_SCOPE_ATTRIBUTED) |
		    (flags_via & FFILE_SCOPE_UNVERIFIED));
		/*
		 * Covered in part by an indirect CRL's delegated parts, the
		 * scope is good only while that CRL is: --keep-going keeps a
		 * scope until its nextUpdate.
		 */
		if (!whole && next_dg != 0 && next_dg < next)
			next = next_dg;
	}
	memcpy(out, newest, offsetof(struct ffile_scope, npart));
	out->keys = sc->keys;
	out->next_update = next;
	out->flags = flags;
	out->npart = (uint8_t)j;
	*sc = *out;
done:
	free(out);
	return rc;
}

/*
 * Applies delta d to its kept base b: the delta's removeFromCRL records go
 * (keep[] false) with the base's records of those serials, which must be
 * holds. 0, or -1 with err.
 */
static int
delta_apply(const struct input_set *s, const struct input_crl *d,
    const struct input_crl *b, bool *keep, char *err, size_t errlen)
{
	struct table_rec dr, br;
	size_t i, j;

	for (i = d->start; i < d->end; i++) {
		if (table_builder_get(&s->builder, i, &dr) != 0 ||
		    strcmp(dr.reason, "removeFromCRL") != 0)
			continue;
		keep[i] = false;
		for (j = b->start; j < b->end; j++) {
			if (table_builder_get(&s->builder, j, &br) != 0 ||
			    revkey_cmp(&br.key, &dr.key) != 0)
				continue;
			if (strcmp(br.reason, "certificateHold") != 0) {
				snprintf(err, errlen, "%s: removeFromCRL for a "
				    "serial its base %s revoked for \"%s\", not "
				    "held: refused", d->what, b->what,
				    br.reason[0] != '\0' ? br.reason :
				    "no reason");
				return -1;
			}
			keep[j] = false;
		}
	}
	return 0;
}

/* The state of one input_resolve_crls() call. */
struct resolve {
	struct input_set	*s;
	bool			 quiet;
	bool			*keep;	/* per CRL: used */
	bool			*twin;	/* per CRL: one signed two ways, not used */
	size_t			*base;	/* per delta: its base's index + 1 */
	bool			*rkeep;	/* per record: kept */
	char			*err;
	size_t			 errlen;
};

/*
 * The winner of the group of complete CRL i, the first of its group: the
 * newest; of one CRL signed two ways, either (the other marked twin).
 * 0, or -1 with err when two different CRLs cannot be ordered.
 */
static int
resolve_group(struct resolve *v, size_t i)
{
	const struct input_set *s = v->s;
	size_t j, k, win = i;
	int cmp;

	for (j = i + 1; j < s->ncrls; j++) {
		if (s->crls[j].delta || s->crls[j].via != 0 ||
		    !same_series(&s->crls[j], &s->crls[i]))
			continue;
		if (memcmp(s->crls[j].sc.crl_sha256,
		    s->crls[win].sc.crl_sha256, 32) == 0)
			continue;	/* the same CRL twice */
		cmp = crl_age_cmp(&s->crls[j].sc, &s->crls[win].sc);
		/*
		 * The same thisUpdate, number and content (entries,
		 * extensions, nextUpdate) signed two ways (a CA publishing
		 * one CRL under two signature algorithms): either will do;
		 * the lower SHA-256 wins, so the choice does not follow
		 * reading order.
		 */
		if (cmp == 0 && memcmp(s->crls[j].content,
		    s->crls[win].content, 32) == 0) {
			k = memcmp(s->crls[j].sc.crl_sha256,
			    s->crls[win].sc.crl_sha256, 32) < 0 ? j : win;
			if (!v->quiet)
				log_info("%s and %s: one CRL of \"%s\" signed "
				    "two ways (the same entries, thisUpdate and "
				    "number); using %s", s->crls[win].what,
				    s->crls[j].what, s->crls[j].sc.issuer,
				    s->crls[k].what);
			v->twin[k == j ? win : j] = true;
			win = k;
			continue;
		}
		if (cmp == 0) {
			snprintf(v->err, v->errlen, "%s and %s: two different "
			    "CRLs of \"%s\" that cannot be ordered (CRL "
			    "number \"%s\", thisUpdate the same); give one",
			    s->crls[win].what, s->crls[j].what,
			    s->crls[j].sc.issuer, s->crls[j].sc.crl_number);
			return -1;
		}
		if (cmp > 0)
			win = j;
	}
	v->keep[win] = true;
	return 0;
}

/*
 * Deltas: each finds its kept base (base[]); the newest per base is kept.
 * 0, or -1 with err when a delta's base is not among the inputs.
 */
static int
resolve_deltas(struct resolve *v)
{
	const struct input_set *s = v->s;
	const struct input_crl *c, *d;
	bool *keep = v->keep;
	size_t *base = v->base;
	size_t i, j;

	for (i = 0; i < s->ncrls; i++) {
		d = &s->crls[i];
		if (!d->delta || d->via != 0)
			continue;
		for (j = 0; j < s->ncrls; j++) {
			c = &s->crls[j];
			if (keep[j] && !c->delta && c->via == 0 &&
			    same_series(c, d) &&
			    c->sc.crl_number[0] != '\0' &&
			    input_crlnum_cmp(c->sc.crl_number,
			    d->base_number) >= 0 &&
			    input_crlnum_cmp(d->sc.crl_number,
			    c->sc.crl_number) > 0)
				break;
		}
		if (j == s->ncrls) {
			snprintf(v->err, v->errlen, "%s: delta CRL of \"%s\" "
			    "(base CRL number \"%s\") without its base among "
			    "the inputs: a delta alone lists changes, not the "
			    "revoked set", d->what, d->sc.issuer,
			    d->base_number);
			return -1;
		}
		base[i] = j + 1;
		for (j = 0; j < i; j++)
			if (keep[j] && base[j] == base[i]) {
				if (input_crlnum_cmp(d->sc.crl_number,
				    s->crls[j].sc.crl_number) <= 0)
					break;	/* an older delta: drop this one */
				keep[j] = false;
			}
		keep[i] = j == i;
	}
	return 0;
}

/*
 * The records of CRLs not kept leave (rkeep[]), and each kept delta is
 * applied to its base; *dropped is set when records may leave. What an
 * indirect CRL speaks for stays exactly when it does. 0, or -1 with err.
 */
static int
resolve_drop(struct resolve *v, bool *dropped)
{
	const struct input_set *s = v->s;
	bool *keep = v->keep;
	size_t i, j;

	for (i = 0; i < s->ncrls; i++)
		if (s->crls[i].via != 0)
			keep[i] = keep[s->crls[i].via - 1];
	for (i = 0; i < s->ncrls; i++) {
		if (s->crls[i].via != 0)
			continue;
		if (!keep[i]) {
			*dropped = true;
			if (!v->quiet && !v->twin[i])
				log_warn("%s: CRL %s of \"%s\" superseded by a "
				    "newer CRL of that issuer in this build: its "
				    "entries are not used", s->crls[i].what,
				    s->crls[i].sc.crl_number[0] != '\0' ?
				    s->crls[i].sc.crl_number : "(no number)",
				    s->crls[i].sc.issuer);
			for (j = s->crls[i].start; j < s->crls[i].end; j++)
				v->rkeep[j] = false;
		} else if (s->crls[i].delta) {
			*dropped = true;
			if (delta_apply(s, &s->crls[i],
			    &s->crls[v->base[i] - 1], v->rkeep, v->err,
			    v->errlen) != 0)
				return -1;
		}
	}
	return 0;
}

/*
 * A kept base announcing a delta (freshestCRL) that did not come: refused,
 * or with no_delta used alone and said. 0, or -1 with err.
 */
static int
resolve_announced(struct resolve *v, bool no_delta)
{
	const struct input_set *s = v->s;
	size_t i, j;

	for (i = 0; i < s->ncrls; i++) {
		if (!v->keep[i] || s->crls[i].delta || s->crls[i].via != 0 ||
		    !s->crls[i].announces)
			continue;
		for (j = 0; j < s->ncrls; j++)
			if (v->keep[j] && v->base[j] == i + 1)
				break;
		if (j < s->ncrls)
			continue;
		if (!no_delta) {
			snprintf(v->err, v->errlen, "%s: CRL of \"%s\" announces "
			    "a delta CRL (freshestCRL) that is not among the "
			    "inputs: --no-delta to use the base alone",
			    s->crls[i].what, s->crls[i].sc.issuer);
			return -1;
		}
		log_warn("%s: CRL of \"%s\" announces a delta CRL; used "
		    "without it (--no-delta)", s->crls[i].what,
		    s->crls[i].sc.issuer);
	}
	return 0;
}

int
input_resolve_crls(struct input_set *s, bool quiet, bool no_delta,
    char *err, size_t errlen)
{
	struct resolve v = {
		.s = s, .quiet = quiet, .err = err, .errlen = errlen,
	};
	struct ffile_scope *sc;
	size_t i, j, n = input_set_records(s);
	bool dropped = false;
	int rc = -1;

	if (s->ncrls == 0)
		return 0;
	if ((v.keep = calloc(s->ncrls, sizeof(*v.keep))) == NULL ||
	    (v.twin = calloc(s->ncrls, sizeof(*v.twin))) == NULL ||
	    (v.base = calloc(s->ncrls, sizeof(*v.base))) == NULL ||
	    (v.rkeep = malloc(n > 0 ? n : 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memset(v.rkeep, 1, n > 0 ? n : 1);
	/*
	 * 1. Complete CRLs: the winner of each group (one issuer, one
	 * coverage, one signing key: partial CRLs of one issuer are parts of
	 * a set, and CRLs signed with two keys of a renewed CA list what each
	 * key issued, not versions of one another), deciding once per group.
	 */
	for (i = 0; i < s->ncrls; i++) {
		if (s->crls[i].delta || s->crls[i].via != 0)
			continue;
		for (j = 0; j < i; j++)
			if (!s->crls[j].delta && s->crls[j].via == 0 &&
			    same_series(&s->crls[j], &s->crls[i]))
				break;
		if (j == i && resolve_group(&v, i) != 0)
			goto out;
	}
	/* 2. Deltas, and the records of the CRLs not kept. */
	if (resolve_deltas(&v) != 0 || resolve_drop(&v, &dropped) != 0)
		goto out;
	/* 3. A base announcing a delta that did not come. */
	if (resolve_announced(&v, no_delta) != 0)
		goto out;
	/*
	 * 4. Each scope: the newest kept CRL describes it, with the union
	 * of the kept CRLs' coverage and the earliest nextUpdate among them.
	 */
	for (j = 0; j < s->nscopes; j++) {
		sc = &s->scopes[j];
		if (sc->source == FFILE_SRC_CRL &&
		    scope_from_kept(s, v.keep, sc, err, errlen) != 0)
			goto out;
	}
	if (dropped)
		table_builder_drop(&s->builder, v.rkeep);
	rc = 0;
out:
	free(v.keep);
	free(v.twin);
	free(v.base);
	free(v.rkeep);
	return rc;
}

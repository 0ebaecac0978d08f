/* input_prev.c - keys per scope; the previous version: checks, kept scopes */
#include "input_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crl.h"
#include "log.h"
#include "util.h"

/* qsort_r comparator: scope indices by name. */
static int
scope_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct ffile_scope *sc = arg;

	return strcmp(sc[*(const size_t *)a].name, sc[*(const size_t *)b].name);
}

/*
 * The positions of s's scopes sorted by name, for count_find(); NULL when
 * there are none or memory runs out (count_find() then scans).
 */
static size_t *
scope_index(const struct input_set *s)
{
	size_t *ord, j;

	if (s->nscopes == 0 ||
	    (ord = malloc(s->nscopes * sizeof(*ord))) == NULL)
		return NULL;
	for (j = 0; j < s->nscopes; j++)
		ord[j] = j;
	qsort_r(ord, s->nscopes, sizeof(*ord), scope_idx_cmp, s->scopes);
	return ord;
}

/* strcmp of a NUL-terminated name with counted bytes. */
static int
name_cmp(const char *name, const char *b, size_t blen)
{
	size_t alen = strlen(name);
	int c = memcmp(name, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

/* The scope named (name, len), through the sorted index when there is one. */
static size_t
count_find(const struct input_set *s, const size_t *ord, const char *name,
    size_t len)
{
	size_t lo = 0, hi = s->nscopes, mid, i;
	int c;

	if (ord == NULL) {
		for (i = 0; i < s->nscopes; i++)
			if (name_cmp(s->scopes[i].name, name, len) == 0)
				return i;
		return SIZE_MAX;
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = name_cmp(s->scopes[ord[mid]].name, name, len);
		if (c == 0)
			return ord[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

void
input_count_scopes(struct input_set *s)
{
	size_t i = 0, j, n, run, sidx, len, *ord;
	const char *name;

	for (j = 0; j < s->nscopes; j++)
		s->scopes[j].keys = 0;
	/* Without memory for the index, a linear search still works. */
	ord = scope_index(s);
	/* Sorted records keep each scope's records together. */
	n = input_set_records(s);
	while (i < n) {
		run = table_builder_scope_end(&s->builder, i);
		name = table_builder_scope(&s->builder, i, &len);
		sidx = count_find(s, ord, name, len);
		if (sidx != SIZE_MAX)
			s->scopes[sidx].keys += run - i;
		i = run;
	}
	free(ord);
}

/*
 * One CRL a scope's description names, with what it covers: the scope's
 * own CRL when it is covered whole (a part of any kind, every reason, no
 * name, from the issuer the scope is named after), else one coverage
 * part.
 */
struct crl_cover {
	const struct ffile_part *part;	/* NULL: the whole scope */
	struct ffile_part whole;	/* coverage of the whole scope */
	const char	*number;
	int64_t		 this_update;
};

/*
 * The CRLs sc's description names into c[FFILE_PART_MAX]: its count.
 * A scope flagged attributed without parts names none (it covers nothing
 * of its own).
 */
static unsigned
scope_covers(const struct ffile_scope *sc, struct crl_cover *c)
{
	const char *hex = sc->name + sizeof(REVKEY_X509_PREFIX) - 1;
	unsigned i;

	if (sc->npart == 0) {
		if ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0)
			return 0;
		memset(&c[0], 0, sizeof(c[0]));
		c[0].whole.kind = FFILE_PART_ANY;
		c[0].whole.reasons = FFILE_REASONS_ALL;
		/* Not an X.509 scope name: its CRL meets no part's issuer. */
		if (!revkey_scope_is_x509(sc->name) || util_unhex(
		    c[0].whole.crl_issuer, 32, hex, strlen(hex), false) != 32)
			memset(c[0].whole.crl_issuer, 0xff, 32);
		c[0].number = sc->crl_number;
		c[0].this_update = sc->this_update;
		return 1;
	}
	for (i = 0; i < sc->npart && i < FFILE_PART_MAX; i++) {
		c[i].part = &sc->part[i];
		c[i].whole = sc->part[i];
		c[i].number = sc->part[i].crl_number;
		c[i].this_update = sc->part[i].this_update;
	}
	return i;
}

/*
 * Whether a part of a scope's own CRLs (the previous version's) and a
 * part delegated to it cover some certificate in common: kinds, reasons
 * and distribution point names meet, whoever issued the CRLs.
 */
static bool
parts_meet(const struct ffile_part *own, const struct ffile_part *dg)
{
	if (own->kind != FFILE_PART_ANY && dg->kind != FFILE_PART_ANY &&
	    own->kind != dg->kind)
		return false;
	if ((own->reasons & dg->reasons) == 0)
		return false;
	return !crl_part_named(own) || !crl_part_named(dg) ||
	    memcmp(own->dp, dg->dp, 32) == 0;
}

/*
 * True when some certificate is covered by both a and b for some reason:
 * CRLs of one issuer whose kinds, reasons and distribution points meet
 * (a part without a name covers every certificate of its kind).
 */
static bool
cover_overlaps(const struct ffile_part *a, const struct ffile_part *b)
{
	return memcmp(a->crl_issuer, b->crl_issuer, 32) == 0 &&
	    parts_meet(a, b);
}

/* What a CRL of the scope covers, as text for a message. */
static void
cover_text(const struct crl_cover *c, unsigned i, char *out, size_t cap)
{
	const struct ffile_part *p = c->part;

	if (p == NULL) {
		(void)snprintf(out, cap, "the whole scope");
		return;
	}
	(void)snprintf(out, cap, "coverage part %u (%s certificates%s%s)", i,
	    crl_part_kind_name(p->kind), crl_part_named(p) ?
	    ", one distribution point" : "", p->reasons != FFILE_REASONS_ALL ?
	    ", some reasons" : "");
}

/*
 * A CRL older than one prev used for the same certificates: writes the
 * finding into msg and returns true. Every CRL now describing the scope
 * is compared with every CRL of the same issuer that prev used for it
 * wherever their coverage overlaps, so a change of coverage (a full CRL
 * replaced by partitions, or the other way round) is no way around the
 * check. For the same coverage the CRL number orders them (RFC 5280
 * section 5.2.3: monotonic per CRL scope); for another coverage the
 * numbers may count another sequence, so only an earlier thisUpdate
 * shows it older (input_crl_age_cmp with the numbers left out).
 */
static bool
scope_rolled_back(const struct ffile_scope *now, const struct ffile_scope *old,
    uint64_t version, char *msg, size_t msglen)
{
	struct crl_cover nc[FFILE_PART_MAX], oc[FFILE_PART_MAX];
	char hex[65], ntext[96], otext[96];
	unsigned i, j, nn, no;
	bool same = false;
	int n;

	if (now->source != FFILE_SRC_CRL || old->source != FFILE_SRC_CRL)
		return false;
	nn = scope_covers(now, nc);
	no = scope_covers(old, oc);
	for (i = 0; i < no; i++) {
		for (j = 0; j < nn; j++) {
			if (!cover_overlaps(&nc[j].whole, &oc[i].whole))
				continue;
			same = (nc[j].part == NULL && oc[i].part == NULL) ||
			    (nc[j].part != NULL && oc[i].part != NULL &&
			    input_part_same(nc[j].part, oc[i].part));
			if (same && nc[j].part == NULL &&
			    memcmp(now->crl_sha256, old->crl_sha256, 32) == 0)
				continue;	/* the same CRL */
			if (input_crl_age_cmp(same ? nc[j].number : "",
			    nc[j].this_update, same ? oc[i].number : "",
			    oc[i].this_update) >= 0)
				continue;
			goto found;
		}
	}
	return false;
found:
	if (nc[j].part == NULL && oc[i].part == NULL) {
		n = snprintf(msg, msglen, "the CRL of \"%s\" (CRL number "
		    "\"%s\", thisUpdate %" PRId64 ") is older than the one "
		    "version %" PRIu64 " used (CRL number \"%s\", thisUpdate "
		    "%" PRId64 "): a replayed CRL un-revokes what was revoked "
		    "since", now->issuer, now->crl_number, now->this_update,
		    version, old->crl_number, old->this_update);
	} else if (same) {
		util_hex(hex, nc[j].part->crl_issuer, 32);
		cover_text(&nc[j], j, ntext, sizeof(ntext));
		n = snprintf(msg, msglen, "scope \"%s\" (\"%s\"): the CRL of "
		    "issuer x509:%s for %s has CRL number \"%s\", thisUpdate %"
		    PRId64 ", older than the one version %" PRIu64 " used (CRL "
		    "number \"%s\", thisUpdate %" PRId64 "): a replayed "
		    "partition un-revokes what was revoked since", now->name,
		    now->issuer, hex, ntext, nc[j].number, nc[j].this_update,
		    version, oc[i].number, oc[i].this_update);
	} else {
		util_hex(hex, nc[j].whole.crl_issuer, 32);
		cover_text(&nc[j], j, ntext, sizeof(ntext));
		cover_text(&oc[i], i, otext, sizeof(otext));
		n = snprintf(msg, msglen, "scope \"%s\" (\"%s\"): the CRL of "
		    "issuer x509:%s for %s (CRL number \"%s\", thisUpdate %"
		    PRId64 ") is older than the CRL version %" PRIu64 " used "
		    "for %s, which covers some of the same certificates (CRL "
		    "number \"%s\", thisUpdate %" PRId64 "): a replayed CRL "
		    "of another coverage un-revokes what was revoked since",
		    now->name, now->issuer, hex, ntext, nc[j].number,
		    nc[j].this_update, version, otext, oc[i].number,
		    oc[i].this_update);
	}
	if (n < 0)
		msg[0] = '\0';
	return true;
}

int
input_check_previous(const struct input_set *s,
    const struct ffile_info *prev, const struct input_prev_opts *o,
    char *err, size_t errlen)
{
	const struct ffile_scope *old, *now;
	char msg[1024];
	uint32_t i;
	size_t j, *ord;
	uint64_t lost;
	int n, rc = -1;

	assert(s != NULL && prev != NULL && o != NULL);
	/*
	 * Each scope of prev is looked up in s: through a sorted index, not
	 * a scan of s per scope (quadratic at the scope cap). Without memory
	 * for the index, count_find() scans.
	 */
	ord = scope_index(s);
	for (i = 0; i < prev->nscopes; i++) {
		old = &prev->scopes[i];
		j = count_find(s, ord, old->name, strlen(old->name));
		now = j != SIZE_MAX ? &s->scopes[j] : NULL;
		if (now != NULL && scope_rolled_back(now, old, prev->version,
		    msg, sizeof(msg))) {
			if (!o->allow_rollback) {
				snprintf(err, errlen, "%s; --allow-crl-rollback to "
				    "publish it anyway", msg);
				goto out;
			}
			log_warn("%s (--allow-crl-rollback)", msg);
		}
		for (j = 0; j < o->ngone; j++)
			if (strcmp(o->gone[j], old->name) == 0)
				break;
		if (j < o->ngone)
			continue;
		/* A database's empty or smaller scope is the truth. */
		if (now != NULL && o->authoritative != NULL &&
		    o->authoritative(o->auth_arg, old->name))
			continue;
		if (now == NULL) {
			n = snprintf(msg, sizeof(msg), "scope \"%s\" (%" PRIu64
			    " keys in version %" PRIu64 ") is not in the "
			    "inputs: dropping it would un-revoke its keys",
			    old->name, old->keys, prev->version);
		} else if (now->keys < old->keys &&
		    (lost = old->keys - now->keys) >
		    old->keys / 100 * o->max_shrink_pct +
		    old->keys % 100 * o->max_shrink_pct / 100) {
			n = snprintf(msg, sizeof(msg), "scope \"%s\" shrinks "
			    "from %" PRIu64 " keys (version %" PRIu64 ") to %"
			    PRIu64 ", by more than %u %%", old->name,
			    old->keys, prev->version, now->keys,
			    o->max_shrink_pct);
		} else
			continue;
		if (n < 0)
			msg[0] = '\0';
		if (!o->allow_shrink) {
			snprintf(err, errlen, "%s; --allow-shrink to publish "
			    "it anyway", msg);
			goto out;
		}
		if (!o->quiet)
			log_warn("%s (--allow-shrink)", msg);
	}
	rc = 0;
out:
	free(ord);
	return rc;
}

/*
 * Appends every record of scope name in prev's table to s. 0, or -1 with
 * err (s's records as they were).
 */
static int
keep_records(struct input_set *s, const char *name, const struct table *prev,
    char *err, size_t errlen)
{
	struct table_rec rec;
	size_t nrecs0 = input_set_records(s);
	uint64_t i, n = table_count(prev);

	for (i = 0; i < n; i++) {
		if (table_get(prev, i, &rec) != 0) {
			snprintf(err, errlen, "previous table: record %" PRIu64
			    " unreadable", i);
			goto fail;
		}
		if (strcmp(rec.key.scope, name) != 0)
			continue;
		if (table_builder_add(&s->builder, &rec.key, rec.revoked_at,
		    rec.reason) != 0) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	return 0;
fail:
	table_builder_truncate(&s->builder, nrecs0);
	return -1;
}

int
input_keep_scope(struct input_set *s, const struct ffile_scope *sc,
    const struct table *prev, char *err, size_t errlen)
{
	struct ffile_scope *ns;
	size_t ncap;
	unsigned i;

	if (input_scope_named(s, sc->name) != NULL ||
	    s->nscopes >= FFILE_MAX_SCOPES) {
		snprintf(err, errlen, "scope \"%s\": cannot be kept", sc->name);
		return -1;
	}
	if (s->nscopes == s->scap) {
		ncap = s->scap == 0 ? 8 : s->scap * 2;
		if ((ns = realloc(s->scopes, ncap * sizeof(*ns))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		s->scopes = ns;
		s->scap = ncap;
	}
	if (keep_records(s, sc->name, prev, err, errlen) != 0)
		return -1;
	ns = &s->scopes[s->nscopes];
	*ns = *sc;
	ns->flags |= FFILE_SCOPE_KEPT;
	/*
	 * Kept alone, its indirect CRL no longer vouches for other issuers'
	 * certificates: what it attributed to them is not kept with it.
	 */
	for (i = 0; i < ns->npart; i++)
		ns->part[i].flags &= (uint8_t)~FFILE_PART_INDIRECT;
	s->nscopes++;
	return 0;
}

/* Whether two parts cover the same certificates from the same CRL issuer. */
static bool
parts_alike(const struct ffile_part *a, const struct ffile_part *b)
{
	return a->kind == b->kind && a->reasons == b->reasons &&
	    memcmp(a->dp, b->dp, 32) == 0 &&
	    memcmp(a->crl_issuer, b->crl_issuer, 32) == 0;
}

/*
 * Whether part p of sc (the previous version's scope) came from one of
 * its own CRLs and ns (this build's) has no part of its own like it: that
 * CRL is not among the inputs (or failed). (A scope covered whole by its
 * own CRL has no parts: drop_delegated_over_lost() sees that one lost.)
 */
static bool
own_part_lost(const struct ffile_scope *ns, const struct ffile_part *p)
{
	unsigned i;

	if ((p->flags & FFILE_PART_DELEGATED) != 0)
		return false;
	if ((ns->flags & FFILE_SCOPE_ATTRIBUTED) == 0 && ns->npart == 0)
		return false;	/* covered whole by a CRL of its own */
	for (i = 0; i < ns->npart; i++)
		if ((ns->part[i].flags & FFILE_PART_DELEGATED) == 0 &&
		    parts_alike(&ns->part[i], p))
			return false;
	return true;
}

/*
 * Drops the delegated parts of ns that cover some certificate a lost own
 * CRL of sc covered (own_part_lost; all of them when sc was covered whole
 * by its own CRL and ns no longer is): those certificates were answered
 * from both CRLs, and the delegated one alone is not what proved them
 * not revoked. They answer not_covered. Returns how many it dropped.
 */
static unsigned
drop_delegated_over_lost(struct ffile_scope *ns, const struct ffile_scope *sc)
{
	bool whole_lost, drop;
	unsigned i, j, k = 0, dropped = 0;

	whole_lost = sc->npart == 0 && (ns->npart > 0 ||
	    (ns->flags & FFILE_SCOPE_ATTRIBUTED) != 0);
	for (i = 0; i < ns->npart; i++) {
		drop = false;
		if ((ns->part[i].flags & FFILE_PART_DELEGATED) != 0) {
			drop = whole_lost;
			for (j = 0; !drop && j < sc->npart; j++)
				drop = own_part_lost(ns, &sc->part[j]) &&
				    parts_meet(&sc->part[j], &ns->part[i]);
		}
		if (drop)
			dropped++;
		else
			ns->part[k++] = ns->part[i];
	}
	ns->npart = (uint8_t)k;
	return dropped;
}

/*
 * ns (this build's scope, with no CRL of its own: only what other
 * issuers' indirect CRLs give it) takes sc's own CRLs back from the
 * previous version: prev's records of the scope, sc's metadata and own
 * coverage (flagged kept), with the delegated parts of this build, good
 * until the earlier of sc's nextUpdate and theirs. 0, or -1 with err (s
 * unchanged).
 */
static int
keep_own_into(struct input_set *s, struct ffile_scope *ns,
    const struct ffile_scope *sc, const struct table *prev, char *err,
    size_t errlen)
{
	struct ffile_scope *out;
	int64_t next = sc->next_update;
	unsigned i;
	int rc = -1;

	if ((out = calloc(1, sizeof(*out))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = *sc;
	out->npart = 0;
	for (i = 0; i < sc->npart; i++) {
		if ((sc->part[i].flags & FFILE_PART_DELEGATED) != 0)
			continue;	/* this build's delegated parts instead */
		out->part[out->npart] = sc->part[i];
		out->part[out->npart].flags &= (uint8_t)~FFILE_PART_INDIRECT;
		out->npart++;
	}
	for (i = 0; sc->npart > 0 && i < ns->npart; i++)
		if (input_parts_union(out, &ns->part[i], sc->issuer, err,
		    errlen) != 0)
			goto out;
	if (sc->npart > 0 && ns->npart > 0 && ns->next_update < next)
		next = ns->next_update;
	out->next_update = next;
	out->flags = (uint8_t)((sc->flags | FFILE_SCOPE_KEPT |
	    (ns->flags & FFILE_SCOPE_UNVERIFIED)) & ~FFILE_SCOPE_ATTRIBUTED);
	if (keep_records(s, sc->name, prev, err, errlen) != 0)
		goto out;
	out->keys = ns->keys;
	*ns = *out;
	rc = 0;
out:
	free(out);
	return rc;
}

int
input_keep_previous(struct input_set *s, const struct ffile_scope *sc,
    const struct table *prev, int64_t now, enum input_kept *what, char *err,
    size_t errlen)
{
	struct ffile_scope *ns = NULL;
	size_t j;

	*what = INPUT_KEPT_NONE;
	if (sc->source != FFILE_SRC_CRL)
		return 0;
	for (j = 0; j < s->nscopes && ns == NULL; j++)
		if (strcmp(s->scopes[j].name, sc->name) == 0)
			ns = &s->scopes[j];
	if (ns == NULL) {
		if (sc->next_update <= now) {
			*what = INPUT_KEPT_LEFT_OUT;
			return 0;
		}
		if (input_keep_scope(s, sc, prev, err, errlen) != 0)
			return -1;
		*what = INPUT_KEPT;
		return 0;
	}
	/* Without a CRL of its own in prev, it has none to lose. */
	if ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0 ||
	    ns->source != FFILE_SRC_CRL)
		return 0;
	/*
	 * Still named, but only by other issuers' indirect CRLs: its own
	 * CRLs failed. What they covered is kept from prev while their
	 * nextUpdate lies ahead, and not_covered after it, never answered
	 * from the delegated CRLs alone.
	 */
	if ((ns->flags & FFILE_SCOPE_ATTRIBUTED) != 0) {
		if (sc->next_update > now) {
			if (keep_own_into(s, ns, sc, prev, err, errlen) != 0)
				return -1;
			*what = INPUT_KEPT;
		} else {
			(void)drop_delegated_over_lost(ns, sc);
			*what = INPUT_KEPT_LEFT_OUT;
		}
		return 0;
	}
	/*
	 * Described by CRLs of its own, but not by every one prev used (a
	 * partition failed): the delegated parts that covered the same
	 * certificates go with it.
	 */
	if (drop_delegated_over_lost(ns, sc) > 0)
		*what = INPUT_KEPT_NARROWED;
	return 0;
}

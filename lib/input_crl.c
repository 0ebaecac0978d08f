/* input_crl.c - X.509 CRLs (PEM or DER): checked, verified, read to records */
#include "input_int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "crl.h"
#include "log.h"
#include "util.h"

/* ---- DER structure check ------------------------------------------------ */

int
input_der_header(const unsigned char *b, size_t off, size_t end, size_t *hdr,
    uint64_t *clen)
{
	size_t p = off, n, i;
	uint64_t l = 0;

	if (p >= end)
		return -1;
	if ((b[p++] & 0x1f) == 0x1f) {		/* high tag number form */
		for (i = 0; p < end && (b[p] & 0x80) != 0; i++, p++)
			if (i >= 4)
				return -1;
		if (p >= end)
			return -1;
		p++;
	}
	if (p >= end)
		return -1;
	if (b[p] < 0x80) {
		l = b[p++];
	} else {
		n = b[p++] & 0x7f;
		if (n == 0 || n > 8 || n > end - p)
			return -1;
		for (i = 0; i < n; i++)
			l = (l << 8) | b[p++];
	}
	*hdr = p - off;
	*clen = l;
	return 0;
}

/*
 * Walks the elements in [off, end), descending into constructed ones.
 * Returns 0 when every length fits; otherwise -1 with *bad at the deepest
 * element whose header is cut or whose content runs past what is there.
 */
static int
der_walk(const unsigned char *b, size_t off, size_t end, int depth,
    size_t *bad)
{
	size_t hdr, cs;
	uint64_t clen;
	bool cons;

	while (off < end) {
		if (input_der_header(b, off, end, &hdr, &clen) != 0) {
			*bad = off;
			return -1;
		}
		cons = (b[off] & 0x20) != 0;
		cs = off + hdr;
		if (clen > end - cs) {
			*bad = off;
			if (cons && depth < INPUT_DER_MAX_DEPTH)
				(void)der_walk(b, cs, end, depth + 1, bad);
			return -1;
		}
		if (cons && depth < INPUT_DER_MAX_DEPTH &&
		    der_walk(b, cs, cs + (size_t)clen, depth + 1, bad) != 0)
			return -1;
		off = cs + (size_t)clen;
	}
	return 0;
}

/*
 * Checks that der is exactly one well-formed DER element. Returns 0, or -1
 * with *bad the offset of the first problem.
 */
static int
der_check(const unsigned char *der, size_t len, size_t *bad)
{
	size_t hdr;
	uint64_t clen;

	if (input_der_header(der, 0, len, &hdr, &clen) != 0) {
		*bad = 0;
		return -1;
	}
	if (clen > len - hdr)
		return der_walk(der, 0, len, 0, bad);
	if (hdr + clen != len) {
		*bad = hdr + (size_t)clen;
		return -1;
	}
	return der_walk(der, 0, len, 0, bad);
}

/* ---- CRLs ---------------------------------------------------------------- */

/* RFC 5280 CRLReason names, by code; code 7 is not used. */
static const char *const crl_reasons[] = {
	"unspecified", "keyCompromise", "cACompromise", "affiliationChanged",
	"superseded", "cessationOfOperation", "certificateHold", NULL,
	"removeFromCRL", "privilegeWithdrawn", "aACompromise",
};

static int
asn1_time_epoch(const ASN1_TIME *t, int64_t *out)
{
	struct tm tm;
	time_t v;

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	v = timegm(&tm);
	if (v == (time_t)-1)
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* The last OpenSSL error as text, and the error queue cleared. */
static const char *
ossl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();
	const char *rs;

	if (e == 0) {
		snprintf(buf, len, "no detail");
	} else {
		rs = ERR_reason_error_string(e);
		if (rs != NULL)
			snprintf(buf, len, "%s", rs);
		else
			snprintf(buf, len, "error %lu", e);
	}
	ERR_clear_error();
	return buf;
}

/*
 * A CRLNumber (RFC 5280 section 5.2.3: non-negative, at most 20 octets;
 * a BaseCRLNumber is one too) as lowercase hex into out. 0 or -1.
 */
static int
crlnum_hex(const ASN1_INTEGER *num, char *out, size_t cap)
{
	BIGNUM *bn;
	char *hex = NULL;
	size_t i, n;
	int rc = -1;

	if ((bn = ASN1_INTEGER_to_BN(num, NULL)) == NULL ||
	    BN_is_negative(bn) || BN_num_bytes(bn) > 20 ||
	    (hex = BN_bn2hex(bn)) == NULL || (n = strlen(hex)) >= cap)
		goto out;
	for (i = 0; i <= n; i++)
		out[i] = (char)(hex[i] >= 'A' && hex[i] <= 'F' ?
		    hex[i] - 'A' + 'a' : hex[i]);
	rc = 0;
out:
	OPENSSL_free(hex);
	BN_free(bn);
	return rc;
}

/* CRL number as lowercase hex into out; "" when absent. 0 or -1. */
static int
crl_number_hex(struct rd *r, const X509_CRL *crl, const char *where,
    char *out, size_t cap)
{
	ASN1_INTEGER *num;
	int crit = 0, rc = 0;

	out[0] = '\0';
	num = X509_CRL_get_ext_d2i(crl, NID_crl_number, &crit, NULL);
	if (num == NULL) {
		if (crit == -1)
			return 0;
		rd_err(r, "%smalformed or repeated CRL number extension", where);
		ERR_clear_error();
		return -1;
	}
	if (crlnum_hex(num, out, cap) != 0) {
		rd_err(r, "%sCRL number is negative or longer than 20 octets",
		    where);
		out[0] = '\0';
		rc = -1;
	}
	ASN1_INTEGER_free(num);
	ERR_clear_error();
	return rc;
}

static int
crl_pend(struct rd *r, const struct ffile_scope *sc)
{
	struct ffile_scope *np;
	size_t ncap;

	if (r->npend == r->pcap) {
		ncap = r->pcap == 0 ? 4 : r->pcap * 2;
		if ((np = realloc(r->pend, ncap * sizeof(*np))) == NULL) {
			rd_err(r, "out of memory");
			return -1;
		}
		r->pend = np;
		r->pcap = ncap;
	}
	r->pend[r->npend++] = *sc;
	return 0;
}

/* Remembers a separate CRL signer, checked against the whole set later. */
static int
crl_add_dep(struct rd *r, X509 *signer, const char *where)
{
	struct input_set *s = r->s;
	struct input_dep *nd, *d;
	char kerr[256], subj[128];
	size_t ncap;

	if (s->ndeps == s->dcap) {
		ncap = s->dcap == 0 ? 4 : s->dcap * 2;
		if ((nd = realloc(s->deps, ncap * sizeof(*nd))) == NULL) {
			rd_err(r, "out of memory");
			return -1;
		}
		s->deps = nd;
		s->dcap = ncap;
	}
	d = &s->deps[s->ndeps];
	memset(d, 0, sizeof(*d));
	if (revkey_from_cert(&d->key, signer, kerr, sizeof(kerr)) != 0) {
		rd_err(r, "%sCRL signer certificate: %s", where, kerr);
		return -1;
	}
	if (crl_name_text(X509_get_subject_name(signer), subj,
	    sizeof(subj)) != 0)
		(void)snprintf(subj, sizeof(subj), "?");
	(void)snprintf(d->what, sizeof(d->what), "%s: %sCRL signer \"%s\"",
	    r->name, where, subj);
	s->ndeps++;
	return 0;
}

/* The deltaCRLIndicator's BaseCRLNumber as lowercase hex. 0 or -1. */
static int
delta_base_number(const X509_CRL *crl, char *out, size_t cap)
{
	ASN1_INTEGER *num;
	int crit = 0, rc = -1;

	num = X509_CRL_get_ext_d2i(crl, NID_delta_crl, &crit, NULL);
	if (num != NULL)
		rc = crlnum_hex(num, out, cap);
	ASN1_INTEGER_free(num);
	ERR_clear_error();
	return rc;
}

/*
 * The CRL's signer: found among the --issuer certificates (or used
 * unverified when allowed, and said), its key hashed for the CRL's series,
 * a separate signer remembered. 0, or -1 with err.
 */
static int
crl_signer(struct rd *r, X509_CRL *crl, const char *where,
    struct ffile_scope *sc)
{
	const struct input_opts *o = r->o;
	char why[512];
	X509 *signer = NULL;
	bool separate = false;
	int rc;

	rc = crl_find_signer(crl, o->issuers, o->nissuers, &signer, &separate,
	    why, sizeof(why));
	if (rc == -1) {
		rd_err(r, "%s%s", where, why);
		return -1;
	}
	if (rc == 1 && !o->unverified_ok) {
		rd_err(r, "%sno --issuer certificate for CRL issuer \"%s\": its "
		    "signature cannot be verified (--unverified-crl to use it "
		    "anyway)", where, sc->issuer);
		return -1;
	}
	if (rc == 1) {
		/* Logged even with quiet: the operator must see it. */
		log_warn("%s: %sCRL of \"%s\" used UNVERIFIED: no --issuer "
		    "certificate for it (--unverified-crl)", r->name, where,
		    sc->issuer);
		sc->flags |= FFILE_SCOPE_UNVERIFIED;
	}
	if (rc == 0 && (X509_pubkey_digest(signer, EVP_sha256(), r->cur_key,
	    NULL) != 1)) {
		ERR_clear_error();
		rd_err(r, "%scannot hash the key of the CRL's signer", where);
		return -1;
	}
	if (separate && crl_add_dep(r, signer, where) != 0)
		return -1;
	return 0;
}

/*
 * The CRL's dates against now: thisUpdate not in the future beyond the
 * clock skew, a nextUpdate assumed (--crl-validity) when there is none,
 * an expired CRL refused unless allowed. 0, or -1 with err.
 */
static int
crl_dates(struct rd *r, X509_CRL *crl, const char *where,
    struct ffile_scope *sc)
{
	const struct input_opts *o = r->o;
	char when[UTIL_RFC3339_LEN];
	int64_t now;

	now = o->now != 0 ? o->now : util_now();
	if (sc->this_update > now && sc->this_update - now > o->clock_skew) {
		util_rfc3339(when, sc->this_update);
		rd_err(r, "%sthisUpdate %s is in the future (more than %" PRId64
		    " s of clock skew)", where, when, o->clock_skew);
		return -1;
	}
	if (X509_CRL_get0_nextUpdate(crl) == NULL) {
		if (o->crl_validity <= 0 ||
		    sc->this_update > INT64_MAX - o->crl_validity) {
			rd_err(r, "%sCRL of \"%s\" has no nextUpdate: "
			    "--crl-validity DUR says how long after its "
			    "thisUpdate to use it", where, sc->issuer);
			return -1;
		}
		sc->next_update = sc->this_update + o->crl_validity;
		sc->flags |= FFILE_SCOPE_ASSUMED_NEXT;
	}
	if (now > sc->next_update) {
		util_rfc3339(when, sc->next_update);
		if (!o->allow_expired) {
			rd_err(r, "%sCRL of \"%s\" expired at %s (nextUpdate); "
			    "--allow-expired to use it anyway", where, sc->issuer,
			    when);
			return -1;
		}
		if (!o->quiet)
			log_warn("%s: %sCRL of \"%s\" expired at %s (nextUpdate)",
			    r->name, where, sc->issuer, when);
	}
	return 0;
}

/*
 * RFC 5280 section 6.3 checks that decide whether the CRL may be used at
 * all, in the order of the cheapest refusal first; sets sc's flags and,
 * for a CRL without nextUpdate, its assumed next_update. 0, or -1 with
 * err naming the file and the reason.
 */
static int
crl_validity(struct rd *r, X509_CRL *crl, const char *where,
    struct ffile_scope *sc)
{
	const struct input_opts *o = r->o;
	char why[512];

	if (crl_check_critical(crl, why, sizeof(why)) != 0 ||
	    crl_check_sigalg(crl, o->allow_weak_sig, why, sizeof(why)) != 0) {
		rd_err(r, "%s%s", where, why);
		return -1;
	}
	/*
	 * A delta CRL lists changes, not the revoked set: it is applied to
	 * its base after the last input (input_resolve_crls), never used
	 * alone. A CRL with an issuingDistributionPoint covers only part of
	 * its issuer's certificates: its scope records which (crl_idp_parts).
	 */
	if (X509_CRL_get_ext_by_NID(crl, NID_delta_crl, -1) >= 0) {
		if (delta_base_number(crl, r->cur_base, sizeof(r->cur_base)) != 0
		    || sc->crl_number[0] == '\0') {
			rd_err(r, "%sdelta CRL with a malformed deltaCRLIndicator "
			    "or without a CRL number", where);
			return -1;
		}
		r->cur_delta = true;
	}
	if (crl_idp_parts(crl, sc, &r->cur_indirect, why, sizeof(why)) != 0) {
		rd_err(r, "%s%s", where, why);
		return -1;
	}
	/* Whether its delta came is known only after the last input. */
	r->cur_announces = X509_CRL_get_ext_by_NID(crl, NID_freshest_crl, -1)
	    >= 0;
	if (crl_signer(r, crl, where, sc) != 0)
		return -1;
	return crl_dates(r, crl, where, sc);
}

/*
 * Remembers which records one CRL added (input_resolve_crls); via is 0
 * for the CRL itself, 1 + its index for an issuer it speaks for.
 */
static int
crl_note(struct rd *r, const struct ffile_scope *sc, size_t start,
    size_t via, const char *where)
{
	struct input_set *s = r->s;
	struct input_crl *nc, *c;
	size_t ncap;

	if (s->ncrls == s->ccap) {
		ncap = s->ccap == 0 ? 4 : s->ccap * 2;
		if ((nc = realloc(s->crls, ncap * sizeof(*nc))) == NULL) {
			rd_err(r, "out of memory");
			return -1;
		}
		s->crls = nc;
		s->ccap = ncap;
	}
	c = &s->crls[s->ncrls++];
	memset(c, 0, sizeof(*c));
	c->sc = *sc;
	c->delta = r->cur_delta;
	c->announces = r->cur_announces;
	c->indirect = r->cur_indirect;
	c->via = via;
	memcpy(c->base_number, r->cur_base, sizeof(c->base_number));
	memcpy(c->signer_key, r->cur_key, sizeof(c->signer_key));
	memcpy(c->content, r->cur_content, sizeof(c->content));
	c->start = start;
	c->end = input_set_records(s);
	(void)snprintf(c->what, sizeof(c->what), "%s%s%.*s", r->name,
	    where[0] != '\0' ? " " : "", (int)(where[0] != '\0' ?
	    strlen(where) - 2 : 0), where);
	return 0;
}

#define CRL_REASON_REMOVE	8	/* removeFromCRL */

/*
 * The certificate issuers of one CRL's entries: iss[0] is the CRL's own
 * issuer; an indirect CRL adds one per other certificateIssuer.
 */
struct crl_iss {
	char		 scope[REVKEY_X509_SCOPE_LEN + 1];
	char		 text[FFILE_ISSUER_MAX + 1];
	X509_NAME	*name;		/* owned; NULL for iss[0] */
};

struct crl_entries {
	STACK_OF(X509_REVOKED) *revs;
	struct crl_iss	*iss;
	size_t		 niss;
	uint16_t	*of;		/* entry index -> issuer index */
};

static void
crl_entries_free(struct crl_entries *e)
{
	size_t i;

	for (i = 0; e->iss != NULL && i < e->niss; i++)
		X509_NAME_free(e->iss[i].name);
	free(e->iss);
	free(e->of);
}

/* True when e names the issuer scope among the CRL's other issuers. */
static bool
crl_iss_has(const struct crl_entries *e, const char *scope)
{
	size_t i;

	for (i = 1; i < e->niss; i++)
		if (strcmp(e->iss[i].scope, scope) == 0)
			return true;
	return false;
}

/* Appends issuer dn (scope) to e. 0, or -1 with err. */
static int
crl_add_issuer(struct rd *r, struct crl_entries *e, const char *scope,
    const X509_NAME *dn, const char *where)
{
	struct crl_iss *ni, *x;

	if (e->niss >= INPUT_MAX_CRL_ISSUERS) {
		rd_err(r, "%sindirect CRL naming more than %d certificate "
		    "issuers", where, INPUT_MAX_CRL_ISSUERS);
		return -1;
	}
	if ((ni = realloc(e->iss, (e->niss + 1) * sizeof(*ni))) == NULL) {
		rd_err(r, "out of memory");
		return -1;
	}
	e->iss = ni;
	x = &e->iss[e->niss];
	memset(x, 0, sizeof(*x));
	memcpy(x->scope, scope, sizeof(x->scope));
	if ((x->name = X509_NAME_dup(dn)) == NULL ||
	    crl_name_text(dn, x->text, sizeof(x->text)) != 0) {
		X509_NAME_free(x->name);
		rd_err(r, "%scannot copy a certificate issuer name", where);
		return -1;
	}
	e->niss++;
	return 0;
}

/*
 * Sets e->of[i], the issuer of each entry, reading the entries in the
 * CRL's own order, as RFC 5280 section 5.3.3 says: an entry's
 * certificateIssuer names it; an entry without one has the issuer of the
 * entry before it; the first entries before any certificateIssuer are the
 * CRL issuer's. (Nothing before this sorts the entries: OpenSSL keeps
 * their DER order until a lookup by serial sorts them.) A certificateIssuer
 * in a CRL that is not indirect, or without exactly one directoryName,
 * refuses the CRL: its entries could otherwise land in the wrong scope.
 */
static int
crl_attribute(struct rd *r, X509_CRL *crl, struct crl_entries *e, int n,
    const char *where)
{
	GENERAL_NAMES *gens;
	const GENERAL_NAME *gn;
	const X509_NAME *dn;
	char scope[REVKEY_X509_SCOPE_LEN + 1];
	size_t cur = 0, j;
	int i, g, ndn, crit;

	if ((e->iss = calloc(1, sizeof(*e->iss))) == NULL ||
	    (n > 0 && (e->of = calloc((size_t)n, sizeof(*e->of))) == NULL)) {
		rd_err(r, "out of memory");
		return -1;
	}
	e->niss = 1;
	if (revkey_x509_scope(e->iss[0].scope, X509_CRL_get_issuer(crl)) != 0) {
		rd_err(r, "%scannot encode the CRL issuer", where);
		return -1;
	}
	for (i = 0; i < n; i++) {
		crit = 0;
		gens = X509_REVOKED_get_ext_d2i(sk_X509_REVOKED_value(e->revs, i),
		    NID_certificate_issuer, &crit, NULL);
		if (gens == NULL && crit != -1) {
			ERR_clear_error();
			rd_err(r, "%sentry %d: malformed or repeated certificate "
			    "issuer extension", where, i);
			return -1;
		}
		if (gens != NULL) {
			dn = NULL;
			ndn = 0;
			for (g = 0; g < sk_GENERAL_NAME_num(gens); g++) {
				gn = sk_GENERAL_NAME_value(gens, g);
				if (gn->type == GEN_DIRNAME) {
					dn = gn->d.directoryName;
					ndn++;
				}
			}
			if (!r->cur_indirect || ndn != 1 ||
			    revkey_x509_scope(scope, dn) != 0) {
				rd_err(r, "%sentry %d: %s", where, i,
				    !r->cur_indirect ? "certificate issuer "
				    "entry extension in a CRL that is not "
				    "indirect (RFC 5280 section 5.3.3)" :
				    ndn != 1 ? "certificate issuer with no or "
				    "several directory names: whose entry it is "
				    "is not clear" : "cannot encode the "
				    "certificate issuer");
				GENERAL_NAMES_free(gens);
				return -1;
			}
			for (j = 0; j < e->niss; j++)
				if (strcmp(e->iss[j].scope, scope) == 0)
					break;
			if (j == e->niss && crl_add_issuer(r, e, scope, dn,
			    where) != 0) {
				GENERAL_NAMES_free(gens);
				return -1;
			}
			cur = j;
			GENERAL_NAMES_free(gens);
		}
		e->of[i] = (uint16_t)cur;
	}
	return 0;
}

/* qsort_r order of entry indexes: issuer, serial, date, then position. */
static int
entry_cmp(const void *a, const void *b, void *arg)
{
	const struct crl_entries *e = arg;
	int x = *(const int *)a, y = *(const int *)b, c;
	const X509_REVOKED *ex = sk_X509_REVOKED_value(e->revs, x),
	    *ey = sk_X509_REVOKED_value(e->revs, y);

	c = (e->of[x] > e->of[y]) - (e->of[x] < e->of[y]);
	if (c == 0)
		c = ASN1_INTEGER_cmp(X509_REVOKED_get0_serialNumber(ex),
		    X509_REVOKED_get0_serialNumber(ey));
	if (c == 0)
		c = ASN1_TIME_compare(X509_REVOKED_get0_revocationDate(ex),
		    X509_REVOKED_get0_revocationDate(ey));
	if (c == 0 || c == -2)
		c = (x > y) - (x < y);
	return c;
}

/* The n entries' indexes sorted by entry_cmp, malloc'ed; NULL if no memory. */
static int *
entry_order(struct crl_entries *e, int n)
{
	int *ord = malloc((size_t)n * sizeof(*ord)), i;

	if (ord == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		ord[i] = i;
	qsort_r(ord, (size_t)n, sizeof(*ord), entry_cmp, e);
	return ord;
}

/*
 * The scope metadata of an issuer x an indirect CRL (sc) speaks for:
 * that issuer's name, the CRL's times, number and hash, flagged
 * attributed (no CRL of its own), with the CRL's parts without a
 * distribution point name as delegated parts when delegated.
 */
static void
crl_via_scope(const struct ffile_scope *sc, const char *scope,
    const char *text, bool delegated, struct ffile_scope *out)
{
	unsigned i;

	memcpy(out, sc, sizeof(*out));
	(void)snprintf(out->name, sizeof(out->name), "%s", scope);
	(void)snprintf(out->issuer, sizeof(out->issuer), "%s", text);
	out->flags = (uint8_t)((sc->flags & (FFILE_SCOPE_UNVERIFIED |
	    FFILE_SCOPE_ASSUMED_NEXT)) | FFILE_SCOPE_ATTRIBUTED);
	out->npart = 0;
	for (i = 0; delegated && i < sc->npart; i++) {
		if (crl_part_named(&sc->part[i]))
			continue;
		out->part[out->npart] = sc->part[i];
		out->part[out->npart].flags = FFILE_PART_DELEGATED;
		out->npart++;
	}
}

/* The --delegate statement for issuer scope x and this CRL, or NULL. */
static const struct input_delegation *
crl_delegation(const struct rd *r, const char *x, const char *crl_issuer)
{
	size_t i;

	for (i = 0; i < r->o->ndelegations; i++)
		if (strcmp(r->o->delegations[i].ca_scope, x) == 0 &&
		    strcmp(r->o->delegations[i].crl_issuer_scope,
		    crl_issuer) == 0)
			return &r->o->delegations[i];
	return NULL;
}

/*
 * After an indirect CRL's records: its own pending metadata and note, then
 * one for each issuer it speaks for: those its entries named, and those
 * a --delegate names with it. 0, or -1 with err.
 */
static int
crl_note_all(struct rd *r, const struct ffile_scope *sc,
    const struct crl_entries *e, size_t start, const char *where)
{
	const struct input_delegation *dg;
	struct ffile_scope *xs;
	size_t main = r->s->ncrls, i;
	int rc = -1;

	if (crl_pend(r, sc) != 0 || crl_note(r, sc, start, 0, where) != 0)
		return -1;
	if (!r->cur_indirect)
		return 0;
	if ((xs = malloc(sizeof(*xs))) == NULL) {
		rd_err(r, "out of memory");
		return -1;
	}
	for (i = 1; i < e->niss; i++) {
		dg = crl_delegation(r, e->iss[i].scope, sc->name);
		crl_via_scope(sc, e->iss[i].scope, e->iss[i].text, dg != NULL,
		    xs);
		if (crl_pend(r, xs) != 0 ||
		    crl_note(r, xs, start, main + 1, where) != 0)
			goto out;
	}
	for (i = 0; i < r->o->ndelegations; i++) {
		dg = &r->o->delegations[i];
		if (strcmp(dg->crl_issuer_scope, sc->name) != 0 ||
		    strcmp(dg->ca_scope, sc->name) == 0)
			continue;
		if (crl_iss_has(e, dg->ca_scope))
			continue;	/* done above */
		if (rd_set_scope(r, dg->ca_scope) != 0)
			goto out;
		crl_via_scope(sc, dg->ca_scope, dg->ca_issuer, true, xs);
		if (crl_pend(r, xs) != 0 ||
		    crl_note(r, xs, start, main + 1, where) != 0)
			goto out;
	}
	rc = 0;
out:
	free(xs);
	return rc;
}

/*
 * Starts one CRL: the reader's per-CRL state reset, and sc's issuer,
 * dates, digests and number, checked (crl_validity). 0, or -1 with err.
 */
static int
crl_head(struct rd *r, X509_CRL *crl, const unsigned char *der,
    size_t derlen, const char *where, struct ffile_scope *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->source = FFILE_SRC_CRL;
	r->cur_delta = r->cur_announces = r->cur_indirect = false;
	r->cur_base[0] = '\0';
	memset(r->cur_key, 0, sizeof(r->cur_key));
	if (revkey_x509_scope(sc->name, X509_CRL_get_issuer(crl)) != 0 ||
	    crl_name_text(X509_CRL_get_issuer(crl), sc->issuer,
	    sizeof(sc->issuer)) != 0) {
		rd_err(r, "%scannot encode the CRL issuer", where);
		return -1;
	}
	if (asn1_time_epoch(X509_CRL_get0_lastUpdate(crl), &sc->this_update)
	    != 0) {
		rd_err(r, "%sinvalid thisUpdate", where);
		return -1;
	}
	if (X509_CRL_get0_nextUpdate(crl) != NULL &&
	    asn1_time_epoch(X509_CRL_get0_nextUpdate(crl), &sc->next_update)
	    != 0) {
		rd_err(r, "%sinvalid nextUpdate", where);
		return -1;
	}
	if (util_sha256(sc->crl_sha256, der, derlen) != 0 ||
	    crl_content_digest(der, derlen, r->cur_content) != 0) {
		rd_err(r, "%sSHA-256 failed", where);
		return -1;
	}
	if (crl_number_hex(r, crl, where, sc->crl_number,
	    sizeof(sc->crl_number)) != 0)
		return -1;
	return crl_validity(r, crl, where, sc);
}

/*
 * Entry i of the CRL (e->revs) as a record: its key, date and reason.
 * 0, or -1 with err.
 */
static int
crl_entry(struct rd *r, X509_CRL *crl, const struct crl_entries *e, int i,
    const char *where)
{
	const X509_REVOKED *ent = sk_X509_REVOKED_value(e->revs, i);
	ASN1_ENUMERATED *re;
	struct revkey k;
	char kerr[256], rbuf[24];
	const char *reason = NULL;
	int64_t at;
	long code = -1;
	int crit = 0;

	if ((e->of[i] == 0 ? revkey_from_crl_entry(&k, crl, ent, kerr,
	    sizeof(kerr)) : revkey_from_issuer_serial(&k,
	    e->iss[e->of[i]].name, X509_REVOKED_get0_serialNumber(ent),
	    kerr, sizeof(kerr))) != 0) {
		rd_err(r, "%sentry %d: %s", where, i, kerr);
		return -1;
	}
	if (asn1_time_epoch(X509_REVOKED_get0_revocationDate(ent), &at) != 0) {
		rd_err(r, "%sentry %d: invalid revocation date", where, i);
		return -1;
	}
	re = X509_REVOKED_get_ext_d2i(ent, NID_crl_reason, &crit, NULL);
	if (re == NULL && crit != -1) {
		ERR_clear_error();
		rd_err(r, "%sentry %d: malformed or repeated reason code",
		    where, i);
		return -1;
	}
	if (re != NULL) {
		code = ASN1_ENUMERATED_get(re);
		ASN1_ENUMERATED_free(re);
		if (code >= 0 && (size_t)code < sizeof(crl_reasons) /
		    sizeof(crl_reasons[0]) && crl_reasons[code] != NULL) {
			reason = crl_reasons[code];
		} else {
			/* Unknown codes are kept, not dropped. */
			snprintf(rbuf, sizeof(rbuf), "reason%ld", code);
			reason = rbuf;
		}
	}
	if (code == CRL_REASON_REMOVE && !r->cur_delta) {
		/*
		 * removeFromCRL only means something in a delta CRL; in a
		 * complete CRL it says the certificate is not revoked, and
		 * counting it as revoked is no answer.
		 */
		rd_err(r, "%sentry %d: removeFromCRL in a CRL that is not a "
		    "delta CRL (RFC 5280 section 5.3.1)", where, i);
		return -1;
	}
	return rd_add(r, &k, at, reason);
}

/* Adds one parsed CRL: checks, scope, records, pending metadata. */
static int
crl_add(struct rd *r, X509_CRL *crl, const unsigned char *der, size_t derlen,
    const char *where)
{
	struct crl_entries e;
	const X509_REVOKED *ent;
	struct ffile_scope sc;
	int i, j, n, rc = -1, *ord = NULL;
	size_t start, t;

	memset(&e, 0, sizeof(e));
	if (crl_head(r, crl, der, derlen, where, &sc) != 0)
		return -1;
	e.revs = X509_CRL_get_REVOKED(crl);
	n = e.revs != NULL ? sk_X509_REVOKED_num(e.revs) : 0;
	if (crl_attribute(r, crl, &e, n, where) != 0)
		goto out;
	for (t = 0; t < e.niss; t++)
		if (rd_set_scope(r, e.iss[t].scope) != 0)
			goto out;
	start = input_set_records(r->s);

	if (n > 0 && (ord = entry_order(&e, n)) == NULL) {
		rd_err(r, "out of memory");
		goto out;
	}
	for (j = 0; j < n; j++) {
		i = ord[j];
		ent = sk_X509_REVOKED_value(e.revs, i);
		/*
		 * A serial listed several times for one issuer: the entry in
		 * effect is the one with the latest revocation date (a hold
		 * later made a revocation), the last listed among equal
		 * dates. It alone gives the date and the reason; the others
		 * are skipped.
		 */
		if (j + 1 < n && e.of[i] == e.of[ord[j + 1]] && ASN1_INTEGER_cmp(
		    X509_REVOKED_get0_serialNumber(ent),
		    X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(e.revs,
		    ord[j + 1]))) == 0)
			continue;
		if (crl_entry(r, crl, &e, i, where) != 0)
			goto out;
	}
	rc = crl_note_all(r, &sc, &e, start, where);
out:
	free(ord);
	crl_entries_free(&e);
	return rc;
}

int
rd_crl_der(struct rd *r, const unsigned char *der, size_t len,
    const char *where)
{
	const unsigned char *p = der;
	char why[160];
	X509_CRL *crl;
	size_t bad = 0;
	int rc;

	if (len > LONG_MAX) {
		rd_err(r, "%sCRL too large", where);
		return -1;
	}
	if (der_check(der, len, &bad) != 0) {
		rd_err(r, "%struncated or malformed DER at offset %zu", where,
		    bad);
		return -1;
	}
	crl = d2i_X509_CRL(NULL, &p, (long)len);
	if (crl == NULL) {
		rd_err(r, "%snot a valid X.509 CRL (%s)", where,
		    ossl_reason(why, sizeof(why)));
		return -1;
	}
	if (p != der + len) {
		rd_err(r, "%strailing bytes after the CRL at offset %zu", where,
		    (size_t)(p - der));
		X509_CRL_free(crl);
		return -1;
	}
	rc = crl_add(r, crl, der, len, where);
	X509_CRL_free(crl);
	ERR_clear_error();
	return rc;
}

/*
 * The text around a file's PEM blocks, which PEM_read_bio() skips: only
 * blank lines and what `openssl crl -text` writes (its three headers and
 * indented lines) may be there. Anything else is refused, not skipped: a
 * token list with a CRL pasted after it would lose its ids unseen.
 */
static int
pem_text_ok(struct rd *r, const char *buf, size_t len)
{
	static const char *const hdr[] = { "Certificate Revocation List (CRL):",
	    "Revoked Certificates:", "No Revoked Certificates." };
	const char *p = buf, *end = buf + len, *nl;
	size_t line = 0, n, i;
	bool in = false;

	for (; p < end; p = nl + 1) {
		line++;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		n = (size_t)(nl - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (!in && n >= 11 && memcmp(p, "-----BEGIN ", 11) == 0) {
			in = true;
			continue;
		}
		if (in) {
			in = !(n >= 9 && memcmp(p, "-----END ", 9) == 0);
			continue;
		}
		if (n == 0 || p[0] == ' ' || p[0] == '\t')
			continue;
		for (i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++)
			if (n == strlen(hdr[i]) && memcmp(p, hdr[i], n) == 0)
				break;
		if (i < sizeof(hdr) / sizeof(hdr[0]))
			continue;
		rd_err_line(r, line, "text outside the PEM blocks of a CRL "
		    "file (only `openssl crl -text` output may be there): a "
		    "file is either a list or CRLs; put each in a file of "
		    "its own");
		return -1;
	}
	return 0;
}

int
rd_read_crl_pem(struct rd *r, const char *buf, size_t len)
{
	char *name = NULL, *header = NULL, where[48], why[160];
	unsigned char *data = NULL;
	long dlen = 0;
	size_t nblk = 0;
	unsigned long e;
	BIO *bio;
	int rc = -1;

	if (len > INT_MAX) {
		rd_err(r, "PEM file over %d bytes", INT_MAX);
		return -1;
	}
	if (pem_text_ok(r, buf, len) != 0)
		return -1;
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		rd_err(r, "out of memory");
		return -1;
	}
	ERR_clear_error();
	for (;;) {
		if (PEM_read_bio(bio, &name, &header, &data, &dlen) != 1) {
			e = ERR_peek_last_error();
			if (nblk > 0 && ERR_GET_LIB(e) == ERR_LIB_PEM &&
			    ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
				ERR_clear_error();
				break;
			}
			rd_err(r, "PEM block %zu: %s", nblk + 1,
			    ossl_reason(why, sizeof(why)));
			goto out;
		}
		nblk++;
		snprintf(where, sizeof(where), "PEM block %zu: ", nblk);
		if (strcmp(name, PEM_STRING_X509_CRL) != 0) {
			rd_err(r, "%s\"%.40s\" where an X509 CRL was expected",
			    where, name);
			goto out;
		}
		if (nblk > INPUT_MAX_CRLS) {
			rd_err(r, "more than %d CRLs in one file",
			    INPUT_MAX_CRLS);
			goto out;
		}
		if (dlen <= 0 || rd_crl_der(r, data, (size_t)dlen, where) != 0) {
			if (dlen <= 0)
				rd_err(r, "%sempty", where);
			goto out;
		}
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
		name = header = NULL;
		data = NULL;
	}
	rc = 0;
out:
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(data);
	BIO_free(bio);
	return rc;
}

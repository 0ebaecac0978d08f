/* input.h - revocation list readers: text, JSON and X.509 CRLs (PEM or DER) */
#ifndef REVCHECK_INPUT_H
#define REVCHECK_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/x509.h>

#include "ffile.h"
#include "table.h"

#define INPUT_MAX_FILE	(UINT64_C(4) << 30)	/* 4 GiB per input */

enum input_format {
	INPUT_AUTO = 0,
	INPUT_TEXT,
	INPUT_JSON,
	INPUT_CRL,
};

/*
 * The operator's word that a CA (ca_scope) has the revocation of all its
 * certificates published in the indirect CRLs of another issuer
 * (crl_issuer_scope): those CRLs then cover the CA's scope for bare
 * serials too, not only for certificates naming that issuer (--delegate).
 */
struct input_delegation {
	char		 ca_scope[REVKEY_X509_SCOPE_LEN + 1];
	char		 ca_issuer[FFILE_ISSUER_MAX + 1];	/* RFC 2253 text */
	char		 crl_issuer_scope[REVKEY_X509_SCOPE_LEN + 1];
};

struct input_opts {
	const char	*scope;		/* for text and JSON ids; "default" */
	enum input_format format;
	X509		**issuers;	/* --issuer certificates, may be empty */
	size_t		 nissuers;
	bool		 allow_expired;	/* a CRL past nextUpdate only warns */
	bool		 allow_empty;	/* a text or JSON list without ids */
	bool		 unverified_ok;	/* a CRL without an --issuer cert is
					   used, marked unverified */
	bool		 allow_weak_sig;	/* MD2, MD5, SHA-1 CRL signatures */
	bool		 no_delta;	/* a base announcing a delta, alone */
	int64_t		 clock_skew;	/* seconds a thisUpdate may lie ahead */
	int64_t		 crl_validity;	/* for a CRL without nextUpdate: use it
					   until thisUpdate + this; 0 refuses */
	int64_t		 now;
	/*
	 * A source row whose expires_at is at or before now - expiry_grace
	 * is left out (pgsrc): a token verifier accepts a token up to its
	 * exp plus a leeway, so its revocation must outlive exp by as much.
	 */
	int64_t		 expiry_grace;
	const struct input_delegation *delegations;	/* may be NULL */
	size_t		 ndelegations;
	bool		 quiet;		/* no warnings on stderr */
	/*
	 * The input was fetched from a URL: a text or JSON list in it may
	 * not name an X.509 scope (it carries no signature; only a CRL that
	 * an --issuer verifies may speak for one).
	 */
	bool		 fetched;
	/* Progress callback for long reads, may be NULL. */
	void		(*progress)(void *arg, uint64_t records);
	void		*progress_arg;
};

/*
 * What all inputs of one build add up to: the records (not yet sorted or
 * unique) and the covered scopes with their source metadata. A scope is
 * covered as soon as an input names it, even with zero ids (an empty CRL
 * still covers its issuer).
 */
/* A separate CRL signer, which must be shown not to be revoked. */
struct input_dep {
	struct revkey	 key;		/* the signer certificate's key */
	char		 what[384];	/* file, block and subject, for errors */
};

/*
 * One CRL read into the set: its records are [start, end). An indirect
 * CRL also has one entry per other issuer it speaks for (its entries'
 * certificateIssuer, or a --delegate): via is then 1 + the index of the
 * CRL itself, sc that issuer's scope metadata (flagged
 * FFILE_SCOPE_ATTRIBUTED, with FFILE_PART_DELEGATED parts for a
 * --delegate), and the entry is kept exactly when its CRL is.
 */
struct input_crl {
	struct ffile_scope sc;		/* its scope metadata (keys unset) */
	size_t		 start, end;
	char		 what[320];	/* file and PEM block, for messages */
	bool		 delta;		/* a delta CRL (deltaCRLIndicator) */
	char		 base_number[FFILE_CRLNUM_MAX + 1];	/* its BaseCRLNumber */
	bool		 announces;	/* a base with freshestCRL */
	bool		 indirect;	/* issuingDistributionPoint indirectCRL */
	size_t		 via;		/* 0, or 1 + index of its indirect CRL */
	/*
	 * SHA-256 of the public key its signature verified with (zeros when
	 * unverified): CRLs of one issuer name signed with different keys
	 * (a CA renewed with a new key) are not versions of one another.
	 */
	unsigned char	 signer_key[32];
	/* crl_content_digest: equal for one CRL signed two ways. */
	unsigned char	 content[32];
};

struct input_set {
	/*
	 * The records, in a compact builder (about 30 bytes plus the id per
	 * record), owned by the set. A failed input_read truncates it back.
	 * The caller sorts it (table_builder_sort_unique) before
	 * input_count_scopes and input_check_signers.
	 */
	struct table_builder builder;
	struct ffile_scope *scopes;
	size_t		   nscopes;
	size_t		   scap;
	/* Separate CRL signers of the CRLs read (input_check_signers). */
	struct input_dep  *deps;
	size_t		   ndeps;
	size_t		   dcap;
	/* Every CRL read, in order (input_resolve_crls). */
	struct input_crl  *crls;
	size_t		   ncrls;
	size_t		   ccap;
};

void input_set_init(struct input_set *s);

/* Records in the set. This function can't fail. */
size_t input_set_records(const struct input_set *s);
void input_set_free(struct input_set *s);

/*
 * Reads one input ("-" is standard input) and appends its records and
 * scopes. AUTO picks CRL for DER or "-----BEGIN X509 CRL", JSON for a
 * first non-blank '[' or '{' and text otherwise. A text list must look
 * like one: no PEM armour, control bytes, spaces inside an id or bytes
 * that are not UTF-8 (the first bad line is named); JSON ids have no
 * control bytes. A list without any id is refused unless allow_empty.
 * CRLs are checked as RFC 5280 section 6.3 says (crl.h): unknown critical
 * extensions, weak signature algorithms, a future thisUpdate, a missing
 * nextUpdate, a signer that is not among the issuers (unless
 * unverified_ok: then the scope is flagged unverified) are refused.
 * Entries of an indirect CRL go to the scope of their certificate issuer
 * (RFC 5280 section 5.3.3: the certificateIssuer of the entry or of the
 * last entry before it that has one, else the CRL's issuer); such a
 * scope without a CRL of its own is listed flagged FFILE_SCOPE_ATTRIBUTED
 * and covers nothing by itself (crl_key_covered). A certificateIssuer in
 * a CRL that is not indirect, or one without exactly one directoryName,
 * refuses the CRL.
 * A CRL past its nextUpdate is refused unless allow_expired. On failure returns -1, err names the file, the line or DER
 * offset and the reason, and s is left as it was before the call.
 */
int input_read(struct input_set *s, const char *path,
    const struct input_opts *o, char *err, size_t errlen);

/*
 * Same as input_read() over bytes in memory (copied; the caller keeps
 * buf); name stands for the file in error messages. For tests, fuzzers
 * and callers that already hold the list.
 */
int input_read_buf(struct input_set *s, const char *name, const void *buf,
    size_t len, const struct input_opts *o, char *err, size_t errlen);

/*
 * One row of a record source that is not a file (a database): text values
 * as the source gave them, checked here exactly as a JSON element is.
 */
struct input_row {
	const char	*scope;		/* NULL: the default scope (o->scope) */
	const char	*id;		/* id_len bytes, need not end in NUL */
	size_t		 id_len;
	int64_t		 revoked_at;	/* 0 when unknown */
	const char	*reason;	/* NULL or "" when unknown */
	/*
	 * A database's value: control bytes in the id are kept (a check
	 * can name them), not refused as the shape of a bad list.
	 */
	bool		 any_bytes;
};

/*
 * Checks one row as a JSON element is checked and turns it into a record
 * (default_scope when the row has none; NULL means "default"). Returns 0,
 * or -1 with err saying what is wrong (without a row number).
 */
int input_row_rec(const struct input_row *row, const char *default_scope,
    struct table_rec *out, char *err, size_t errlen);

/*
 * A row source: fills *row and returns 1, returns 0 at the end, or -1
 * with err. The row's strings stay valid until the next call.
 */
typedef int (*input_next_fn)(void *arg, struct input_row *row, char *err,
    size_t errlen);

/*
 * Reads every row of a source into s, with the checks of a JSON list: a
 * valid scope, an id revkey_from_text accepts, a reason of printable
 * ASCII shorter than TABLE_REASON_MAX, a revoked_at after 1970. A source
 * with no row covers the default scope, as an empty list does. On failure
 * returns -1, err names the source and the row (counted from 1), and s is
 * left as it was before the call.
 */
int input_read_rows(struct input_set *s, const char *name, input_next_fn next,
    void *arg, const struct input_opts *o, char *err, size_t errlen);

/*
 * After table_builder_sort_unique() on s->builder, sets every scope's key
 * count from the records. This function can't fail.
 */
void input_count_scopes(struct input_set *s);

/*
 * After the last input_read and before sorting: of several complete CRLs
 * of one issuer and coverage, the newest (highest CRL number; without
 * numbers, the latest thisUpdate) wins and the records of the others are
 * dropped, so a build never publishes a union of different CRLs; partial
 * CRLs of other coverage are parts of the set and all kept. Then each
 * delta CRL is applied to its base (RFC 5280 section 5.2.4: the same
 * issuer and coverage, the base's CRL number at least the delta's
 * BaseCRLNumber and below the delta's own; the newest delta of a base
 * wins): its entries are added, and removeFromCRL removes a serial the
 * base holds (certificateHold). Refused, with err naming the CRLs: two
 * different CRLs that cannot be ordered, a delta without its base, a
 * delta removing a serial its base revoked for another reason, and a base
 * announcing a delta (freshestCRL) without one unless no_delta (then
 * warned). The scope's metadata becomes the newest kept CRL's, with the
 * union of coverage and the earliest nextUpdate. A scope that no CRL of
 * its own issuer describes, only indirect CRLs of others, keeps
 * FFILE_SCOPE_ATTRIBUTED with the newest of those CRLs' metadata and the
 * parts of its --delegate statements.
 */
int input_resolve_crls(struct input_set *s, bool quiet, bool no_delta,
    char *err, size_t errlen);

/*
 * After sorting (as input_count_scopes), checks every separate CRL signer
 * the CRLs named: verified CRLs in the set must cover its certificate as a
 * check would (crl_covered_in: its issuer's scope, or the indirect CRLs
 * of a CRL issuer its distribution points name), and its own key must not
 * be in the set. Returns
 * 0, or -1 with err naming the CRL and the signer. This function changes
 * nothing.
 */
int input_check_signers(const struct input_set *s, char *err,
    size_t errlen);

/*
 * Keeps a CRL scope of the previous version whose new CRL could not be
 * used: appends sc (flagged FFILE_SCOPE_KEPT) and every record of that
 * scope in prev's table. Its parts no longer cover other issuers'
 * certificates (FFILE_PART_INDIRECT is cleared): the entries its indirect
 * CRL attributed to them lie in their scopes, which the new inputs may
 * describe without them. The scope must not be in s already. Returns 0,
 * or -1 with err (s unchanged).
 */
int input_keep_scope(struct input_set *s, const struct ffile_scope *sc,
    const struct table *prev, char *err, size_t errlen);

/* What input_keep_previous() did with a scope of the previous version. */
enum input_kept {
	INPUT_KEPT_NONE = 0,	/* the inputs describe it: nothing done */
	INPUT_KEPT,		/* its records kept (FFILE_SCOPE_KEPT) */
	INPUT_KEPT_LEFT_OUT,	/* past its nextUpdate: what its own CRLs
				   covered is left out (not_covered) */
	INPUT_KEPT_NARROWED,	/* a CRL of its own missing: the delegated
				   parts over what it covered left out */
};

/*
 * --keep-going, once for each scope sc of the previous version (table
 * prev) after input_resolve_crls. A CRL scope the inputs no longer name
 * is kept (input_keep_scope) while its nextUpdate lies ahead of now, and
 * left out (not_covered) after it. A scope that had CRLs of its own in
 * prev but that the inputs name only through other issuers' indirect CRLs
 * (its own CRLs failed) is not left to those: while sc's nextUpdate lies
 * ahead it takes back prev's records of the scope and sc's metadata and
 * own coverage (flagged kept), with this build's delegated parts and
 * records beside them, until the earlier nextUpdate; after it, the
 * delegated parts that cover any certificate its own CRLs covered are
 * dropped, so those certificates and its bare serials answer
 * not_covered (a certificate naming the other issuer as cRLIssuer is
 * still covered through that issuer's scope). A scope still described by
 * some of its own CRLs, but without one prev used (a partition failed),
 * loses the delegated parts over what that CRL covered. *what says which.
 * Returns 0, or -1 with err (s unchanged).
 */
int input_keep_previous(struct input_set *s, const struct ffile_scope *sc,
    const struct table *prev, int64_t now, enum input_kept *what, char *err,
    size_t errlen);

/* What input_check_previous() lets through. */
struct input_prev_opts {
	bool		 allow_shrink;	/* dropped or shrunk scopes only warn */
	bool		 allow_rollback;	/* an older CRL than prev's warns */
	unsigned	 max_shrink_pct;	/* 0..100; a scope may lose this
					   share of its keys (default 50) */
	/*
	 * Scopes left out on purpose (--keep-going: past their nextUpdate):
	 * allowed to be missing, or to shrink when the inputs still name
	 * them through other issuers' indirect CRLs.
	 */
	const char *const *gone;
	size_t		 ngone;
	bool		 quiet;
	/*
	 * The scopes a database source speaks for (build --source): its
	 * rows are the truth, not a file that may have lost its content, so
	 * such a scope may shrink to any size, none included, without
	 * allow_shrink. One that is missing from the set is still refused:
	 * the caller keeps it covered first (input_cover_scopes). NULL:
	 * none.
	 */
	bool		(*authoritative)(void *arg, const char *scope);
	void		*auth_arg;
};

/*
 * Compares the counted set (after input_count_scopes) with the previous
 * published version prev (version prev_version): a scope of prev that the
 * set no longer covers, or whose key count fell by more than
 * max_shrink_pct percent, would un-revoke keys without anyone asking for
 * it. So would a CRL older than the one prev used for its issuer (a lower
 * CRL number, or an earlier thisUpdate): a replayed CRL un-revokes what
 * was revoked since. That is checked for a scope covered whole by its
 * issuer's own CRL in both, and for each coverage part of a partially
 * covered scope against the part of prev with the same kind, reasons,
 * distribution point, flags and CRL issuer (a partition, or what an
 * indirect CRL delegates). Returns 0 when nothing is wrong or the finding is
 * allowed (allow_shrink, allow_rollback; each then warns on stderr, a
 * rollback even when quiet), or -1 with err naming the first scope
 * refused. This function changes nothing.
 */
int input_check_previous(const struct input_set *s,
    const struct ffile_info *prev, const struct input_prev_opts *o,
    char *err, size_t errlen);

/*
 * After input_count_scopes: every list-sourced scope of prev that the set
 * lacks is added to it, covered with no keys (a database source's scope
 * whose last row expired or was deleted: its ids answer not_revoked from
 * the filter, not not_covered). CRL scopes are never added. *added (when
 * not NULL) is the number added. Returns 0, or -1 with err (out of
 * memory, or more than FFILE_MAX_SCOPES scopes) and s as it was.
 */
int input_cover_scopes(struct input_set *s, const struct ffile_info *prev,
    size_t *added, char *err, size_t errlen);

#endif

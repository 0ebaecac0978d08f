/* input_int.h - shared by lib/input*.c: the reader state and its calls */
/*
 * Private to lib/input*.c; the library's contract is input.h. Records
 * enter a set only through rd_add() and input_keep_scope(), and scopes
 * only through rd_set_scope().
 */
#ifndef REVCHECK_INPUT_INT_H
#define REVCHECK_INPUT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"

#define INPUT_PROGRESS_EVERY	65536
#define INPUT_MAX_CRLS		4096	/* CRLs in one PEM file */
#define INPUT_MAX_CRL_ISSUERS	256	/* issuers one indirect CRL names */
#define INPUT_DER_MAX_DEPTH	24
#define UTF8_BOM		"\xef\xbb\xbf"

/* State of one input_read() call. */
struct rd {
	struct input_set	*s;
	const struct input_opts	*o;
	const char		*name;	/* for messages: path or "<stdin>" */
	char			*err;
	size_t			 errlen;
	size_t			 last_scope;	/* lookup cache, SIZE_MAX = none */
	/*
	 * Open-addressing index of s->scopes by name, built per call so that
	 * a list naming thousands of scopes stays linear: slot = index + 1,
	 * 0 = empty. NULL when it could not be allocated (linear search).
	 * The hash is seeded per call: the names come from the list, and
	 * with a hash known in advance a list can send them all to one
	 * cluster and make every lookup a scan (quadratic).
	 */
	uint32_t		*sidx;
	size_t			 sidx_cap;	/* power of two */
	uint64_t		 sidx_seed;
	uint64_t		 count;		/* records added by this call */
	size_t			 ndeps0;	/* s->ndeps at the start */
	size_t			 ncrls0;	/* s->ncrls at the start */
	/* The CRL being added: a delta (and its BaseCRLNumber), freshestCRL. */
	bool			 cur_delta;
	bool			 cur_announces;
	bool			 cur_indirect;
	char			 cur_base[FFILE_CRLNUM_MAX + 1];
	unsigned char		 cur_key[32];	/* its signer's key, or zeros */
	unsigned char		 cur_content[32];	/* crl_content_digest */
	/* Source metadata of the CRLs read, applied on success. */
	struct ffile_scope	*pend;
	size_t			 npend;
	size_t			 pcap;
};


/* ---- the reader (input.c) ---------------------------------------------- */

/*
 * Format "<name>: <message>", or "<name>:<line>: <message>" when line is
 * not 0, into the reader's error buffer. These functions can't fail.
 */
void rd_err(struct rd *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rd_err_line(struct rd *r, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Makes sure the set covers a scope, appending a list-sourced entry when
 * it is new. The only place scopes enter a set. A subject or session
 * cutoff scope ("sub:" or "sid:" and an issuer) covers its issuer's token
 * scope too, with no key when the issuer has no jti revoked: a token is
 * checked by its jti and its cutoffs together, and a jti scope not
 * covered would make every token of that issuer not_covered. Returns 0,
 * or -1 with the error set.
 */
int rd_set_scope(struct rd *r, const char *name);

/* Adds a record; reports progress now and then. 0, or -1 with err. */
int rd_add(struct rd *r, const struct revkey *k, int64_t at,
    const char *reason);

/* The scope of text and JSON ids: o->scope, or the default one. */
const char *input_opts_scope(const struct input_opts *o);

/* The scope named name in s, or NULL. Linear: called once per scope. */
const struct ffile_scope *input_scope_named(const struct input_set *s,
    const char *name);

/* ---- text and JSON lists (input_list.c) -------------------------------- */

/* Whether c is white space: space, tab, CR, LF, VT or FF. */
bool input_is_space(unsigned char c);

/*
 * Why the bytes of one id are not those of a token id, or NULL when they
 * are: a control byte (a space or tab too, with words), or bytes that are
 * not UTF-8. *col is set to the 1-based column of the first bad byte.
 */
const char *input_id_refused(const char *b, size_t n, bool words,
    size_t *col);

/*
 * A reason: printable ASCII, shorter than TABLE_REASON_MAX. This
 * function can't fail.
 */
bool input_reason_valid(const char *s);

/*
 * An input that publishes no id at all replaces the scope's list with
 * nothing: every id it revoked would answer not_revoked. Refused unless
 * the caller allows it: 0, or -1 with err.
 */
int rd_refuse_empty(struct rd *r, const char *scope);

/*
 * A token list is lines of single ids. Anything else (a PEM file, a
 * document, binary data) would publish its lines as ids, and garbage in
 * place of the real list un-revokes what that list revoked: it is refused
 * at its first bad line. 0, or -1 with err.
 */
int rd_read_text(struct rd *r, const char *buf, size_t len);

/*
 * A JSON array of ids or objects; buf[len] must be a NUL byte. 0, or -1
 * with err.
 */
int rd_read_json(struct rd *r, const char *buf, size_t len);

/* ---- CRLs (input_crl.c) ------------------------------------------------ */

/*
 * Reads the identifier and length octets of a DER element at off, within
 * [off, end). Sets *hdr to their size and *clen to the declared content
 * length (which may run past end: the caller checks). Returns 0, or -1
 * when the header itself is cut or not DER (indefinite length, too long).
 */
int input_der_header(const unsigned char *b, size_t off, size_t end,
    size_t *hdr, uint64_t *clen);

/* One DER CRL, from a file or a PEM block; where prefixes messages. */
int rd_crl_der(struct rd *r, const unsigned char *der, size_t len,
    const char *where);

/* Every CRL of a PEM file. 0, or -1 with err. */
int rd_read_crl_pem(struct rd *r, const char *buf, size_t len);

/* ---- CRL order (input_resolve.c) --------------------------------------- */

/*
 * Two coverage parts for the same certificates from the same CRL issuer
 * (whatever CRL number or thisUpdate each names).
 */
bool input_part_same(const struct ffile_part *a, const struct ffile_part *b);

/*
 * Orders two CRL numbers (lowercase hex without leading zeros, "" when
 * absent): <0, 0, >0. An absent number sorts first.
 */
int input_crlnum_cmp(const char *a, const char *b);

/*
 * <0 when the CRL with number na and thisUpdate ta is older than the one
 * with nb and tb, >0 newer, 0 when they cannot be ordered.
 */
int input_crl_age_cmp(const char *na, int64_t ta, const char *nb,
    int64_t tb);

/*
 * Adds part p to out's parts unless one for the same certificates from the
 * same CRL issuer is there; of two, the newer CRL's (for the rollback
 * check). 0, or -1 with err when there would be more than FFILE_PART_MAX.
 */
int input_parts_union(struct ffile_scope *out, const struct ffile_part *p,
    const char *issuer, char *err, size_t errlen);

#endif

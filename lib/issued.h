/* issued.h - the issued set of exact scopes: certificate and id files, streamed */
#ifndef REVCHECK_ISSUED_H
#define REVCHECK_ISSUED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exact.h"
#include "revkey.h"

/*
 * The files filterbuild build --issued names: each is certificates (PEM,
 * any number of CERTIFICATE blocks, or DER, one or more concatenated),
 * whose keys are their issuer's X.509 scope and serial exactly as a CRL
 * entry's (revkey_from_cert), or an id list for list_scope (a text list,
 * one id per line with '#' comments, or a JSON array of id strings or
 * {"id", "scope"} objects), whose ids are read as a revocation list's
 * (revkey_from_text). A file is never held whole: every read streams it,
 * and each exact scope's stream reads the files again (issued_stream).
 */
#define ISSUED_MAX_FILES	256
#define ISSUED_MAX_SCOPES	4096

struct issued_scope {
	char		 name[REVKEY_SCOPE_MAX + 1];
	uint64_t	 listed;	/* ids listed, duplicates counted */
	bool		 from_list;	/* some from an id list (no notBefore) */
	int64_t		 newest;	/* newest notBefore of its certificates,
					   0 when it has none */
};

struct issued_set {
	const char	*paths[ISSUED_MAX_FILES];
	size_t		 npaths;
	const char	*list_scope;	/* scope of list ids (--scope) */
	struct issued_scope *scopes;	/* after issued_scan */
	size_t		 nscopes;
};

/*
 * Reads every file once: the scopes it names, with their counts and
 * newest notBefore. 0, or -1 with err naming the file and the line,
 * certificate or byte offset (a file that is none of the kinds above, a
 * bad id, a certificate that does not parse, more than ISSUED_MAX_SCOPES
 * scopes). Memory: the scope list only.
 */
int issued_scan(struct issued_set *s, char *err, size_t errlen);

/* The scope entry of name after issued_scan, or NULL. */
const struct issued_scope *issued_scope(const struct issued_set *s,
    const char *name);

void issued_free(struct issued_set *s);

/*
 * A re-readable stream of the encoded keys of one scope over every file
 * of s (s must outlive it), as an exact_src (exact.h). NULL when memory
 * runs out.
 */
struct issued_stream;

struct issued_stream *issued_stream_new(const struct issued_set *s,
    const char *scope);
void issued_stream_src(struct issued_stream *st, struct exact_src *src);
void issued_stream_free(struct issued_stream *st);

#endif

/* fuzz_fasthead.c - the fast path's request heads against libmicrohttpd's own reading of the query */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "fasthead.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Whatever head fasthead_parse() takes (FH_CHECK) must mean to
 * libmicrohttpd what it means to the fast path: the query split as
 * libmicrohttpd splits it (at '&', then at the first '='), each name and
 * value decoded with its MHD_http_unescape(), holds exactly "id" and at
 * most one "scope", with the very bytes the fast path decoded. The head
 * must end in a blank line inside what was given, and id and scope lie
 * inside the decode buffer, each followed by a NUL. A mismatch aborts.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dec[FASTHEAD_MAX];
	struct fasthead h;
	const char *q, *sp;
	char *query, *seg, *next, *eq, *val;
	size_t vlen;
	bool seen_id = false, seen_scope = false;

	if (fasthead_parse((const char *)data, size, &h, dec, sizeof(dec)) !=
	    FH_CHECK)
		return 0;
	if (h.head_len > size || h.head_len < 4 ||
	    memcmp(data + h.head_len - 4, "\r\n\r\n", 4) != 0)
		abort();
	if (h.id < dec || h.id + h.id_len >= dec + sizeof(dec) ||
	    h.id[h.id_len] != '\0' || h.id_len == 0)
		abort();
	if (h.scope != NULL && (h.scope < dec ||
	    h.scope + h.scope_len >= dec + sizeof(dec) ||
	    strlen(h.scope) != h.scope_len))
		abort();
	/* The query: after "GET /v1/check?", up to the next space. */
	q = (const char *)data + 14;
	if ((sp = memchr(q, ' ', h.head_len - 14)) == NULL)
		abort();
	if ((query = strndup(q, (size_t)(sp - q))) == NULL)
		return 0;
	for (seg = query; seg != NULL; seg = next) {
		if ((next = strchr(seg, '&')) != NULL)
			*next++ = '\0';
		if ((eq = strchr(seg, '=')) == NULL)
			abort();	/* a name without a value: never taken */
		*eq = '\0';
		val = eq + 1;
		MHD_http_unescape(seg);
		vlen = MHD_http_unescape(val);
		if (strcmp(seg, "id") == 0 && !seen_id) {
			seen_id = true;
			if (vlen != h.id_len || memcmp(val, h.id, vlen) != 0)
				abort();
		} else if (strcmp(seg, "scope") == 0 && !seen_scope) {
			seen_scope = true;
			if (h.scope == NULL || vlen != h.scope_len ||
			    memcmp(val, h.scope, vlen) != 0)
				abort();
		} else
			abort();	/* another or a repeated parameter */
	}
	if (!seen_id || seen_scope != (h.scope != NULL))
		abort();
	free(query);
	return 0;
}

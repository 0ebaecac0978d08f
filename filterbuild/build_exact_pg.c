/* build_exact_pg.c - filterbuild build --source: exact scopes over the source's revcheck_issued */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fb.h"
#include "util.h"

int
fb_exact_pg(struct fb_exact *x, struct input_set *set, char *err,
    size_t errlen)
{
	struct pgsrc_issued_stream st;
	struct exact_src u;
	const struct pgsrc_issued_scope *sc;
	size_t i;

	if (x->pg->bad_scope > 0)
		fb_err("warning: " PGSRC_ISSUED_TABLE ": %" PRIu64 " row(s) "
		    "with a scope no check can name: left out",
		    x->pg->bad_scope);
	for (i = 0; i < x->pg->nscopes; i++) {
		sc = &x->pg->scopes[i];
		/* An issued set short of an id could answer it revoked. */
		if (sc->bad > 0) {
			fb_err("warning: " PGSRC_ISSUED_TABLE ": scope %s: %"
			    PRIu64 " id(s) no check can name: the scope is not "
			    "made exact", sc->name, sc->bad);
			continue;
		}
		pgsrc_issued_src(&st, x->pg, sc->name, &u);
		/* Complete as of the snapshot, dated back as the filter is. */
		if (fb_exact_scope(x, set, sc->name, &u, x->pg->cutoff - x->pg_lag,
		    err, errlen) != 0)
			return -1;
	}
	return 0;
}

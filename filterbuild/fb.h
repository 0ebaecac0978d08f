/* fb.h - filterbuild: the subcommands and the helpers they share */
#ifndef REVCHECK_FB_H
#define REVCHECK_FB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"
#include "issued.h"
#include "pair.h"
#include "pgsrc.h"
#include "sign.h"

/* Exit codes of every subcommand. */
#define FB_EXIT_OK	0
#define FB_EXIT_FAIL	1	/* an error, or verification failed */
#define FB_EXIT_USAGE	2	/* bad command line */
#define FB_EXIT_PARTIAL	3	/* build --keep-going published without some
				   inputs (see its report) */

/*
 * A subcommand takes its own argv (argv[0] is the subcommand name) and
 * returns an exit code. Each lives in its own file; main.c dispatches.
 */
int fb_keygen(int argc, char **argv);
int fb_build(int argc, char **argv);
int fb_follow(int argc, char **argv);

/*
 * How long a source row outlives its expires_at (--expiry-grace of build
 * and follow): a verifier accepts a token until its exp plus a leeway
 * (30 s by default) and hosts' clocks differ, so the revocation of a
 * token must last past its exp by more than both.
 */
#define FB_EXPIRY_GRACE_DEFAULT	600
#define FB_EXPIRY_GRACE_MAX	86400

/* What fb_build_source() published. */
struct fb_built {
	uint64_t	 version;
	uint64_t	 cursor;	/* the --source snapshot's change horizon */
	size_t		 keys;
	struct pgsrc_quarantine q;	/* the source's rows left out */
};

/* The source's quarantine report, beside the versions in the output DIR. */
#define FB_QUARANTINE_NAME	"quarantine.json"

/*
 * Writes FB_QUARANTINE_NAME into dir atomically (publish_file): the rows
 * of the source left out because no check can name them, as of version
 * (the base they were counted against) and time at, with q's sample:
 *     {"rows":N,"version":V,"updated_at":T,"sample":[{"scope":S,
 *      "id":I,"why":W},...]}
 * revcheckd serving dir reports it (/v1/status "source_quarantine",
 * revcheckd_source_quarantined_rows). 0, or -1 after a message.
 */
int fb_quarantine_write(const char *dir, const struct pgsrc_quarantine *q,
    uint64_t version, int64_t at);

/*
 * fb_build() for filterbuild follow's re-bases: argv as for build, with
 * --source; on FB_EXIT_OK res says what was published. When enforced is
 * not NULL it is the current version's header with the key counts of what
 * nodes enforce now (the base and its delta chain): the --max-shrink and
 * dropped-scope checks compare with these counts, since the chain has
 * already published the removals a re-base would otherwise seem to make.
 * Same exit codes.
 */
int fb_build_source(int argc, char **argv, const struct ffile_info *enforced,
    struct fb_built *res);
int fb_inspect(int argc, char **argv);

/* ---- exact scopes (build_exact.c, build_exact_pg.c) ---- */

/*
 * The issued sets of one build and what they made: each covered scope
 * whose issued set the build has (--issued files, the source's
 * revcheck_issued) gets an exact structure (exact.h) and its records are
 * left out of the bit array (skip, ascending ranges of the sorted
 * builder's indexes, for pair_opts).
 */
struct fb_exact {
	struct issued_set files;	/* --issued */
	int64_t		 cutoff;	/* --issued-cutoff; 0: per scope */
	struct pgsrc_issued *pg;	/* the source's, or NULL */
	int64_t		 pg_lag;	/* how far behind the source may be */
	bool		 quiet;
	struct pair_range *skip;
	size_t		 nskip;
	unsigned char	**blobs;	/* the structures, owned */
	size_t		 nblobs;
};

/*
 * After the set is sorted and counted: every scope of set is made not
 * exact, then each one an issued set names is made exact (its entry
 * gets the structure, cutoff and |U|; a warning counts the revoked ids
 * missing from the issued set, which are added to it). An issued scope
 * no input covers is left out with a warning; an id list without
 * --issued-cutoff is refused. 0, or -1 with err.
 */
int fb_exact_build(struct fb_exact *x, struct input_set *set, char *err,
    size_t errlen);

/* Scope name made exact over u (a scope --issued made exact stays so). */
int fb_exact_scope(struct fb_exact *x, struct input_set *set,
    const char *name, const struct exact_src *u, int64_t cutoff, char *err,
    size_t errlen);

/* The source's issued scopes made exact (build_exact_pg.c). */
int fb_exact_pg(struct fb_exact *x, struct input_set *set, char *err,
    size_t errlen);

void fb_exact_free(struct fb_exact *x);
int fb_verify(int argc, char **argv);
int fb_audit(int argc, char **argv);

/* Prints "filterbuild: <message>" on stderr. */
void fb_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Prints "filterbuild <cmd>: <message>" and a hint to use --help on
 * stderr and returns FB_EXIT_USAGE.
 */
int fb_usage_err(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Resets getopt so that a subcommand can parse its own argv. Call before
 * the first getopt_long() of a subcommand.
 */
void fb_getopt_reset(void);

/*
 * Loads the signing key at path and adds its public half to ring (so a
 * pair it signs verifies against the ring). The key, or NULL after
 * saying why on stderr.
 */
EVP_PKEY *fb_load_signer(struct sign_ring *ring, const char *path);

/*
 * Parses an --expiry-grace value: "0" or a duration up to
 * FB_EXPIRY_GRACE_MAX; one shorter than JWT_LEEWAY_MAX is warned about
 * on stderr. 0, or -1 when it is not one.
 */
int fb_parse_grace(const char *s, int64_t *out);

/*
 * Parses a --standby-max-lag value (build and follow): a duration from 1 s
 * to FB_STANDBY_LAG_MAX. 0, or -1 when it is not one.
 */
#define FB_STANDBY_LAG_MAX	86400
int fb_parse_standby_lag(const char *s, int64_t *out);

/* ---- build --keep-going (report.c) ---- */

struct fb_rinput {
	char		*name;
	char		*error;		/* NULL when the input was used */
	uint64_t	 records;	/* records in the set after it */
};

struct fb_rscope {
	char		 scope[REVKEY_SCOPE_MAX + 1];
	char		 issuer[FFILE_ISSUER_MAX + 1];
	char		 crl_number[FFILE_CRLNUM_MAX + 1];
	uint64_t	 from_version;
	int64_t		 next_update;
	bool		 kept;		/* false: past nextUpdate, left out */
};

struct fb_report {
	struct fb_rinput *in;
	size_t		 nin, cap;
	size_t		 failed;
	struct fb_rscope *scopes;	/* CRL scopes of the previous version
					   the inputs no longer cover */
	size_t		 nscopes, scap;
	int		 exit_status;
	uint64_t	 version;	/* published, 0 when none */
};

void fb_report_init(struct fb_report *r);
void fb_report_free(struct fb_report *r);

/* Records one input: error NULL when used. 0, or -1 out of memory. */
int fb_report_input(struct fb_report *r, const char *name, const char *error,
    uint64_t records);

/*
 * For each CRL scope of the previous version (its filter f and table t,
 * which the caller has verified: signature and binding) that set does
 * not describe with a CRL of its own (not at all, or only through other
 * issuers' indirect CRLs): keeps it (its records and metadata, flagged
 * kept) when its nextUpdate is after now, else leaves out what its own
 * CRLs covered (input_keep_previous); records either in r and warns on
 * stderr. A scope missing one of its own partitions loses the delegated
 * parts over it (warned). 0, or -1 with err.
 */
int fb_report_keep(struct fb_report *r, struct input_set *set,
    const struct ffile *f, const struct table *t, int64_t now, char *err,
    size_t errlen);

/* Writes the report as JSON to path. 0, or -1 with err. */
int fb_report_write(const struct fb_report *r, const char *path, char *err,
    size_t errlen);

#endif

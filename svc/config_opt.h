/* config_opt.h - the settings table, private to config.c and config_*.c */
#ifndef REVCHECK_SVC_CONFIG_OPT_H
#define REVCHECK_SVC_CONFIG_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum opt_type {
	OPT_STR,	/* a non-empty string */
	OPT_DUR,	/* a duration: seconds or "15m"; "0" when zero_ok */
	OPT_U64,	/* an unsigned integer up to max */
	OPT_UINT,	/* an unsigned int up to max */
	OPT_KEYS,	/* one path or (in the file) an array of paths */
	OPT_NOTCOV,	/* "deny" or "allow" */
	OPT_LEVEL,	/* "err", "warn", "info", "debug" */
	OPT_BOOL,	/* true/false (a bare flag is true) */
	OPT_LOGFMT,	/* "text" or "json" */
	OPT_TOKMODE,	/* "required" or "revocation-only" */
	OPT_CERTFMT,	/* "pem" or "xfcc" */
};

/* Which mode a key makes sense in (config_validate() refuses the rest). */
enum opt_need {
	NEED_ANY = 0,
	NEED_EDGE,	/* needs upstream_filter */
	NEED_AUTHORITY,	/* bounds upstream_check, so needs it */
};

/*
 * One row per setting, the only place its default, range and help live:
 * config_init() applies def, config_from_args() reads key as a flag and
 * config_usage() prints arg, help and def. min and max bound OPT_U64 and
 * OPT_UINT; for OPT_DUR, min 0 allows "0" and a max other than 0 bounds
 * the duration to min..max seconds. A NULL def leaves the zero of
 * config_init(); an OPT_STR def is filled in only after the file and the
 * flags, when neither set it.
 */
struct config_opt {
	const char	*key;		/* config key; the flag is the same with '-' */
	enum opt_type	 type;
	size_t		 off;
	uint64_t	 min;
	uint64_t	 max;
	enum opt_need	 need;
	const char	*def;		/* default, parsed like a value */
	const char	*arg;		/* the flag's value in --help */
	const char	*help;		/* --help text; '\n' continues it */
};

/* The table's most keys: struct config's keys_set has a bit per key. */
#define CONFIG_OPTS_MAX	64

/* The table, in --help order, and its length (<= CONFIG_OPTS_MAX). */
extern const struct config_opt config_opts[];
extern const size_t config_nopts;

/* The bit of key o (a row of config_opts) in struct config's keys_set. */
#define CONFIG_KEY_BIT(o)	(UINT64_C(1) << ((o) - config_opts))

/* The row of a config-file key, or NULL when there is none. */
const struct config_opt *config_find_opt(const char *key);

/*
 * Applies one setting given as text, as from a flag or a scalar in the
 * config file (v NULL: a bare boolean flag), and marks it set in keys_set.
 * Returns 0, or -1 with err naming the key.
 */
int config_set_opt(struct config *c, const struct config_opt *o,
    const char *v, char *err, size_t errlen);

/* True when a and b are not the same string (NULL only equals NULL). */
bool config_str_differs(const char *a, const char *b);

/* Forgets every trusted key (a new list replaces the old one). */
void config_clear_keys(struct config *c);

#endif

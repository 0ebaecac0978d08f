/* lbshim.c - libbloom (Debian libbloom-dev) behind dlopen, for the lookup benchmark */
#include "lbshim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <bloom.h>	/* libbloom's: this file is built without -Ilib */

/*
 * Deep binding keeps libbloom's own calls inside libbloom even if the
 * program exported a bloom_* symbol. AddressSanitizer refuses it; our
 * program exports none (no -rdynamic), so it is only a safety belt.
 */
#ifdef __SANITIZE_ADDRESS__
#define LBSHIM_DEEPBIND 0
#else
#define LBSHIM_DEEPBIND RTLD_DEEPBIND
#endif

typedef int (*lb_init_fn)(struct bloom *, int, double);
typedef int (*lb_key_fn)(struct bloom *, const void *, int);
typedef void (*lb_free_fn)(struct bloom *);

struct lbshim {
	struct bloom	 b;
	lb_key_fn	 add;
	lb_key_fn	 check;
	lb_free_fn	 free_fn;
};

struct lbshim *
lbshim_new(int entries, double p, char *err, size_t errlen)
{
	static void *lib;
	struct lbshim *s;
	lb_init_fn init;

	if (lib == NULL)
		lib = dlopen("libbloom.so.1", RTLD_NOW | RTLD_LOCAL |
		    LBSHIM_DEEPBIND);
	if (lib == NULL) {
		snprintf(err, errlen, "libbloom: %s", dlerror());
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "libbloom: out of memory");
		return NULL;
	}
	init = (lb_init_fn)dlsym(lib, "bloom_init");
	s->add = (lb_key_fn)dlsym(lib, "bloom_add");
	s->check = (lb_key_fn)dlsym(lib, "bloom_check");
	s->free_fn = (lb_free_fn)dlsym(lib, "bloom_free");
	if (init == NULL || s->add == NULL || s->check == NULL ||
	    s->free_fn == NULL) {
		snprintf(err, errlen, "libbloom: missing symbol");
		free(s);
		return NULL;
	}
	if (init(&s->b, entries, p) != 0) {
		snprintf(err, errlen, "libbloom: bloom_init(%d, %g) failed",
		    entries, p);
		free(s);
		return NULL;
	}
	return s;
}

int
lbshim_add(struct lbshim *s, const void *key, int len)
{
	return s->add(&s->b, key, len);
}

int
lbshim_check(struct lbshim *s, const void *key, int len)
{
	return s->check(&s->b, key, len);
}

size_t
lbshim_bytes(const struct lbshim *s)
{
	return (size_t)s->b.bytes;
}

long
lbshim_bits(const struct lbshim *s)
{
	return (long)s->b.bits;
}

int
lbshim_hashes(const struct lbshim *s)
{
	return s->b.hashes;
}

void
lbshim_free(struct lbshim *s)
{
	if (s == NULL)
		return;
	s->free_fn(&s->b);
	free(s);
}

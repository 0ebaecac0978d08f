/* lbshim.h - libbloom (Debian libbloom-dev) behind dlopen, for the lookup benchmark */
#ifndef REVCHECK_BENCH_LBSHIM_H
#define REVCHECK_BENCH_LBSHIM_H

#include <stddef.h>

/*
 * libbloom exports bloom_init, bloom_add, bloom_check and bloom_free, the
 * same names as lib/bloom.c. Linking both into one program would bind
 * every call to one of them, so libbloom is loaded with dlopen (local,
 * deep binding) and reached only through these wrappers. lbshim.c is
 * compiled without -Ilib so that <bloom.h> is libbloom's header.
 */
struct lbshim;

/*
 * Loads libbloom and creates a filter for entries keys at error rate p.
 * Returns the filter, or NULL with err saying why (library missing,
 * symbol missing, bloom_init failed).
 */
struct lbshim *lbshim_new(int entries, double p, char *err, size_t errlen);

/* libbloom's bloom_add; 0 when the key was new, 1 when it may have been present. */
int lbshim_add(struct lbshim *s, const void *key, int len);

/* libbloom's bloom_check: 1 possibly present, 0 absent. */
int lbshim_check(struct lbshim *s, const void *key, int len);

/* Bytes of the bit array, bits, and hashes per key. */
size_t lbshim_bytes(const struct lbshim *s);
long lbshim_bits(const struct lbshim *s);
int lbshim_hashes(const struct lbshim *s);

/* Frees the filter (the library stays loaded). Safe on NULL. */
void lbshim_free(struct lbshim *s);

#endif

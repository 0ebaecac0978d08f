/* jwtverify.c - uncached JWT verification cost: parse and verify one token N times */
/*
 * Usage: jwtverify JWKS TOKEN ISSUER AUDIENCE N
 * Verifies TOKEN (made by PyJWT) against the JWKS the way revcheckd does
 * on a cache miss (jwt_parse, jwt_verify, jwt_free), N times, and prints
 *   alg=ES256 n=N cpu_seconds=S us_per_verify=U wall_us_per_verify=W
 * us_per_verify divides the process's user CPU time, as `openssl speed`
 * does by default (its -elapsed switches to wall-clock time): on a
 * loaded machine wall-clock time counts other processes' turns too.
 * Exit 1 when the token does not verify (a benchmark of a refusal would
 * measure the wrong thing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "jwks.h"
#include "jwt.h"
#include "util.h"

/* User CPU seconds of this process so far. */
static double
user_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) == -1)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
}

int
main(int argc, char **argv)
{
	struct jwks keys;
	struct jwt_issuer is;
	struct jwt t;
	enum jwt_verdict why;
	struct timespec a, b;
	const char *aud[1];
	unsigned char *buf = NULL;
	size_t len = 0;
	uint64_t n, i;
	char err[512];
	double secs, cpu0, cpu;
	int a_;

	if (argc != 6 || util_parse_u64(argv[5], 100000000, &n) == -1 ||
	    n == 0) {
		fprintf(stderr, "usage: jwtverify JWKS TOKEN ISSUER AUDIENCE N\n");
		return 2;
	}
	if (util_read_file(argv[1], JWKS_MAX_LEN, &buf, &len, err,
	    sizeof(err)) == -1 || jwks_parse(&keys, (const char *)buf, len,
	    argv[1], err, sizeof(err)) == -1) {
		fprintf(stderr, "jwtverify: %s\n", err);
		return 2;
	}
	free(buf);
	aud[0] = argv[4];
	memset(&is, 0, sizeof(is));
	is.issuer = argv[3];
	is.keys = &keys;
	is.audiences = aud;
	is.naud = 1;
	is.leeway = 30;
	for (a_ = JWA_INVALID + 1; a_ < JWA_COUNT; a_++)
		if ((JWA_BIT(a_) & JWA_HS_MASK) == 0)
			is.algs |= JWA_BIT(a_);
	cpu0 = user_seconds();
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		if (jwt_parse(&t, argv[2], strlen(argv[2]), err,
		    sizeof(err)) == -1 ||
		    jwt_verify(&t, &is, util_now(), &why, err,
		    sizeof(err)) == -1) {
			fprintf(stderr, "jwtverify: %s\n", err);
			return 1;
		}
		if (i + 1 == n)
			printf("alg=%s ", t.alg);
		jwt_free(&t);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	cpu = user_seconds() - cpu0;
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) /
	    1e9;
	printf("n=%llu cpu_seconds=%.3f us_per_verify=%.2f "
	    "wall_us_per_verify=%.2f\n", (unsigned long long)n, cpu,
	    cpu * 1e6 / (double)n, secs * 1e6 / (double)n);
	jwks_free(&keys);
	return 0;
}

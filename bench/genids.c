/* genids.c - writes benchmark id lists: plain text for filterbuild, RESP SADD for redis-cli --pipe */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Usage: genids N DOMAIN text|resp [KEY]
 *
 * Id i of a domain is "tok-" and the 16 hex digits of splitmix64(i |
 * DOMAIN << 63), the ids bench/lookup.c uses: distinct, and the two
 * domains never overlap. text: one id per line. resp: the same ids as
 * SADD KEY id... commands of up to 1000 members each (Redis protocol,
 * the input redis-cli --pipe expects); KEY defaults to "revoked".
 */

#define ID_LEN		20
#define SADD_MEMBERS	1000

static uint64_t
splitmix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static void
make_id(char out[ID_LEN], uint64_t i, int domain)
{
	static const char hexd[] = "0123456789abcdef";
	uint64_t v = splitmix64(i | ((uint64_t)domain << 63));
	int j;

	memcpy(out, "tok-", 4);
	for (j = 15; j >= 0; j--) {
		out[4 + j] = hexd[v & 15];
		v >>= 4;
	}
}

static int
parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

int
main(int argc, char **argv)
{
	uint64_t n, domain, i, chunk, j;
	const char *key = "revoked";
	char id[ID_LEN];
	int resp;

	if (argc < 4 || argc > 5 || parse_u64(argv[1], &n) != 0 ||
	    parse_u64(argv[2], &domain) != 0 || domain > 1 ||
	    (strcmp(argv[3], "text") != 0 && strcmp(argv[3], "resp") != 0)) {
		fprintf(stderr, "usage: genids N DOMAIN(0|1) text|resp [KEY]\n");
		return 2;
	}
	resp = strcmp(argv[3], "resp") == 0;
	if (argc == 5)
		key = argv[4];
	for (i = 0; i < n; i += chunk) {
		chunk = resp ? (n - i < SADD_MEMBERS ? n - i : SADD_MEMBERS) : 1;
		if (resp)
			printf("*%" PRIu64 "\r\n$4\r\nSADD\r\n$%zu\r\n%s\r\n",
			    chunk + 2, strlen(key), key);
		for (j = 0; j < chunk; j++) {
			make_id(id, i + j, (int)domain);
			if (resp)
				printf("$%d\r\n%.*s\r\n", ID_LEN, ID_LEN, id);
			else
				printf("%.*s\n", ID_LEN, id);
		}
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "genids: write error: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* test_authzcred.c - tests of /v1/authz's certificate headers and identity escaping */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../svc/authzcred.h"
#include "../svc/checkio.h"
#include "util.h"

static char *
corpus_pem(const char *name)
{
	char path[4096], err[256];
	unsigned char *buf;
	size_t len;
	const char *src = getenv("REVCHECK_SRC");

	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/cert/%s",
	    src != NULL ? src : ".", name);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	buf = realloc(buf, len + 1);
	cr_assert_not_null(buf);
	buf[len] = '\0';
	return (char *)buf;
}

/* URL-encoding of every byte but unreserved ones, as Envoy's Cert. */
static char *
urlenc(const char *s)
{
	char *o = malloc(3 * strlen(s) + 1), *p = o;

	cr_assert_not_null(o);
	for (; *s != '\0'; s++) {
		if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		    (*s >= '0' && *s <= '9') || *s == '-')
			*p++ = *s;
		else
			p += snprintf(p, 4, "%%%02X", (unsigned char)*s);
	}
	*p = '\0';
	return o;
}

/* Escaping: visible ASCII but '%' as is, everything else %XX. */
Test(authzcred, escape)
{
	char out[AUTHZCRED_ID_BUF], *big;

	cr_assert_eq(authzcred_escape(out, "alice@example", 13), 0);
	cr_assert_str_eq(out, "alice@example");
	cr_assert_eq(authzcred_escape(out, "a b\r\nX-Evil: 1%\x7f\xc3\xa9\0z",
	    20), 0);
	cr_assert_str_eq(out, "a%20b%0D%0AX-Evil:%201%25%7F%C3%A9%00z");
	big = malloc(AUTHZCRED_ID_MAX + 1);
	cr_assert_not_null(big);
	memset(big, '\n', AUTHZCRED_ID_MAX + 1);
	cr_assert_eq(authzcred_escape(out, big, AUTHZCRED_ID_MAX), 0);
	cr_assert_eq(strlen(out), 3 * AUTHZCRED_ID_MAX);
	cr_assert_eq(authzcred_escape(out, big, AUTHZCRED_ID_MAX + 1), -1);
	cr_assert_str_eq(out, "");
	free(big);
}

/* nginx's form: URL-encoded PEM; the subject is the first certificate's. */
Test(authzcred, pem_subject)
{
	struct revkey keys[CHECKIO_CHAIN_MAX_CERTS];
	char subj[AUTHZCRED_ID_BUF], err[256], *pem = corpus_pem("ca-sub.pem");
	char *v = urlenc(pem);
	size_t n = 0;

	cr_assert_eq(authzcred_cert_keys(v, false, keys, 8, &n, subj, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(subj, "CN=Sub%20CA,OU=Unit%20Two+OU=Unit%20One,O=Example");
	free(v);
	free(pem);
}

/* XFCC: every element's Cert and Chain checked, the last one's subject. */
Test(authzcred, xfcc_last_element)
{
	struct revkey keys[CHECKIO_CHAIN_MAX_CERTS];
	char subj[AUTHZCRED_ID_BUF], err[256], *hdr;
	char *a = corpus_pem("dp-uri.pem"), *b = corpus_pem("dp-rel.pem");
	char *ea = urlenc(a), *eb = urlenc(b), *eab;
	size_t n = 0, cap = 2 * (strlen(ea) + strlen(eb)) + 256;

	eab = malloc(strlen(ea) + strlen(eb) + 1);
	cr_assert_not_null(eab);
	snprintf(eab, strlen(ea) + strlen(eb) + 1, "%s%s", eb, ea);
	hdr = malloc(cap);
	cr_assert_not_null(hdr);
	snprintf(hdr, cap, "Hash=00;Cert=\"%s\";Subject=\"CN=forged\","
	    "By=spiffe://gw;Cert=\"%s\";Chain=\"%s\"", ea, eb, eab);
	cr_assert_eq(authzcred_cert_keys(hdr, true, keys, 8, &n, subj, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 4);	/* a; then b and its chain b, a */
	cr_assert_str_eq(subj, "CN=leaf%20dp-rel,O=Example,C=FR");
	/* The same value read as PEM is not a certificate. */
	n = 0;
	cr_assert_eq(authzcred_cert_keys(hdr, false, keys, 8, &n, subj, err,
	    sizeof(err)), -1);
	/* No Cert in the last element: refused, whatever came before. */
	snprintf(hdr, cap, "Cert=\"%s\",Hash=00", ea);
	n = 0;
	cr_assert_eq(authzcred_cert_keys(hdr, true, keys, 8, &n, subj, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "no Cert") != NULL, "%s", err);
	/* A Cert that is not PEM. */
	n = 0;
	cr_assert_eq(authzcred_cert_keys("Cert=MIIB", true, keys, 8, &n, subj,
	    err, sizeof(err)), -1);
	cr_assert(strstr(err, "not PEM") != NULL, "%s", err);
	/* More certificates than the cap. */
	snprintf(hdr, cap, "Cert=\"%s\";Chain=\"%s%s%s%s\"", ea, ea, ea, ea, ea);
	n = 0;
	cr_assert_eq(authzcred_cert_keys(hdr, true, keys, 4, &n, subj, err,
	    sizeof(err)), -1);
	free(hdr);
	free(eab);
	free(ea);
	free(eb);
	free(a);
	free(b);
}

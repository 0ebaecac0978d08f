/* authzcred.h - /v1/authz credentials from a gateway's headers, and the identity headers of an allow */
#ifndef REVCHECK_SVC_AUTHZCRED_H
#define REVCHECK_SVC_AUTHZCRED_H

#include <stdbool.h>
#include <stddef.h>

#include "revkey.h"

/* Bytes of a client-certificate header value, whatever its format. */
#define AUTHZCRED_CERT_MAX	(64 * 1024)

/*
 * Bytes of a claim or subject before escaping; a longer one is not sent
 * (its header is left out). Escaped, a value takes at most three times
 * that, so a buffer of AUTHZCRED_ID_BUF bytes always holds it.
 */
#define AUTHZCRED_ID_MAX	1024
#define AUTHZCRED_ID_BUF	(3 * AUTHZCRED_ID_MAX + 1)

/* The identity headers of an allowed /v1/authz request. */
#define AUTHZCRED_HDR_SUBJECT		"X-Revcheck-Subject"
#define AUTHZCRED_HDR_ISSUER		"X-Revcheck-Issuer"
#define AUTHZCRED_HDR_CERT_SUBJECT	"X-Revcheck-Cert-Subject"

/*
 * The keys of the client certificate (and of the chain, when the header
 * carries one) in header value v, appended to keys[*n..max); every
 * certificate is a credential of its own. With xfcc false v is URL-encoded
 * PEM, one or more blocks (nginx's $ssl_client_escaped_cert), or bare
 * base64 DER, several separated by commas (Traefik). With xfcc true v is
 * Envoy's x-forwarded-client-cert (lib/xfcc.h): the last element is the
 * immediate client and must have a Cert; the Cert and Chain of every
 * element are checked. When subj is not NULL it receives the client
 * certificate's subject (the first certificate; in XFCC the last
 * element's Cert), RFC 4514 text escaped by authzcred_escape, or "" when
 * it is longer than AUTHZCRED_ID_MAX; subj must hold AUTHZCRED_ID_BUF
 * bytes. Returns 0, or -1 with err (safe to show: never the input) when
 * v is empty, longer than AUTHZCRED_CERT_MAX, malformed, holds a
 * certificate that does not parse or more than max keys in all; *n is
 * then undefined.
 */
int authzcred_cert_keys(const char *v, bool xfcc, struct revkey *keys,
    size_t max, size_t *n, char *subj, char *err, size_t errlen);

/*
 * Writes in[0..len) into out[AUTHZCRED_ID_BUF] percent-encoded: every
 * byte outside visible ASCII (0x21-0x7e), and '%' itself, as "%XX"
 * (upper-case hex); so no CR, LF, blank, control or non-ASCII byte is
 * ever sent raw, and a URL decoder gives back the exact bytes. Returns
 * 0, or -1 with out "" when len exceeds AUTHZCRED_ID_MAX.
 */
int authzcred_escape(char *out, const char *in, size_t len);

#endif

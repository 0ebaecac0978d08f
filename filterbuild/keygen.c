/* keygen.c - filterbuild keygen: a new Ed25519 signing key and its key id */
#include <getopt.h>
#include <stdio.h>

#include <openssl/evp.h>

#include "fb.h"
#include "sign.h"
#include "util.h"

static void
keygen_usage(FILE *fp)
{
	fputs("usage: filterbuild keygen --out KEY.pem [--pub PUB.pem] [--force]\n"
	    "\n"
	    "Creates an Ed25519 signing key. KEY.pem (PKCS#8 PEM) is created with\n"
	    "mode 0600 and never replaced unless --force; PUB.pem gets the public\n"
	    "key (mode 0644). Prints the key id: the hex SHA-256 of the raw\n"
	    "32-byte public key, as filter headers record it.\n"
	    "\n"
	    "  --out KEY.pem   private key file to create\n"
	    "  --pub PUB.pem   also write the public key\n"
	    "  --force         replace existing files\n"
	    "  --help          this text\n", fp);
}

int
fb_keygen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out",   required_argument, NULL, 'o' },
		{ "pub",   required_argument, NULL, 'p' },
		{ "force", no_argument,       NULL, 'f' },
		{ "help",  no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *pub = NULL;
	bool force = false;
	unsigned char id[SIGN_KEYID_LEN];
	char hex[2 * SIGN_KEYID_LEN + 1], err[512];
	EVP_PKEY *key;
	int c;

	fb_getopt_reset();
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'p': pub = optarg; break;
		case 'f': force = true; break;
		case 'h': keygen_usage(stdout); return FB_EXIT_OK;
		default: return fb_usage_err("keygen", "bad option");
		}
	}
	if (optind != argc)
		return fb_usage_err("keygen", "unexpected argument '%s'",
		    argv[optind]);
	if (out == NULL)
		return fb_usage_err("keygen", "--out KEY.pem is required");

	key = sign_keygen();
	if (key == NULL) {
		fb_err("keygen: key generation failed");
		return FB_EXIT_FAIL;
	}
	if (sign_save(key, out, pub, force, err, sizeof(err)) != 0 ||
	    sign_key_id(key, id) != 0) {
		fb_err("keygen: %s", err);
		EVP_PKEY_free(key);
		return FB_EXIT_FAIL;
	}
	EVP_PKEY_free(key);
	util_hex(hex, id, sizeof(id));
	printf("%s\n", hex);
	return FB_EXIT_OK;
}

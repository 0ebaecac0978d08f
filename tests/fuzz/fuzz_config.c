/* fuzz_config.c - the revcheckd config file (JSON with comments) on hostile bytes */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init("fuzz_config", LOG_LVL_ERR);
	return 0;
}

/* What every load leaves, whatever the input: sane, bounded settings. */
static void
check_settings(const struct config *c)
{
	struct sockaddr_storage ss;
	unsigned sl;
	size_t i;

	if (c->ntrusted > CONFIG_MAX_KEYS)
		abort();
	for (i = 0; i < c->ntrusted; i++)
		if (c->trusted_keys[i] == NULL || c->trusted_keys[i][0] == '\0')
			abort();
	if (c->max_batch == 0 || c->max_body < 64 || c->conn_timeout == 0 ||
	    c->max_conns == 0 || c->max_conns_per_ip == 0 ||
	    c->poll_interval == 0 || c->max_age < 0 || c->clock_skew < 0 ||
	    c->max_lag < 0 || c->sync_interval < 1)
		abort();
	if (c->listen != NULL)
		(void)config_parse_listen(c->listen, &ss, &sl);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[512];

	config_init(&c);
	err[0] = '\0';
	if (config_load_buf(&c, (const char *)data, size, "fuzz", err,
	    sizeof(err)) == -1) {
		/* Every failure names the document. */
		if (strncmp(err, "fuzz", 4) != 0)
			abort();
	} else {
		/*
		 * Applied twice, as a flag over the file would: every
		 * string set the first time is replaced, never leaked.
		 */
		if (config_load_buf(&c, (const char *)data, size, "fuzz",
		    err, sizeof(err)) == -1)
			abort();
	}
	/* A failed load may leave some settings; validate copes either way. */
	check_settings(&c);
	err[0] = '\0';
	if (config_validate(&c, err, sizeof(err)) == -1) {
		if (err[0] == '\0')
			abort();
	} else if (c.ntrusted == 0 ||
	    (c.filter_dir == NULL) == (c.upstream_filter == NULL) ||
	    c.max_conns_per_ip > c.max_conns)
		abort();	/* validate let through what it must refuse */
	config_free(&c);
	return 0;
}

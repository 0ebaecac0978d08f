/* test_config.c - revcheckd settings: file, flags, defaults, errors that name the key */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../svc/config.h"
#include "netaddr.h"

/* argv arrays of writable strings (string literals are const here). */
static char **
mkargv(int n, const char *const *src)
{
	char **a = calloc((size_t)n + 1, sizeof(*a));
	int i;

	cr_assert_not_null(a);
	for (i = 0; i < n; i++)
		cr_assert_not_null(a[i] = strdup(src[i]));
	return a;
}

static void
freeargv(char **a)
{
	size_t i;

	for (i = 0; a[i] != NULL; i++)
		free(a[i]);
	free(a);
}

static int
load(struct config *c, const char *json, char *err, size_t errlen)
{
	return config_load_buf(c, json, strlen(json), "test.json", err, errlen);
}

Test(config, safe_defaults)
{
	struct config c;
	char err[256];
	const char *const argv_src[] = { "revcheckd", "--filter-dir", "/f", "--trusted-key", "/k.pub" };
	char **argv = mkargv(5, argv_src);

	config_init(&c);
	cr_assert_eq(config_from_args(&c, 5, argv, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_str_eq(c.listen, "127.0.0.1:8080");
	cr_assert_str_eq(c.state_dir, CONFIG_DEFAULT_STATE);
	cr_assert_str_eq(c.authz_cert_header, "X-SSL-Client-Cert");
	cr_assert_gt(c.conn_timeout, 0);
	cr_assert_gt(c.max_conns, 0);
	cr_assert_gt(c.max_conns_per_ip, 0);
	cr_assert_gt(c.max_body, 0);
	cr_assert_eq(c.max_batch, 10000);
	cr_assert_eq(c.clock_skew, 300);
	cr_assert_eq(c.authz_not_covered_allow, false);
	cr_assert_eq(c.authz_cert_xfcc, false);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	freeargv(argv);
	config_free(&c);
}

/*
 * The staleness limits are on without a config file: a filter signed for
 * long is refused after max_age, and an edge that knows of a version or
 * delta it cannot load stops answering after max_lag, as the example
 * configurations set them (2h, 5m).
 */
Test(config, staleness_limits_on_by_default)
{
	struct config c;
	char err[256];
	const char *const argv_src[] = { "revcheckd", "--upstream-filter",
	    "https://o.example/v1/filter", "--trusted-key", "/k.pub" };
	char **argv = mkargv(5, argv_src);

	config_init(&c);
	cr_assert_eq(c.max_age, 7200);
	cr_assert_eq(c.max_lag, 300);
	cr_assert_eq(config_from_args(&c, 5, argv, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(c.max_age, 7200);
	cr_assert_eq(c.max_lag, 300);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
	/* 0 still turns either off, when said. */
	config_init(&c);
	cr_assert_eq(load(&c, "{\"max_age\": 0, \"max_lag\": \"0\"}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_age, 0);
	cr_assert_eq(c.max_lag, 0);
	freeargv(argv);
	config_free(&c);
}

/* Every form of a boolean flag that --help and revcheckd(8) show. */
Test(config, boolean_flags_take_the_forms_help_shows)
{
	static const struct {
		const char *args[4];
		int n;
		bool fast, insecure;
	} cases[] = {
		{ { "--fast-path", "false" }, 2, false, false },
		{ { "--fast-path", "true" }, 2, true, false },
		{ { "--fast-path=false" }, 1, false, false },
		{ { "--fast-path" }, 1, true, false },
		{ { "--fast-path", "false", "--max-batch", "9" }, 4, false,
		    false },
		{ { "--upstream-insecure-http", "true" }, 2, true, true },
		{ { "--upstream-insecure-http", "false" }, 2, true, false },
		{ { "--upstream-insecure-http" }, 1, true, true },
		{ { "--upstream-insecure-http=false", "--fast-path", "false" },
		    3, false, false },
	};
	struct config c;
	char err[256];
	const char *src[8];
	char **argv;
	size_t i;
	int j, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = 0;
		src[n++] = "revcheckd";
		for (j = 0; j < cases[i].n; j++)
			src[n++] = cases[i].args[j];
		argv = mkargv(n, src);
		config_init(&c);
		cr_assert_eq(config_from_args(&c, n, argv, err, sizeof(err)),
		    0, "case %zu (%s %s): %s", i, cases[i].args[0],
		    cases[i].args[1] ? cases[i].args[1] : "", err);
		cr_assert_eq(c.fast_path, cases[i].fast, "case %zu", i);
		cr_assert_eq(c.upstream_insecure_http, cases[i].insecure,
		    "case %zu", i);
		config_free(&c);
		freeargv(argv);
	}
	/* Any other word after a boolean flag is still a stray argument. */
	src[0] = "revcheckd";
	src[1] = "--fast-path";
	src[2] = "no";
	argv = mkargv(3, src);
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 3, argv, err, sizeof(err)), -1);
	cr_assert(c.usage_error);
	cr_assert(strstr(err, "\"no\"") != NULL, "%s", err);
	config_free(&c);
	freeargv(argv);
}

Test(config, comments_and_values)
{
	struct config c;
	char err[256];
	const char *j =
	    "// a comment \"with quotes\"\n"
	    "{ \"listen\": \"[::1]:9000\", /* block\n comment */\n"
	    "  \"filter_dir\": \"/srv/f // not a comment\",\n"
	    "  \"trusted_key\": [\"/a.pub\", \"/b.pub\"],\n"
	    "  \"max_age\": \"15m\", \"clock_skew\": 10,\n"
	    "  \"max_batch\": 5, \"authz_not_covered\": \"allow\",\n"
	    "  \"_comment\": \"ignored\" }\n";

	config_init(&c);
	cr_assert_eq(load(&c, j, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c.listen, "[::1]:9000");
	cr_assert_str_eq(c.filter_dir, "/srv/f // not a comment");
	cr_assert_eq(c.ntrusted, 2);
	cr_assert_str_eq(c.trusted_keys[1], "/b.pub");
	cr_assert_eq(c.max_age, 900);
	cr_assert_eq(c.clock_skew, 10);
	cr_assert_eq(c.max_batch, 5);
	cr_assert(c.authz_not_covered_allow);
	config_free(&c);
}

Test(config, unknown_key_is_named)
{
	struct config c;
	char err[256];

	config_init(&c);
	cr_assert_eq(load(&c, "{\"filter_dri\": \"/x\"}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "filter_dri") != NULL, "%s", err);
	cr_assert(strstr(err, "test.json") != NULL, "%s", err);
	config_free(&c);
}

Test(config, wrong_type_and_bad_value_are_named)
{
	struct config c;
	char err[256];

	config_init(&c);
	cr_assert_eq(load(&c, "{\"max_batch\": \"lots\"}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "max_batch") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"listen\": 8080}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "listen") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"max_age\": -5}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "max_age") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"max_body\": 1.5}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "max_body") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"authz_not_covered\": \"maybe\"}", err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "authz_not_covered") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"trusted_key\": [1]}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "trusted_key") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"conn_timeout\": 0}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "conn_timeout") != NULL, "%s", err);
	config_free(&c);
}

Test(config, syntax_error_has_line)
{
	struct config c;
	char err[256];

	config_init(&c);
	cr_assert_eq(load(&c, "// x\n{\n \"listen\": \"a\",\n ]\n}", err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "line 4") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{} {}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "trailing") != NULL, "%s", err);
	cr_assert_eq(load(&c, "[1]", err, sizeof(err)), -1);
	cr_assert_eq(load(&c, "{ /* open", err, sizeof(err)), -1);
	cr_assert(strstr(err, "unterminated") != NULL, "%s", err);
	config_free(&c);
}

Test(config, flags_override_the_file)
{
	struct config c;
	char err[256], path[] = "/tmp/revcheck-test-config-XXXXXX";
	int fd = mkstemp(path);
	const char *j = "{\"listen\": \"127.0.0.1:1\", \"filter_dir\": "
	    "\"/file\", \"trusted_key\": [\"/f1\", \"/f2\"], \"max_batch\": 7}";
	const char *const argv_src[] = { "revcheckd", "-c", path, "--listen", "127.0.0.1:2", "--trusted-key", "/cli" };
	char **argv = mkargv(7, argv_src);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, j, strlen(j)), (ssize_t)strlen(j));
	close(fd);
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 7, argv, err, sizeof(err)), 0, "%s",
	    err);
	unlink(path);
	cr_assert_str_eq(c.listen, "127.0.0.1:2");
	cr_assert_str_eq(c.filter_dir, "/file");
	cr_assert_eq(c.ntrusted, 1);
	cr_assert_str_eq(c.trusted_keys[0], "/cli");
	cr_assert_eq(c.max_batch, 7);
	cr_assert_str_eq(c.config_file, path);
	freeargv(argv);
	config_free(&c);
}

Test(config, actions_and_bad_flags)
{
	struct config c;
	char err[256];
	const char *const a1_src[] = { "revcheckd", "--check-config" };
	char **a1 = mkargv(2, a1_src);
	const char *const a2_src[] = { "revcheckd", "--version" };
	char **a2 = mkargv(2, a2_src);
	const char *const a3_src[] = { "revcheckd", "--no-such-flag" };
	char **a3 = mkargv(2, a3_src);
	const char *const a4_src[] = { "revcheckd", "--max-batch", "0" };
	char **a4 = mkargv(3, a4_src);
	const char *const a5_src[] = { "revcheckd", "stray" };
	char **a5 = mkargv(2, a5_src);

	config_init(&c);
	cr_assert_eq(config_from_args(&c, 2, a1, err, sizeof(err)), 0);
	cr_assert_eq(c.action, CONFIG_CHECK);
	config_free(&c);
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 2, a2, err, sizeof(err)), 0);
	cr_assert_eq(c.action, CONFIG_VERSION);
	config_free(&c);
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 2, a3, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no-such-flag") != NULL, "%s", err);
	config_free(&c);
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 3, a4, err, sizeof(err)), -1);
	cr_assert(strstr(err, "max-batch") != NULL, "%s", err);
	config_free(&c);
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 2, a5, err, sizeof(err)), -1);
	freeargv(a1);
	freeargv(a2);
	freeargv(a3);
	freeargv(a4);
	freeargv(a5);
	config_free(&c);
}

Test(config, validate_names_the_key)
{
	struct config c;
	char err[256];

	config_init(&c);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "filter_dir") != NULL, "%s", err);
	c.filter_dir = strdup("/f");
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "trusted_key") != NULL, "%s", err);
	c.trusted_keys[c.ntrusted++] = strdup("/k");
	c.listen = strdup("localhost");
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "listen") != NULL, "%s", err);
	free(c.listen);
	c.listen = strdup("127.0.0.1:80");
	c.upstream_filter = strdup("https://o/v1/filter");
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "upstream_filter") != NULL, "%s", err);
	free(c.filter_dir);
	c.filter_dir = NULL;
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	c.authz_cert_header = strdup("X-Bad Header");
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "authz_cert_header") != NULL, "%s", err);
	/* Envoy's header read as PEM would refuse every request. */
	free(c.authz_cert_header);
	c.authz_cert_header = strdup("x-forwarded-client-cert");
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "authz_cert_header_format") != NULL, "%s", err);
	c.authz_cert_xfcc = true;
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
}

Test(config, authz_cert_header_format)
{
	struct config c;
	char err[256];

	config_init(&c);
	cr_assert_eq(c.authz_cert_xfcc, false);
	cr_assert_eq(load(&c, "{\"authz_cert_header\": \"X-Forwarded-Client-Cert\","
	    " \"authz_cert_header_format\": \"xfcc\"}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert(c.authz_cert_xfcc);
	config_free(&c);
	config_init(&c);
	cr_assert_eq(load(&c, "{\"authz_cert_header_format\": \"envoy\"}", err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "authz_cert_header_format") != NULL, "%s", err);
	config_free(&c);
}

Test(config, listen_addresses)
{
	struct sockaddr_storage ss;
	unsigned sl;

	cr_assert_eq(config_parse_listen("127.0.0.1:8080", &ss, &sl), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 8080);
	cr_assert_eq(config_parse_listen("[::1]:443", &ss, &sl), 0);
	cr_assert_eq(ss.ss_family, AF_INET6);
	cr_assert_eq(config_parse_listen("[::]:0", &ss, &sl), 0);
	cr_assert_eq(config_parse_listen(":9", &ss, &sl), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr),
	    INADDR_LOOPBACK);
	cr_assert_eq(config_parse_listen("9", &ss, &sl), 0);
	cr_assert_eq(config_parse_listen("::1:80", &ss, &sl), -1);
	cr_assert_eq(config_parse_listen("1.2.3.4:65536", &ss, &sl), -1);
	cr_assert_eq(config_parse_listen("1.2.3.4:", &ss, &sl), -1);
	cr_assert_eq(config_parse_listen("[::1]", &ss, &sl), -1);
	cr_assert_eq(config_parse_listen("300.1.1.1:80", &ss, &sl), -1);
	/* Host names resolve; "localhost" is its IPv4 address. */
	cr_assert_eq(config_parse_listen("localhost:8081", &ss, &sl), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(sl, sizeof(struct sockaddr_in));
	cr_assert_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 8081);
	cr_assert_eq(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr),
	    INADDR_LOOPBACK);
	cr_assert_eq(config_parse_listen("no-such-host.invalid:80", &ss, &sl),
	    -1);
}

/* Each way a listen address is wrong is named, with what is wanted. */
Test(config, listen_errors_say_what_is_wanted)
{
	static const char *const cases[][2] = {
		{ "127.0.0.1:99999", "is not a number from 0 to 65535" },
		{ "127.0.0.1:", "is not a number from 0 to 65535" },
		{ "127.0.0.1:http", "is not a number from 0 to 65535" },
		{ "::1:80", "needs brackets ([::1]:PORT)" },
		{ "[::1]", "needs :PORT after it" },
		{ "[1.2.3.4]:80", "\"1.2.3.4\" is not an IPv6 address" },
		{ "no-such-host.invalid:80", "does not resolve" },
	};
	struct sockaddr_storage ss;
	char err[256];
	unsigned sl;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(netaddr_parse_listen(cases[i][0], &ss, &sl, err,
		    sizeof(err)), -1, "%s", cases[i][0]);
		cr_assert(strncmp(err, "listen: \"", 9) == 0, "%s", err);
		cr_assert(strstr(err, cases[i][1]) != NULL, "%s: %s",
		    cases[i][0], err);
	}
}

Test(config, usage_errors_are_marked)
{
	static const char *const bad[][3] = {
		{ "revcheckd", "--bogus", NULL },
		{ "revcheckd", "stray", NULL },
		{ "revcheckd", "--max-batch", "many" },
	};
	const char *const good_src[] = { "revcheckd", "-c", "/nonexistent.json" };
	struct config c;
	char err[256];
	char **a;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_init(&c);
		a = mkargv(bad[i][2] != NULL ? 3 : 2, bad[i]);
		cr_assert_eq(config_from_args(&c, bad[i][2] != NULL ? 3 : 2, a,
		    err, sizeof(err)), -1, "%s accepted", bad[i][1]);
		cr_assert(c.usage_error, "%s: not a usage error", bad[i][1]);
		freeargv(a);
		config_free(&c);
	}
	/* A file that cannot be read is a failure, not a usage error. */
	config_init(&c);
	a = mkargv(3, good_src);
	cr_assert_eq(config_from_args(&c, 3, a, err, sizeof(err)), -1);
	cr_assert(!c.usage_error);
	freeargv(a);
	config_free(&c);
}

Test(config, syntax_errors_say_what_was_expected)
{
	static const struct { const char *json, *want; } cases[] = {
		{ "{\n \"listen\": \"a\",\n}", "line 3, column 1: JSON syntax "
		    "error: expected another member after ','" },
		{ "{ 'listen': 1 }", "column 3: JSON syntax error: expected a "
		    "key in double quotes" },
		{ "{ listen: 1 }", "column 3: JSON syntax error: expected a "
		    "key: a string" },
		{ "{ \"listen\" 1 }", "column 12: JSON syntax error: expected "
		    "':'" },
		{ "{ \"listen\": }", "column 13: JSON syntax error: expected a "
		    "value" },
		{ "{ \"a\": 1 \"b\": 2 }", "column 10: JSON syntax error: "
		    "expected ',' between members" },
		{ "{ \"a\": [1, 2 }", "column 14: JSON syntax error: expected "
		    "',' or ']'" },
		{ "{ \"a\": \"x", "expected a closing '\"'" },
		{ "{ \"a\": 1", "expected '}': the file ends inside an "
		    "object" },
		{ "{ \"a\": yes }", "column 8: JSON syntax error: expected a "
		    "value" },
	};
	struct config c;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_init(&c);
		cr_assert_eq(load(&c, cases[i].json, err, sizeof(err)), -1,
		    "%s accepted", cases[i].json);
		cr_assert(strstr(err, cases[i].want) != NULL, "%s: got \"%s\"",
		    cases[i].json, err);
		config_free(&c);
	}
}

/* Loads config/NAME of the source tree into c (initialised here). */
static void
load_example(struct config *c, const char *name)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[1024], err[512];
	int n;

	n = snprintf(path, sizeof(path), "%s/config/%s",
	    src != NULL ? src : ".", name);
	cr_assert(n > 0 && (size_t)n < sizeof(path));
	config_init(c);
	cr_assert_eq(config_load_file(c, path, err, sizeof(err)), 0, "%s",
	    err);
}

Test(config, shipped_example_parses)
{
	struct config c;

	load_example(&c, "revcheckd.json");
	cr_assert_str_eq(c.filter_dir, "/var/lib/revcheck/filters");
	cr_assert_eq(c.max_age, 7200);
	cr_assert_eq(c.ntrusted, 1);
	config_free(&c);
}

/* An edge with an authority, from flags: the base of the tests below. */
#define EDGE_ARGS "revcheckd", "--upstream-filter", "https://o/v1/filter", \
	"--upstream-check", "https://o/v1/check", "--trusted-key", "/k.pub"

Test(config, edge_timeouts_default)
{
	struct config c;
	char err[256];
	const char *const argv_src[] = { EDGE_ARGS };
	char **argv = mkargv(7, argv_src);

	config_init(&c);
	cr_assert_eq(config_from_args(&c, 7, argv, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(c.upstream_timeout, 4);
	cr_assert_eq(c.upstream_connect_timeout, 2);
	cr_assert_eq(c.upstream_retries, 2);
	cr_assert_eq(c.sync_timeout, 600);
	cr_assert_eq(c.sync_connect_timeout, 10);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	freeargv(argv);
	config_free(&c);
}

Test(config, edge_timeouts_parse)
{
	struct config c;
	char err[256];
	const char *j =
	    "{ \"upstream_filter\": \"https://o/v1/filter\",\n"
	    "  \"upstream_check\": \"https://o/v1/check\",\n"
	    "  \"trusted_key\": \"/k.pub\",\n"
	    "  \"upstream_timeout\": \"1m\", \"upstream_connect_timeout\": 3,\n"
	    "  \"upstream_retries\": 0, \"sync_timeout\": \"1h\",\n"
	    "  \"sync_connect_timeout\": \"30s\" }\n";

	config_init(&c);
	cr_assert_eq(load(&c, j, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.upstream_timeout, 60);
	cr_assert_eq(c.upstream_connect_timeout, 3);
	cr_assert_eq(c.upstream_retries, 0);
	cr_assert_eq(c.sync_timeout, 3600);
	cr_assert_eq(c.sync_connect_timeout, 30);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load(&c, "{\"upstream_retries\": \"10\", "
	    "\"upstream_timeout\": 1, \"upstream_connect_timeout\": \"1s\", "
	    "\"sync_timeout\": 1, \"sync_connect_timeout\": 1}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.upstream_retries, 10);
	cr_assert_eq(c.upstream_timeout, 1);
	cr_assert_eq(c.sync_timeout, 1);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
}

Test(config, edge_timeouts_out_of_range_name_the_key)
{
	static const struct {
		const char *json;
		const char *key;
	} bad[] = {
		{ "{\"upstream_timeout\": \"61s\"}", "upstream_timeout" },
		{ "{\"upstream_timeout\": \"2m\"}", "upstream_timeout" },
		{ "{\"upstream_timeout\": 0}", "upstream_timeout" },
		{ "{\"upstream_timeout\": \"500ms\"}", "upstream_timeout" },
		{ "{\"upstream_connect_timeout\": 61}",
		    "upstream_connect_timeout" },
		{ "{\"upstream_connect_timeout\": \"0\"}",
		    "upstream_connect_timeout" },
		{ "{\"upstream_retries\": 11}", "upstream_retries" },
		{ "{\"upstream_retries\": -1}", "upstream_retries" },
		{ "{\"upstream_retries\": \"two\"}", "upstream_retries" },
		{ "{\"sync_timeout\": 3601}", "sync_timeout" },
		{ "{\"sync_timeout\": \"2h\"}", "sync_timeout" },
		{ "{\"sync_timeout\": 0}", "sync_timeout" },
		{ "{\"sync_connect_timeout\": \"1d\"}", "sync_connect_timeout" },
		{ "{\"sync_connect_timeout\": true}", "sync_connect_timeout" },
	};
	struct config c;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_init(&c);
		cr_assert_eq(load(&c, bad[i].json, err, sizeof(err)), -1,
		    "%s accepted", bad[i].json);
		cr_assert(strstr(err, bad[i].key) != NULL, "%s: %s",
		    bad[i].json, err);
		config_free(&c);
	}
	/* The range is stated, so the operator knows what would do. */
	config_init(&c);
	cr_assert_eq(load(&c, "{\"upstream_timeout\": 90}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "1s..60s") != NULL, "%s", err);
	cr_assert_eq(c.upstream_timeout, 4, "a refused value is not kept");
	config_free(&c);
}

Test(config, edge_timeout_flags_name_the_flag)
{
	struct config c;
	char err[256];
	const char *const argv_src[] = { EDGE_ARGS, "--sync-timeout", "7200" };
	char **argv = mkargv(9, argv_src);

	config_init(&c);
	cr_assert_eq(config_from_args(&c, 9, argv, err, sizeof(err)), -1);
	cr_assert(strstr(err, "--sync-timeout") != NULL, "%s", err);
	cr_assert(strstr(err, "1s..3600s") != NULL, "%s", err);
	freeargv(argv);
	config_free(&c);
}

Test(config, connect_timeout_longer_than_total_is_refused)
{
	struct config c;
	char err[256];
	const char *edge = "{\"upstream_filter\": \"https://o/v1/filter\", "
	    "\"upstream_check\": \"https://o/v1/check\", \"trusted_key\": "
	    "\"/k.pub\"}";

	config_init(&c);
	cr_assert_eq(load(&c, edge, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load(&c, "{\"upstream_timeout\": 3, "
	    "\"upstream_connect_timeout\": 5}", err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "upstream_connect_timeout") != NULL, "%s", err);
	cr_assert(strstr(err, "upstream_timeout") != NULL, "%s", err);
	/* Equal is fine: the connect phase may take the whole attempt. */
	c.upstream_connect_timeout = 3;
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load(&c, "{\"sync_timeout\": 5, "
	    "\"sync_connect_timeout\": 6}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "sync_connect_timeout") != NULL, "%s", err);
	config_free(&c);
}

Test(config, unset_connect_timeout_fits_a_shorter_total)
{
	struct config c;
	char err[256];
	const char *const a1_src[] = { EDGE_ARGS, "--upstream-timeout", "1",
	    "--sync-timeout", "5s" };
	char **a1 = mkargv(11, a1_src);
	const char *const a2_src[] = { EDGE_ARGS, "--upstream-timeout", "1",
	    "--upstream-connect-timeout", "2" };
	char **a2 = mkargv(11, a2_src);

	config_init(&c);
	cr_assert_eq(config_from_args(&c, 11, a1, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(c.upstream_connect_timeout, 1);
	cr_assert_eq(c.sync_connect_timeout, 5);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
	/* Set explicitly, it is the operator's mistake to hear about. */
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 11, a2, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(c.upstream_connect_timeout, 2);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "upstream_connect_timeout") != NULL, "%s", err);
	freeargv(a1);
	freeargv(a2);
	config_free(&c);
}

/*
 * Over plain http anyone on the path answers for the authority: an
 * http:// upstream is refused unless upstream_insecure_http names the risk.
 */
Test(config, plain_http_upstream_needs_the_insecure_option)
{
	struct config c;
	char err[256];
	const char *const a_src[] = { "revcheckd", "--upstream-filter",
	    "https://o/v1/filter", "--upstream-check", "http://o/v1/check",
	    "--trusted-key", "/k.pub", "--upstream-insecure-http" };
	char **a = mkargv(8, a_src);

	config_init(&c);
	cr_assert_eq(load(&c, "{\"upstream_filter\": \"https://o/f\", "
	    "\"upstream_check\": \"http://o/c\", \"trusted_key\": "
	    "\"/k.pub\"}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "upstream_check") != NULL, "%s", err);
	cr_assert(strstr(err, "upstream_insecure_http") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"upstream_check\": \"https://o/c\", "
	    "\"upstream_filter\": \"http://o/f\"}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "upstream_filter") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"upstream_insecure_http\": true}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert(c.upstream_insecure_http);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load(&c, "{\"upstream_insecure_http\": \"yes\"}", err,
	    sizeof(err)), -1);
	cr_assert_eq(load(&c, "{\"upstream_check\": \"ftp://o/c\"}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1,
	    "ftp accepted even with the insecure option");
	config_free(&c);
	/* The bare flag turns it on. */
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 8, a, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert(c.upstream_insecure_http);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
	/* On an origin it means nothing and is refused. */
	config_init(&c);
	cr_assert_eq(load(&c, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/k.pub\", \"upstream_insecure_http\": false}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "upstream_insecure_http") != NULL, "%s", err);
	freeargv(a);
	config_free(&c);
}

/* The body memory cap must leave room for one body of the largest size. */
Test(config, max_body_total_holds_one_max_body)
{
	struct config c;
	char err[256];

	config_init(&c);
	cr_assert_eq(c.max_body_total, UINT64_C(64) * 1024 * 1024);
	cr_assert_eq(load(&c, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/k.pub\", \"max_body\": 65536, \"max_body_total\": 65535}",
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "max_body_total") != NULL, "%s", err);
	cr_assert_eq(load(&c, "{\"max_body_total\": 65536}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
}

/*
 * The request line and headers live in libmicrohttpd's memory per
 * connection, cleared for every request: 32 KiB by default (room for a
 * 16 KiB JWT beside the usual headers), 8 KiB to 1 MiB, read at start.
 */
Test(config, max_header_size_bounded_and_restart_only)
{
	struct config a, b;
	char err[256], out[256];

	config_init(&a);
	config_init(&b);
	cr_assert_eq(a.max_header_size, 32768);
	cr_assert_eq(load(&a, "{\"max_header_size\": 8191}", err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "max_header_size") != NULL, "%s", err);
	cr_assert_eq(load(&a, "{\"max_header_size\": 1048577}", err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "max_header_size") != NULL, "%s", err);
	cr_assert_eq(load(&a, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"max_header_size\": 8192}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(a.max_header_size, 8192);
	cr_assert_eq(load(&b, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"max_header_size\": 1048576}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 1);
	cr_assert_str_eq(out, "max_header_size");
	cr_assert_eq(config_keep_restart(&b, &a, err, sizeof(err)), 0);
	cr_assert_eq(b.max_header_size, 8192);
	config_free(&a);
	config_free(&b);
}

/*
 * loader_nice: 10 by default, 0..19, read once at start (the thread's
 * nice value cannot be taken back without privilege).
 */
Test(config, loader_nice_bounded_and_restart_only)
{
	struct config a, b;
	char err[256], out[256];

	config_init(&a);
	config_init(&b);
	cr_assert_eq(a.loader_nice, 10);
	cr_assert_eq(load(&a, "{\"loader_nice\": 20}", err, sizeof(err)), -1);
	cr_assert(strstr(err, "loader_nice") != NULL, "%s", err);
	cr_assert_eq(load(&a, "{\"loader_nice\": -1}", err, sizeof(err)), -1);
	cr_assert_eq(load(&a, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"loader_nice\": 0}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(a.loader_nice, 0);
	cr_assert_eq(load(&b, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"loader_nice\": 19}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(b.loader_nice, 19);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 1);
	cr_assert_str_eq(out, "loader_nice");
	cr_assert(!config_key_is_live("loader_nice"));
	config_free(&a);
	config_free(&b);
}

/*
 * reload_spare: 60 s by default, a duration up to a day (0: none), read
 * once at start (the spare buffer is set up in main before the loader).
 */
Test(config, reload_spare_duration_and_restart_only)
{
	struct config a, b;
	char err[256], out[256];

	config_init(&a);
	config_init(&b);
	cr_assert_eq(a.reload_spare, 60);
	cr_assert_eq(load(&a, "{\"reload_spare\": \"2d\"}", err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "reload_spare") != NULL, "%s", err);
	cr_assert_eq(load(&a, "{\"reload_spare\": true}", err, sizeof(err)),
	    -1);
	cr_assert_eq(load(&a, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"reload_spare\": 0}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(a.reload_spare, 0);
	cr_assert_eq(load(&b, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"reload_spare\": \"5m\"}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(b.reload_spare, 300);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 1);
	cr_assert_str_eq(out, "reload_spare");
	cr_assert(!config_key_is_live("reload_spare"));
	config_free(&a);
	config_free(&b);
}

Test(config, edge_keys_refused_on_an_origin)
{
	static const char *const keys[] = { "upstream_timeout",
	    "upstream_connect_timeout", "upstream_retries", "sync_timeout",
	    "sync_connect_timeout", "sync_interval", "max_download",
	    "max_lag", "upstream_concurrency", "upstream_max_waiting" };
	struct config c;
	char err[256], j[256];
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		config_init(&c);
		snprintf(j, sizeof(j), "{\"filter_dir\": \"/f\", "
		    "\"trusted_key\": \"/k.pub\", \"%s\": %d}", keys[i],
		    strcmp(keys[i], "max_download") == 0 ? 4096 : 2);
		cr_assert_eq(load(&c, j, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(config_validate(&c, err, sizeof(err)), -1,
		    "%s accepted on an origin", keys[i]);
		cr_assert(strstr(err, keys[i]) != NULL, "%s", err);
		cr_assert(strstr(err, "upstream_filter") != NULL, "%s", err);
		config_free(&c);
	}
	/* The same values left at their defaults are no objection. */
	config_init(&c);
	cr_assert_eq(load(&c, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/k.pub\"}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
	/* An edge without an authority: the sync keys apply, the upstream
	 * ones bound nothing. */
	config_init(&c);
	cr_assert_eq(load(&c, "{\"upstream_filter\": \"https://o/f\", "
	    "\"trusted_key\": \"/k.pub\", \"sync_timeout\": 60}", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load(&c, "{\"upstream_retries\": 0}", err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "upstream_retries") != NULL, "%s", err);
	cr_assert(strstr(err, "upstream_check") != NULL, "%s", err);
	config_free(&c);
}

Test(config, edge_timeout_flags_override_the_file)
{
	struct config c;
	char err[256], path[] = "/tmp/revcheck-test-config-XXXXXX";
	int fd = mkstemp(path);
	const char *j = "{\"upstream_timeout\": \"20s\", "
	    "\"upstream_connect_timeout\": 5, \"upstream_retries\": 4, "
	    "\"sync_timeout\": \"15m\", \"sync_connect_timeout\": 20}";
	const char *const argv_src[] = { EDGE_ARGS, "-c", path,
	    "--upstream-timeout", "9s", "--upstream-retries", "0",
	    "--sync-connect-timeout", "1m" };
	char **argv = mkargv(15, argv_src);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, j, strlen(j)), (ssize_t)strlen(j));
	close(fd);
	config_init(&c);
	cr_assert_eq(config_from_args(&c, 15, argv, err, sizeof(err)), 0,
	    "%s", err);
	unlink(path);
	cr_assert_eq(c.upstream_timeout, 9);
	cr_assert_eq(c.upstream_connect_timeout, 5);
	cr_assert_eq(c.upstream_retries, 0);
	cr_assert_eq(c.sync_timeout, 900);
	cr_assert_eq(c.sync_connect_timeout, 60);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	freeargv(argv);
	config_free(&c);
}

Test(config, shipped_edge_example_parses)
{
	char err[512];
	struct config c;

	load_example(&c, "revcheckd-edge.json");
	cr_assert_not_null(c.upstream_filter);
	cr_assert_eq(c.upstream_timeout, 4);
	cr_assert_eq(c.upstream_connect_timeout, 2);
	cr_assert_eq(c.upstream_retries, 2);
	cr_assert_eq(c.sync_timeout, 600);
	cr_assert_eq(c.sync_connect_timeout, 10);
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	config_free(&c);
}

Test(config, sighup_names_the_settings_that_need_a_restart)
{
	struct config a, b;
	char err[256], out[256];

	config_init(&a);
	config_init(&b);
	cr_assert_eq(load(&a, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"max_batch\": 10}", err, sizeof(err)), 0, "%s", err);
	/* Keys and log settings apply live: not named. */
	cr_assert_eq(load(&b, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "[\"/a.pub\", \"/b.pub\"], \"max_batch\": 10, \"log_level\": "
	    "\"debug\", \"log_format\": \"json\"}", err, sizeof(err)), 0,
	    "%s", err);
	cr_assert(b.log_json);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 0, "%s",
	    out);
	cr_assert_eq(config_changed_keys(&a, &b, true, out, sizeof(out)), 3);
	cr_assert_str_eq(out, "trusted_key, log_level, log_format");
	cr_assert_eq(load(&b, "{\"max_batch\": 7, \"filter_dir\": \"/g\", "
	    "\"authz_not_covered\": \"allow\", \"threads\": 3, "
	    "\"max_age\": \"1h\"}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 2);
	cr_assert_str_eq(out, "filter_dir, threads");
	cr_assert_eq(config_changed_keys(&a, &b, true, out, sizeof(out)), 6);
	cr_assert_str_eq(out, "trusted_key, max_age, max_batch, "
	    "authz_not_covered, log_level, log_format");
	cr_assert_eq(load(&b, "{\"log_format\": \"xml\"}", err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "log_format") != NULL, "%s", err);
	config_free(&a);
	config_free(&b);
}

Test(config, shipped_token_example_parses)
{
	char err[512];
	struct config c;

	load_example(&c, "revcheckd-tokens.json");
	cr_assert_eq(config_validate(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.nissuers, 3);
	cr_assert_eq(c.nclients, 1);
	cr_assert_str_eq(c.clients[0].id, "gw");
	cr_assert_eq(c.clients[0].naud, 1);
	cr_assert_str_eq(c.clients[0].audiences[0], "api");
	cr_assert_str_eq(c.issuers[0].jwks_uri,
	    "https://login.example/.well-known/jwks.json");
	cr_assert_eq(c.issuers[0].jwks_refresh, 300);
	cr_assert_eq(c.issuers[0].jwks_min_interval, 30);
	cr_assert_eq(c.issuers[0].jwks_max_age, 86400);
	cr_assert_str_eq(c.issuers[1].issuer, "https://idp.example");
	cr_assert_eq(c.issuers[1].algs, JWA_BIT(JWA_ES256) | JWA_BIT(JWA_RS256));
	cr_assert_eq(c.issuers[1].leeway, 30);
	cr_assert_eq(c.issuers[2].naud, 2);
	cr_assert_not_null(c.issuers[2].hs_secret_file);
	cr_assert_not(c.revocation_only);
	config_free(&c);
}

/*
 * json is refused with an error holding want: by config_load_buf(), or
 * when at_validate, by config_validate() after a clean load.
 */
static void
expect_refused(const char *json, const char *want, bool at_validate)
{
	struct config c;
	char err[512];

	config_init(&c);
	cr_assert_eq(config_load_buf(&c, json, strlen(json), "t", err,
	    sizeof(err)), at_validate ? 0 : -1, "%s: %s", json, err);
	if (at_validate)
		cr_assert_eq(config_validate(&c, err, sizeof(err)), -1, "%s",
		    json);
	cr_assert(strstr(err, want) != NULL, "%s: %s", json, err);
	config_free(&c);
}

/*
 * What a reviewer reads is what the daemon applies: a key given twice (the
 * later copy won), or a key or value with an escaped NUL (cJSON cut it
 * there: "authz_not_covered\u0000_OFF" was authz_not_covered), is refused.
 */
Test(config, repeated_keys_and_escaped_nul_refused)
{
	static const struct {
		const char *json, *want;
	} bad[] = {
		{ "{\"authz_not_covered\": \"deny\", \"max_batch\": 5, "
		    "\"authz_not_covered\": \"allow\"}",
		    "key \"authz_not_covered\" is given twice" },
		{ "{\"issuers\": [{\"issuer\": \"https://a\", "
		    "\"audiences\": [\"x\"], \"audiences\": [\"y\"]}]}",
		    "key \"audiences\" is given twice in issuers" },
		{ "{\"introspection_clients\": [{\"id\": \"a\", "
		    "\"id\": \"b\"}]}",
		    "key \"id\" is given twice in introspection_clients" },
		{ "{\"authz_not_covered\\u0000_OFF\": \"allow\"}",
		    "\\u0000 in a string in the file" },
		{ "{\"listen\": \"127.0.0.1:80\\u0000x\"}",
		    "\\u0000 in a string in the file" },
		{ "{\"listen\": \"127.0.0.1:80\001\"}",
		    "a raw control byte in the file" },
		/* Only the strings "deny" and "allow": true was allow. */
		{ "{\"authz_not_covered\": true}",
		    "key \"authz_not_covered\": wrong type" },
	};
	static const char comments[] = "{\"_\": \"a\", \"_\": \"b\", "
	    "\"max_batch\": 7}";
	struct config c;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(bad[i].json, bad[i].want, false);
	/* Comment keys are never read: they may repeat. */
	config_init(&c);
	cr_assert_eq(load(&c, comments, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_batch, 7);
	config_free(&c);
}

/*
 * A hang guard, not a speed target: the worst cases below took 17-49 s
 * in a plain build and minutes under ASan while quadratic, and take a few
 * seconds (under 8 s with ASan) since; the limit is far above that, so
 * only the quadratic form trips it (surely in CI's ASan pass).
 */
#define LINEAR_LIMIT	60

/*
 * The repeated-key check of a file at the size cap stays linear: every
 * pair of an object's keys was compared, and 90,000 keys in one object
 * (under 1 MB) took minutes. The first key given twice is still named.
 */
Test(config, repeated_key_check_of_many_keys_stays_linear, .timeout = LINEAR_LIMIT)
{
	size_t n = 90000, cap = n * 12 + 64, len, i;
	struct config c;
	char err[512], *buf;

	cr_assert_not_null(buf = malloc(cap));
	len = (size_t)snprintf(buf, cap, "{\"x\": {");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s\"k%zu\":0",
		    i == 0 ? "" : ",", i);
	len += (size_t)snprintf(buf + len, cap - len, "}}");
	config_init(&c);
	cr_assert_eq(config_load_buf(&c, buf, len, "t", err, sizeof(err)), -1);
	cr_assert(strstr(err, "unknown key \"x\"") != NULL, "%s", err);
	config_free(&c);
	/* Two keys given twice: the one whose first copy comes first. */
	len -= 2;
	len += (size_t)snprintf(buf + len, cap - len, ",\"k7\":1,\"k3\":1}}");
	config_init(&c);
	cr_assert_eq(config_load_buf(&c, buf, len, "t", err, sizeof(err)), -1);
	cr_assert(strstr(err, "key \"k3\" is given twice in x") != NULL, "%s",
	    err);
	config_free(&c);
	free(buf);
}

/* Each issuer mistake is refused by name, never silently accepted. */
Test(config, issuers_refused)
{
	static const struct {
		const char *json, *want;
	} bad[] = {
		{ "{\"issuers\":{}}", "issuers" },
		{ "{\"issuers\":[1]}", "not an object" },
		{ "{\"issuers\":[{\"issuer\":\"i\",\"algorithms\":[\"none\"]}]}",
		    "never none" },
		{ "{\"issuers\":[{\"issuer\":\"i\",\"algorithms\":[\"es256\"]}]}",
		    "es256" },
		{ "{\"issuers\":[{\"issuer\":\"i\",\"leeway\":\"forever\"}]}",
		    "leeway" },
		{ "{\"issuers\":[{\"issuer\":\"i\",\"leeway\":\"6m\"}]}",
		    "leeway is at most 5m" },
		{ "{\"issuers\":[{\"issuer\":\"i\",\"leeway\":301}]}",
		    "leeway is at most 5m" },
		{ "{\"issuers\":[{\"issuer\":\"i\",\"jwks\":\"x\"}]}",
		    "unknown key" },
		{ "{\"issuers\":[{\"issuer\":\"\"}]}", "non-empty" },
		{ "{\"introspection_clients\":[{\"id\":\"a\",\"pw\":\"x\"}]}",
		    "unknown key" },
		{ "{\"introspection_clients\":[{\"id\":\"a\",\"audiences\":"
		    "[]}]}", "non-empty array" },
		{ "{\"introspection_clients\":[{\"id\":\"a\",\"audiences\":"
		    "\"api\"}]}", "non-empty array" },
		{ "{\"introspection_clients\":[{\"id\":\"a\",\"audiences\":"
		    "[\"api\", 5]}]}", "non-empty string" },
		{ "{\"introspection_clients\":[{\"id\":\"a\",\"audiences\":"
		    "[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\","
		    "\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"]}]}",
		    "more than 16" },
		{ "{\"token_verification\":\"off\"}", "revocation-only" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(bad[i].json, bad[i].want, false);
}

/* Issuers that parse but do not hang together: config_validate(). */
Test(config, issuers_validated)
{
#define ISS_BASE "\"filter_dir\":\"/f\",\"trusted_key\":\"/k\","
	static const struct {
		const char *json, *want;
	} bad[] = {
		{ "{" ISS_BASE "\"issuers\":[{\"jwks_file\":\"/j\","
		    "\"audiences\":[\"a\"],\"algorithms\":[\"ES256\"]}]}",
		    "\"issuer\" is required" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"has space\","
		    "\"jwks_file\":\"/j\",\"audiences\":[\"a\"],"
		    "\"algorithms\":[\"ES256\"]}]}", "scope" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"x509:ab\","
		    "\"jwks_file\":\"/j\",\"audiences\":[\"a\"],"
		    "\"algorithms\":[\"ES256\"]}]}", "scope" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"audiences\":"
		    "[\"a\"],\"algorithms\":[\"ES256\"]}]}", "exactly one" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":"
		    "\"/j\",\"jwks_uri\":\"https://x/j\",\"audiences\":[\"a\"],"
		    "\"algorithms\":[\"ES256\"]}]}", "exactly one" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_uri\":"
		    "\"http://x/j\",\"audiences\":[\"a\"],"
		    "\"algorithms\":[\"ES256\"]}]}", "https://" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":"
		    "\"/j\",\"algorithms\":[\"ES256\"]}]}", "audiences" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":"
		    "\"/j\",\"audiences\":[\"a\"]}]}", "algorithms" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":"
		    "\"/j\",\"audiences\":[\"a\"],\"algorithms\":[\"HS256\"]}]}",
		    "hs_secret_file" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":"
		    "\"/j\",\"hs_secret_file\":\"/s\",\"audiences\":[\"a\"],"
		    "\"algorithms\":[\"ES256\"]}]}", "no HS algorithm" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":"
		    "\"/j\",\"audiences\":[\"a\"],\"algorithms\":[\"ES256\"]},"
		    "{\"issuer\":\"i\",\"jwks_file\":\"/j\",\"audiences\":[\"a\"],"
		    "\"algorithms\":[\"ES256\"]}]}", "repeats" },
		{ "{" ISS_BASE "\"token_verification\":\"revocation-only\","
		    "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":\"/j\","
		    "\"audiences\":[\"a\"],\"algorithms\":[\"ES256\"]}]}",
		    "revocation-only" },
		{ "{" ISS_BASE "\"introspection_clients\":[{\"id\":\"gw\"}]}",
		    "secret_file" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_uri\":"
		    "\"https://x/j\",\"audiences\":[\"a\"],\"algorithms\":"
		    "[\"ES256\"],\"jwks_refresh\":\"10s\",\"jwks_min_interval\":"
		    "\"20s\"}]}", "jwks_min_interval <= jwks_refresh" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_uri\":"
		    "\"https://x/j\",\"audiences\":[\"a\"],\"algorithms\":"
		    "[\"ES256\"],\"jwks_max_age\":\"1m\"}]}",
		    "jwks_refresh <= jwks_max_age" },
		{ "{" ISS_BASE "\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":"
		    "\"/j\",\"jwks_ca_file\":\"/ca\",\"audiences\":[\"a\"],"
		    "\"algorithms\":[\"ES256\"]}]}", "only with jwks_uri" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(bad[i].json, bad[i].want, true);
#undef ISS_BASE
}

/* SIGHUP reloads the issuers: a change is named among the live ones. */
Test(config, sighup_names_changed_issuers)
{
#define ISS(aud) "{\"issuers\":[{\"issuer\":\"i\",\"jwks_file\":\"/j\"," \
	"\"audiences\":[\"" aud "\"],\"algorithms\":[\"ES256\"]}]}"
	struct config a, b;
	char err[256], out[256];

	config_init(&a);
	config_init(&b);
	cr_assert_eq(load(&a, ISS("api"), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load(&b, ISS("api"), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 0, "%s",
	    out);
	config_free(&b);
	config_init(&b);
	cr_assert_eq(load(&b, ISS("other"), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 0, "%s",
	    out);
	cr_assert_eq(config_changed_keys(&a, &b, true, out, sizeof(out)), 1);
	cr_assert_str_eq(out, "issuers");
	config_free(&b);
	config_init(&b);
	cr_assert_eq(load(&b, "{\"token_verification\":\"revocation-only\"}",
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 0, "%s",
	    out);
	cr_assert_eq(config_changed_keys(&a, &b, true, out, sizeof(out)), 2);
	cr_assert_str_eq(out, "token_verification, issuers");
	config_free(&a);
	config_free(&b);
#undef ISS
}

Test(config, filter_owner_name_uid_and_unknown)
{
	struct config c;
	char err[256];
	uid_t uid = 1;
	bool set = true;
	const char *const names[] = { "root", "4242", "no-such-user-rc",
	    "12x" };
	size_t i;

	config_init(&c);
	cr_assert_eq(config_filter_owner(&c, &uid, &set, err, sizeof(err)), 0);
	cr_assert_eq(set, false, "unset: only root and the daemon itself");
	for (i = 0; i < 4; i++) {
		c.filter_owner = strdup(names[i]);
		cr_assert_not_null(c.filter_owner);
		set = false;
		if (i < 2) {
			cr_assert_eq(config_filter_owner(&c, &uid, &set, err,
			    sizeof(err)), 0, "%s", err);
			cr_assert(set);
			cr_assert_eq(uid, i == 0 ? 0 : 4242);
		} else {
			cr_assert_eq(config_filter_owner(&c, &uid, &set, err,
			    sizeof(err)), -1, "%s accepted", names[i]);
			cr_assert(strstr(err, "filter_owner") != NULL, "%s",
			    err);
		}
		free(c.filter_owner);
		c.filter_owner = NULL;
	}
	config_free(&c);
}

/*
 * SIGHUP: the configuration put in force keeps every restart-only key at
 * its running value and takes every live one from the file; a copy owns
 * its strings.
 */
Test(config, sighup_keeps_restart_only_values)
{
	struct config a, b, cp;
	char err[256], out[256];

	config_init(&a);
	config_init(&b);
	cr_assert_eq(load(&a, "{\"filter_dir\": \"/f\", \"trusted_key\": "
	    "\"/a.pub\", \"listen\": \"127.0.0.1:1\", \"threads\": 2, "
	    "\"max_age\": 60, \"max_batch\": 10, \"issuers\": [{\"issuer\": "
	    "\"i\", \"jwks_file\": \"/j\", \"audiences\": [\"api\"], "
	    "\"algorithms\": [\"ES256\"]}]}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(load(&b, "{\"filter_dir\": \"/g\", \"trusted_key\": "
	    "\"/b.pub\", \"listen\": \"127.0.0.1:2\", \"threads\": 4, "
	    "\"max_age\": 120, \"max_batch\": 5}", err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(config_keep_restart(&b, &a, err, sizeof(err)), 0);
	cr_assert_str_eq(b.filter_dir, "/f");
	cr_assert_str_eq(b.listen, "127.0.0.1:1");
	cr_assert_eq(b.threads, 2);
	cr_assert_eq(b.max_age, 120);
	cr_assert_eq(b.max_batch, 5);
	cr_assert_str_eq(b.trusted_keys[0], "/b.pub");
	cr_assert_eq(b.nissuers, 0);
	cr_assert_eq(config_restart_keys(&a, &b, out, sizeof(out)), 0, "%s",
	    out);
	cr_assert_eq(config_changed_keys(&a, &b, true, out, sizeof(out)), 4);
	cr_assert_str_eq(out, "trusted_key, max_age, max_batch, issuers");
	cr_assert(config_key_is_live("issuers"));
	cr_assert(config_key_is_live("upstream_timeout"));
	cr_assert(!config_key_is_live("listen"));
	cr_assert(!config_key_is_live("conn_timeout"));
	cr_assert_eq(config_copy(&cp, &a, err, sizeof(err)), 0);
	cr_assert_neq(cp.filter_dir, a.filter_dir);
	cr_assert_neq(cp.issuers[0].issuer, a.issuers[0].issuer);
	cr_assert_eq(config_changed_keys(&a, &cp, true, out, sizeof(out)), 0,
	    "%s", out);
	cr_assert_eq(config_restart_keys(&a, &cp, out, sizeof(out)), 0, "%s",
	    out);
	config_free(&a);
	cr_assert_str_eq(cp.issuers[0].audiences[0], "api");
	config_free(&cp);
	config_free(&b);
}

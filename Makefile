# revcheck - plain GNU make. `make test` installs what is missing, builds and
# runs every test; `make demo` runs the main job. See README.md.

CC      ?= cc
CFLAGS  ?= -O2 -g
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
SYSCONFDIR ?= $(PREFIX)/etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR  ?= $(PREFIX)/share/doc/revcheck

VERSION := 0.1.0

PKGS      := openssl libmicrohttpd libxxhash libcjson libcurl libpq
TEST_PKGS := criterion

WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow \
        -Wpointer-arith -Wformat=2 -Wwrite-strings -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif

# BUILD may be set on the command line to keep several builds apart.
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
BUILD    ?= build/san
else
SANFLAGS :=
BUILD    ?= build/std
endif

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS   = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

ALL_CFLAGS  = -std=c11 -D_GNU_SOURCE -DREVCHECK_VERSION='"$(VERSION)"' \
              -Ilib -I$(BUILD)/gen $(PKG_CFLAGS) $(CPPFLAGS) $(WARN) $(SANFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)
LIBS        = $(PKG_LIBS) -lpthread -lm

LIB_SRC  := $(sort $(wildcard lib/*.c))
SVC_SRC  := $(sort $(wildcard svc/*.c))
FB_SRC   := $(sort $(wildcard filterbuild/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
SVC_OBJ  := $(SVC_SRC:%.c=$(BUILD)/%.o)
# filterbuild's objects cannot live in $(BUILD)/filterbuild/: that is the binary.
FB_OBJ   := $(FB_SRC:filterbuild/%.c=$(BUILD)/fbobj/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

LIBA        := $(BUILD)/librevcheck.a
# The daemon's modules without its main(), for unit tests and fuzzers.
SVCA        := $(BUILD)/libsvc.a
SVC_LIBOBJ  := $(filter-out $(BUILD)/svc/revcheckd.o,$(SVC_OBJ))
REVCHECKD   := $(BUILD)/revcheckd
FILTERBUILD := $(BUILD)/filterbuild

# Debian packages: what building and testing need, and what the
# benchmarks and fuzzers add on top.
DEB_PKGS       := pkg-config libssl-dev openssl libmicrohttpd-dev libxxhash-dev \
                  libcjson-dev libcriterion-dev libcurl4-openssl-dev curl \
                  nginx-light python3 systemd man-db strace prometheus libpq-dev postgresql \
                  python3-jwt python3-cryptography dpkg-dev lintian binutils \
                  apache2 libapache2-mod-auth-openidc faketime iproute2
DEB_BENCH_PKGS := redis-server redis-tools wrk libbloom-dev nghttp2-client golang-cfssl
DEB_FUZZ_PKGS  := clang libclang-rt-14-dev

.PHONY: all test unit-test integration-test deps deps-bench deps-fuzz demo \
        install uninstall clean lint bench bench-large fuzz fuzz-replay soak \
        fuzz-dict-check fuzz-seeds \
        crash-bench deb chaos

all: $(REVCHECKD) $(FILTERBUILD) bin-links

# Stable names for scripts: bin/revcheckd and bin/filterbuild point at the
# last build (plain or sanitized).
bin-links: $(REVCHECKD) $(FILTERBUILD)
	@mkdir -p bin
	@ln -sf ../$(REVCHECKD) bin/revcheckd
	@ln -sf ../$(FILTERBUILD) bin/filterbuild
.PHONY: bin-links

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/fbobj/%.o: filterbuild/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c -o $@ $<

# The source revision (revcheckd_build_info, filterbuild --version): written
# on every build, replaced only when it changed, so that it rebuilds one
# object. "unknown" outside a git checkout (a release tarball).
REVISION_H := $(BUILD)/gen/revision.h
$(REVISION_H): FORCE
	@mkdir -p $(dir $@)
	@r=$$(git -C $(CURDIR) describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null || echo unknown); \
	printf '#define REVCHECK_REVISION "%s"\n' "$$r" >$@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/lib/procstat.o: $(REVISION_H)
.PHONY: FORCE
FORCE:

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(SVCA): $(SVC_LIBOBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(REVCHECKD): $(SVC_OBJ) $(LIBA)
	$(CC) $(ALL_LDFLAGS) -o $@ $(SVC_OBJ) $(LIBA) $(LIBS)

$(FILTERBUILD): $(FB_OBJ) $(LIBA)
	$(CC) $(ALL_LDFLAGS) -o $@ $(FB_OBJ) $(LIBA) $(LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(SVCA) $(LIBA)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(SVCA) $(LIBA) $(TEST_LIBS) $(LIBS)

# Kept: deleted as intermediate after the first build, they were compiled
# again, one at a time, by make unit-test (which the .d files then name).
.SECONDARY: $(TEST_BIN:%=%.o)

# Tests run one binary at a time so their output stays readable; a failure
# anywhere fails the target.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_odr_violation=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Everything the tests run is built first, on every CPU; the tests
# themselves then run one binary (and one integration test) at a time.
NPROC := $(shell nproc 2>/dev/null || echo 1)

test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all $(TEST_BIN) $(FUZZ_REPLAY)
	@$(MAKE) --no-print-directory unit-test
	@$(MAKE) --no-print-directory fuzz-replay
	@$(MAKE) --no-print-directory integration-test

# Criterion runs each test in a child process and does not count a
# sanitizer report printed at the child's exit, so the log is searched too.
SAN_REPORT := ERROR: (Address|Leak)Sanitizer|runtime error:|ThreadSanitizer

# Binaries whose tests run one at a time: with test_exact's long timed
# tests two at a time, Criterion 2.4's runner itself leaks 48 bytes
# (LeakSanitizer at the runner's exit, every stack frame in libcriterion).
SERIAL_TESTS := test_exact

unit-test: $(TEST_BIN)
	@set -e; mkdir -p $(BUILD)/logs; for t in $(TEST_BIN); do \
	    echo "== $$t"; log=$(BUILD)/logs/$$(basename $$t).log; j=2; \
	    case " $(SERIAL_TESTS) " in *" $$(basename $$t) "*) j=1 ;; esac; \
	    $(ASAN_ENV) REVCHECK_SRC=$(CURDIR) $$t --jobs $$j --short-filename >$$log 2>&1 \
	        || { cat $$log; exit 1; }; \
	    if grep -qE '$(SAN_REPORT)' $$log; then cat $$log; \
	        echo "$$t: sanitizer report"; exit 1; fi; \
	    tail -n 1 $$log; \
	done

integration-test: all
	@$(ASAN_ENV) REVCHECK_SRC=$(CURDIR) REVCHECKD=$(CURDIR)/$(REVCHECKD) \
	    FILTERBUILD=$(CURDIR)/$(FILTERBUILD) tests/integration/run-all.sh

# Installs only what is missing; does nothing when all is present.
define install_missing
	@missing=""; for p in $(1); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' \
	        || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    echo "deps: installing$$missing"; \
	    SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PKGS))

deps-bench: deps
	$(call install_missing,$(DEB_BENCH_PKGS))

deps-fuzz: deps
	$(call install_missing,$(DEB_FUZZ_PKGS))
# A Debian package of what `make install` installs, under Debian paths
# (packaging/deb/mkdeb.sh): build/deb/revcheck_VERSION_ARCH.deb, its
# binaries built in build/hardened with dpkg-buildflags' hardening flags.
deb: deps
	@packaging/deb/mkdeb.sh $(VERSION) build/hardened build/deb

demo: deps
	@$(MAKE) --no-print-directory all
	@tests/demo.sh

# Benchmarks never fail the build; they print ratios and write
# bench/results.json. See docs/BENCHMARKS.md.
bench: deps-bench
	@$(MAKE) --no-print-directory all bench-bin BUILD=build/bench SANITIZE= WERROR=
	@BUILD=build/bench bench/run.sh || echo "bench: some benchmarks did not complete (see above)"

bench-large: deps-bench
	@$(MAKE) --no-print-directory all bench-bin BUILD=build/bench SANITIZE= WERROR=
	@BUILD=build/bench BENCH_LARGE=1 bench/run.sh || echo "bench: some benchmarks did not complete"

# Benchmark programs that link the daemon's own modules (bench/run.sh
# compiles the others itself).
BENCH_BIN := $(BUILD)/bench/checkmt $(BUILD)/bench/reloadcpu

$(BUILD)/bench/checkmt: bench/checkmt.c $(SVCA) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Isvc -o $@ $< $(SVCA) $(LIBA) $(ALL_LDFLAGS) $(LIBS)

$(BUILD)/bench/reloadcpu: bench/reloadcpu.c $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBA) $(ALL_LDFLAGS) $(LIBS)

bench-bin: $(BENCH_BIN)
.PHONY: bench-bin

# Fuzzing. Each tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput.
# fuzz-replay (part of `make test`) runs every seed and every past crasher
# through a plain driver under whatever SANITIZE is set; `make fuzz` runs
# libFuzzer for FUZZ_TIME seconds per harness (clang from Debian), with
# tests/fuzz/<name>.dict when there is one.
FUZZ_SRC  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(BUILD)/fuzz-replay/fuzz_%)
FUZZ_TIME ?= 60

$(BUILD)/fuzz-replay/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/driver.c $(SVCA) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/fuzz -Isvc -o $@ $< tests/fuzz/driver.c $(SVCA) $(LIBA) $(ALL_LDFLAGS) $(LIBS)

fuzz-replay: $(FUZZ_REPLAY) fuzz-dict-check
	@set -e; for n in $(FUZZ_NAMES); do \
	    dirs=""; for d in tests/fuzz/corpus/$$n tests/fuzz/crashers/$$n; do \
	        [ -d $$d ] && dirs="$$dirs $$d"; done; \
	    [ -n "$$dirs" ] || { echo "fuzz-replay: $$n has no seed corpus"; exit 1; }; \
	    $(ASAN_ENV) REVCHECK_SRC=$(CURDIR) $(BUILD)/fuzz-replay/fuzz_$$n $$dirs || exit 1; \
	done

fuzz: deps-fuzz
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang SANITIZE=address,undefined \
	    CFLAGS="-O1 -g -fsanitize=fuzzer-no-link" build/fuzz/librevcheck.a build/fuzz/libsvc.a
	@set -e; mkdir -p build/fuzz/bin; for n in $(FUZZ_NAMES); do \
	    clang -std=c11 -D_GNU_SOURCE -DREVCHECK_VERSION='"$(VERSION)"' -Ilib -Isvc -Itests/fuzz \
	        $(PKG_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined \
	        -o build/fuzz/bin/fuzz_$$n tests/fuzz/fuzz_$$n.c \
	        build/fuzz/libsvc.a build/fuzz/librevcheck.a $(LIBS); \
	    mkdir -p build/fuzz/corpus/$$n tests/fuzz/crashers/$$n; \
	    echo "== fuzz_$$n for $(FUZZ_TIME)s"; \
	    dict=; [ -f tests/fuzz/$$n.dict ] && dict=-dict=tests/fuzz/$$n.dict; \
	    build/fuzz/bin/fuzz_$$n -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	        $$dict -artifact_prefix=tests/fuzz/crashers/$$n/ \
	        build/fuzz/corpus/$$n tests/fuzz/corpus/$$n 2>&1 | \
	        grep -E 'stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY' || true; \
	done

# libFuzzer refuses a whole dictionary for one bad line, and CI runs no
# libFuzzer: each line of tests/fuzz/*.dict must be a comment, empty, or
# [name=]"entry" with only \\, \" and \xNN escapes.
fuzz-dict-check:
	@for d in tests/fuzz/*.dict; do [ -e "$$d" ] || continue; \
	    if grep -nvE '^(#.*|[[:space:]]*|[A-Za-z0-9_]*=?"([^"\\]|\\\\|\\"|\\x[0-9a-fA-F]{2})*"[[:space:]]*)$$' "$$d"; then \
	        echo "fuzz-dict-check: $$d: bad line(s) above"; exit 1; fi; \
	done

# Valid tables and deltas written by the real encoders, and certificates
# made with the openssl CLI, for the seed corpora (tests/fuzz/mkseeds.c,
# tests/fuzz/mkcerts.sh); their output is checked in, so this runs only
# when the formats change.
$(BUILD)/fuzz-seeds/mkseeds: tests/fuzz/mkseeds.c $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBA) $(ALL_LDFLAGS) $(LIBS)

fuzz-seeds: $(BUILD)/fuzz-seeds/mkseeds
	@$(BUILD)/fuzz-seeds/mkseeds tests/fuzz/corpus
	@tests/fuzz/mkcerts.sh tests/fuzz/corpus/cert

# Reliability runs that are not CI tests (docs/SECURITY.md): a 10-minute
# soak under wrk with a publish every second, and 200 SIGKILLs of
# filterbuild mid-publish plus 20 of revcheckd mid-reload.
soak: deps-bench
	@bench/soak.sh

crash-bench: deps
	@bench/crash-publish.sh

# The whole fleet on loopback under load and random faults, every answer
# judged against the database (docs/CHAOS.md). Needs root (PostgreSQL runs
# as nobody, follow's output is a tmpfs it fills).
CHAOS_TIME ?= 600
CHAOS_SEED ?=
chaos: deps all
	@REVCHECK_SRC=$(CURDIR) REVCHECKD=$(CURDIR)/$(REVCHECKD) \
	    FILTERBUILD=$(CURDIR)/$(FILTERBUILD) CHAOS_TIME=$(CHAOS_TIME) \
	    CHAOS_SEED=$(CHAOS_SEED) /usr/bin/python3 -B tests/chaos/chaos.py

lint:
	@! git grep -nE '\b(gets|sprintf|strcpy|strcat|strncpy|strtok|atoi)[[:space:]]*\(' \
	    -- '*.c' '*.h' | grep -vE 'v?snprintf' || { echo "lint: banned call"; exit 1; }
	@echo "lint: OK"

# Units, example configs and man pages name the default /usr/local paths;
# install rewrites them to the PREFIX (or SBINDIR, BINDIR, SYSCONFDIR) in use.
SED_PATHS = sed -e 's|/usr/local/sbin/|$(SBINDIR)/|g' -e 's|/usr/local/bin/|$(BINDIR)/|g' \
                -e 's|/usr/local/etc/|$(SYSCONFDIR)/|g' \
                -e 's|/usr/local/share/doc/revcheck/|$(DOCDIR)/|g'

# The binaries of $(BUILD) only: bin/ keeps pointing at the last `make all`.
install: $(REVCHECKD) $(FILTERBUILD)
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR)
	install -m 0755 $(REVCHECKD) $(DESTDIR)$(SBINDIR)/revcheckd
	install -m 0755 $(FILTERBUILD) $(DESTDIR)$(BINDIR)/filterbuild
	if [ -d man ]; then \
	    install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8; \
	    $(SED_PATHS) man/filterbuild.1 > $(DESTDIR)$(MANDIR)/man1/filterbuild.1 && \
	    $(SED_PATHS) man/revcheckd.8 > $(DESTDIR)$(MANDIR)/man8/revcheckd.8 && \
	    chmod 0644 $(DESTDIR)$(MANDIR)/man1/filterbuild.1 $(DESTDIR)$(MANDIR)/man8/revcheckd.8; \
	fi
	install -d $(DESTDIR)$(SYSCONFDIR)/revcheck
	@# An operator's edited config is never replaced: the example goes
	@# beside it as NAME.example instead.
	for f in config/*.json config/*.conf; do \
	    [ -e "$$f" ] || continue; \
	    d=$(DESTDIR)$(SYSCONFDIR)/revcheck/$$(basename $$f); \
	    if [ -e "$$d" ] && ! $(SED_PATHS) "$$f" | cmp -s - "$$d"; then \
	        echo "install: keeping $$d, example installed as $$d.example"; \
	        d="$$d.example"; fi; \
	    $(SED_PATHS) "$$f" > "$$d.tmp" && chmod 0644 "$$d.tmp" && mv "$$d.tmp" "$$d"; \
	done
	install -d $(DESTDIR)$(UNITDIR)
	for f in systemd/*.service systemd/*.timer; do \
	    [ -e "$$f" ] || continue; \
	    $(SED_PATHS) "$$f" > $(DESTDIR)$(UNITDIR)/$$(basename $$f).tmp && \
	    chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$f).tmp && \
	    mv $(DESTDIR)$(UNITDIR)/$$(basename $$f).tmp $(DESTDIR)$(UNITDIR)/$$(basename $$f); \
	done
	install -d $(DESTDIR)$(DOCDIR)
	install -m 0644 README.md docs/*.md docs/openapi.yaml config/*.sql config/envoy-ext-authz.yaml \
	    $(DESTDIR)$(DOCDIR)/

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/revcheckd $(DESTDIR)$(BINDIR)/filterbuild
	rm -f $(DESTDIR)$(MANDIR)/man1/filterbuild.1 $(DESTDIR)$(MANDIR)/man8/revcheckd.8
	@# Configs that differ from the examples are the operator's: kept.
	for f in config/*.json config/*.conf; do \
	    d=$(DESTDIR)$(SYSCONFDIR)/revcheck/$$(basename $$f); rm -f "$$d.example"; \
	    if [ -e "$$d" ] && $(SED_PATHS) "$$f" | cmp -s - "$$d"; then rm -f "$$d"; \
	    elif [ -e "$$d" ]; then echo "uninstall: keeping edited $$d"; fi; \
	done
	-rmdir $(DESTDIR)$(SYSCONFDIR)/revcheck 2>/dev/null
	for f in systemd/*.service systemd/*.timer; do rm -f $(DESTDIR)$(UNITDIR)/$$(basename $$f); done
	rm -rf $(DESTDIR)$(DOCDIR)

clean:
	rm -rf build bin

-include $(LIB_OBJ:.o=.d) $(SVC_OBJ:.o=.d) $(FB_OBJ:.o=.d) $(TEST_BIN:%=%.d)

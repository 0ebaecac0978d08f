#!/usr/bin/env bash
# it_deb.sh - `make deb`'s package: hardened, lintian-clean, its contents, conffiles kept on upgrade, units stopped and disabled on removal
#
# Builds the package with packaging/deb/mkdeb.sh as `make deb` does (its
# binaries in build/hardened, with dpkg-buildflags' hardening flags), then
# without touching this machine's packages:
# - lintian reports no error, no warning and no hardening tag (info
#   level included);
# - both binaries are hardened, as readelf shows: PIE (ELF type DYN),
#   BIND_NOW and FLAGS_1 NOW, a GNU_RELRO segment, __stack_chk_fail and
#   fortified __*_chk functions;
# - the contents: both binaries (runnable), man pages, every unit,
#   example configs, openapi.yaml, alert rules, dashboard, copyright and
#   changelog; no unit, config or man page names /usr/local, not even in
#   a comment; md5sums verify;
# - every file under /etc is a conffile; prerm names every unit under
#   systemd/;
# - real dpkg installs it into a private root (--root, chrootless
#   scripts with adduser/getent/systemctl/deb-systemd-invoke replaced by
#   recorders on PATH, deb-systemd-helper recorded and run on it):
#   postinst creates the system user "revcheck" once, and an upgrade
#   keeps a config the operator edited (the new one lands beside it as
#   .dpkg-dist) while an unedited one is updated and leaves the units
#   alone; removal stops every unit (systemd's /run/systemd/system is
#   faked in a private mount namespace) and disables the ones the
#   operator enabled (systemctl --root enable); purge leaves no record.
# it-serial: runs make deb in the source tree
. "$(dirname "$0")/lib.sh"

for t in dpkg-deb dpkg-shlibdeps lintian; do
	command -v "$t" >/dev/null || { rc_fail "$t is missing (make deps)"; rc_done; exit 1; }
done

out=$(TMPDIR=$T bash "$RC_SRC/packaging/deb/mkdeb.sh" 0.1.0 build/hardened "$T/out" 2>"$T/mkdeb.err") ||
	{ rc_fail "mkdeb.sh failed: $(cat "$T/mkdeb.err")"; rc_done; exit 1; }
DEB=$T/out/revcheck_0.1.0_$(dpkg --print-architecture).deb
rc_expect_eq "$out" "$DEB" "mkdeb.sh names the package it wrote"

# ---------------------------------------------------------------- lintian
lint=$(lintian --display-info --fail-on error,warning "$DEB" 2>&1) && lrc=0 || lrc=$?
rc_expect_eq "$lrc" 0 "lintian: no error or warning"
rc_expect_eq "$(grep -E '^(E|W): ' <<<"$lint" || true)" "" "lintian prints no E: or W: tag"
rc_expect_eq "$(grep -E '^[EWIP]: [^ ]+ hardening-' <<<"$lint" || true)" "" \
    "lintian prints no hardening tag (info included)"

# ---------------------------------------------------------------- contents
dpkg-deb -R "$DEB" "$T/x"
X=$T/x
for f in usr/sbin/revcheckd usr/bin/filterbuild usr/share/man/man8/revcheckd.8.gz \
    usr/share/man/man1/filterbuild.1.gz lib/systemd/system/revcheckd.service \
    lib/systemd/system/revcheckd-edge.service lib/systemd/system/filterbuild.service \
    lib/systemd/system/filterbuild.timer etc/revcheck/revcheckd.json \
    etc/revcheck/revcheckd-edge.json usr/share/doc/revcheck/copyright \
    usr/share/doc/revcheck/changelog.gz usr/share/doc/revcheck/OPERATIONS.md \
    usr/share/doc/revcheck/openapi.yaml \
    usr/share/doc/revcheck/examples/revcheckd-alerts.yml \
    usr/share/doc/revcheck/examples/grafana/revcheckd-dashboard.json; do
	[ -f "$X/$f" ] && rc_ok "package has /$f" || rc_fail "package lacks /$f"
done
for u in "$RC_SRC"/systemd/*.service "$RC_SRC"/systemd/*.timer; do
	f=lib/systemd/system/${u##*/}
	[ -f "$X/$f" ] && rc_ok "package has /$f" || rc_fail "package lacks /$f"
done
cmp -s "$X/usr/share/doc/revcheck/openapi.yaml" "$RC_SRC/docs/openapi.yaml" &&
	rc_ok "openapi.yaml is docs/openapi.yaml" || rc_fail "the packaged openapi.yaml differs"

# ---------------------------------------------------------------- hardening
for b in usr/sbin/revcheckd usr/bin/filterbuild; do
	rc_expect_match "$(readelf -hW "$X/$b")" '^ +Type: +DYN ' "/$b is PIE (ELF type DYN)"
	dyn=$(readelf -dW "$X/$b")
	rc_expect_match "$dyn" '\(FLAGS\) +.*BIND_NOW' "/$b: BIND_NOW"
	rc_expect_match "$dyn" '\(FLAGS_1\) +Flags:.* NOW' "/$b: FLAGS_1 NOW"
	rc_expect_match "$dyn" '\(FLAGS_1\) +Flags:.* PIE' "/$b: FLAGS_1 PIE"
	rc_expect_match "$(readelf -lW "$X/$b")" '^ +GNU_RELRO ' "/$b: GNU_RELRO segment"
	syms=$(readelf --dyn-syms -W "$X/$b")
	rc_expect_match "$syms" ' __stack_chk_fail(@|$)' "/$b: stack protector (__stack_chk_fail)"
	rc_expect_match "$syms" ' __(memcpy|snprintf|vsnprintf|fprintf|printf)_chk(@|$)' \
	    "/$b: fortified functions (__*_chk)"
done

rc_expect_match "$("$X/usr/sbin/revcheckd" --version)" "^revcheckd 0\.1\.0$" "the packaged revcheckd runs"
rc_expect_match "$("$X/usr/bin/filterbuild" --version)" "^filterbuild 0\.1\.0$" "the packaged filterbuild runs"
rc_expect_match "$(grep '^ExecStart=' "$X/lib/systemd/system/revcheckd.service")" \
    '^ExecStart=/usr/sbin/revcheckd -c /etc/revcheck/revcheckd.json$' "the unit names the packaged paths"
rc_expect_match "$(grep '^ExecStart=' "$X/lib/systemd/system/filterbuild-follow.service")" \
    '^ExecStart=/usr/bin/filterbuild follow ' "the follow unit names /usr/bin/filterbuild"
rc_expect_match "$(grep '^EnvironmentFile=' "$X/lib/systemd/system/filterbuild-fetch.service")" \
    '^EnvironmentFile=/etc/revcheck/filterbuild-fetch.conf$' "the fetch unit names /etc/revcheck"
rc_expect_match "$(zcat "$X/usr/share/man/man8/revcheckd.8.gz")" '^\.I /etc/revcheck/revcheckd\.json$' \
    "revcheckd(8) names /etc/revcheck/revcheckd.json"
# Not even a comment: an operator reading the unit or the page on this
# system must find the files where they say.
left=$(grep -rn '/usr/local' "$X/etc" "$X/lib" || true)
left+=$(zgrep -n '/usr/local' "$X"/usr/share/man/man*/*.gz || true)
rc_expect_eq "$left" "" "no packaged unit, config or man page names /usr/local"
ctl=$(cat "$X/DEBIAN/control")
rc_expect_match "$ctl" '^Depends: .*libmicrohttpd12.*adduser' "Depends from dpkg-shlibdeps, plus adduser"
rc_expect_match "$ctl" '^Package: revcheck$' "control: Package"
(cd "$X" && md5sum --quiet -c DEBIAN/md5sums) >/dev/null 2>&1 && rc_ok "md5sums verify" ||
	rc_fail "md5sums do not verify"
rc_expect_eq "$(cat "$X/DEBIAN/conffiles")" "$(cd "$X" && find etc -type f | sort | sed 's|^|/|')" \
    "every file under /etc is a conffile"
for s in postinst prerm postrm; do
	sh -n "$X/DEBIAN/$s" && rc_ok "$s parses" || rc_fail "$s has a syntax error"
done
# The unit list in prerm is written by mkdeb.sh; each one shipped must be there.
units=$(sed -n 's/^UNITS="\(.*\)"$/\1/p' "$X/DEBIAN/prerm")
for u in "$RC_SRC"/systemd/*.service "$RC_SRC"/systemd/*.timer; do
	grep -qw -- "${u##*/}" <<<"$units" && rc_ok "prerm names ${u##*/}" ||
		rc_fail "prerm does not name ${u##*/} (UNITS=\"$units\")"
done

# ---------------------------------------------------------------- dpkg into a private root
R=$T/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$T/fake"
: >"$R/var/lib/dpkg/status"
: >"$R/var/lib/dpkg/available"
for t in adduser getent systemctl deb-systemd-invoke; do
	cat >"$T/fake/$t" <<EOF
#!/bin/sh
echo "$t \$*" >>"$T/fake.log"
[ "$t" != getent ] || [ -e "$T/user-exists" ]
EOF
	chmod +x "$T/fake/$t"
done
# deb-systemd-helper works on files (under $DPKG_ROOT, which dpkg sets
# to the private root): the real one runs, recorded, so that what prerm
# disables is really gone.
cat >"$T/fake/deb-systemd-helper" <<EOF
#!/bin/sh
echo "deb-systemd-helper \$*" >>"$T/fake.log"
[ "\$DPKG_ROOT" = "$R" ] || { echo "DPKG_ROOT is '\$DPKG_ROOT'" >&2; exit 1; }
exec /usr/bin/deb-systemd-helper "\$@"
EOF
chmod +x "$T/fake/deb-systemd-helper"
DPKG=(dpkg --root="$R" --force-script-chrootless --force-not-root --force-depends
    --log="$T/dpkg.log")
: >"$T/fake.log"
PATH="$T/fake:$PATH" "${DPKG[@]}" -i "$DEB" </dev/null >"$T/dpkg1.out" 2>&1 &&
    rc_ok "dpkg installs the package into a private root" ||
    rc_fail "dpkg -i: $(tail -n 5 "$T/dpkg1.out")"
rc_expect_match "$(cat "$T/fake.log")" '^deb-systemd-helper update-state .*filterbuild-follow\.service' \
    "postinst records the units' links"
rc_expect_match "$(cat "$T/fake.log")" '^adduser --quiet --system --group --no-create-home --home /var/lib/revcheck .*revcheck$' \
    "postinst creates the system user revcheck"
[ -x "$R/usr/sbin/revcheckd" ] && rc_ok "installed: /usr/sbin/revcheckd" || rc_fail "nothing installed"

# The operator edits one config; version 0.1.2 ships new text for two.
printf '// edited by the operator\n' >>"$R/etc/revcheck/revcheckd.json"
edited=$(cat "$R/etc/revcheck/revcheckd.json")
dpkg-deb -R "$DEB" "$T/v2"
sed -i 's/^Version: 0\.1\.0$/Version: 0.1.2/' "$T/v2/DEBIAN/control"
printf '// shipped in 0.1.2\n' >>"$T/v2/etc/revcheck/revcheckd.json"
printf '# shipped in 0.1.2\n' >>"$T/v2/etc/revcheck/filterbuild.conf"
dpkg-deb --root-owner-group -b "$T/v2" "$T/v2.deb" >/dev/null
touch "$T/user-exists"
: >"$T/fake.log"
PATH="$T/fake:$PATH" "${DPKG[@]}" --force-confdef --force-confold -i "$T/v2.deb" </dev/null \
    >"$T/dpkg2.out" 2>&1 && rc_ok "dpkg upgrades to 0.1.2" || rc_fail "dpkg upgrade: $(tail -n 5 "$T/dpkg2.out")"
rc_expect_eq "$(cat "$R/etc/revcheck/revcheckd.json")" "$edited" "the upgrade keeps the edited revcheckd.json"
[ -f "$R/etc/revcheck/revcheckd.json.dpkg-dist" ] && rc_ok "the new one lands beside it (.dpkg-dist)" ||
	rc_fail "no revcheckd.json.dpkg-dist"
rc_expect_match "$(tail -n 1 "$R/etc/revcheck/filterbuild.conf")" '^# shipped in 0\.1\.2$' \
    "an unedited conffile is updated"
rc_expect_eq "$(grep -c '^adduser' "$T/fake.log" || true)" 0 "postinst does not add an existing user again"
rc_expect_eq "$(grep -E '^(deb-systemd-helper disable|deb-systemd-invoke stop)' "$T/fake.log" || true)" "" \
    "an upgrade neither stops nor disables a unit"
rc_expect_match "$(sed -n 's/^Version: //p' "$R/var/lib/dpkg/status")" '^0\.1\.2$' "dpkg records 0.1.2"

# The operator enables the units that have an [Install] section.
enabled=()
for u in "$R"/lib/systemd/system/*; do
	grep -q '^\[Install\]' "$u" && enabled+=("${u##*/}")
done
systemctl --root="$R" enable "${enabled[@]}" >"$T/enable.out" 2>&1 ||
	rc_fail "systemctl --root enable: $(cat "$T/enable.out")"
rc_expect_eq "$(find "$R/etc/systemd/system" -type l | wc -l)" "${#enabled[@]}" \
    "the operator enabled ${enabled[*]}"

# Removal stops and disables every unit and keeps the configuration
# (conffiles stay until purge). prerm stops units only where systemd
# runs (/run/systemd/system): a private mount namespace shows it one.
: >"$T/fake.log"
remove=(env PATH="$T/fake:$PATH" "${DPKG[@]}" -r revcheck)
systemd_faked=0
if unshare -m true 2>/dev/null; then
	systemd_faked=1
	remove=(unshare -m sh -c 'mount -t tmpfs revcheck-it-deb /run &&
	    mkdir -p /run/systemd/system && exec "$@"' sh "${remove[@]}")
else
	echo "note: no private mount namespace (unshare -m): prerm's stop is not run" >&2
fi
"${remove[@]}" </dev/null >"$T/dpkg3.out" 2>&1 &&
    rc_ok "dpkg removes the package" || rc_fail "dpkg -r: $(tail -n 5 "$T/dpkg3.out")"
[ ! -e "$R/usr/sbin/revcheckd" ] && rc_ok "the binary is gone" || rc_fail "the binary stayed"
rc_expect_eq "$(cat "$R/etc/revcheck/revcheckd.json")" "$edited" "remove (not purge) keeps the edited config"
stopped=$(grep '^deb-systemd-invoke stop ' "$T/fake.log" || true)
disabled=$(grep '^deb-systemd-helper disable ' "$T/fake.log" || true)
for u in "$RC_SRC"/systemd/*.service "$RC_SRC"/systemd/*.timer; do
	u=${u##*/}
	if [ "$systemd_faked" = 1 ]; then
		grep -qw -- "$u" <<<"$stopped" && rc_ok "removal stops $u" ||
			rc_fail "removal does not stop $u (${stopped:-no stop})"
	fi
	grep -qw -- "$u" <<<"$disabled" && rc_ok "removal disables $u" ||
		rc_fail "removal does not disable $u (${disabled:-no disable})"
done
rc_expect_eq "$(find "$R/etc/systemd/system" -type l)" "" "no link of an enabled unit is left"

# Purge drops deb-systemd-helper's records too.
PATH="$T/fake:$PATH" "${DPKG[@]}" --purge revcheck </dev/null >"$T/dpkg4.out" 2>&1 &&
    rc_ok "dpkg purges the package" || rc_fail "dpkg --purge: $(tail -n 5 "$T/dpkg4.out")"
rc_expect_eq "$(find "$R/var/lib/systemd" -name '*revcheck*' -o -name '*filterbuild*' 2>/dev/null)" "" \
    "no record of a unit's links is left"

rc_done

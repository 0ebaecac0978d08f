#!/usr/bin/env bash
# mkdeb.sh - what `make deb` runs: stage `make install` under Debian paths, add control files, dpkg-deb
#
# Usage: packaging/deb/mkdeb.sh VERSION BUILD OUTDIR
# Builds revcheckd and filterbuild in BUILD (a build directory of their
# own, relative to the source tree) with Debian's hardening flags
# (dpkg-buildflags with DEB_BUILD_MAINT_OPTIONS=hardening=+all: stack
# protector, _FORTIFY_SOURCE=2, format-security, relro, BIND_NOW, PIE) and
# WERROR=1, rebuilding everything when the flags changed since its last
# build. Runs `make install` of them into a staging root (PREFIX=/usr,
# /etc, units in /lib/systemd/system), strips the binaries, compresses man
# pages and the changelog, adds the alert rules and the Grafana dashboard
# as examples, marks every file under /etc a conffile (dpkg never replaces
# one the operator edited), names every shipped unit in prerm (stopped and
# disabled on removal), computes Depends with dpkg-shlibdeps and writes
# OUTDIR/revcheck_VERSION_ARCH.deb (root-owned files).
set -euo pipefail

VERSION=$1
BUILD=$2
OUT=$3
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$SRC/packaging/deb
ARCH=$(dpkg --print-architecture)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/revcheck-deb.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
R=$WORK/root

# The flags are computed in the source tree (-ffile-prefix-map names it).
flags=()
for v in CFLAGS CPPFLAGS LDFLAGS; do
	flags+=("$v=$(cd "$SRC" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$v")")
done
# make does not compare flags: a build made with others is made again.
stamp=$SRC/$BUILD/deb-buildflags
always=()
if [ "$(cat "$stamp" 2>/dev/null)" != "$(printf '%s\n' "${flags[@]}")" ]; then
	always=(-B)
fi
MK=(make -C "$SRC" --no-print-directory BUILD="$BUILD" WERROR=1 SANITIZE= "${flags[@]}")
"${MK[@]}" "${always[@]}" -j"$(nproc 2>/dev/null || echo 1)" "$BUILD/revcheckd" "$BUILD/filterbuild" \
    >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; exit 1; }
printf '%s\n' "${flags[@]}" >"$stamp"
"${MK[@]}" DESTDIR="$R" PREFIX=/usr SYSCONFDIR=/etc UNITDIR=/lib/systemd/system install \
    >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; exit 1; }

DOC=$R/usr/share/doc/revcheck
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$R/usr/sbin/revcheckd" "$R/usr/bin/filterbuild"
gzip -9n "$R"/usr/share/man/man*/*
install -d "$DOC/examples/grafana"
install -m 0644 "$SRC/config/revcheckd-alerts.yml" "$DOC/examples/"
install -m 0644 "$SRC/config/grafana/revcheckd-dashboard.json" "$DOC/examples/grafana/"
install -m 0644 "$PKG/copyright" "$DOC/copyright"
sed -e "s/@VERSION@/$VERSION/" -e "s/@DATE@/$(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(date +%s)}")/" \
    "$PKG/changelog" | gzip -9n >"$DOC/changelog.gz"
find "$R" -type d -exec chmod 0755 {} +
find "$R" -type f ! -path "$R/usr/sbin/*" ! -path "$R/usr/bin/*" -exec chmod 0644 {} +

install -d "$R/DEBIAN"
(cd "$R" && find etc -type f | sort | sed 's|^|/|') >"$R/DEBIAN/conffiles"
for s in postinst prerm postrm; do
	install -m 0755 "$PKG/$s" "$R/DEBIAN/$s"
done
# Every unit the package ships, timers first (a running timer would start
# its service again).
units=$(cd "$R/lib/systemd/system" && ls -- *.timer *.service | tr '\n' ' ')
sed -i "s/@UNITS@/${units% }/" "$R/DEBIAN/postinst" "$R/DEBIAN/prerm" "$R/DEBIAN/postrm"
(cd "$R" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print |
    sed 's|^\./||' | sort | xargs md5sum) >"$R/DEBIAN/md5sums"

# dpkg-shlibdeps reads debian/control from the directory it runs in.
mkdir -p "$WORK/src/debian"
printf 'Source: revcheck\n\nPackage: revcheck\nArchitecture: any\n' >"$WORK/src/debian/control"
shlibs=$(cd "$WORK/src" && dpkg-shlibdeps -O "$R/usr/sbin/revcheckd" "$R/usr/bin/filterbuild" |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$R" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$size/" \
    -e "s/@SHLIBS@/$shlibs/" "$PKG/control.in" >"$R/DEBIAN/control"

mkdir -p "$OUT"
deb=$OUT/revcheck_${VERSION}_$ARCH.deb
dpkg-deb --root-owner-group -Zxz --build "$R" "$deb" >/dev/null
echo "$deb"

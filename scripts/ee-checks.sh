# shellcheck shell=bash
# Checks of the EE scripts' settings (sourced by ee.sh and ee-base.sh): each bad value stops the script before
# anything is built, with the setting's name and value.
ee_bad() { echo "$EE_SCRIPT: $1: '$2' $3" >&2; exit 2; }

# Image references, after the grammar of distribution's reference package (github.com/distribution/reference,
# reference.go and regexp.go; formerly docker/distribution/reference):
#   reference := name [":" tag] ["@" digest]          name := [domain "/"] path-component ["/" path-component]*
#   domain := host [":" port]   host: domain-components [a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])? joined by "."
#   path-component := [a-z0-9]+ (separator [a-z0-9]+)*  separator := [_.] | "__" | "-"+
#   tag := [\w][\w.-]{0,127}    digest := algorithm ":" hex, algorithm := [A-Za-z][A-Za-z0-9]* joined by [-_+.],
#   hex := [0-9a-fA-F]{32,}     the name at most 255 characters (NameTotalLengthMax)
# The first component is a registry when it has a dot or a port or is localhost (as podman reads it; distribution
# also takes one with uppercase letters, which podman does not). Beyond the grammar: the port is 1..65535, and the
# digests that go-digest (and so podman) knows have their exact length in lowercase hex (sha256 64, sha384 96,
# sha512 128). IPv6 registry addresses ([::1]:5000) are not taken.
ee_host_component='[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?'
ee_host="$ee_host_component(\\.$ee_host_component)*"
ee_component='[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*'
ee_registry="($ee_host_component(\\.$ee_host_component)+(:[0-9]+)?|localhost(:[0-9]+)?|$ee_host_component:[0-9]+)/"
ee_tag='[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}'
ee_digest='[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}'
ee_image_re="^(($ee_registry)?$ee_component(/$ee_component)*)(:$ee_tag)?(@$ee_digest)?\$"
ee_image_form="[registry[:port]/]name[:tag][@algorithm:hex]: lowercase name components, a tag of at most 128 characters"
# a TCP port: 1..65535 (at most 5 digits first, so that the arithmetic cannot overflow)
ee_port_ok() { [[ $1 =~ ^[0-9]{1,5}$ ]] && (( 10#$1 >= 1 && 10#$1 <= 65535 )); }
ee_check_image() {
  local name digest hex length
  [[ $2 =~ $ee_image_re ]] || ee_bad "$1" "$2" "is not an image reference ($ee_image_form)"
  name=${BASH_REMATCH[1]}
  ((${#name} <= 255)) || ee_bad "$1" "$2" "has a name (before the tag and digest) of ${#name} characters, over 255"
  # a colon before the name's first slash can only be the registry's port (path components have none)
  if [[ $name =~ ^[^/]*:([0-9]+)/ ]] && ! ee_port_ok "${BASH_REMATCH[1]}"; then
    ee_bad "$1" "$2" "has a registry port outside 1..65535"
  fi
  if [[ $2 == *@* ]]; then
    digest=${2#*@}
    case "${digest%%:*}" in
      sha256) length=64 ;;
      sha384) length=96 ;;
      sha512) length=128 ;;
      *) length="" ;;
    esac
    hex=${digest#*:}
    [ -z "$length" ] || [[ $hex =~ ^[0-9a-f]+$ && ${#hex} -eq $length ]] \
      || ee_bad "$1" "$2" "has a ${digest%%:*} digest that is not $length lowercase hex digits"
  fi
  return 0
}

# an absolute path of letters, digits and _ + . - between slashes, without a .. component
ee_check_program() {
  if [ -n "$2" ] && { ! [[ $2 =~ ^(/[A-Za-z0-9_+.-]+)+$ ]] || [[ $2/ == */../* ]]; }; then
    ee_bad "$1" "$2" "is not an absolute path of a program (letters, digits, _ + . - between slashes, no ..)"
  fi
}

# an http(s) URL of a Debian mirror: a host name (or IPv4 address), an optional port 1..65535, an optional path
ee_check_mirror() {
  [[ $2 =~ ^https?://$ee_host(:[0-9]+)?(/[A-Za-z0-9._~%/-]*)?$ ]] \
    || ee_bad "$1" "$2" "is not an http(s) URL of a Debian mirror"
  if [[ $2 =~ ^https?://[^/:]*:([0-9]+) ]] && ! ee_port_ok "${BASH_REMATCH[1]}"; then
    ee_bad "$1" "$2" "has a port outside 1..65535"
  fi
}

# A CA bundle that becomes the image's trust store (/etc/ssl/certs/ca-certificates.crt): a path without blanks
# (mmdebstrap's upload hook splits on them) naming, after symlinks are resolved, a readable regular file of at most
# 16 MiB that holds PEM certificates and nothing else of PEM: at least one "-----BEGIN CERTIFICATE-----" ...
# "-----END CERTIFICATE-----" block of base64 lines. Between the blocks, text is allowed (blank lines, "#" comments,
# the titles of curl's cacert.pem, the text of `openssl x509 -text`: OpenSSL and GnuTLS skip it), but no control
# characters and no other PEM object: a private key, a CRL or a TRUSTED CERTIFICATE stops the build. Where openssl is
# installed, it must also parse every certificate. Sets ee_ca_real to the resolved path.
ee_ca_max=$((16 * 1024 * 1024))
ee_check_ca_bundle() {
  local where=$1 path=$2 real size odd problem
  [[ $path =~ ^[A-Za-z0-9_+./-]+$ ]] || ee_bad "$where" "$path" "is not a path of letters, digits and _ + . - /"
  real=$(realpath -e -- "$path" 2>/dev/null) || ee_bad "$where" "$path" "does not exist (or is a dangling symlink)"
  [[ $real =~ ^[A-Za-z0-9_+./-]+$ ]] \
    || ee_bad "$where" "$path" "resolves to '$real', not a path of letters, digits and _ + . - /"
  [ -f "$real" ] || ee_bad "$where" "$path" "is not a regular file (resolved: '$real')"
  [ -r "$real" ] || ee_bad "$where" "$path" "is not readable"
  size=$(stat -c %s -- "$real") || ee_bad "$where" "$path" "cannot be read"
  ((size > 0)) || ee_bad "$where" "$path" "is empty, not a PEM certificate bundle"
  ((size <= ee_ca_max)) || ee_bad "$where" "$path" "is $size bytes, over the 16 MiB a CA bundle may have"
  # bytes other than tab, newline, carriage return, printable ASCII and UTF-8's high bytes
  odd=$(LC_ALL=C tr -d '\011\012\015\040-\176\200-\377' <"$real" | wc -c) || ee_bad "$where" "$path" "cannot be read"
  ((odd == 0)) || ee_bad "$where" "$path" "has $odd control or NUL bytes: not a PEM certificate bundle (a DER file?)"
  problem=$(LC_ALL=C awk '
    function bad(why) { print why; failed = 1; exit }
    { sub(/[ \t\r]+$/, "") }
    !inside && $0 == "-----BEGIN CERTIFICATE-----" { inside = 1; begin = NR; b64 = 0; padded = 0; next }
    !inside && /^-----/ {
      bad("line " NR " (" $0 ") is not a certificate block: only certificates may be in a CA bundle")
    }
    !inside { next }
    $0 == "-----END CERTIFICATE-----" {
      if (b64 == 0) bad("the certificate at line " begin " is empty")
      if (b64 % 4) bad("the certificate at line " begin " is not whole base64")
      inside = 0; certs++; next
    }
    /^-----/ { bad("the certificate at line " begin " has no END line before line " NR) }
    padded || !/^[A-Za-z0-9+\/]+=?=?$/ || length($0) > 76 {
      bad("line " NR ", in the certificate at line " begin ", is not a line of base64")
    }
    { b64 += length($0); padded = /=$/ }
    END {
      if (failed) exit
      if (inside) print "the certificate at line " begin " has no END line"
      else if (!certs) print "holds no PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)"
    }' "$real") || ee_bad "$where" "$path" "cannot be read"
  [ -z "$problem" ] || ee_bad "$where" "$path" "is not a PEM certificate bundle: $problem"
  if command -v openssl >/dev/null && ! openssl crl2pkcs7 -nocrl -certfile "$real" -out /dev/null >/dev/null 2>&1; then
    ee_bad "$where" "$path" "is not a PEM certificate bundle: openssl cannot read all its certificates"
  fi
  ee_ca_real=$real
}

# ee-base.sh's settings, checked by ee-base.sh and, before it builds anything, by ee.sh where it will make the base:
# the tag (argument 1), EE_BASE_SUITE, EE_BASE_MIRROR and the CA bundle: EE_CA_BUNDLE, else PIP_CERT, else pip's own
# configuration's global.cert (read with .venv's pip where .venv exists). Sets ee_base_suite, ee_base_mirror,
# ee_ca_where (the bundle's setting) and ee_ca_real (its resolved path; empty without a bundle).
ee_check_base() {
  local bundle=""
  ee_base_suite=${EE_BASE_SUITE:-trixie}
  ee_base_mirror=${EE_BASE_MIRROR:-http://deb.debian.org/debian}
  ee_check_image "the tag (argument 1)" "$1"
  [[ $ee_base_suite =~ ^[a-z][a-z0-9-]{0,31}$ ]] \
    || ee_bad EE_BASE_SUITE "$ee_base_suite" "is not a Debian suite name (trixie, bookworm, ...)"
  ee_check_mirror EE_BASE_MIRROR "$ee_base_mirror"
  # shellcheck disable=SC2034  # ee_ca_real: read by ee-base.sh
  ee_ca_where="" ee_ca_real=""
  if [ -n "${EE_CA_BUNDLE:-}" ]; then
    bundle=$EE_CA_BUNDLE ee_ca_where=EE_CA_BUNDLE
  elif [ -n "${PIP_CERT:-}" ]; then
    bundle=$PIP_CERT ee_ca_where=PIP_CERT
  elif [ -x .venv/bin/python ]; then
    bundle=$(.venv/bin/python -m pip config list 2>/dev/null | sed -n "s/^global\.cert='\(.*\)'$/\1/p" | tail -1)
    ee_ca_where="pip's global.cert (.venv/bin/python -m pip config list)"
  fi
  [ -n "$bundle" ] || return 0
  ee_check_ca_bundle "$ee_ca_where" "$bundle"
  # the checked copy that goes into the image lies in mktemp's folder, under TMPDIR: no blanks there either
  [ -z "${TMPDIR:-}" ] || [[ $TMPDIR =~ ^[A-Za-z0-9_+./-]+$ ]] \
    || ee_bad TMPDIR "$TMPDIR" "is not a path of letters, digits and _ + . - / (it holds the CA bundle's copy)"
}

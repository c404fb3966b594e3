# shellcheck shell=bash
# Checks of the EE scripts' settings (sourced by ee.sh and ee-base.sh): each bad value stops the script before
# anything is built, with the setting's name and value.
ee_bad() { echo "$EE_SCRIPT: $1: '$2' $3" >&2; exit 2; }
# [registry[:port]/]path[:tag][@sha256:digest]: the first component is a registry when it has a dot or a port or is
# localhost (as podman reads it), and the path's components are lowercase, as the registries require
ee_component='[a-z0-9]+([._-]+[a-z0-9]+)*'
ee_registry='(([A-Za-z0-9-]+\.)+[A-Za-z0-9-]+(:[0-9]{1,5})?|localhost(:[0-9]{1,5})?|[A-Za-z0-9-]+:[0-9]{1,5})/'
ee_image_re="^($ee_registry)?$ee_component(/$ee_component)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?\$"
ee_check_image() {
  [[ $2 =~ $ee_image_re ]] || ee_bad "$1" "$2" "is not an image reference ([registry[:port]/]name[:tag][@sha256:digest])"
}
# an absolute path of letters, digits and _ + . - between slashes, without a .. component
ee_check_program() {
  if [ -n "$2" ] && { ! [[ $2 =~ ^(/[A-Za-z0-9_+.-]+)+$ ]] || [[ $2/ == */../* ]]; }; then
    ee_bad "$1" "$2" "is not an absolute path of a program (letters, digits, _ + . - between slashes, no ..)"
  fi
}

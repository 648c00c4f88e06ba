# Sourced by the scripts: quiet commands, full output in a log file.
#
#   quiet LOG WHAT CMD...   runs CMD with its output appended to LOG; when it
#                           fails: the end of that output, the log's name,
#                           and the script exits with CMD's status
quiet() {
  local log=$1 what=$2 rc=0
  shift 2
  echo "--- $what: $*" >>"$log"
  "$@" >>"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "$what failed (exit $rc); the end of its output:" >&2
    tail -n 30 "$log" | sed 's/^/  /' >&2
    echo "full log: $log" >&2
    exit "$rc"
  fi
}

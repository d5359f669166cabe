# Shell helpers shared by the guest test scripts (sourced, not a test itself: /init runs only the tests it is
# asked for). Callers set $out to the file holding testpmd-rs's output first.
# The last value of NAME-packets (RX or TX) in the NIC statistics blocks of `show port stats` for port $1.
stat() {
    awk -v p="NIC statistics for port $1 " -v k="$2-packets:" \
        '/statistics/ {f = index($0, p) > 0} f && $1 == k {v = $2} END {print v}' $out
}
# poll SECONDS CMD...: runs CMD every ~0.1 s until it succeeds (status 0) or SECONDS passed (status 1).
poll() {
    end=$(($(cut -d. -f1 /proc/uptime) + $1))
    shift
    until "$@"; do
        [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ] || return 1
        sleep 0.1
    done
}

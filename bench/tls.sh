#!/usr/bin/env bash
# HTTPS: Silo's own TLS (`silo serve --tls-cert/--tls-key`, the epoll transport) against nginx serving the same 1 KiB
# file over TLS with the same certificate, in the same run: small GET req/s on 64 keep-alive connections, server CPU
# per request, new connections per second (one request each), and full and resumed handshakes per second
# (`openssl s_time`). Writes bench/results/tls.md; bench/run calls it and includes the table.
# Usage: bench/tls.sh   (BENCH_SECONDS, BENCH_ROUNDS as in bench/run; BENCH_TLS_KEY=ecdsa|rsa, the certificate's
# key, default ecdsa (P-256); BENCH_BIN=dir of a release `silo` to skip the build)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-3}
key_type=${BENCH_TLS_KEY:-ecdsa}
bucket=bench.appspot.com
progress() { echo "[tls $SECONDS s] $*" >&2; }
started_at=$(date -u +%Y-%m-%dT%H:%MZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

BENCH_WORK_PREFIX=silo-bench-tls
# shellcheck source=bench/lib.sh
source bench/lib.sh
# Run from bench/run (BENCH_BIN set), everything is installed and built already.
if [ -z "${BENCH_BIN:-}" ]; then
    scripts/install-deps.sh
    need_tools nginx wrk bc
fi
release_silo

# ---- one CA and one server certificate for both servers --------------------------------------------------------------
case "$key_type" in
    ecdsa) newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
    rsa) newkey=(-newkey rsa:2048) ;;
    *) echo "BENCH_TLS_KEY must be ecdsa or rsa" >&2; exit 64 ;;
esac
tls_dir="$work/tls"
mkdir -p "$tls_dir"
openssl req -x509 -nodes -days 2 -subj "/CN=Silo bench CA" "${newkey[@]}" -keyout "$tls_dir/ca.key" \
    -out "$tls_dir/ca.crt" 2>/dev/null
openssl req -nodes -subj /CN=localhost "${newkey[@]}" -keyout "$tls_dir/server.key" -out "$tls_dir/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$tls_dir/ext.cnf"
openssl x509 -req -in "$tls_dir/server.csr" -CA "$tls_dir/ca.crt" -CAkey "$tls_dir/ca.key" -CAcreateserial -days 2 \
    -extfile "$tls_dir/ext.cnf" -out "$tls_dir/server.crt" 2>/dev/null
chmod 644 "$tls_dir"/*

mkdir -p "$work/www" "$work/m"
head -c 1024 /dev/urandom >"$work/www/small.bin"
chmod 644 "$work/www/small.bin"

nginx_tls_cert="$tls_dir/server.crt" nginx_tls_key="$tls_dir/server.key"
start_nginx "$work/www"
start_silo "$work/silo-data" --tls-cert "$tls_dir/server.crt" --tls-key "$tls_dir/server.key"
silo_url="https://127.0.0.1:$silo_port"
silo_base="$silo_url/v0/b/$bucket/o"
curl -sS -f --cacert "$tls_dir/ca.crt" -o /dev/null -X POST -H 'Content-Type: application/octet-stream' \
    -T "$work/www/small.bin" "https://localhost:$silo_port/v0/b/$bucket/o?name=small.bin"
# The first v0 read gives the object its download token (a metadata write); do it before measuring.
curl -sS -f --cacert "$tls_dir/ca.crt" -o /dev/null "https://localhost:$silo_port/v0/b/$bucket/o/small.bin"
cmp -s <(curl -sS -f --cacert "$tls_dir/ca.crt" "https://localhost:$silo_port/v0/b/$bucket/o/small.bin?alt=media") \
    "$work/www/small.bin" || { echo "silo small.bin differs over TLS" >&2; exit 1; }
cmp -s <(curl -sS -f --cacert "$tls_dir/ca.crt" "https://localhost:$nginx_tls_port/small.bin") "$work/www/small.bin" \
    || { echo "nginx small.bin differs over TLS" >&2; exit 1; }
small_silo="$silo_base/small.bin?alt=media"
small_nginx="$nginx_tls_url/small.bin"
progress "servers up: nginx $nginx_tls_url, silo $silo_url ($key_type certificate; $pinning)"

# Handshakes per second: openssl s_time, one connection at a time, on the load core. `-new`: a full handshake each
# time; `-reuse`: resumed from the first connection's session (a TLS 1.3 ticket; the page is fetched on each, so the
# ticket is read). Appends "connections/s server-cpu-µs-per-connection" to $work/m/NAME.
s_time_cpu() { # name pid host:port path mode
    local name=$1 before after count
    before=$(cpu_ticks "$2")
    count=$(on_load openssl s_time -connect "$3" -www "$4" "$5" -time "$seconds" 2>/dev/null \
        | awk '/connections in [0-9]+ real seconds/ {print $1, $4; exit}')
    after=$(cpu_ticks "$2")
    set -- $count
    echo "$(echo "$1 / $2" | bc -l) $(echo "($after - $before) * 1000000 / $clk_tck / ($1 + 0.000001)" | bc -l)" \
        >>"$work/m/$name"
}

for url in "$small_nginx" "$small_silo"; do on_load wrk -t1 -c64 -d1s "$url" >/dev/null; done
progress "$rounds rounds × ${seconds}s per figure and server…"
for _ in $(seq "$rounds"); do
    measure keep-nginx "$nginx_pid" 64 "$small_nginx"
    measure keep-silo "$silo_pid" 64 "$small_silo"
    # A new TLS connection per request (wrk reconnects after each `Connection: close` answer).
    measure close-nginx "$nginx_pid" 16 "$small_nginx" -H "Connection: close"
    measure close-silo "$silo_pid" 16 "$small_silo" -H "Connection: close"
    s_time_cpu full-nginx "$nginx_pid" "127.0.0.1:$nginx_tls_port" /small.bin -new
    s_time_cpu full-silo "$silo_pid" "127.0.0.1:$silo_port" "/v0/b/$bucket/o/small.bin?alt=media" -new
    s_time_cpu reuse-nginx "$nginx_pid" "127.0.0.1:$nginx_tls_port" /small.bin -reuse
    s_time_cpu reuse-silo "$silo_pid" "127.0.0.1:$silo_port" "/v0/b/$bucket/o/small.bin?alt=media" -reuse
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

row() { # label name-silo name-nginx column decimals
    echo "| $1 | $(fmt "$(col "$2" "$4")" "${5:-0}") [$(all "$2" "$4" "${5:-0}")] | nginx $(fmt "$(col "$3" "$4")" "${5:-0}") [$(all "$3" "$4" "${5:-0}")] | $(ratio "$(col "$2" "$4")" "$(col "$3" "$4")") |"
}
cpu_row() { # label name-silo name-nginx column
    echo "| $1 | $(fmt "$(col "$2" "$4")" 1) [$(all "$2" "$4" 1)] | nginx $(fmt "$(col "$3" "$4")" 1) [$(all "$3" "$4" 1)] | $(ratio "$(col "$3" "$4")" "$(col "$2" "$4")") (efficiency) |"
}
report=bench/results/tls.md
{
    echo "# HTTPS: Silo's TLS vs nginx's ($started_at, $(nproc) cores, load $load_start → $load_end)"
    echo
    echo "Loopback only. $pinning. Each figure is the median of $rounds rounds (all rounds in brackets); servers took"
    echo "turns within each round. Both serve the same 1 KiB bytes with the same $key_type certificate (TLS 1.3 chosen by"
    echo "every client here; X25519). Silo: \`silo serve --rules … --tls-cert --tls-key\` release build, epoll"
    echo "transport, v0 \`alt=media\` (rules evaluated on every request). nginx $(nginx -v 2>&1 | sed 's/.*\///'): 1 worker, static"
    echo "file, \`ssl_protocols TLSv1.2 TLSv1.3\`, tickets on. wrk runs are ${seconds}s, 1 thread; \`openssl s_time\` runs one"
    echo "connection at a time (client-bound: the client's own handshake work is on the load core), fetching the file on each."
    echo
    echo "| figure | Silo | nginx (same run) | ratio |"
    echo "|---|---|---|---|"
    row "1 KiB GET over TLS, 64 keep-alive conns, req/s" keep-silo keep-nginx 1
    cpu_row "1 KiB GET over TLS, server CPU µs/request" keep-silo keep-nginx 5
    row "1 KiB GET over TLS, a new connection per request (16 conns, \`Connection: close\`), req/s" close-silo close-nginx 1
    cpu_row "new connection per request, server CPU µs/request (handshake included)" close-silo close-nginx 5
    row "full handshakes/s (\`openssl s_time -new\`, sequential)" full-silo full-nginx 1
    cpu_row "full handshake + GET, server CPU µs each" full-silo full-nginx 2
    row "resumed handshakes/s (\`openssl s_time -reuse\`, sequential)" reuse-silo reuse-nginx 1
    cpu_row "resumed handshake + GET, server CPU µs each" reuse-silo reuse-nginx 2
    echo
    echo "Command: \`bench/tls.sh\` (BENCH_TLS_KEY=$key_type)"
} >"$report"
cat "$report"

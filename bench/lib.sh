# Shared by bench/run and bench/tail.sh: pinning, a work dir whose servers are all stopped on exit, CPU and RSS
# accounting from /proc, and one wrk measurement. Source it after `cd` to the repository root; it sets `work` (a
# fresh temp dir; BENCH_WORK_PREFIX names it) and `pids` (append every background server's pid), and `measure`
# reads `seconds`.
if [ -n "${BENCH_SERVER_CPUS:-}" ]; then
    # An explicit choice, e.g. BENCH_SERVER_CPUS=0-1 BENCH_LOAD_CPUS=0-1 to let both share every core.
    server_cpu=$BENCH_SERVER_CPUS load_cpu=${BENCH_LOAD_CPUS:-$BENCH_SERVER_CPUS}
    pinning="servers on CPUs $server_cpu, load generators on CPUs $load_cpu (taskset)"
elif [ "$(nproc)" -ge 2 ]; then
    server_cpu=0 load_cpu=1
    pinning="servers on CPU 0, load generators on CPU 1 (taskset)"
else
    server_cpu=0 load_cpu=0
    pinning="one core: servers and load generators share it"
fi
on_server() { taskset -c "$server_cpu" "$@"; }
# For background servers: exec, so that $! is the server's own pid (a backgrounded function would be a subshell).
spawn_on_server() { exec taskset -c "$server_cpu" "$@"; }
on_load() { taskset -c "$load_cpu" "$@"; }

# ---- bookkeeping: everything started is stopped ---------------------------------------------------------------------
work=$(mktemp -d /tmp/${BENCH_WORK_PREFIX:-silo-bench}-XXXXXX)
chmod 755 "$work"   # nginx workers run as nobody and must traverse to the document root
pids=()
# Commands run on exit after the servers are stopped (services such as PostgreSQL append their own stop).
cleanup_hooks=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    local hook
    for hook in "${cleanup_hooks[@]}"; do eval "$hook" || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- what a script needs ----------------------------------------------------------------------------------------------
# Installs (apt) the packages of the given tools that are not on PATH; each tool is its package's name.
need_tools() {
    local tool missing=()
    for tool in "$@"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
    [ ${#missing[@]} -eq 0 ] ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
# Sets `bin`, the directory of the release `silo`: $BENCH_BIN when set (bench/run passes the one it built), else one
# built now, as `make release` builds it.
release_silo() {
    if [ -n "${BENCH_BIN:-}" ]; then
        bin=$BENCH_BIN
        return
    fi
    echo "building silo (release)…" >&2
    swift build -c release -Xswiftc -cross-module-optimization --product silo >/dev/null
    bin=$(swift build -c release -Xswiftc -cross-module-optimization --show-bin-path)
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 150); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer at $1" >&2; exit 1; }
clk_tck=$(getconf CLK_TCK)
# utime+stime (ticks) of a process and its direct children (nginx workers).
cpu_ticks() {
    local total=0 p
    for p in $1 $(ps -o pid= --ppid "$1" 2>/dev/null); do
        [ -r "/proc/$p/stat" ] || continue
        total=$((total + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
    done
    echo "$total"
}
# Resident set (KiB) of a process and its children.
rss_kib() {
    local total=0 p
    for p in $1 $(ps -o pid= --ppid "$1" 2>/dev/null); do
        total=$((total + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
fmt() { printf "%.${2:-0}f" "$1"; }
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }

# ---- load -----------------------------------------------------------------------------------------------------------
to_ms() { awk -v v="$1" 'BEGIN { if (v ~ /us$/) print v/1000; else if (v ~ /ms$/) print v+0; else if (v ~ /m$/) print v*60000; else print v*1000 }'; }
to_mib() { awk -v v="$1" 'BEGIN { if (v ~ /GB$/) print v*1024; else if (v ~ /MB$/) print v+0; else if (v ~ /KB$/) print v/1024; else print v/1048576 }'; }
# One wrk run against URL with CONNS connections (further arguments go to wrk), charged to server PID; appends a line
# to $work/m/NAME: req/s p50-ms p99-ms MiB/s cpu-µs-per-request cpu-s-per-GiB
measure() {
    local name=$1 pid=$2 conns=$3 url=$4 out before after requests mib_read
    before=$(cpu_ticks "$pid")
    out=$(on_load wrk -t1 -c"$conns" -d"${seconds}s" --timeout 10s --latency "${@:5}" "$url")
    after=$(cpu_ticks "$pid")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    mib_read=$(to_mib "$(awk '/requests in/ {print $(NF - 1)}' <<<"$out")")
    if grep -q 'Non-2xx' <<<"$out"; then echo "$name: non-2xx responses: $(grep Non-2xx <<<"$out")" >&2; fi
    echo "$(awk '/^Requests\/sec/ {print $2}' <<<"$out")" \
        "$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")" \
        "$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")" \
        "$(to_mib "$(awk '/^Transfer\/sec/ {print $2}' <<<"$out")")" \
        "$(echo "($after - $before) * 1000000 / $clk_tck / ($requests + 0.000001)" | bc -l)" \
        "$(echo "($after - $before) / $clk_tck / ($mib_read / 1024 + 0.000001)" | bc -l)" >>"$work/m/$name"
}
col() { median $(awk -v c="$2" '{print $c}' "$work/m/$1"); }
all() { awk -v c="$2" '{printf "%s%.*f", (NR > 1 ? " " : ""), '"${3:-0}"', $c}' "$work/m/$1"; }

# nginx serving ROOT as static files (sendfile, open_file_cache) and taking WebDAV PUTs under /dav/; sets nginx_pid and
# nginx_url. Its temp and pid files live in $work/nginx. With nginx_tls_cert and nginx_tls_key set (PEM files) it also
# serves the same over TLS 1.2/1.3 (session tickets on, its default) and sets nginx_tls_url.
start_nginx() { # root
    mkdir -p "$work/nginx/tmp"
    nginx_port=$(free_port)
    local tls_listen=""
    if [ -n "${nginx_tls_cert:-}" ]; then
        nginx_tls_port=$(free_port)
        tls_listen="listen 127.0.0.1:$nginx_tls_port ssl; ssl_certificate $nginx_tls_cert; ssl_certificate_key $nginx_tls_key; ssl_protocols TLSv1.2 TLSv1.3;"
        nginx_tls_url="https://127.0.0.1:$nginx_tls_port"
    fi
    cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    client_body_temp_path $work/nginx/tmp/body;
    proxy_temp_path $work/nginx/tmp/proxy;
    fastcgi_temp_path $work/nginx/tmp/fastcgi;
    uwsgi_temp_path $work/nginx/tmp/uwsgi;
    scgi_temp_path $work/nginx/tmp/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$nginx_port;
        $tls_listen
        root $1;
        # The upload reference: WebDAV PUT of the same bytes Silo takes (bench/tail.sh).
        location /dav/ {
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 0;
        }
    }
}
EOF
    spawn_on_server nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
    nginx_pid=$!
    pids+=("$nginx_pid")
    nginx_url="http://127.0.0.1:$nginx_port"
    wait_http "$nginx_url/"
}

# Public read (the issue's setting for the small-object figures) and public write (the upload figures): every
# request goes through the rules engine, as in production.
cat >"$work/public.rules" <<'EOF'
rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} {
      allow read: if true;
      allow write: if true;
    }
  }
}
EOF
# With rules a v0 upload creates no bucket unless told to (only the emulator does by default); the bench's first
# upload creates its bucket.
start_silo() { # data-dir [flags…] → sets silo_pid, silo_port
    local dir=$1
    shift
    # shellcheck disable=SC2086 # BENCH_SILO_ARGS is a list of flags
    spawn_on_server "$bin/silo" serve --port 0 --data "$dir" --rules "$work/public.rules" --create-buckets-on-upload true "$@" ${BENCH_SILO_ARGS:-} \
        >"$dir.log" 2>&1 &
    silo_pid=$!
    pids+=("$silo_pid")
    for _ in $(seq 150); do grep -Eq 'https?://127.0.0.1:' "$dir.log" 2>/dev/null && break; sleep 0.1; done
    silo_port=$(grep -Eo 'https?://127.0.0.1:[0-9]*' "$dir.log" | head -1 | cut -d: -f3)
}
stop_silo() { kill -TERM "$silo_pid"; wait "$silo_pid" 2>/dev/null || true; }

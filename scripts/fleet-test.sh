#!/usr/bin/env bash
# Fleet-sync tests against a real, private PostgreSQL 15 server (Debian's packages).
#
#   scripts/fleet-test.sh [TEST ARGS...]      cargo test -p robotmem-cli --test fleet --test fleet_batches
#                                             --test fleet_netns --test fleet_netns_silent
#   FLEET_TESTS='fleet_netns' scripts/fleet-test.sh   only these test files
#   scripts/fleet-test.sh --bench [ARGS...]   cargo bench -p robotmem-cli --bench fleet -- ARGS, then the
#                                             scale run over real links (fleet_netns_scale, 20 robots)
#
# 1. Installs postgresql-15, postgresql-client-15, openssl and faketime if missing (apt).
#    Without PostgreSQL 15 and no way to install it, prints SKIPPED and exits 0.
# 2. Makes a throwaway CA and a server certificate for localhost / 127.0.0.1, and a
#    cluster under $work/pg (superuser robotmem_admin, random password, scram-sha-256),
#    listening on 127.0.0.1 at a free port only, TLS on (optional), plus a unix socket.
#    As root, initdb and pg_ctl run as the Debian `postgres` user (runuser).
# 2b. As root with iproute2, makes a network namespace for the hub (rmf<pid>, address
#    10.200.0.1 on its loopback): PostgreSQL runs inside it, listening on 127.0.0.1 and
#    10.200.0.1, and so do the tests (the hub's machine). The netns tests give each robot a
#    namespace of its own, joined to the hub's by a veth pair (cli/tests/common/netns.rs).
#    Where a namespace cannot be made, the server runs as before and those tests print
#    SKIPPED with the reason (ROBOTMEM_TEST_NETNS_SKIP). All namespaces rmf<pid>* are
#    deleted at exit.
# 3. Creates database `fleet`, writes $work/pgctl start|stop|kill|restart for the tests
#    (kill = immediate stop, like a crash), exports ROBOTMEM_TEST_PG_* and runs the tests:
#    fleet and fleet_batches first (they stop and restart the server), then fleet_netns and
#    fleet_netns_silent side by side (robot indexes from 1 and from 101:
#    ROBOTMEM_TEST_NODE_BASE), each binary's tests one at a time.
# At exit the server is stopped; on failure the last 50 lines of its log are printed and
# $work is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh      # defines apt_install_missing PKG...
source scripts/lib/common.sh fleet   # $work, step, fail, $jobs, EXIT trap `cleanup`

bin=/usr/lib/postgresql/15/bin
pgdir=$work/pg data=$work/pg/data log=$work/pg/server.log tls=$work/pg/tls

netns=rmf$$ hub_addr=10.200.0.1 in_ns=() netns_skip=""

# Stop the server before common.sh's cleanup runs; keep the exit code.
on_exit() {
  local rc=$? pid ns
  set +e
  if [ -f "$data/postmaster.pid" ]; then
    "$work/pgctl" stop >/dev/null 2>&1 || "$work/pgctl" kill >/dev/null 2>&1
    pid=$(head -n1 "$data/postmaster.pid" 2>/dev/null) && [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  fi
  # The robots' namespaces a failed test left (their veths go with them), then the hub's.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$netns-"); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "$ns"
  done
  ip netns list 2>/dev/null | grep -q "^$netns\b" && ip netns del "$netns"
  if [ "$rc" -ne 0 ] && [ -f "$log" ]; then
    echo "--- last 50 lines of $log" >&2
    tail -n 50 "$log" >&2
  fi
  _status() { return "$1"; }
  _status "$rc"; cleanup
}
trap on_exit EXIT
trap 'exit 130' INT; trap 'exit 143' TERM   # so on_exit sees a failure

step "PostgreSQL 15 from Debian"
reason=""
apt_install_missing postgresql-15 postgresql-client-15 openssl 2>"$work/apt.err" \
  || reason=$(tail -n1 "$work/apt.err")
apt_install_missing faketime 2>/dev/null || echo "fleet: faketime not installed (optional)" >&2
if [ ! -x "$bin/initdb" ]; then
  msg="SKIPPED: fleet tests — PostgreSQL 15 is not installed and could not be installed (${reason:-no $bin/initdb after apt})"
  echo "$msg"; echo "$msg" >&2
  exit 0
fi
command -v openssl >/dev/null || fail "openssl is missing"

# As root, the server programs run as `postgres`, which must reach $work (x only).
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  id -u postgres >/dev/null 2>&1 || fail "running as root but there is no 'postgres' user"
  as_pg=(runuser -u postgres --)
  # postgres must traverse (x only, no listing) $work and the private directories
  # above it that are ours, such as scripts/test.sh's run directory under $TMPDIR.
  d=$work
  while [ "$d" != / ] && [ "$(stat -c %U "$d")" = "$(id -un)" ]; do
    chmod o+x "$d"
    d=$(dirname "$d")
  done
fi
step "network namespace for the hub"
# iproute2 (ip, tc) from Debian when missing; as root only, where namespaces can be made.
if [ "$(id -u)" -eq 0 ] && ! command -v ip >/dev/null; then
  apt_install_missing iproute2 || echo "fleet: iproute2 could not be installed" >&2
fi
if [ "$(id -u)" -ne 0 ]; then
  netns_skip="not root (network namespaces need CAP_NET_ADMIN)"
elif ! command -v ip >/dev/null; then
  netns_skip="iproute2 (ip) is not installed"
elif ! err=$(ip netns add "$netns" 2>&1); then
  netns_skip="ip netns add failed: $err"
elif ! err=$( { ip -n "$netns" link set lo up && ip -n "$netns" addr add "$hub_addr/32" dev lo; } 2>&1); then
  netns_skip="setting up the hub's namespace failed: $err"
else
  # nsenter, not `ip netns exec`: the same mount namespace, so the namespaces the tests
  # add are seen (and deleted) here.
  in_ns=(nsenter "--net=/run/netns/$netns")
  echo "hub namespace $netns, address $hub_addr"
fi
if [ -n "$netns_skip" ]; then
  echo "SKIPPED: fleet tests over real links (netns): $netns_skip" | tee /dev/stderr
fi
pg() { (cd / && "${in_ns[@]}" "${as_pg[@]}" "$@"); }
mkdir -p "$pgdir/sock" "$tls"

step "TLS: throwaway CA and a server certificate for localhost"
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=robotmem fleet test CA" \
  -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
  -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:$hub_addr" "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" > "$tls/server.ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
  -days 3650 -extfile "$tls/server.ext" -out "$tls/server.crt" 2>/dev/null
chmod 0600 "$tls/server.key" "$tls/ca.key"
chmod 0644 "$tls/ca.crt" "$tls/server.crt"

step "cluster in $data"
password=$(openssl rand -hex 16)
echo "$password" > "$pgdir/pwfile"
chmod 0600 "$pgdir/pwfile"
if ((${#as_pg[@]})); then chown -R postgres: "$pgdir"; fi
initdb=(-D "$data" -U robotmem_admin --auth=scram-sha-256 --pwfile="$pgdir/pwfile" -E UTF8 -N)
pg "$bin/initdb" "${initdb[@]}" --locale=C.UTF-8 >"$pgdir/initdb.log" 2>&1 \
  || { rm -rf "$data"; pg "$bin/initdb" "${initdb[@]}" --locale=C >"$pgdir/initdb.log" 2>&1; } \
  || { cat "$pgdir/initdb.log" >&2; fail "initdb failed"; }
port=$("${in_ns[@]}" python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
listen=127.0.0.1
if ((${#in_ns[@]})); then listen="127.0.0.1,$hub_addr"; fi
cat >> "$data/postgresql.conf" <<EOF

# --- scripts/fleet-test.sh (throwaway test server)
listen_addresses = '$listen'
port = $port
unix_socket_directories = '$pgdir/sock'
max_connections = 100
shared_buffers = 64MB
password_encryption = 'scram-sha-256'
ssl = on
ssl_cert_file = '$tls/server.crt'
ssl_key_file = '$tls/server.key'
logging_collector = off
fsync = off    # tests only: a killed server still keeps what the kernel has
EOF
printf '%s\n' "local all all scram-sha-256" "host all all 127.0.0.1/32 scram-sha-256" \
  "host all all 10.200.0.0/16 scram-sha-256" > "$data/pg_hba.conf"

# The helper the tests call: pgctl start|stop|kill|restart (non-zero exit on failure).
cat > "$work/pgctl" <<EOF
#!/usr/bin/env bash
# Controls the fleet-test PostgreSQL server. kill = immediate stop (like a crash).
set -euo pipefail
cd /
pgc() { ${in_ns[*]} ${as_pg[*]} $bin/pg_ctl -D '$data' "\$@"; }
case "\${1:-}" in
  start)   pgc -w -l '$log' start ;;
  stop)    pgc -w -m fast stop ;;
  kill)    pgc -w -m immediate stop ;;
  restart) pgc -w -m fast -l '$log' restart ;;
  *) echo "usage: \$0 start|stop|kill|restart" >&2; exit 2 ;;
esac
EOF
chmod 0755 "$work/pgctl"

step "start server on $listen port $port"
"$work/pgctl" start
PGPASSWORD=$password "${in_ns[@]}" "$bin/psql" -X -q -v ON_ERROR_STOP=1 \
  "host=127.0.0.1 port=$port user=robotmem_admin dbname=postgres sslmode=disable" \
  -c "CREATE DATABASE fleet OWNER robotmem_admin" || fail "could not create database fleet"

export ROBOTMEM_TEST_PG_URL="postgresql://robotmem_admin:$password@127.0.0.1:$port/fleet?sslmode=disable"
export ROBOTMEM_TEST_PG_HOST=127.0.0.1 ROBOTMEM_TEST_PG_PORT=$port
export ROBOTMEM_TEST_PG_ADMIN=robotmem_admin ROBOTMEM_TEST_PG_PASSWORD=$password
export ROBOTMEM_TEST_PG_DB=fleet ROBOTMEM_TEST_PG_SOCKET_DIR=$pgdir/sock
export ROBOTMEM_TEST_PG_CA=$tls/ca.crt ROBOTMEM_TEST_PGCTL=$work/pgctl
export ROBOTMEM_REQUIRE_PG=1
if ((${#in_ns[@]})); then
  export ROBOTMEM_TEST_HUB_NETNS=$netns ROBOTMEM_TEST_HUB_ADDR=$hub_addr
else
  export ROBOTMEM_TEST_NETNS_SKIP=$netns_skip
fi
if command -v faketime >/dev/null; then ROBOTMEM_TEST_FAKETIME=$(command -v faketime); export ROBOTMEM_TEST_FAKETIME; fi

# --- run
# The tests run in the hub's namespace (no network there: everything is built first).
export ROBOTMEM_TEST_NETNS_REPORT=$work/netns-report.txt
if [ "${1:-}" = --bench ]; then
  shift
  step "cargo bench --bench fleet"
  cargo bench --locked -p robotmem-cli --bench fleet --no-run
  "${in_ns[@]}" cargo bench --offline --locked -p robotmem-cli --bench fleet -- "$@"
  step "scale run over real links: 20 robots in namespaces of their own (fleet_netns_scale)"
  cargo test --locked -p robotmem-cli --test fleet_netns_scale --no-run
  ROBOTMEM_FLEET_SCALE=1 "${in_ns[@]}" cargo test --offline --locked -p robotmem-cli --test fleet_netns_scale \
    -- --test-threads=1 --nocapture
elif [ -n "${FLEET_TESTS:-}" ]; then
  tests=()
  for t in $FLEET_TESTS; do tests+=(--test "$t"); done
  step "cargo test ${tests[*]}"
  cargo test --locked -p robotmem-cli "${tests[@]}" --no-run
  "${in_ns[@]}" cargo test --offline --locked -p robotmem-cli "${tests[@]}" -- --test-threads=1 --nocapture "$@"
else
  step "cargo test --test fleet --test fleet_batches (they stop and restart the server: alone)"
  cargo test --locked -p robotmem-cli --test fleet --test fleet_batches --no-run
  "${in_ns[@]}" cargo test --offline --locked -p robotmem-cli --test fleet --test fleet_batches \
    -- --test-threads=1 --nocapture "$@"
  # The fault tests spend most of their time waiting for real timeouts (a 70 s black
  # hole, link resets): the two binaries run side by side, each on robot addresses of
  # its own (ROBOTMEM_TEST_NODE_BASE), each binary's tests one at a time. Their test
  # executables are run directly (as cargo would, from cli/), so that two cargo
  # processes do not wait on each other's lock; each one's output is shown after both.
  step "fleet_netns and fleet_netns_silent, side by side"
  exes=$(cargo test --locked -p robotmem-cli --test fleet_netns --test fleet_netns_silent --no-run \
    --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("executable") and m.get("target", {}).get("name") in ("fleet_netns", "fleet_netns_silent"):
        print(m["target"]["name"], m["executable"])')
  pids=() names=() base=0
  while read -r name exe; do
    (cd cli && ROBOTMEM_TEST_NODE_BASE=$base "${in_ns[@]}" "$exe" --test-threads=1 --nocapture "$@") \
      >"$work/$name.out" 2>&1 &
    pids+=($!) names+=("$name") base=$((base + 100))
  done <<<"$exes"
  ((${#pids[@]} == 2)) || fail "expected the fleet_netns and fleet_netns_silent executables, got: $exes"
  failed=()
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${names[$i]}"); done
  for name in "${names[@]}"; do
    echo "--- $name"
    cat "$work/$name.out"
  done
  ((${#failed[@]} == 0)) || fail "failed: ${failed[*]}"
fi
if [ -s "$ROBOTMEM_TEST_NETNS_REPORT" ]; then
  step "fleet over real links: measured"
  cat "$ROBOTMEM_TEST_NETNS_REPORT"
fi
# --- end run
step "fleet: OK in $((SECONDS - start)) s"

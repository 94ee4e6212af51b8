#!/usr/bin/env bash
# The operator console's store calls on a store of USERS accounts (1,000,000) and AUDIT_DAYS (30) days of
# AUDIT_PER_DAY (50,000) audit events, on SQLite and on PostgreSQL (a private server from scripts/with-postgres):
# email-prefix searches from one character to a whole address, a name, every account, paging on by cursor, account
# totals, the audit log's daily counts and pages. Each row is RUNS (50) calls through the store's API after three
# warm-up calls; the table gives the median and the largest, in milliseconds.
#
#   Benchmarks/load/search-scale.sh                       # debug build of the timing tool
#   BUILD=release Benchmarks/load/search-scale.sh         # release build (much longer to compile)
#   USERS=100000 DATABASES=sqlite Benchmarks/load/search-scale.sh
#
# The store is created by the tool (schema version 5, every index), filled by search_fill.py (multi-row inserts on
# SQLite, COPY on PostgreSQL, then ANALYZE there as autovacuum would; SQLite gets no ANALYZE, as siwa never runs it),
# then timed. Target (issue #18): an email-prefix search of 1,000,000 accounts answers in under 50 ms.
set -euo pipefail
cd "$(dirname "$0")/../.."

USERS=${USERS:-1000000}
AUDIT_PER_DAY=${AUDIT_PER_DAY:-50000}
AUDIT_DAYS=${AUDIT_DAYS:-30}
RUNS=${RUNS:-50}
BUILD=${BUILD:-debug}
DATABASES=${DATABASES:-"sqlite postgres"}

swift build -c "$BUILD" --product siwa-search-benchmark >/dev/null
TOOL="$(pwd)/.build/$BUILD/siwa-search-benchmark"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FILL=(python3 "$(pwd)/Benchmarks/load/search_fill.py" --users "$USERS" --audit-per-day "$AUDIT_PER_DAY"
    --audit-days "$AUDIT_DAYS")

echo "siwa-search-benchmark ($BUILD build), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
for database in $DATABASES; do
    echo
    echo "## $database"
    case "$database" in
        sqlite)
            "$TOOL" prepare --sqlite "$WORK/siwa.sqlite" >/dev/null
            "${FILL[@]}" --sqlite "$WORK/siwa.sqlite" >"$WORK/queries"
            mapfile -t queries <"$WORK/queries"
            "$TOOL" measure --sqlite "$WORK/siwa.sqlite" --runs "$RUNS" "${queries[@]}"
            echo "database file: $(du -sh "$WORK/siwa.sqlite" | cut -f1)"
            ;;
        postgres)
            export TOOL RUNS WORK
            FILL_COMMAND="${FILL[*]}"
            export FILL_COMMAND
            scripts/with-postgres bash -c '
                set -euo pipefail
                "$TOOL" prepare --postgres "$SIWA_TEST_POSTGRES_URL" >/dev/null
                $FILL_COMMAND --postgres "$SIWA_TEST_POSTGRES_URL" >"$WORK/queries"
                mapfile -t queries <"$WORK/queries"
                "$TOOL" measure --postgres "$SIWA_TEST_POSTGRES_URL" --runs "$RUNS" "${queries[@]}"
                psql -qtA "$SIWA_TEST_POSTGRES_URL" -c "SELECT '\''database size: '\'' || pg_size_pretty(pg_database_size(current_database()))"
            '
            ;;
        *) echo "unknown database: $database" >&2; exit 64 ;;
    esac
done

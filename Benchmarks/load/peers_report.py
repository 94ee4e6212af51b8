"""The report of Benchmarks/load/peers.sh: per target the median and range of requests/s, server CPU per request and
p99 over the rounds; the ratios siwa / peer; each siwa route's share of /healthz; siwa's CPU against the floor.

Usage: peers_report.py RESULTS FLOOR_JSON MACHINE
RESULTS: lines "group:target req/s cpu-us-per-request p99-ms non-2xx"; FLOOR_JSON: one {"name", "us"} per line.
"""
import json
import statistics
import sys

results_path, floor_path, machine = sys.argv[1], sys.argv[2], sys.argv[3]
runs = {}
errors = {}
for line in open(results_path):
    label, rps, cpu, p99, non2xx = line.split()
    runs.setdefault(label, []).append((float(rps), float(cpu), float(p99)))
    errors[label] = errors.get(label, 0) + int(non2xx)


def stat(label, index):
    values = [run[index] for run in runs[label]]
    return statistics.median(values), min(values), max(values)


def fmt(label, index, digits=0):
    median, low, high = stat(label, index)
    return f"{median:,.{digits}f} ({low:,.{digits}f}–{high:,.{digits}f})"


print(f"\nMachine: {machine}. Rounds: {len(next(iter(runs.values())))}, alternating. Medians (ranges).\n")
print(f"| route | target | req/s | server CPU µs/request | p99 ms | non-2xx |")
print(f"|---|---|---|---|---|---|")
for label in runs:
    group, target = label.split(":", 1)
    print(f"| {group} | {target} | {fmt(label, 0)} | {fmt(label, 1)} | {fmt(label, 2, 1)} | {errors[label]} |")


def ratio(a, b):
    if a not in runs or b not in runs:
        return None
    rps = stat(a, 0)[0] / stat(b, 0)[0]
    cpu = stat(b, 1)[0] / stat(a, 1)[0]
    return rps, cpu


print("\nsiwa / peer (throughput; CPU: peer's CPU per request over siwa's):\n")
print("| siwa | peer | throughput | CPU per request |")
print("|---|---|---|---|")
pairs = [
    ("sign-in:siwa-native", "sign-in:peer"), ("sign-in:siwa-native", "sign-in:peer-wal"),
    ("sign-in:siwa-contract", "sign-in:peer"), ("sign-in:siwa-contract", "sign-in:peer-wal"),
    ("sign-in:siwa-pg-native", "sign-in:peer-wal"),
    ("me:siwa-contract", "me:peer"), ("me:siwa-contract", "me:peer-wal"),
    ("me:siwa-api-me-distinct", "me:peer-wal"), ("me:siwa-api-me-one-token", "me:peer-wal"),
]
for a, b in pairs:
    r = ratio(a, b)
    if r:
        print(f"| {a} | {b} | {r[0]:.2f}× | {r[1]:.2f}× |")

baseline_pairs = [
    ("sign-in:siwa-native", "sign-in:siwa-baseline-native"), ("refresh:siwa", "refresh:siwa-baseline"),
    ("me:siwa-api-me-one-token", "me:siwa-baseline-api-me-one-token"),
    ("sign-in:siwa-contract", "sign-in:siwa-baseline-contract"),
    ("me:siwa-api-me-distinct", "me:siwa-baseline-api-me-distinct"),
    ("me:siwa-contract", "me:siwa-baseline-contract"),
    ("sign-in:siwa-pg-native", "sign-in:siwa-baseline-pg-native"), ("refresh:siwa-pg", "refresh:siwa-baseline-pg"),
]
if any(b in runs for _, b in baseline_pairs):
    print("\nsiwa / the baseline build (BASELINE_BINARY), same run:\n")
    print("| siwa | baseline | throughput | CPU per request |")
    print("|---|---|---|---|")
    for a, b in baseline_pairs:
        r = ratio(a, b)
        if r:
            print(f"| {a} | {b} | {r[0]:.2f}× | {r[1]:.2f}× |")

healthz = stat("healthz:siwa", 0)[0]
print(f"\nShare of /healthz on the same run (siwa /healthz: {healthz:,.0f} req/s, {stat('healthz:siwa', 1)[0]:.0f} µs):\n")
for label in runs:
    if label.startswith("healthz") or "peer" in label or "baseline" in label:
        continue
    print(f"- {label}: {100 * stat(label, 0)[0] / healthz:.0f}% of /healthz")

# The floor ran once per round: each item's median over the rounds.
floor_runs = {}
for line in open(floor_path):
    line = line.strip()
    if line.startswith("{"):
        item = json.loads(line)
        floor_runs.setdefault(item["name"], []).append(item["us"])
floor = {name: statistics.median(values) for name, values in floor_runs.items()}
if floor:
    bare = stat("healthz:siwa", 1)[0]
    sign_in_floor = (
        floor["rsa2048_verify"] + floor["es256_sign"] + floor["sha256_identity_token"] + floor["sha256_32"] * 2
        + floor["random32"] * 2 + floor["sqlite_sign_in_write"] + bare
    )
    # The Vapor tutorial's contract answers the session's refresh token as its bearer and no access token: the route's
    # floor (the work its answer needs, whichever build runs it) has no ES256 signature. (Until 2026-11-25 siwa signed
    # one there for nothing, and the report gave this route the native sign-in's floor.)
    contract_floor = sign_in_floor - floor["es256_sign"]
    refresh_floor = (
        floor["es256_sign"] + floor["sha256_32"] * 2 + floor["random32"] * 2 + floor["sqlite_refresh_write"] + bare
    )
    rounds = max(len(values) for values in floor_runs.values())
    print(f"\nThe floor (one core, medians of {rounds} rounds, µs):",
          ", ".join(f"{k} {v:.1f} ({min(floor_runs[k]):.1f}–{max(floor_runs[k]):.1f})" for k, v in floor.items()))
    print(f"plus a bare request on this run (siwa's /healthz CPU per request): {bare:.1f}")
    print("\n| route | floor µs | siwa µs | floor / siwa |")
    print("|---|---|---|---|")
    # PostgreSQL's rows count siwa's process only, not the database's.
    for label, value in [("sign-in:siwa-native", sign_in_floor), ("sign-in:siwa-contract", contract_floor),
                         ("refresh:siwa", refresh_floor),
                         ("sign-in:siwa-baseline-native", sign_in_floor),
                         ("sign-in:siwa-baseline-contract", contract_floor), ("refresh:siwa-baseline", refresh_floor),
                         ("sign-in:siwa-pg-native", sign_in_floor), ("refresh:siwa-pg", refresh_floor)]:
        if label in runs:
            spent = stat(label, 1)[0]
            note = " (siwa's process only)" if "-pg" in label else ""
            print(f"| {label}{note} | {value:.0f} | {spent:.0f} | {100 * value / spent:.0f}% |")

"""Reads the soak's samples (seconds,rss_kb,anon_kb,file_kb,shmem_kb,fds,threads) and decides whether memory or
descriptors grow.

Usage: soak_trend.py NAME SAMPLES.csv [WARM_UP_SECONDS]

The warm-up is left out: pools and caches fill, the allocator takes its working set, and the revocation list, which
keeps each logout for the access-token lifetime plus two minutes (180 s in the soak), reaches its steady size. The
warm-up must therefore be at least that retention (default 180 s); a first run that counted from 60 s read the
list filling up as growth. Over the
rest, a least-squares line through resident memory must rise less than max(4 MB, 4% of the mean) over the whole
window, and the later half's peak must not exceed the earlier half's by more than that; open descriptors must stay
within 8 of the earlier half's peak (connections to the database come and go). Prints one line per check and exits
1 when one fails.
"""
import csv
import sys

name, path = sys.argv[1], sys.argv[2]
WARM_UP_SECONDS = int(sys.argv[3]) if len(sys.argv) > 3 else 180
samples = list(csv.DictReader(open(path)))
rows = [(int(r["seconds"]), int(r["rss_kb"]) / 1024, int(r["fds"]), int(r["threads"])) for r in samples]
window = [r for r in rows if r[0] >= WARM_UP_SECONDS]
if len(window) < 6:
    sys.exit(f"{name}: only {len(window)} samples after the warm-up; run longer")
seconds = [r[0] for r in window]
rss = [r[1] for r in window]
fds = [r[2] for r in window]
threads = [r[3] for r in window]

n = len(window)
mean_t, mean_m = sum(seconds) / n, sum(rss) / n
slope = sum((t - mean_t) * (m - mean_m) for t, m in zip(seconds, rss)) / sum((t - mean_t) ** 2 for t in seconds)
span = seconds[-1] - seconds[0]
rise = slope * span
half = n // 2
tolerance = max(4.0, 0.04 * mean_m)

print(f"{name}: {len(rows)} samples; after the first {WARM_UP_SECONDS} s: resident {min(rss):.1f}-{max(rss):.1f} MB "
      f"(first {rss[0]:.1f}, last {rss[-1]:.1f}), trend {slope * 60:+.3f} MB/min; open descriptors {min(fds)}-{max(fds)} "
      f"(first {fds[0]}, last {fds[-1]}); threads {min(threads)}-{max(threads)}")
parts = [p for p in ("anon_kb", "file_kb", "shmem_kb") if p in samples[0]]
if parts:
    kept = [r for r in samples if int(r["seconds"]) >= WARM_UP_SECONDS]
    print(f"{name}: resident parts, first to last after the warm-up: " + ", ".join(
        f"{p[:-3]} {int(kept[0][p]) / 1024:.1f} -> {int(kept[-1][p]) / 1024:.1f} MB" for p in parts))
failed = False
checks = [
    (f"memory trend over {span} s: {rise:+.1f} MB (limit {tolerance:.1f})", rise < tolerance),
    (f"memory peak, later half vs earlier half: {max(rss[half:]):.1f} vs {max(rss[:half]):.1f} MB",
     max(rss[half:]) <= max(rss[:half]) + tolerance),
    (f"open descriptors, later half vs earlier half: peak {max(fds[half:])} vs {max(fds[:half])}",
     max(fds[half:]) <= max(fds[:half]) + 8),
    (f"threads, later half vs earlier half: peak {max(threads[half:])} vs {max(threads[:half])}",
     max(threads[half:]) <= max(threads[:half])),
]
for text, ok in checks:
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {text}")
    failed = failed or not ok
sys.exit(1 if failed else 0)

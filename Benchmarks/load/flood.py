"""Floods a siwa server with slow and idle connections while probing it from another address (see flood.sh).

Usage: flood.py SERVER_PORT few|many CONNECTIONS SECONDS TOKENS_FILE SERVER_PID

- few: the flood comes from 4 loopback addresses (127.0.0.2-5); many: from 64 (127.0.1.1-64).
- A third of the flooders trickle a request head (one byte every 2 s), a third send a head announcing a 100 kB body and
  trickle it, a third connect and stay silent. A flooder whose connection is closed opens another after 100 ms, until
  the time is up: at most CONNECTIONS are open at once from this side. Loopback only; bounded in time and count.
- The prober, from 127.0.0.1: GET /healthz every 100 ms and a native sign-in (identity tokens from TOKENS_FILE) every
  250 ms, each on a new connection with a 5 s timeout.
- Every second: the server's open descriptors (/proc/PID/fd).

Prints the flood's and the prober's figures, then `alive yes|no` and `prober ok|failed`.
"""
import asyncio
import json
import os
import resource
import statistics
import sys
import time

port, phase, total, seconds, tokens_file, server_pid = (
    int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
addresses = [f"127.0.0.{i}" for i in range(2, 6)] if phase == "few" else [f"127.0.1.{i}" for i in range(1, 65)]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, total + 512)), hard))

stats = {"connects": 0, "closed_at_once": 0, "cut_off": 0, "open": 0, "max_open": 0, "connect_errors": 0}
server_fds = []


async def flooder(kind, source, deadline):
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), 5)
        except (OSError, asyncio.TimeoutError):
            stats["connect_errors"] += 1
            await asyncio.sleep(0.1)
            continue
        stats["connects"] += 1
        stats["open"] += 1
        stats["max_open"] = max(stats["max_open"], stats["open"])
        opened = time.monotonic()
        try:
            if kind == "head":
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: siwa\r\nX-Slow: ")
            elif kind == "body":
                writer.write(b"POST /auth/refresh HTTP/1.1\r\nHost: siwa\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100000\r\n\r\n")
            await writer.drain()
            while time.monotonic() < deadline:
                try:
                    data = await asyncio.wait_for(reader.read(4096), 2)
                    if not data:
                        break  # closed by the server
                except asyncio.TimeoutError:
                    if kind in ("head", "body"):
                        writer.write(b"a")
                        await writer.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            stats["open"] -= 1
            if time.monotonic() < deadline:
                if time.monotonic() - opened < 0.5:
                    stats["closed_at_once"] += 1
                else:
                    stats["cut_off"] += 1
            writer.close()
        await asyncio.sleep(0.1)


async def request(raw, timeout=5.0):
    started = time.monotonic()
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    try:
        writer.write(raw)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        return int(head.split(b" ", 2)[1]), time.monotonic() - started
    finally:
        writer.close()


async def prober(deadline, results):
    tokens = [line.strip() for line in open(tokens_file) if line.strip()]
    tick = 0
    while time.monotonic() < deadline:
        try:
            status, elapsed = await request(b"GET /healthz HTTP/1.1\r\nHost: siwa\r\nConnection: close\r\n\r\n")
            results["healthz"].append((status, elapsed))
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
            results["healthz"].append((0, 5.0))
        if tick % 5 == 0 and tokens:
            body = json.dumps({"identityToken": tokens.pop()}).encode()
            raw = (b"POST /auth/apple/native HTTP/1.1\r\nHost: siwa\r\nContent-Type: application/json\r\n"
                   b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            try:
                results["sign_in"].append(await request(raw))
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
                results["sign_in"].append((0, 5.0))
        tick += 1
        await asyncio.sleep(0.05)


async def sampler(deadline):
    while time.monotonic() < deadline + 1:
        try:
            server_fds.append(len(os.listdir(f"/proc/{server_pid}/fd")))
        except OSError:
            server_fds.append(-1)
        await asyncio.sleep(1)


def summary(name, samples):
    ok = [elapsed * 1000 for status, elapsed in samples if 200 <= status < 300]
    if not samples:
        return f"{name}: none", 0.0
    rate = len(ok) / len(samples)
    figures = ""
    if ok:
        ok.sort()
        figures = (f", median {statistics.median(ok):.1f} ms, p99 {ok[min(len(ok) - 1, int(len(ok) * 0.99))]:.1f} ms,"
                   f" max {ok[-1]:.1f} ms")
    return f"{name}: {len(ok)}/{len(samples)} answered 2xx ({rate:.1%}){figures}", rate


async def main():
    deadline = time.monotonic() + seconds
    kinds = ["head", "body", "idle"]
    tasks = [asyncio.create_task(flooder(kinds[i % 3], addresses[i % len(addresses)], deadline))
             for i in range(total)]
    await asyncio.sleep(2)  # let the flood build up before probing
    results = {"healthz": [], "sign_in": []}
    await asyncio.gather(prober(deadline, results), sampler(deadline))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(f"flood from {len(addresses)} addresses: {stats['connects']} connections opened, at most "
          f"{stats['max_open']} open at once from this side; {stats['closed_at_once']} closed by the server within "
          f"0.5 s (over a cap), {stats['cut_off']} cut off later (deadlines), {stats['connect_errors']} connect errors")
    valid = [count for count in server_fds if count >= 0]
    print(f"server descriptors during the flood: max {max(valid) if valid else '?'}, "
          f"median {statistics.median(valid) if valid else '?'}")
    healthz, healthz_rate = summary("prober /healthz", results["healthz"])
    sign_in, sign_in_rate = summary("prober sign-ins", results["sign_in"])
    print(healthz)
    print(sign_in)
    alive = os.path.exists(f"/proc/{server_pid}") and open(f"/proc/{server_pid}/stat").read().split()[2] != "Z"
    print(f"alive {'yes' if alive else 'no'}")
    print(f"prober {'ok' if healthz_rate >= 0.99 and sign_in_rate >= 0.95 else 'failed'}")


asyncio.run(main())
